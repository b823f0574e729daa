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

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

from mcp.server.transport_security import TransportSecurityMiddleware
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp

from deskmcp import __version__
from deskmcp.core.errors import (
    BadRequest,
)
from deskmcp.gateway import Composition

if TYPE_CHECKING:
    from deskmcp.core.principal import Principal
    from deskmcp.serving.users import UsersSettings
from deskmcp.serving.hosts import is_loopback
from deskmcp.serving.middleware import (
    BearerGate,
    HostSyntax,
    TaxonomyErrors,
    ToolApiBodyLimit,
    UnbufferedEvents,
)
from deskmcp.serving.options import MCP_PATH, OPEN_PATHS, HttpOptions, security_settings
from deskmcp.serving.responses import json_response
from deskmcp.serving.toolapi import ToolApi, tool_routes


def composition_routes(composition: Composition, options: HttpOptions) -> tuple[ToolApi, list[BaseRoute]]:
    """What one composition serves, for one user or for each user alike: the tool API's routes and
    streamable MCP at `MCP_PATH` (the composition's session manager runs their lifespan)."""
    mcp_app = composition.server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=options.stateless,
        max_request_body_size=options.max_body_bytes,
        transport_security=security_settings(options),
        host=options.host,
    )
    api = ToolApi(composition, options)
    return api, [*tool_routes(api), *mcp_app.routes]


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
        api, served = composition_routes(composition, options)
        routes = [
            Route("/", api.health, methods=["GET"]),
            *_oauth_routes(composition, options, api.security),
            *served,
        ]
        lifespan = lambda _app: composition.server.session_manager.run()  # noqa: E731
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

        callbacks = _remote_callbacks(options)
        gate = Middleware(
            AuthorizationGate,
            resource_server=options.authorization,
            tools=composition.server,
            mcp_path=MCP_PATH,
            open_paths=OPEN_PATHS | callbacks,
            max_body_bytes=options.max_body_bytes,
            bound_paths=frozenset({"/callback"}) | callbacks,
        )
        middleware.insert(1, gate)
    if options.trusted_proxies:
        # Outermost: every check after it sees the client's address and scheme, not the proxy's.
        from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

        middleware.insert(0, Middleware(ProxyHeadersMiddleware, trusted_hosts=list(options.trusted_proxies)))
    return Starlette(routes=routes, middleware=middleware, lifespan=lifespan)


def _users_routes(
    users: UsersSettings, options: HttpOptions, name: str
) -> tuple[list[BaseRoute], Callable[[Starlette], AbstractAsyncContextManager[Any]]]:
    """Per-user serving (`deskmcp.serving.users`): the health check here, everything else in the app of
    the request's principal, built on first use: its own composition, tool API and `/mcp`."""
    from deskmcp.serving.users import UserDispatcher, user_composition

    def user_app(principal: Principal) -> tuple[ASGIApp, Callable[[], AbstractAsyncContextManager[Any]]]:
        composition = user_composition(
            principal, users, name=name, request_state_security=options.request_state_security
        )
        _api, served = composition_routes(composition, options)
        return Starlette(routes=served), composition.server.session_manager.run

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
    """`/auth/url` and `/callback` bound to the signed-in principal: the sealed-state flow
    (`PrincipalSignIn`, or the one `options.oauth` gives), each user's Google settings handed to it
    as data by the routes (`UsersGoogleSignIn`)."""
    from deskmcp.core.once import ledger
    from deskmcp.google.auth import GoogleSettings, sign_in_scopes
    from deskmcp.google.web import PrincipalSignIn
    from deskmcp.serving.signin import UsersGoogleSignIn
    from deskmcp.serving.users import per_user_servers, state_keys

    flow = options.oauth
    if not isinstance(flow, PrincipalSignIn):
        flow = PrincipalSignIn(
            state_keys(),
            default_scopes=sign_in_scopes(spec.name for spec in per_user_servers()),
            spent=ledger(GoogleSettings().database_url),
        )
    return _host_checked_routes(
        [*UsersGoogleSignIn(flow, users).routes(), *_remote_sign_in_routes(users, options)], security
    )


def _remote_callbacks(options: HttpOptions) -> frozenset[str]:
    """The callbacks of the users' remote sign-ins (users mode): a browser comes back there without
    deskmcp's token, authorised by the sealed state alone, like Google's `/callback`."""
    if options.users is None or options.users.users_root is None:
        return frozenset()
    from deskmcp.connect.remote_sign_in import callback_path
    from deskmcp.serving.users import remote_sign_ins

    return frozenset(callback_path(remote.name) for _spec, remote in remote_sign_ins())


def _remote_sign_in_routes(users: UsersSettings, options: HttpOptions) -> list[Route]:
    """`/auth/<name>/url`, `/auth/<name>/callback` and `DELETE /auth/<name>` for each remote MCP
    server a server declares its users sign in to (`UserPolicy.remote_sign_in`), bound to the
    signed-in principal, the state spent once in the shared database's ledger like Google's; each
    user's account resolved by the routes and handed to the flow as data (`UsersRemoteSignIn`)."""
    from deskmcp.connect.remote_sign_in import PrincipalRemoteSignIn
    from deskmcp.core.once import ledger
    from deskmcp.google.auth import GoogleSettings
    from deskmcp.serving.signin import UsersRemoteSignIn
    from deskmcp.serving.users import remote_sign_ins, state_keys

    keys = state_keys()
    spent = ledger(GoogleSettings().database_url)
    routes: list[Route] = []
    for spec, remote in remote_sign_ins():
        flow = PrincipalRemoteSignIn(remote.name, remote.service, keys, spent=spent)
        routes += UsersRemoteSignIn(flow, users, spec).routes()
    return routes


def _oauth_routes(
    composition: Composition, options: HttpOptions, security: TransportSecurityMiddleware
) -> list[BaseRoute]:
    """`GET /auth/url` and `GET /callback`: connect a Google account for the servers that use one.

    Both pass the tool API's Host/Origin checks (`security`) first: `/auth/url` builds its redirect
    address from the Host header, so a forged one would send Google's code to that host."""
    from deskmcp.google.auth import GoogleSettings, sign_in_scopes
    from deskmcp.google.web import OAuthRoutes

    names = sign_in_scopes(composition.included)
    oauth = options.oauth
    if oauth is None:
        settings = GoogleSettings(workspace=options.workspace) if options.workspace else None
        oauth = OAuthRoutes(settings, default_scopes=names)
    return _host_checked_routes(oauth.routes(), security)


def _host_checked(
    endpoint: Callable[[Request], Awaitable[Response]], security: TransportSecurityMiddleware
) -> Callable[[Request], Awaitable[Response]]:
    async def checked(request: Request) -> Response:
        if (rejected := await security.validate_request(request)) is not None:
            return rejected
        return await endpoint(request)

    return checked


def _host_checked_routes(routes: list[Route], security: TransportSecurityMiddleware) -> list[BaseRoute]:
    """`routes` each behind the Host/Origin checks (`security`)."""
    return [
        Route(r.path, _host_checked(r.endpoint, security), methods=list(r.methods or ()), name=r.name) for r in routes
    ]
