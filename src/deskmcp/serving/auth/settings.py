"""What deskmcp needs to know to act as an OAuth 2.1 resource server (`DESKMCP_AUTH_*`).

deskmcp never issues tokens: an authorization server (`issuer`) does, for the resource `resource`,
the public URL of the MCP endpoint exactly as clients write it. Setting `DESKMCP_AUTH_ISSUER`
switches authorization on; docs/authorization.md describes each setting.
"""

from __future__ import annotations

from typing import Annotated, Self
from urllib.parse import urlsplit

from pydantic import BeforeValidator, Field, field_validator, model_validator
from pydantic_settings import NoDecode

from deskmcp.core.config import OptionalText
from deskmcp.core.scopes import SCOPES
from deskmcp.core.settings import Settings, env_alias
from deskmcp.serving.hosts import is_loopback

DEFAULT_ALGORITHMS = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
    "Ed25519",
    "Ed448",
)
"""Asymmetric signatures only: a resource server holds no secret shared with the issuer, so an
HMAC (`HS256`) token could only be checked with a public key, which anyone has."""


MCP_PATH = "/mcp"
"""Where deskmcp serves MCP (`httpapi.MCP_PATH`): the resource's path."""


def _words(value: object) -> object:
    """`"a, b c"` -> `("a", "b", "c")`: comma- or space-separated lists in the environment."""
    if isinstance(value, str):
        return tuple(part for part in value.replace(",", " ").split() if part)
    return value


Words = Annotated[tuple[str, ...], NoDecode, BeforeValidator(_words)]


def media_type(typ: str) -> str:
    """A JOSE `typ` as RFC 7515 §4.1.9 compares it: case-insensitive, with `application/` left out."""
    return typ.strip().lower().removeprefix("application/")


