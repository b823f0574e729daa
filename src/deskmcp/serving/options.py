"""What the HTTP app is told: `HttpOptions` (where it listens, its token or authorization server,
body and time limits, replicas, users mode), the token it requires, and the Host and Origin
values it accepts against DNS rebinding (the SDK's `TransportSecuritySettings`).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp.server.transport_security import (
    DEFAULT_MAX_REQUEST_BODY_SIZE,
    TransportSecuritySettings,
)
from pydantic import Field

from deskmcp.core.errors import (
    BadRequest,
)
from deskmcp.core.settings import env_alias
from deskmcp.core.shared_settings import ServerTokenSettings
from deskmcp.serving.hosts import bracketed, is_loopback

if TYPE_CHECKING:
    from deskmcp.serving.users import UsersSettings


MCP_PATH = "/mcp"
OPEN_PATHS = frozenset({"/", "/callback"})
"""Paths answered without a token: the health check, which then hides skip reasons, and Google's
redirect back to `/callback`, which a browser cannot send a token with: it is authorised by the
one-time `state` that only a caller of `/auth/url` (behind the token) holds. A `/callback` that does
come with a token is checked, and must be the token of whoever began that sign-in. In users mode the
callbacks of the users' sign-ins to remote MCP servers (`/auth/<name>/callback`) are answered the
same way (`app._remote_callbacks`)."""


class HttpSettings(ServerTokenSettings):
    """What `deskmcp serve --http` reads from the environment beside its options (`DESKMCP_*`):
    `DESKMCP_TOKEN` (`ServerTokenSettings`, which `deskmcp connect` sends too), `DESKMCP_ALLOWED_ORIGINS`."""

    allowed_origins: str = Field(
        default="",
        validation_alias=env_alias("allowed_origins", "DESKMCP_ALLOWED_ORIGINS"),
        description="Comma-separated browser origins (scheme://host[:port]) allowed besides the server's own.",
    )


@dataclass(frozen=True)
class HttpOptions:
    host: str = "127.0.0.1"
    port: int = 8765
    token: str | None = None
    max_body_bytes: int = DEFAULT_MAX_REQUEST_BODY_SIZE
    allowed_hosts: tuple[str, ...] = field(default_factory=tuple)
    allowed_origins: tuple[str, ...] = field(default_factory=tuple)
    """Web origins besides the server's own whose pages may call it (`DESKMCP_ALLOWED_ORIGINS`)."""
    workspace: Path | None = None
    """The workspace the servers use (where the Google token is kept by default)."""
    oauth: Any = None
    """The Google sign-in routes (`deskmcp.google.web.OAuthRoutes`), or in users mode the sign-in flow
    its routes use (`deskmcp.google.web.PrincipalSignIn`); built from the environment when None."""
    read_timeout: float = 30.0
    """Seconds a client has to send a whole request, head and body, before its connection is closed."""
    keep_alive_timeout: int = 5
    """Seconds an idle keep-alive connection stays open."""
    authorization: Any = None
    """OAuth resource server mode (`deskmcp.serving.auth.gate.ResourceServer`, from `DESKMCP_AUTH_*`):
    access tokens from an authorization server instead of `token`."""
    stateless: bool = False
    """MCP without sessions, so that any replica behind a load balancer can answer any request
    (`deskmcp.serving.replicas`; the replicas then share `DESKMCP_STATE_KEYS`)."""
    trusted_proxies: tuple[str, ...] = field(default_factory=tuple)
    request_state_security: Any = None
    """The replicas' shared request-state keys (`deskmcp.serving.replicas`) for the servers built per user;
    the composition given to `create_app` already has them."""
    """Addresses or networks whose X-Forwarded-For / X-Forwarded-Proto are believed; nobody's by default."""
    users: UsersSettings | None = None
    """With a users root: each verified principal gets their own workspace and servers (`deskmcp.serving.users`);
    the composition given to `create_app` then only names the tools (it is never called)."""


def resolve_token(host: str, configured: str | None) -> tuple[str | None, bool]:
    """The token to require, and whether it was generated here (so the caller prints it once)."""
    if configured:
        return configured, False
    if is_loopback(host):
        return None, False
    return secrets.token_urlsafe(32), True


def _host_forms(host: str) -> list[str]:
    return [bracketed(host), f"{bracketed(host)}:*"]


def parse_origins(value: str) -> tuple[str, ...]:
    """`"https://a.example, http://b.local:8080"` -> the origins, each `scheme://host[:port]`.

    An origin is what a browser sends in `Origin`: no path, no wildcard; a trailing slash is dropped."""
    from urllib.parse import urlsplit

    origins: list[str] = []
    for part in value.split(","):
        origin = part.strip().rstrip("/")
        if not origin:
            continue
        try:
            parts = urlsplit(origin)
            parts.port  # noqa: B018 (raises ValueError on a port that is not a number)
        except ValueError:
            parts = None
        if (
            parts is None
            or parts.scheme not in ("http", "https")
            or not parts.hostname
            or "@" in parts.netloc
            or parts.path
            or parts.query
        ):
            raise BadRequest(
                f"{origin!r} in DESKMCP_ALLOWED_ORIGINS is not a web origin; write scheme://host[:port], "
                "e.g. https://desk.example.com or http://localhost:3000, comma-separated.",
                {"origin": origin},
            )
        origins.append(f"{parts.scheme}://{parts.netloc.lower()}")
    return tuple(dict.fromkeys(origins))


def security_settings(options: HttpOptions) -> TransportSecuritySettings:
    """Allowed Host and Origin values.

    Host (against DNS rebinding): the loopback names, the bound address and `--allow-host` names,
    at any port. Origin (which web pages may call): only the server's own origin, http at its own
    port under each of those names, plus `allowed_origins`; a page served on another port of
    127.0.0.1 is another origin and is refused. Requests without Origin (programs) are not affected."""
    names = ["127.0.0.1", "localhost", "::1"]
    if options.host not in ("0.0.0.0", "::") and not is_loopback(options.host):
        names.append(options.host)
    names += list(options.allowed_hosts)
    names = list(dict.fromkeys(names))
    hosts = [form for name in names for form in _host_forms(name)]
    origins = [f"http://{bracketed(name)}:{options.port}" for name in names]
    if options.port == 80:  # a browser leaves the scheme's default port out of Origin
        origins += [f"http://{bracketed(name)}" for name in names]
    origins += list(options.allowed_origins)
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)
