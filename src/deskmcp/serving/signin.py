"""The users' Google sign-in over HTTP: `GET /auth/url` and `GET /callback` when deskmcp serves
several users (`DESKMCP_USERS_ROOT`).

The flow itself (a sealed state bound to the signed-in principal, spent once, the code exchanged
and the token stored) is `deskmcp.google.web.PrincipalSignIn`, in steps that take a user's Google
settings as data. These routes resolve those settings here, in users mode, where a user's
settings are known: `/auth/url` for the principal signed in, `/callback` for the principal the
opened state names, once the flow has checked it. Nothing calls back into serving.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from deskmcp.core.errors import AuthRequired, DeskError
from deskmcp.core.principal import current_principal
from deskmcp.google.web import PrincipalSignIn, authorised, not_authorised, sign_in_routes
from deskmcp.serving.users import UsersSettings, google_settings


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
