"""deskmcp as an OAuth 2.1 resource server (never an authorization server).

`settings` (what the issuer and the resource are), `issuer` (its metadata and signing keys),
`verifier` (JWT access tokens and introspection), `gate` (the HTTP door: Protected Resource
Metadata, 401/403 challenges, the principal each request acts for). docs/authorization.md says
how to configure it.
"""
