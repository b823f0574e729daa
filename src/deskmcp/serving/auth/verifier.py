"""Access token verification: JWT access tokens (RFC 9068) against the issuer's keys, opaque ones
by introspection (RFC 7662).

A token is accepted only when every check passes; the first failed check is the reason given
(`TokenRefused`), which goes to the log and, as `error_description`, to the client:

- JWT: its `alg` is on the allow-list (never `none` nor HMAC), its `typ` is an access token's
  (`at+jwt`, RFC 9068, or another of `token_types`), its key id is in the issuer's key
  set (refetched once when unknown), the signature verifies with that key, `iss` is the issuer
  exactly, `aud` names this resource (RFC 8707), `exp` is present and not past, `nbf` and `iat`
  are not in the future (both within the leeway), and `sub` names who it acts for;
- opaque: the issuer's introspection endpoint says `active`, with `aud` naming this resource, `sub`,
  and `iss` (when given) the issuer and `exp` (when given) not past; an accepted answer is reused
  until the token's `exp`, and at most `introspection_cache_seconds`.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from typing import Any

import httpx2
import orjson
from joserfc import jws
from joserfc.errors import JoseError
from joserfc.jwk import KeySet
from mcp.server.auth.provider import AccessToken

from deskmcp.core.principal import Principal
from deskmcp.serving.auth.issuer import IssuerKeys, IssuerUnavailable
from deskmcp.serving.auth.settings import AuthorizationSettings, media_type

CLIENT_PRINCIPALS = "#client"
"""Appended to the issuer of a principal that is an introspected token's client (no `sub`)."""

INTROSPECTION_CACHE_SIZE = 4096
"""Introspected tokens whose answers are kept at most (the oldest go first)."""


class TokenRefused(Exception):
    """The access token is not valid for this resource; the message says which check failed."""


def _space_separated(value: str) -> list[str]:
    """RFC 6749 §3.3: scope tokens are separated by the ASCII space only (a no-break space or a tab
    is part of a token, which then names no scope of ours)."""
    return [part for part in value.split(" ") if part]


def scopes_of(claims: dict[str, Any]) -> list[str]:
    """`scope` (space-separated, RFC 9068 and 7662) or `scp` (a list, as some issuers write it)."""
    scope = claims.get("scope")
    if isinstance(scope, str):
        return _space_separated(scope)
    scp = claims.get("scp")
    if isinstance(scp, list):
        return [s for s in scp if isinstance(s, str)]
    if isinstance(scp, str):
        return _space_separated(scp)
    return []


def principal_of(token: AccessToken) -> Principal:
    """The principal a verified token acts for: its issuer and subject, with its scopes. Every
    accepted token names a subject (`AccessTokenVerifier` refuses the others), so a token never
    acts for a principal by its client id."""
    claims = token.claims or {}
    issuer, subject = str(claims["iss"]), token.subject
    if not subject:
        if not token.client_id:
            raise TokenRefused("the token names no subject (sub)")
        # An introspected token naming only its client: that client's own principal, under an
        # issuer no real one can be (an issuer identifier has no fragment, RFC 8414 §2), so it
        # never acts for a person whose subject happens to equal the client id.
        issuer, subject = issuer + CLIENT_PRINCIPALS, token.client_id
    return Principal(
        issuer=issuer,
        subject=subject,
        scopes=frozenset(token.scopes),
        client_id=token.client_id or None,
    )


def looks_like_jwt(token: str) -> bool:
    return token.count(".") == 2 and token.startswith("eyJ")


