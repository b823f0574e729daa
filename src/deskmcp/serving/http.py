"""The HTTP face of a composed server: streamable MCP at `/mcp`, and a tool API for programs
that don't speak MCP (`GET /`, `GET /tools`, `POST /api/tools/{name}`, `GET /openapi.json`).

Both faces call the same `DeskServer.call_tool`, so a tool behaves and fails the same way
whichever door it was called through. Security, in order of the request's path:

1. bearer token (`Authorization: Bearer ...`) on everything but the health check, required
   whenever the server is bound to anything but loopback: the static token (`DESKMCP_TOKEN`, one
   person on one machine), or an OAuth access token from the configured authorization server,
   with the scope of each tool called (`deskmcp.serving.auth`, docs/authorization.md);
2. body size limit (413) before any handler reads the body;
3. Host/Origin checks against DNS rebinding (the SDK's `TransportSecuritySettings`), on the
   tool API and the Google sign-in routes here and on `/mcp` by the SDK's session manager.

A client gets `read_timeout` seconds to send a whole request (head and body): uvicorn alone
waits for ever on a connection that sends its headers a byte at a time.

Every refusal is the taxonomy's JSON body with its HTTP status (`TaxonomyErrors` rewrites the
plain-text ones the SDK and Starlette produce).
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import logging
import re
import secrets
import socket
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from mcp.server.transport_security import (
    DEFAULT_MAX_REQUEST_BODY_SIZE,
    RequestBodyLimitMiddleware,
    TransportSecurityMiddleware,
    TransportSecuritySettings,
)
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, TextContent
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from deskmcp import __version__
from deskmcp.core.errors import (
    AuthRequired,
    BadRequest,
    DeskError,
    InternalError,
    NotFound,
    PermissionDenied,
    from_payload,
)
from deskmcp.gateway import Composition
from deskmcp.serving.openapi import openapi_document

if TYPE_CHECKING:
    from deskmcp.core.principal import Principal
    from deskmcp.serving.users import UsersSettings

log = logging.getLogger("deskmcp.http")

MCP_PATH = "/mcp"
OPEN_PATHS = frozenset({"/", "/callback"})
"""Paths answered without a token: the health check, which then hides skip reasons, and Google's
redirect back to `/callback`, which a browser cannot send a token with: it is authorised by the
one-time `state` that only a caller of `/auth/url` (behind the token) holds. A `/callback` that does
come with a token is checked, and must be the token of whoever began that sign-in."""


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
    """The Google sign-in routes (`deskmcp.google.web.OAuthRoutes`); built from the environment when None."""
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


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def resolve_token(host: str, configured: str | None) -> tuple[str | None, bool]:
    """The token to require, and whether it was generated here (so the caller prints it once)."""
    if configured:
        return configured, False
    if is_loopback(host):
        return None, False
    return secrets.token_urlsafe(32), True


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _host_forms(host: str) -> list[str]:
    return [_bracketed(host), f"{_bracketed(host)}:*"]


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
    origins = [f"http://{_bracketed(name)}:{options.port}" for name in names]
    if options.port == 80:  # a browser leaves the scheme's default port out of Origin
        origins += [f"http://{_bracketed(name)}" for name in names]
    origins += list(options.allowed_origins)
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)


def json_response(payload: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(payload), status_code=status, media_type="application/json", headers=headers)


def error_response(exc: DeskError) -> Response:
    headers = {"WWW-Authenticate": 'Bearer realm="deskmcp"'} if isinstance(exc, AuthRequired) else None
    return json_response(exc.to_dict(), exc.http_status, headers)


def bearer_ok(headers: Headers, token: str | None) -> bool:
    if token is None:
        return True
    scheme, _, value = headers.get("authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), token.encode())


class BearerGate:
    """Refuse every request without the right bearer token, except on `OPEN_PATHS`."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS or bearer_ok(Headers(scope=scope), self.token):
            await self.app(scope, receive, send)
            return
        denied = AuthRequired(
            "Missing or wrong bearer token. Send 'Authorization: Bearer <token>' with the token the server "
            "printed at start-up or the value of DESKMCP_TOKEN.",
        )
        await error_response(denied)(scope, receive, send)


