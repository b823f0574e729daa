"""The resource server at the HTTP door: Protected Resource Metadata, the bearer check, scopes.

`AuthorizationGate` wraps the whole HTTP app. It answers the Protected Resource Metadata itself
(RFC 9728, at the resource's path-inserted well-known URL, unauthenticated). For every other
request but the open routes (the health check, Google's `/callback` when it comes without a token:
one that comes with a token is checked, and acts for it) it

1. answers 401 with `WWW-Authenticate: Bearer resource_metadata="...", scope="read"` when no
   token comes, and the same with `error="invalid_token"` when the token fails a check;
2. answers 403 with `error="insufficient_scope", scope="<needed>"` when the request calls a tool
   (a `tools/call` on the MCP endpoint, or `POST /api/tools/NAME`) whose scope the token lacks,
   so the client can ask the person for more (step-up);
3. otherwise hands the request on as the SDK's own auth middleware would (`scope["user"]`, the
   SDK's access-token context, which its session ownership and request-state binding read) and
   inside `acting_for(principal)`, so everything per user sees who is asking.

`tools/list` and `GET /tools` then show only the tools the token's scopes allow
(`DeskServer.tools_for_principal`).
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

import orjson
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.routes import cors_middleware
from starlette.authentication import AuthCredentials
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from deskmcp.core.errors import AuthRequired, DeskError, ExternalServiceError, PermissionDenied
from deskmcp.core.principal import acting_for
from deskmcp.core.settings import raw
from deskmcp.serving.auth.issuer import IssuerUnavailable
from deskmcp.serving.auth.settings import AuthorizationSettings
from deskmcp.serving.auth.verifier import AccessTokenVerifier, TokenRefused, principal_of

log = logging.getLogger("deskmcp.serving.auth")

TOOL_API_PREFIX = "/api/tools/"


class ScopedTools(Protocol):
    """What the gate asks the server about its tools (`DeskServer` answers)."""

    tool_toolsets: dict[str, str]

    def tool_scope(self, name: str) -> str: ...


class ResourceServer:
    """deskmcp as an OAuth resource server: its settings, its token verifier, its metadata."""

    def __init__(self, settings: AuthorizationSettings, verifier: AccessTokenVerifier | None = None) -> None:
        self.settings = settings
        self.verifier = verifier or AccessTokenVerifier(settings)

    def metadata(self) -> dict[str, Any]:
        """RFC 9728 Protected Resource Metadata; `resource` and the issuer exactly as configured."""
        return {
            "resource": self.settings.resource,
            "authorization_servers": [self.settings.issuer],
            "scopes_supported": list(self.settings.scopes),
            "bearer_methods_supported": ["header"],
            "resource_name": "deskmcp",
        }

    def routes(self) -> list[Route]:
        """The metadata route, at the path-inserted well-known URL of the resource."""
        body = orjson.dumps(self.metadata())

        def handle(_request: Request) -> Response:
            return Response(body, media_type="application/json", headers={"Cache-Control": "public, max-age=3600"})

        return [
            Route(
                self.settings.metadata_path,
                endpoint=cors_middleware(handle, ["GET", "OPTIONS"]),
                methods=["GET", "OPTIONS"],
            )
        ]

    def challenge(self, *, error: str | None = None, scope: str | None = None, description: str | None = None) -> str:
        """The `WWW-Authenticate` value (RFC 6750 §3, RFC 9728 §5.1)."""
        parts: list[str] = []
        if error:
            parts.append(f'error="{error}"')
        parts.append(f'scope="{scope or self.settings.basic_scope}"')
        parts.append(f'resource_metadata="{self.settings.metadata_url}"')
        if description:
            parts.append(f'error_description="{_quotable(description)}"')
        return "Bearer " + ", ".join(parts)


def _quotable(text: str) -> str:
    """`text` safe inside a quoted-string: no quotes, backslashes or control characters."""
    return "".join(ch for ch in text if ch.isprintable() and ch not in '"\\')[:300]


def bearer_token(headers: Headers) -> str | None:
    scheme, _, value = headers.get("authorization", "").partition(" ")
    value = value.strip()
    return value if scheme.lower() == "bearer" and value else None


class AuthorizationGate:
    """ASGI middleware: only requests with a valid access token pass, each acting for its principal."""

    def __init__(
        self,
        app: ASGIApp,
        resource_server: ResourceServer,
        tools: ScopedTools,
        *,
        mcp_path: str,
        open_paths: frozenset[str],
        max_body_bytes: int,
        bound_paths: frozenset[str] = frozenset(),
    ) -> None:
        self.app = app
        self.rs = resource_server
        self.tools = tools
        self.mcp_path = mcp_path
        self.open_paths = open_paths
        self.bound_paths = bound_paths
        """Open paths where a token, when one is sent, is checked like anywhere else and the request
        acts for it (Google's `/callback`: a browser sends none, a client sending someone's must not
        finish another person's sign-in)."""
        self.max_body_bytes = max_body_bytes
        self.metadata_route = resource_server.routes()[0]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == self.rs.settings.metadata_path:
            if scope["method"] not in ("GET", "HEAD", "OPTIONS"):
                # The route would raise for the app's exception handler, which is inside this gate.
                refused = Response("Method Not Allowed", 405, {"Allow": "GET, HEAD, OPTIONS"}, media_type="text/plain")
                await refused(scope, receive, send)
                return
            await self.metadata_route.handle(scope, receive, send)
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        token = bearer_token(Headers(scope=scope))
        if scope["path"] in self.open_paths and (token is None or scope["path"] not in self.bound_paths):
            await self.app(scope, receive, send)
            return
        if token is None:
            denied = AuthRequired(
                "This server needs an OAuth access token: send 'Authorization: Bearer <token>'. "
                f"How to get one is described at {self.rs.settings.metadata_url}."
            )
            await _respond(denied, self.rs.challenge(), scope, receive, send)
            return
        try:
            access = await self.rs.verifier.check(token)
            principal = principal_of(access)
        except TokenRefused as exc:
            log.info("refused an access token: %s", exc)
            denied = AuthRequired(f"The access token was refused: {exc}. Authorize again to get a new one.")
            header = self.rs.challenge(error="invalid_token", description=str(exc))
            await _respond(denied, header, scope, receive, send)
            return
        except IssuerUnavailable as exc:
            log.warning("cannot verify access tokens: %s", exc)
            failed = ExternalServiceError(
                "The authorization server could not be reached to verify the access token; try again shortly.",
                {"service": "authorization server"},
            )
            await _respond(failed, None, scope, receive, send)
            return
        called, receive = await self._called_tools(scope, receive)
        for name in called:
            needed = self.tools.tool_scope(name)
            if needed not in principal.scopes:
                denied = PermissionDenied(
                    f"Tool {name} needs the {needed!r} scope, which this access token was not granted. "
                    f"Authorize again asking for scope {needed!r}.",
                    {"tool": name, "scope": needed},
                )
                header = self.rs.challenge(
                    error="insufficient_scope", scope=needed, description=f"tool {name} needs scope {needed}"
                )
                await _respond(denied, header, scope, receive, send, status=403)
                return
        user = AuthenticatedUser(access)
        scope["user"] = user
        scope["auth"] = AuthCredentials(access.scopes)
        reset = auth_context_var.set(user)
        try:
            with acting_for(principal):
                await self.app(scope, receive, send)
        finally:
            auth_context_var.reset(reset)

    async def _called_tools(self, scope: Scope, receive: Receive) -> tuple[list[str], Receive]:
        """The registered tools this request calls, and a `receive` that replays the body read."""
        if scope.get("method") != "POST":
            return [], receive
        path: str = scope["path"]
        if path.startswith(TOOL_API_PREFIX):
            name = path[len(TOOL_API_PREFIX) :]
            return ([name] if name in self.tools.tool_toolsets else []), receive
        if path.rstrip("/") != self.mcp_path:
            return [], receive
        body, replay = await _read_body(receive, self.max_body_bytes)
        if body is None:  # over the limit: the endpoint's own limit answers 413
            return [], replay
        try:
            payload = orjson.loads(body)
        except orjson.JSONDecodeError:
            return [], replay
        messages = payload if isinstance(payload, list) else [payload]
        names = [
            message["params"]["name"]
            for message in messages
            if isinstance(message, dict)
            and message.get("method") == "tools/call"
            and isinstance(message.get("params"), dict)
            and isinstance(message["params"].get("name"), str)
        ]
        return [n for n in names if n in self.tools.tool_toolsets], replay


async def _read_body(receive: Receive, limit: int) -> tuple[bytes | None, Receive]:
    """Read the request body (None when it passes `limit`) and a `receive` that hands the same
    messages on before the rest of the connection's."""
    held: list[Message] = []
    size = 0
    chunks: list[bytes] = []
    while True:
        message = await receive()
        held.append(message)
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        chunks.append(chunk)
        if size > limit or not message.get("more_body", False):
            break

    async def replay() -> Message:
        if held:
            return held.pop(0)
        return await receive()

    return (b"".join(chunks) if size <= limit else None), replay


async def _respond(
    error: DeskError, header: str | None, scope: Scope, receive: Receive, send: Send, *, status: int | None = None
) -> None:
    headers = {"WWW-Authenticate": header} if header else None
    response = Response(
        orjson.dumps(error.to_dict()),
        status_code=status or error.http_status,
        media_type="application/json",
        headers=headers,
    )
    await response(scope, receive, send)


def authorization_from_environment() -> AuthorizationSettings | None:
    """The settings when `DESKMCP_AUTH_ISSUER` is set, else None (no authorization server)."""
    if not raw(AuthorizationSettings, "issuer"):
        return None
    return AuthorizationSettings()  # type: ignore[call-arg]