class AccessTokenVerifier:
    """Verifies access tokens for one resource; the SDK's `TokenVerifier` (`verify_token`)."""

    def __init__(
        self,
        settings: AuthorizationSettings,
        *,
        client: httpx2.AsyncClient | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.clock = clock
        self.client = client or httpx2.AsyncClient(timeout=10.0, follow_redirects=False)
        self.issuer = IssuerKeys(settings, self.client, clock=clock)
        # One registry per accepted algorithm: a token is verified with exactly the alg it names.
        self._registries = {alg: jws.JWSRegistry(algorithms=[alg]) for alg in settings.algorithms}
        self._introspected: dict[bytes, tuple[AccessToken, float]] = {}
        """sha256(opaque token) -> (the accepted answer, until when it is reused)."""

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            return await self.check(token)
        except (TokenRefused, IssuerUnavailable):
            return None

    async def check(self, token: str) -> AccessToken:
        """The verified token, or `TokenRefused` naming the failed check (`IssuerUnavailable` when
        the issuer's keys or introspection endpoint cannot be reached)."""
        if looks_like_jwt(token):
            return await self._check_jwt(token)
        return await self._introspect(token)

    async def aclose(self) -> None:
        await self.client.aclose()

    # -- JWT access tokens ---------------------------------------------------------------------

    async def _check_jwt(self, token: str) -> AccessToken:
        try:
            signed = jws.extract_compact(token.encode())
            header = signed.headers()
        except (JoseError, ValueError, TypeError) as exc:
            raise TokenRefused(f"the token is not a readable JWS ({exc})") from exc
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in self.settings.algorithms:
            raise TokenRefused(f"the token is signed with alg {alg!r}, which is not accepted")
        typ = header.get("typ")
        if not isinstance(typ, str) or media_type(typ) not in self.settings.token_types:
            accepted = ", ".join(self.settings.token_types)
            raise TokenRefused(f"the token's typ is {typ!r}, not an access token's ({accepted}, RFC 9068)")
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise TokenRefused("the token's kid is not a string")
        key = self._key(await self.issuer.key_set(kid), kid)
        try:
            if not jws.validate_compact(signed, key, registry=self._registries[alg]):
                raise TokenRefused("the token's signature does not verify")
            claims = orjson.loads(signed.payload)
        except (JoseError, ValueError, TypeError) as exc:
            raise TokenRefused(f"the token's signature does not verify ({exc})") from exc
        if not isinstance(claims, dict):
            raise TokenRefused("the token's payload is not a JSON object")
        return self._accept(token, claims, exp_required=True)

    def _key(self, keys: KeySet, kid: str | None) -> Any:
        if kid is None:
            if len(keys.keys) != 1:
                raise TokenRefused("the token names no kid and the issuer has several keys")
            return keys.keys[0]
        for key in keys.keys:
            if key.kid == kid:
                return key
        raise TokenRefused(f"the token's kid {kid!r} is not among the issuer's keys")

    # -- opaque tokens -------------------------------------------------------------------------

    async def _introspect(self, token: str) -> AccessToken:
        """The issuer's answer for an opaque token, reused until the token's exp and at most
        `introspection_cache_seconds` (accepted answers only: a refusal is asked again)."""
        key = hashlib.sha256(token.encode("utf-8")).digest()
        now = self.clock()
        cached = self._introspected.get(key)
        if cached is not None:
            access, until = cached
            if now < until:
                return access
            del self._introspected[key]
        access = await self._ask_issuer(token)
        until = now + self.settings.introspection_cache_seconds
        if access.expires_at is not None:
            until = min(until, access.expires_at)
        if until > now:
            for stale in [k for k, (_a, u) in self._introspected.items() if u <= now]:
                del self._introspected[stale]
            while len(self._introspected) >= INTROSPECTION_CACHE_SIZE:
                del self._introspected[next(iter(self._introspected))]  # the oldest first
            self._introspected[key] = (access, until)
        return access

    async def _ask_issuer(self, token: str) -> AccessToken:
        settings = self.settings
        if not settings.client_id or not settings.client_secret:
            raise TokenRefused("the token is not a JWT and no introspection client is configured")
        endpoint = settings.introspection_endpoint or (await self.issuer.metadata()).get("introspection_endpoint")
        if not isinstance(endpoint, str):
            raise TokenRefused("the token is not a JWT and the issuer has no introspection endpoint")
        try:
            response = await self.client.post(
                endpoint,
                data={"token": token, "token_type_hint": "access_token"},
                auth=(settings.client_id, settings.client_secret),
                headers={"Accept": "application/json"},
            )
        except httpx2.HTTPError as exc:
            raise IssuerUnavailable(f"the introspection endpoint could not be reached: {exc}") from exc
        if response.status_code != 200:
            raise IssuerUnavailable(f"the introspection endpoint answered HTTP {response.status_code}")
        try:
            claims = response.json()
        except ValueError as exc:
            raise IssuerUnavailable("the introspection endpoint did not answer JSON") from exc
        if not isinstance(claims, dict) or claims.get("active") is not True:
            raise TokenRefused("the issuer says the token is not active")
        claims.setdefault("iss", settings.issuer)
        return self._accept(token, claims, exp_required=False)

    # -- the claims both kinds share ----------------------------------------------------------

    def _accept(self, token: str, claims: dict[str, Any], *, exp_required: bool) -> AccessToken:
        settings = self.settings
        now = self.clock()
        if claims.get("iss") != settings.issuer:
            raise TokenRefused(f"the token was issued by {claims.get('iss')!r}, not {settings.issuer!r}")
        aud = claims.get("aud")
        audiences = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
        if settings.resource not in audiences:
            raise TokenRefused(f"the token is for audience {aud!r}, not this resource {settings.resource!r}")
        exp = claims.get("exp")
        if exp is None and exp_required:
            raise TokenRefused("the token has no exp")
        if exp is not None and (not isinstance(exp, int | float) or exp + settings.leeway <= now):
            raise TokenRefused("the token has expired")
        for name in ("nbf", "iat"):
            value = claims.get(name)
            if value is not None and (not isinstance(value, int | float) or value - settings.leeway > now):
                raise TokenRefused(f"the token is not valid yet ({name} is in the future)")
        client_id = claims.get("client_id") or claims.get("azp") or ""
        subject = claims.get("sub")
        if subject is not None and (not isinstance(subject, str) or not subject):
            raise TokenRefused("the token names no subject (sub)")
        if subject is None and (exp_required or not client_id):
            # RFC 9068 §2.2 requires sub in a JWT access token; an introspected one (RFC 7662: sub
            # optional) may name only its client, which then acts for itself (`principal_of`).
            raise TokenRefused("the token names no subject (sub)")
        return AccessToken(
            token=token,
            client_id=str(client_id),
            scopes=[s for s in scopes_of(claims) if s in settings.scopes],
            expires_at=int(exp) if isinstance(exp, int | float) else None,
            resource=settings.resource,
            subject=str(subject) if subject is not None else None,
            claims={"iss": settings.issuer, **{k: v for k, v in claims.items() if k in ("sub", "client_id", "jti")}},
        )