PLAIN_ERRORS: dict[int, tuple[type[DeskError], str]] = {
    400: (BadRequest, "The request was refused: {text}. Send a JSON body with 'Content-Type: application/json'."),
    403: (
        PermissionDenied,
        "The request was refused: {text}. Web pages may only call from the server's own origin; "
        "allow another with DESKMCP_ALLOWED_ORIGINS=scheme://host[:port] (or --allow-origin).",
    ),
    404: (NotFound, "No such endpoint. The MCP endpoint is /mcp; the tool API is GET /tools and POST /api/tools/NAME."),
    405: (BadRequest, "Method not allowed on this endpoint: {text}. GET /tools lists the tools; POST calls one."),
    413: (
        BadRequest,
        "The request body is too large (over {limit}). Send less, or start the server with a larger --max-body-mb.",
    ),
    421: (
        PermissionDenied,
        "The request was refused: {text}. Call the server by an allowed host name (127.0.0.1, localhost), "
        "or start it with --allow-host NAME.",
    ),
}
"""Plain-text refusals from Starlette and the SDK's transport checks, and the taxonomy error each becomes."""


class TaxonomyErrors:
    """Answer every plain-text error (413, the Host/Origin checks, unknown routes) with the
    taxonomy's JSON body and the same status. JSON bodies (tool errors, JSON-RPC errors on /mcp)
    and HTML pages (the Google sign-in's) pass through untouched."""

    def __init__(self, app: ASGIApp, max_body_bytes: int) -> None:
        self.app = app
        self.limit = f"{max_body_bytes / 1024 / 1024:g} MiB"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        held: dict[str, Any] = {}

        async def rewrite(message: Message) -> None:
            if message["type"] == "http.response.start":
                status = message["status"]
                content_type = Headers(raw=message.get("headers", [])).get("content-type", "")
                # JSON bodies are already the taxonomy's; HTML is a page for a person's browser
                # (the Google sign-in's), shown as written.
                answered = ("application/json", "text/event-stream", "text/html")
                if status in PLAIN_ERRORS and not content_type.startswith(answered):
                    held["start"] = message
                    held["body"] = b""
                    return
                await send(message)
                return
            if "start" not in held or message["type"] != "http.response.body":
                await send(message)
                return
            held["body"] += message.get("body", b"")
            if message.get("more_body", False):
                return
            start = held.pop("start")
            cls, template = PLAIN_ERRORS[start["status"]]
            text = held.pop("body").decode("utf-8", "replace").strip() or "refused"
            error = cls(template.format(text=text, limit=self.limit), {"status": start["status"], "reason": text})
            body = orjson.dumps(error.to_dict())
            headers = [
                (k, v) for k, v in start.get("headers", []) if k.lower() not in (b"content-type", b"content-length")
            ]
            headers += [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, rewrite)


_HOST = re.compile(r"(?:[A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?")
"""A Host header's shape: a name or an IPv4 address, or a bracketed IPv6 address, and a port."""


class HostSyntax:
    """Refuse (421) a Host header that is no host name and port (`localhost:1@evil.example`), before
    the allowed-host check, which matches `localhost:*` by its beginning."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            host = Headers(scope=scope).get("host")
            if host is not None and _HOST.fullmatch(host) is None:
                response = Response("Invalid Host header", status_code=421, media_type="text/plain")
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


class UnbufferedEvents:
    """Mark every event stream `X-Accel-Buffering: no`, so that a proxy (nginx reads the header)
    passes each event on as it comes instead of holding the response until it ends."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def marked(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                is_stream = Headers(raw=headers).get("content-type", "").startswith("text/event-stream")
                if is_stream and all(k.lower() != b"x-accel-buffering" for k, _ in headers):
                    message = {**message, "headers": [*headers, (b"x-accel-buffering", b"no")]}
            await send(message)

        await self.app(scope, receive, marked)


class ToolApiBodyLimit:
    """413 for tool API bodies over the limit; `/mcp` gets the same limit from the SDK's session manager."""

    def __init__(self, app: ASGIApp, max_body_size: int) -> None:
        self.app = app
        self.limited = RequestBodyLimitMiddleware(app, max_body_size)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        target = self.app if scope.get("path") == MCP_PATH else self.limited
        await target(scope, receive, send)


def tool_result_body(result: object) -> tuple[int, Any]:
    """The HTTP status and JSON body for what `DeskServer.call_tool` returned."""
    if not isinstance(result, CallToolResult):
        # An InputRequiredResult: the tool wants to ask the user something, which needs MCP.
        exc = BadRequest("This tool needs interactive input; call it through the MCP endpoint /mcp.")
        return exc.http_status, exc.to_dict()
    if result.is_error:
        text = "".join(c.text for c in result.content if isinstance(c, TextContent))
        try:
            payload = orjson.loads(text)
        except orjson.JSONDecodeError:
            payload = {"error": "internal_error", "message": text}
        exc = from_payload(payload if isinstance(payload, dict) else {"message": text})
        return exc.http_status, exc.to_dict()
    if result.structured_content is not None:
        return 200, result.structured_content
    return 200, {"content": [c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in result.content]}