def check_url(name: str, value: str) -> str:
    """An absolute https URL (http only on loopback), without query or fragment, kept as written."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{name} must be an absolute URL like https://host/path, not {value!r}")
    if parts.scheme == "http" and not is_loopback(parts.hostname):
        raise ValueError(f"{name} must use https (http only for 127.0.0.1 or localhost), not {value!r}")
    if parts.query or parts.fragment or "#" in value:
        raise ValueError(f"{name} must not have a query or fragment: {value!r}")
    return value


class AuthorizationSettings(Settings):
    """The resource server's settings; built from the environment by the CLI, by keyword in tests."""

    issuer: str = Field(
        validation_alias=env_alias("issuer", "DESKMCP_AUTH_ISSUER"),
        description="The authorization server's issuer identifier, exactly as in its metadata and tokens.",
    )
    resource: str = Field(
        validation_alias=env_alias("resource", "DESKMCP_AUTH_RESOURCE"),
        description="The public URL of the MCP endpoint, byte for byte as clients use it (https://host/mcp).",
    )
    scopes: Words = Field(
        default=SCOPES,
        validation_alias=env_alias("scopes", "DESKMCP_AUTH_SCOPES"),
        description="Scopes this server accepts (of read, write, send); tools needing another are never callable.",
    )
    algorithms: Words = Field(
        default=DEFAULT_ALGORITHMS,
        validation_alias=env_alias("algorithms", "DESKMCP_AUTH_ALGORITHMS"),
        description="JWS algorithms an access token may be signed with; 'none' and HMAC are never accepted.",
    )
    introspection_endpoint: OptionalText = Field(
        default=None,
        validation_alias=env_alias("introspection_endpoint", "DESKMCP_AUTH_INTROSPECTION_URL"),
        description="RFC 7662 endpoint for opaque tokens (default: the issuer metadata's, when a client is set).",
    )
    client_id: OptionalText = Field(
        default=None,
        validation_alias=env_alias("client_id", "DESKMCP_AUTH_CLIENT_ID"),
        description="This server's client id at the issuer, for introspection.",
    )
    client_secret: OptionalText = Field(
        default=None,
        validation_alias=env_alias("client_secret", "DESKMCP_AUTH_CLIENT_SECRET"),
        description="Its client secret (HTTP Basic at the introspection endpoint).",
    )
    leeway: int = Field(
        default=30,
        ge=0,
        le=300,
        validation_alias=env_alias("leeway", "DESKMCP_AUTH_LEEWAY"),
        description="Seconds of clock difference allowed on exp and nbf.",
    )
    jwks_refetch_interval: float = Field(
        default=60.0,
        ge=0,
        validation_alias=env_alias("jwks_refetch_interval", "DESKMCP_AUTH_JWKS_REFETCH_SECONDS"),
        description="Least time between two fetches of the issuer's keys caused by an unknown key id.",
    )
    jwks_max_age: float = Field(
        default=3600.0,
        gt=0,
        validation_alias=env_alias("jwks_max_age", "DESKMCP_AUTH_JWKS_MAX_AGE"),
        description="Seconds the issuer's keys are used before they are fetched again.",
    )

    token_types: Words = Field(
        default=("at+jwt",),
        validation_alias=env_alias("token_types", "DESKMCP_AUTH_TOKEN_TYPES"),
        description="JWT header typ values accepted on access tokens (RFC 9068's at+jwt; application/ and case "
        "are ignored); add JWT only for an issuer that cannot mark its access tokens.",
    )
    introspection_cache_seconds: float = Field(
        default=300.0,
        ge=0,
        validation_alias=env_alias("introspection_cache_seconds", "DESKMCP_AUTH_INTROSPECTION_CACHE_SECONDS"),
        description="Longest time an introspected token's answer is reused (never past the token's exp); "
        "0 asks the issuer on every request. A token revoked at the issuer is refused at most this late.",
    )

    @field_validator("token_types")
    @classmethod
    def _token_types(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise ValueError("DESKMCP_AUTH_TOKEN_TYPES needs at least one typ, e.g. at+jwt")
        return tuple(dict.fromkeys(media_type(v) for v in value))

    @field_validator("issuer")
    @classmethod
    def _issuer(cls, value: str) -> str:
        return check_url("DESKMCP_AUTH_ISSUER", value)

    @field_validator("resource")
    @classmethod
    def _resource(cls, value: str) -> str:
        check_url("DESKMCP_AUTH_RESOURCE", value)
        if urlsplit(value).path != MCP_PATH:
            raise ValueError(
                f"DESKMCP_AUTH_RESOURCE must be the URL of the MCP endpoint, ending in {MCP_PATH} "
                f"(https://desk.example.com{MCP_PATH}), not {value!r}; a proxy in front must keep paths unchanged"
            )
        return value

    @field_validator("scopes")
    @classmethod
    def _scopes(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [s for s in value if s not in SCOPES]
        if unknown or not value:
            raise ValueError(f"DESKMCP_AUTH_SCOPES takes some of {', '.join(SCOPES)}; not {', '.join(unknown)}")
        return tuple(s for s in SCOPES if s in value)

    @field_validator("algorithms")
    @classmethod
    def _algorithms(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        refused = [a for a in value if a.lower() == "none" or a.upper().startswith("HS")]
        if refused or not value:
            raise ValueError(
                f"DESKMCP_AUTH_ALGORITHMS may not contain {', '.join(refused) or 'nothing'}: access tokens must be "
                f"signed with the issuer's private key (e.g. {', '.join(DEFAULT_ALGORITHMS[:3])})"
            )
        return value

    @model_validator(mode="after")
    def _client(self) -> Self:
        if bool(self.client_id) != bool(self.client_secret):
            raise ValueError("set both DESKMCP_AUTH_CLIENT_ID and DESKMCP_AUTH_CLIENT_SECRET, or neither")
        if self.introspection_endpoint:
            check_url("DESKMCP_AUTH_INTROSPECTION_URL", self.introspection_endpoint)
            if not self.client_id:
                raise ValueError("DESKMCP_AUTH_INTROSPECTION_URL needs DESKMCP_AUTH_CLIENT_ID and _CLIENT_SECRET")
        return self

    @property
    def resource_path(self) -> str:
        """The path part of `resource` (`/mcp`)."""
        return urlsplit(self.resource).path or "/"

    @property
    def metadata_url(self) -> str:
        """RFC 9728's well-known URL for `resource`: `/.well-known/oauth-protected-resource` inserted
        between the host and the path (`https://host/.well-known/oauth-protected-resource/mcp`)."""
        parts = urlsplit(self.resource)
        path = parts.path if parts.path != "/" else ""
        return f"{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource{path}"

    @property
    def metadata_path(self) -> str:
        return urlsplit(self.metadata_url).path

    @property
    def basic_scope(self) -> str:
        """The scope a client is asked for first (read, when accepted): more comes by step-up."""
        return self.scopes[0]
