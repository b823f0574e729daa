"""The users' sign-ins over HTTP when deskmcp serves several users (`DESKMCP_USERS_ROOT`): Google's,
`GET /auth/url` and `GET /callback`; and each remote MCP server a server declares its users sign in
to (`UserPolicy.remote_sign_in`), `GET /auth/<name>/url`, `GET /auth/<name>/callback` and
`DELETE /auth/<name>`.

The flow itself (a sealed state bound to the signed-in principal, spent once, the code exchanged
and the token stored) is `deskmcp.google.web.PrincipalSignIn`, in steps that take a user's Google
settings as data. These routes resolve those settings here, in users mode, where a user's
settings are known: `/auth/url` for the principal signed in, `/callback` for the principal the
opened state names, once the flow has checked it. Nothing calls back into serving. The remote
sign-ins are alike: the flow is `deskmcp.connect.remote_sign_in.PrincipalRemoteSignIn`, and the
user's `RemoteAccount` (the deployment's address of the remote, their own token record) is
resolved here.
"""

from __future__ import annotations

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from deskmcp.connect import remote_sign_in
from deskmcp.connect.remote_sign_in import PrincipalRemoteSignIn, callback_path, url_path
from deskmcp.core.errors import AuthRequired, DeskError
from deskmcp.core.principal import current_principal
from deskmcp.google.web import PrincipalSignIn, authorised, not_authorised, sign_in_routes
from deskmcp.servers import ServerSpec
from deskmcp.serving.users import UsersSettings, google_settings, remote_account


class UsersGoogleSignIn:
    """`/auth/url` and `/callback` for every user of one users root, over one `PrincipalSignIn`."""

    def __init__(self, flow: PrincipalSignIn, users: UsersSettings) -> None:
        self.flow = flow
        self.users = users

    async def auth_url(self, request: Request) -> Response:
        principal = current_principal()
        if principal is None:
            denied = AuthRequired("Sign in to deskmcp first: connecting Google is done for the signed-in user.")
            return JSONResponse(denied.to_dict(), status_code=denied.http_status)
        names = tuple(n.strip() for n in request.query_params.get("scopes", "").split(",") if n.strip())
        redirect_uri = str(request.url_for("google_callback"))
        try:
            url, scopes = self.flow.begin(principal, google_settings(principal, self.users), redirect_uri, names)
        except DeskError as exc:
            return JSONResponse(exc.to_dict(), status_code=exc.http_status)
        if request.query_params.get("redirect") in ("1", "true"):
            return RedirectResponse(url, status_code=302)
        return JSONResponse({"url": url, "redirect_uri": redirect_uri, "scopes": scopes})

    async def callback(self, request: Request) -> Response:
        params = request.query_params
        try:
            returned = self.flow.returned(
                params.get("state"), params.get("code"), params.get("error"), caller=current_principal()
            )
            self.flow.finish(returned, google_settings(returned.owner, self.users))
        except DeskError as exc:
            return not_authorised(exc)
        return authorised()

    def routes(self) -> list[Route]:
        return sign_in_routes(self.auth_url, self.callback)


class UsersRemoteSignIn:
    """`/auth/<name>/url`, `/auth/<name>/callback` and `DELETE /auth/<name>` for every user of one
    users root, over one `PrincipalRemoteSignIn` to the remote that `spec`'s server declares."""

    def __init__(self, flow: PrincipalRemoteSignIn, users: UsersSettings, spec: ServerSpec) -> None:
        self.flow = flow
        self.users = users
        self.spec = spec

    def _signed_in_first(self, what: str) -> Response:
        denied = AuthRequired(f"Sign in to deskmcp first: {what} {self.flow.service} is the signed-in user's.")
        return JSONResponse(denied.to_dict(), status_code=denied.http_status)

    async def auth_url(self, request: Request) -> Response:
        principal = current_principal()
        if principal is None:
            return self._signed_in_first("the sign-in to")
        redirect_uri = str(request.url_for(self.flow.route_name))
        try:
            account = remote_account(principal, self.users, self.spec)
            url = await anyio.to_thread.run_sync(self.flow.begin, principal, account, redirect_uri)
        except DeskError as exc:
            return JSONResponse(exc.to_dict(), status_code=exc.http_status)
        if request.query_params.get("redirect") in ("1", "true"):
            return RedirectResponse(url, status_code=302)
        return JSONResponse({"url": url, "redirect_uri": redirect_uri, "service": self.flow.service})

    async def callback(self, request: Request) -> Response:
        params = request.query_params

        def finish() -> None:
            returned = self.flow.returned(params.get("state"), current_principal(), params.get("iss"))
            account = remote_account(returned.owner, self.users, self.spec)
            self.flow.finish(returned, account, params.get("code"), params.get("error"))

        try:
            await anyio.to_thread.run_sync(finish)
        except DeskError as exc:
            return remote_sign_in.not_authorised(exc)
        return remote_sign_in.authorised(self.flow.service)

    async def sign_out(self, request: Request) -> Response:
        principal = current_principal()
        if principal is None:
            return self._signed_in_first("the sign-out from")
        try:
            account = remote_account(principal, self.users, self.spec)
            had = await anyio.to_thread.run_sync(self.flow.sign_out, account)
        except DeskError as exc:
            return JSONResponse(exc.to_dict(), status_code=exc.http_status)
        return JSONResponse({"service": self.flow.service, "signed_out": had})

    def routes(self) -> list[Route]:
        name = self.flow.name
        return [
            Route(url_path(name), self.auth_url, methods=["GET"]),
            Route(callback_path(name), self.callback, methods=["GET"], name=self.flow.route_name),
            Route(f"/auth/{name}", self.sign_out, methods=["DELETE"]),
        ]