class ToolApi:
    """The REST handlers, bound to one composition."""

    def __init__(self, composition: Composition, options: HttpOptions) -> None:
        self.composition = composition
        self.server = composition.server
        self.options = options
        self.security = TransportSecurityMiddleware(security_settings(options))

    async def tools(self) -> list[dict[str, Any]]:
        """The enabled tools, output schemas included (programs use them); toolsets may change."""
        listed = self.server.tools_for_principal(await self.server.tool_definitions(output_schemas=True))
        return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed]

    async def health(self, request: Request) -> Response:
        if (rejected := await self.security.validate_request(request)) is not None:
            return rejected
        body: dict[str, Any] = {
            "status": "ok",
            "name": "deskmcp",
            "version": __version__,
            "servers": self.composition.included,
            "skipped": sorted(self.composition.skipped),
            "tools": len(await self.tools()),
            "mcp": MCP_PATH,
            "auth": "oauth" if self.options.authorization else "bearer" if self.options.token else "none",
        }
        # Skip reasons name local paths: only for callers who hold the token (or when none is needed).
        if self.options.authorization is None and bearer_ok(request.headers, self.options.token):
            body["skipped_reasons"] = self.composition.skipped
        return json_response(body)

    async def list_tools(self, request: Request) -> Response:
        if (rejected := await self.security.validate_request(request)) is not None:
            return rejected
        return json_response(await self.tools())

    async def openapi(self, request: Request) -> Response:
        if (rejected := await self.security.validate_request(request)) is not None:
            return rejected
        bearer = self.options.token is not None or self.options.authorization is not None
        return json_response(openapi_document(await self.tools(), bearer=bearer))

    async def call(self, request: Request) -> Response:
        # is_post: a JSON content type is required, which a cross-site form or "simple" request cannot send.
        if (rejected := await self.security.validate_request(request, is_post=True)) is not None:
            return rejected
        name = request.path_params["name"]
        try:
            raw = await request.body()
        except ClientDisconnect:  # gone before its request was whole: nothing to run, no one to answer
            log.info("a client left while sending its call of %s", name)
            return Response(status_code=400)
        try:
            arguments = orjson.loads(raw) if raw.strip() else {}
        except orjson.JSONDecodeError as exc:
            return error_response(BadRequest(f"The body is not valid JSON ({exc}). Send a JSON object of arguments."))
        if not isinstance(arguments, dict):
            return error_response(
                BadRequest('The body must be a JSON object of arguments, e.g. {} or {"q": "budget"}.')
            )
        try:
            # DeskServer.call_tool answers the taxonomy's errors as results; only the SDK's and crashes raise.
            result = await self.server.call_tool(name, arguments)
        except MCPError as exc:
            return error_response(InternalError(f"Tool {name} failed: {exc.error.message}", {"tool": name}))
        except Exception:  # the outermost handler: log the traceback, never send it
            log.exception("tool %s crashed behind the tool API", name)
            return error_response(
                InternalError(f"Tool {name} failed unexpectedly; the server log has the details.", {"tool": name})
            )
        status, body = tool_result_body(result)
        return json_response(body, status)


def create_app(composition: Composition, options: HttpOptions | None = None) -> Starlette:
    """The ASGI app: MCP at `/mcp` and the tool API, sharing one lifespan (the session manager's,
    which also opens and closes every server's services)."""
    options = options or HttpOptions()
    if options.token is not None and options.authorization is not None:
        raise BadRequest(
            "DESKMCP_TOKEN and DESKMCP_AUTH_ISSUER are both set: use the static token (one person on one "
            "machine) or an authorization server, not both."
        )
    if options.token is None and options.authorization is None and not is_loopback(options.host):
        raise BadRequest(
            f"Refusing to serve {options.host} without a bearer token; set DESKMCP_TOKEN or bind 127.0.0.1.",
            {"host": options.host},
        )
    lifespan: Callable[[Starlette], AbstractAsyncContextManager[Any]]
    if options.users is not None and options.users.users_root is not None:
        routes, lifespan = _users_routes(options.users, options, composition.server.name)
    else:
        server = composition.server
        mcp_app = server.streamable_http_app(
            streamable_http_path=MCP_PATH,
            stateless_http=options.stateless,
            max_request_body_size=options.max_body_bytes,
            transport_security=security_settings(options),
            host=options.host,
        )
        api = ToolApi(composition, options)
        routes = [
            Route("/", api.health, methods=["GET"]),
            *_tool_routes(api),
            *_oauth_routes(composition, options, api.security),
            *mcp_app.routes,
        ]
        lifespan = lambda _app: server.session_manager.run()  # noqa: E731
    middleware = [
        Middleware(TaxonomyErrors, max_body_bytes=options.max_body_bytes),
        Middleware(HostSyntax),
        Middleware(ToolApiBodyLimit, max_body_size=options.max_body_bytes),
        Middleware(UnbufferedEvents),
    ]
    if options.token is not None:
        middleware.insert(1, Middleware(BearerGate, token=options.token))
    if options.authorization is not None:
        from deskmcp.serving.auth.gate import AuthorizationGate

        gate = Middleware(
            AuthorizationGate,
            resource_server=options.authorization,
            tools=composition.server,
            mcp_path=MCP_PATH,
            open_paths=OPEN_PATHS,
            max_body_bytes=options.max_body_bytes,
            bound_paths=frozenset({"/callback"}),
        )
        middleware.insert(1, gate)
    if options.trusted_proxies:
        # Outermost: every check after it sees the client's address and scheme, not the proxy's.
        from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

        middleware.insert(0, Middleware(ProxyHeadersMiddleware, trusted_hosts=list(options.trusted_proxies)))
    return Starlette(routes=routes, middleware=middleware, lifespan=lifespan)


