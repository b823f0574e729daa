"""Connecting a Google account over HTTP: `GET /auth/url` and `GET /callback` on the HTTP app.

`/auth/url` (behind the bearer token like the rest of the HTTP surface) answers the consent
URL, with a fresh `state` and a PKCE challenge. Google then sends the user's browser to
`/callback`, which cannot carry the bearer token: it is authorised instead by that one-time
`state`, which only a caller of `/auth/url` holds and which expires after ten minutes. The
code is exchanged with its PKCE verifier and the token stored through the `TokenStore`. One
set of routes serves every server that uses Google (mail, sheets): `?scopes=mail,sheets`.

`OAuthRoutes` are those routes for one user. When deskmcp serves several users, `PrincipalSignIn`
is the same flow in steps that take each user's settings as data, and the routes are serving's
(`deskmcp.serving.signin`), where a user's settings are known.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from deskmcp.core.dates import utc_stamp
from deskmcp.core.errors import AuthRequired, BadRequest, DeskError, ExternalServiceError, PermissionDenied
from deskmcp.core.once import OnceLedger, ledger
from deskmcp.core.principal import Principal
from deskmcp.core.sign_in import open_state, page_html, seal_state, spend_state, state_owner
from deskmcp.google.auth import (
    AUTH_URI,
    TOKEN_URI,
    GoogleSettings,
    TokenStore,
    client_config,
    client_entry,
    scopes_for,
    token_store,
)
from deskmcp.google.sealed_tokens import SealingKeys

if TYPE_CHECKING:
    import httpx2 as httpx

CALLBACK_PATH = "/callback"


def consent_url(entry: dict[str, Any], redirect_uri: str, scopes: Sequence[str], state: str, verifier: str) -> str:
    """Google's consent page for an authorisation-code flow with PKCE (S256 of `verifier`),
    asking for a refresh token."""
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    query = {
        "response_type": "code",
        "client_id": entry.get("client_id", ""),
        "redirect_uri": redirect_uri,
        "scope": " ".join(scopes),
        "state": state,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "access_type": "offline",
        "prompt": "consent",
        "include_granted_scopes": "true",
    }
    return f"{entry.get('auth_uri', AUTH_URI)}?{urllib.parse.urlencode(query)}"


class WebAuthorization:
    """The authorisation-code flow with PKCE and a checked `state`, for `/auth/url` and `/callback`.

    `start` gives the consent URL and remembers (state -> code verifier) for `ttl` seconds, at
    most `max_pending` of them (the oldest is forgotten first: anyone who may call `/auth/url`
    could otherwise fill the memory with states); `finish` checks the state, exchanges the code
    and stores the token. `transport` lets tests answer the token endpoint with an
    `httpx.MockTransport`.
    """

    def __init__(
        self,
        settings: GoogleSettings,
        scopes: Sequence[str],
        *,
        store: TokenStore | None = None,
        transport: httpx.BaseTransport | None = None,
        ttl: float = 600.0,
        max_pending: int = 64,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.scopes = list(scopes)
        self.store = store or token_store(settings)
        self.transport = transport
        self.ttl = ttl
        self.max_pending = max_pending
        self.clock = clock
        self._pending: dict[str, tuple[str, str, float]] = {}

    def is_pending(self, state: str) -> bool:
        """Whether `state` was issued here and can still be finished."""
        self._expire()
        return state in self._pending

    def start(self, redirect_uri: str) -> str:
        entry = client_entry(client_config(self.settings))
        self._expire()
        while len(self._pending) >= self.max_pending:
            del self._pending[next(iter(self._pending))]  # insertion order: the oldest first
        state = secrets.token_urlsafe(24)
        verifier = secrets.token_urlsafe(64)
        self._pending[state] = (verifier, redirect_uri, self.clock() + self.ttl)
        return consent_url(entry, redirect_uri, self.scopes, state, verifier)

    def finish(self, state: str | None, code: str | None, error: str | None = None) -> dict[str, Any]:
        self._expire()
        pending = self._pending.pop(state or "", None)
        if pending is None:
            raise BadRequest(
                "Unknown or expired state: this authorisation was not started here, or took too long. "
                "Open /auth/url again.",
                {"state": state},
            )
        if error:
            raise AuthRequired(f"Google did not authorise deskmcp: {error}.", {"reason": error})
        if not code:
            raise BadRequest("The callback carries no code.", {})
        verifier, redirect_uri, _deadline = pending
        data = exchange_code(self.settings, code, verifier, redirect_uri, self.scopes, self.transport)
        self.store.save(data)
        return data

    def _expire(self) -> None:
        now = self.clock()
        for state in [s for s, (_v, _r, deadline) in self._pending.items() if deadline < now]:
            del self._pending[state]


def exchange_code(
    settings: GoogleSettings,
    code: str,
    verifier: str,
    redirect_uri: str,
    scopes: Sequence[str],
    transport: httpx.BaseTransport | None = None,
) -> dict[str, Any]:
    """The token Google gives for an authorisation `code` and its PKCE `verifier`, as a store keeps it."""
    entry = client_entry(client_config(settings))
    token_uri = entry.get("token_uri", TOKEN_URI)
    import httpx2 as httpx

    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": redirect_uri,
        "client_id": entry.get("client_id", ""),
        "client_secret": entry.get("client_secret", ""),
        "code_verifier": verifier,
    }
    try:
        with httpx.Client(transport=transport, timeout=30.0) as client:
            response = client.post(token_uri, data=form)
    except httpx.HTTPError as exc:
        raise ExternalServiceError(f"Google's token endpoint could not be reached: {exc}.", {}) from exc
    try:
        body = response.json()
    except ValueError:
        body = {}
    if response.status_code != 200 or "access_token" not in body:
        raise ExternalServiceError(
            f"Google refused the code: {body.get('error', response.status_code)}.",
            {"status": response.status_code, "error": body.get("error")},
        )
    data: dict[str, Any] = {
        "token": body["access_token"],
        "refresh_token": body.get("refresh_token"),
        "token_uri": token_uri,
        "client_id": entry.get("client_id"),
        "client_secret": entry.get("client_secret"),
        "scopes": str(body.get("scope") or " ".join(scopes)).split(),
    }
    if isinstance(body.get("expires_in"), int | float):
        data["expiry"] = utc_stamp(datetime.fromtimestamp(time.time() + float(body["expires_in"]), UTC))
    return data


def page(title: str, text: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(page_html(title, text), status_code=status)


def authorised() -> HTMLResponse:
    return page("deskmcp is authorised", "The Google account is connected. You can close this window.")


def not_authorised(exc: DeskError) -> HTMLResponse:
    return page("deskmcp was not authorised", exc.message, exc.http_status)


def sign_in_routes(
    auth_url: Callable[[Request], Awaitable[Response]], callback: Callable[[Request], Awaitable[Response]]
) -> list[Route]:
    """`/auth/url` and the callback Google redirects to (named `google_callback`)."""
    return [
        Route("/auth/url", auth_url, methods=["GET"]),
        Route(CALLBACK_PATH, callback, methods=["GET"], name="google_callback"),
    ]


class OAuthRoutes:
    """Handlers bound to one `WebAuthorization` per scope set, created on first use."""

    def __init__(
        self,
        settings: GoogleSettings | None = None,
        *,
        default_scopes: tuple[str, ...] = ("sheets",),
        store: TokenStore | None = None,
        transport: httpx.BaseTransport | None = None,
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
                transport=self.transport,
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
            return not_authorised(exc)
        return authorised()

    def routes(self) -> list[Route]:
        return sign_in_routes(self.auth_url, self.callback)


def _query(url: str) -> list[tuple[str, str]]:
    return urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query)


@dataclass(frozen=True)
class ReturnedSignIn:
    """A callback whose sealed state was opened, checked and spent (`PrincipalSignIn.returned`):
    whose sign-in it finishes, and what exchanging its code takes."""

    owner: Principal
    code: str
    verifier: str
    redirect_uri: str
    scopes: list[str]


class PrincipalSignIn:
    """The sign-in when deskmcp serves several users, in steps that take a user's `GoogleSettings`
    as data (the routes, `deskmcp.serving.signin`, resolve them for the user):

    - `begin`: the consent URL for the signed-in principal. The state is sealed (AES-GCM) and
      carries that principal, the PKCE verifier and the redirect address, so any process holding
      the same keys finishes it.
    - `returned`: the callback's parameters opened into a `ReturnedSignIn` naming the principal who
      began it. A callback made by another signed-in principal is refused; one without a principal
      (a browser coming back from Google) is authorised by the sealed state alone. The state also
      carries a one-time id, spent here by the first callback (`spent`: the shared database's
      ledger when there is one, so replicas agree): the same state never returns a second time.
    - `finish`: the code exchanged and the token stored through the owner's settings, which must be
      the owner's (`google_token_principal`)."""

    STATE_DATA = b"deskmcp google state"

    def __init__(
        self,
        keys: SealingKeys,
        *,
        default_scopes: tuple[str, ...] = ("sheets",),
        transport: httpx.BaseTransport | None = None,
        ttl: float = 600.0,
        clock: Callable[[], float] = time.time,
        spent: OnceLedger | None = None,
    ) -> None:
        self.keys = keys
        self.default_scopes = default_scopes
        self.transport = transport
        self.ttl = ttl
        self.clock = clock
        self.spent = spent or ledger(None)

    def begin(
        self, principal: Principal, settings: GoogleSettings, redirect_uri: str, names: Sequence[str] = ()
    ) -> tuple[str, list[str]]:
        """The consent URL for `principal` (whose settings hold the deployment's OAuth client) and the
        scopes it asks for: those of the servers `names` (default: `default_scopes`)."""
        scopes = scopes_for(tuple(names) or self.default_scopes)
        entry = client_entry(client_config(settings))
        verifier = secrets.token_urlsafe(64)
        payload = {
            "iss": principal.issuer,
            "sub": principal.subject,
            "v": verifier,
            "r": redirect_uri,
            "s": scopes,
            "e": self.clock() + self.ttl,
            "n": secrets.token_urlsafe(18),
        }
        state = seal_state(self.keys, payload, self.STATE_DATA)
        return consent_url(entry, redirect_uri, scopes, state, verifier), scopes

    def _opened(self, state: str | None) -> dict[str, Any]:
        unknown = BadRequest(
            "Unknown or expired state: this authorisation was not started here, or took too long. "
            "Open /auth/url again.",
            {},
        )
        return open_state(self.keys, state, self.STATE_DATA, self.clock(), unknown)

    def returned(
        self, state: str | None, code: str | None, error: str | None, *, caller: Principal | None
    ) -> ReturnedSignIn:
        """The sign-in a callback finishes, its state spent; a `DeskError` when it may not (an unknown,
        expired or spent state, another caller's, Google's refusal, no code)."""
        payload = self._opened(state)
        other_user = PermissionDenied(
            "This Google authorisation was started by another user; start your own from /auth/url.", {}
        )
        owner = state_owner(payload, caller, other_user)
        used = BadRequest(
            "This Google authorisation was already used; each one finishes once. Open /auth/url again.", {}
        )
        spend_state(self.spent, "google-state", payload, used)
        if error:
            raise AuthRequired(f"Google did not authorise deskmcp: {error}.", {})
        if not code:
            raise BadRequest("The callback carries no code.", {})
        return ReturnedSignIn(owner, code, str(payload["v"]), str(payload["r"]), [str(s) for s in payload["s"]])

    def finish(self, returned: ReturnedSignIn, settings: GoogleSettings) -> None:
        """Exchange the code and store the token through `settings`, the owner's: settings whose token
        belongs to someone else are refused before anything is exchanged or stored."""
        owner = (returned.owner.issuer, returned.owner.subject)
        if settings.google_token_principal != owner:
            raise PermissionDenied("These Google settings are not those of the user who began this sign-in.", {})
        data = exchange_code(
            settings, returned.code, returned.verifier, returned.redirect_uri, returned.scopes, self.transport
        )
        token_store(settings).save(data)
