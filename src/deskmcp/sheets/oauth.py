"""The Google sign-in routes of the HTTP app: `GET /auth/url` and `GET /callback`.

`/auth/url` (behind the bearer token like the rest of the HTTP surface) answers the consent
URL, with a fresh `state` and a PKCE challenge. Google then sends the user's browser to
`/callback`, which cannot carry the bearer token: it is authorised instead by that one-time
`state`, which only a caller of `/auth/url` holds and which expires after ten minutes. The
code is exchanged with its PKCE verifier and the token stored through the `TokenStore`.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from deskmcp.core.errors import BadRequest, DeskError
from deskmcp.core.google_auth import GoogleSettings, WebAuthorization, scopes_for

if TYPE_CHECKING:
    from deskmcp.core.google_auth import TokenStore

CALLBACK_PATH = "/callback"

_PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>deskmcp</title>
<style>body{{font-family:system-ui,sans-serif;max-width:34em;margin:4em auto;line-height:1.5}}</style></head>
<body><h1>{title}</h1><p>{text}</p></body></html>"""


def page(title: str, text: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(_PAGE.format(title=html.escape(title), text=html.escape(text)), status_code=status)


class OAuthRoutes:
    """Handlers bound to one `WebAuthorization` per scope set, created on first use."""

    def __init__(
        self,
        settings: GoogleSettings | None = None,
        *,
        default_scopes: tuple[str, ...] = ("sheets",),
        store: TokenStore | None = None,
        transport: object = None,
    ) -> None:
        self._settings = settings
        self.default_scopes = default_scopes
        self.store = store
        self.transport = transport
        self._flows: dict[tuple[str, ...], WebAuthorization] = {}
        self._by_state: dict[str, WebAuthorization] = {}

    @property
    def settings(self) -> GoogleSettings:
        if self._settings is None:
            self._settings = GoogleSettings()
        return self._settings

    def flow(self, names: tuple[str, ...]) -> WebAuthorization:
        if names not in self._flows:
            self._flows[names] = WebAuthorization(
                self.settings,
                scopes_for(names),
                store=self.store,
                transport=self.transport,  # type: ignore[arg-type]
            )
        return self._flows[names]

    async def auth_url(self, request: Request) -> Response:
        names = tuple(n.strip() for n in request.query_params.get("scopes", "").split(",") if n.strip())
        try:
            flow = self.flow(names or self.default_scopes)
            redirect_uri = str(request.url_for("google_callback"))
            url = flow.start(redirect_uri)
        except DeskError as exc:
            return JSONResponse(exc.to_dict(), status_code=exc.http_status)
        state = dict(_query(url)).get("state", "")
        # Keep only the states their flow still holds, so this map is bounded like the flows are.
        self._by_state = {s: f for s, f in self._by_state.items() if f.is_pending(s)}
        self._by_state[state] = flow
        if request.query_params.get("redirect") in ("1", "true"):
            return RedirectResponse(url, status_code=302)
        return JSONResponse({"url": url, "redirect_uri": redirect_uri, "scopes": flow.scopes})

    async def callback(self, request: Request) -> Response:
        params = request.query_params
        state = params.get("state")
        flow = self._by_state.pop(state or "", None)
        try:
            if flow is None:
                raise BadRequest("Unknown or expired state: start again from /auth/url.", {"state": state})
            flow.finish(state, params.get("code"), params.get("error"))
        except DeskError as exc:
            return page("deskmcp was not authorised", exc.message, exc.http_status)
        return page("deskmcp is authorised", "The Google account is connected. You can close this window.")

    def routes(self) -> list[Route]:
        return [
            Route("/auth/url", self.auth_url, methods=["GET"]),
            Route(CALLBACK_PATH, self.callback, methods=["GET"], name="google_callback"),
        ]


def _query(url: str) -> list[tuple[str, str]]:
    import urllib.parse

    return urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query)