def _tool_routes(api: ToolApi) -> list[BaseRoute]:
    return [
        Route("/tools", api.list_tools, methods=["GET"]),
        Route("/openapi.json", api.openapi, methods=["GET"]),
        Route("/api/tools/{name}", api.call, methods=["POST"]),
    ]


def _users_routes(
    users: UsersSettings, options: HttpOptions, name: str
) -> tuple[list[BaseRoute], Callable[[Starlette], AbstractAsyncContextManager[Any]]]:
    """Per-user serving (`deskmcp.serving.users`): the health check here, everything else in the app of
    the request's principal, built on first use: its own composition, tool API and `/mcp`."""
    from deskmcp.serving.users import UserDispatcher, compose_for

    def user_app(principal: Principal) -> tuple[ASGIApp, Callable[[], AbstractAsyncContextManager[Any]]]:
        composition = compose_for(principal, users, name=name, request_state_security=options.request_state_security)
        server = composition.server
        mcp_app = server.streamable_http_app(
            streamable_http_path=MCP_PATH,
            stateless_http=options.stateless,
            max_request_body_size=options.max_body_bytes,
            transport_security=security_settings(options),
            host=options.host,
        )
        api = ToolApi(composition, options)
        return Starlette(routes=[*_tool_routes(api), *mcp_app.routes]), server.session_manager.run

    dispatcher = UserDispatcher(user_app, live=users.live)
    security = TransportSecurityMiddleware(security_settings(options))

    async def health(request: Request) -> Response:
        if (rejected := await security.validate_request(request)) is not None:
            return rejected
        return json_response(
            {"status": "ok", "name": "deskmcp", "version": __version__, "mcp": MCP_PATH, "users": "per principal"}
        )

    routes: list[BaseRoute] = [
        Route("/", health, methods=["GET"]),
        *_users_oauth_routes(users, options, security),
        Mount("/", app=dispatcher),
    ]
    return routes, lambda _app: dispatcher.run()


def _users_oauth_routes(
    users: UsersSettings, options: HttpOptions, security: TransportSecurityMiddleware
) -> list[BaseRoute]:
    """`/auth/url` and `/callback` bound to the signed-in principal (`PrincipalOAuthRoutes`)."""
    from deskmcp.core.once import ledger
    from deskmcp.google.auth import GoogleSettings
    from deskmcp.google.web import PrincipalOAuthRoutes
    from deskmcp.serving.users import google_settings, state_keys

    oauth = options.oauth
    if not isinstance(oauth, PrincipalOAuthRoutes):
        oauth = PrincipalOAuthRoutes(
            lambda p: google_settings(p, users),
            state_keys(),
            default_scopes=("sheets", "mail"),
            spent=ledger(GoogleSettings().google_token_database),
        )
    return [
        Route(r.path, _host_checked(r.endpoint, security), methods=list(r.methods or ()), name=r.name)
        for r in oauth.routes()
    ]


def _oauth_routes(
    composition: Composition, options: HttpOptions, security: TransportSecurityMiddleware
) -> list[BaseRoute]:
    """`GET /auth/url` and `GET /callback`: connect a Google account for the servers that use one.

    Both pass the tool API's Host/Origin checks (`security`) first: `/auth/url` builds its redirect
    address from the Host header, so a forged one would send Google's code to that host."""
    from deskmcp.google.auth import GoogleSettings
    from deskmcp.google.web import OAuthRoutes

    names = tuple(n for n in ("sheets", "mail") if n in composition.included) or ("sheets",)
    oauth = options.oauth
    if oauth is None:
        settings = GoogleSettings(workspace=options.workspace) if options.workspace else None
        oauth = OAuthRoutes(settings, default_scopes=names)
    guarded: list[BaseRoute] = []
    for route in oauth.routes():
        guarded.append(
            Route(
                route.path, _host_checked(route.endpoint, security), methods=list(route.methods or ()), name=route.name
            )
        )
    return guarded


def _host_checked(
    endpoint: Callable[[Request], Awaitable[Response]], security: TransportSecurityMiddleware
) -> Callable[[Request], Awaitable[Response]]:
    async def checked(request: Request) -> Response:
        if (rejected := await security.validate_request(request)) is not None:
            return rejected
        return await endpoint(request)

    return checked


def uvicorn_settings(options: HttpOptions) -> dict[str, Any]:
    """The uvicorn `Config` arguments that bound what a slow or idle client can hold (and send
    each response without waiting on Nagle's algorithm, see `read_timeout_protocol`).

    uvicorn's own X-Forwarded-* handling is off: it would believe any loopback peer by default;
    the app believes only `HttpOptions.trusted_proxies`."""
    return {
        "http": read_timeout_protocol(options.read_timeout),
        "timeout_keep_alive": options.keep_alive_timeout,
        "proxy_headers": False,
    }


def read_timeout_protocol(seconds: float) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol, closing a connection whose request (head and body) has not fully
    arrived `seconds` after the connection opened or the previous response ended.

    uvicorn has no such limit of its own: its keep-alive timer stops at the first byte received,
    so a client sending a header a byte at a time would hold a connection (and its memory) for ever.

    Each connection also gets TCP_NODELAY. asyncio sets it only on sockets created with
    `IPPROTO_TCP` named, which uvicorn's (and `bind`'s) are not; without it the body written after
    a response's head waited for the client's delayed ACK, about 40 ms on every request of a
    kept-alive connection.
    """
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class ReadTimeoutH11Protocol(H11Protocol):
        _read_deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            sock = transport.get_extra_info("socket")
            if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
                with suppress(OSError):
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            super().connection_made(transport)
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def handle_events(self) -> None:
            super().handle_events()
            if self.conn.their_state is not h11.IDLE and self.conn.their_state is not h11.SEND_BODY:
                self._disarm()  # the whole request is in (or the connection is done with)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and self.conn.their_state in (h11.IDLE, h11.SEND_BODY):
                self._arm()

        def _arm(self) -> None:
            self._disarm()
            self._read_deadline = self.loop.call_later(seconds, self._too_slow)

        def _disarm(self) -> None:
            if self._read_deadline is not None:
                self._read_deadline.cancel()
                self._read_deadline = None

        def _too_slow(self) -> None:
            self._read_deadline = None
            if not self.transport.is_closing():
                log.info("closing a connection whose request took over %g s to arrive", seconds)
                self.transport.close()

    return ReadTimeoutH11Protocol


def bind(host: str, port: int) -> socket.socket:
    """A TCP socket bound to (host, port), as uvicorn would bind it; raises OSError when that
    address cannot be had (`errno.EADDRINUSE`: the port is in use).

    Bound before any server is built, so a busy port is reported at once; the socket is then
    handed to uvicorn, so nothing can take the port in between."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        # As uvicorn does: a port whose last connections are in TIME_WAIT is free.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
    except OSError:
        sock.close()
        raise
    return sock


def serve(
    composition: Composition,
    options: HttpOptions,
    *,
    log_level: str = "warning",
    on_ready: Callable[[], None] | None = None,
    sock: socket.socket | None = None,
) -> None:
    """Run the app under uvicorn until interrupted; `on_ready` is called once it is listening.
    `sock` is the socket from `bind` (else uvicorn binds host and port itself)."""
    import uvicorn

    class AnnouncingServer(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.should_exit:
                return
            if sockets:  # uvicorn logs where it listens only for the sockets it binds itself
                host, port = sockets[0].getsockname()[:2]
                where = f"[{host}]" if ":" in host else host
                logging.getLogger("uvicorn.error").info("Uvicorn running on http://%s:%d", where, port)
            if on_ready is not None:
                on_ready()

    app = create_app(composition, options)
    config = uvicorn.Config(
        app, host=options.host, port=options.port, log_level=log_level.lower(), **uvicorn_settings(options)
    )
    AnnouncingServer(config).run(sockets=[sock] if sock is not None else None)
