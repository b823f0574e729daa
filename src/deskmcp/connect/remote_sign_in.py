"""Each user of a shared server signs in to a remote MCP server of their own (users mode).

A server that reads a remote MCP server on a user's behalf (one asking for OAuth, as the MCP
authorization spec has it) declares it (`servers.RemoteSignIn`); the HTTP app then serves, for the
signed-in principal, `GET /auth/<name>/url`, `GET /auth/<name>/callback` and `DELETE /auth/<name>`
(sign out): the flow is `PrincipalRemoteSignIn` here, in steps taking each user's account as data;
the routes that resolve it are the serving layer's (`serving.signin`):

- `/auth/<name>/url` (behind deskmcp's own token) discovers the remote's authorization server
  (RFC 9728 protected-resource metadata at the resource's well-known address, then RFC 8414
  authorization-server metadata), registers deskmcp as a client with the callback as its redirect
  address (RFC 7591 dynamic registration), and answers the authorization address, with a PKCE S256
  challenge, the RFC 8707 `resource` and a `state`;
- the `state` is sealed (AES-GCM, the deployment's keys) and carries the principal who began, the
  PKCE verifier, the registration and the token endpoint: any replica holding the same keys finishes
  it, a callback made by another signed-in principal is refused, it expires after ten minutes, and
  its one-time id is spent by the first callback (`OnceLedger`: the shared database's when there is
  one), so a replayed callback is refused;
- the callback checks the answer's RFC 9207 `iss` against the authorization server the sign-in began
  with, exchanges the code and keeps the tokens in that user's own record (`TokenRecord`:
  a sealed row in PostgreSQL, or a 0600 file in their workspace), with the remote's address they
  were issued for.

`RemoteTokens` is the `httpx2.Auth` a sync uses with such a record: it sends the access token
only to the address the tokens were issued for, and refreshes them at the token endpoint of the
sign-in when they expire or the remote answers 401 (under the record's lock, so two replicas
never spend one refresh token). Tokens are never logged, nor put in an answer.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import secrets
import time
import urllib.parse
from collections.abc import AsyncGenerator, Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import anyio.to_thread
import httpx2
from mcp.client.auth.utils import (
    build_oauth_authorization_server_metadata_discovery_urls,
    build_protected_resource_metadata_discovery_urls,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthMetadata, OAuthToken, ProtectedResourceMetadata
from pydantic import BaseModel, ValidationError
from starlette.responses import HTMLResponse

from deskmcp import __version__
from deskmcp.core.errors import AuthRequired, BadRequest, DeskError, ExternalServiceError, PermissionDenied
from deskmcp.core.files import PRIVATE_FOLDER, atomic_write_text, lock_exclusively
from deskmcp.core.once import OnceLedger, ledger
from deskmcp.core.principal import Principal
from deskmcp.core.sign_in import Sealer, open_state, page_html, seal_state, spend_state, state_owner

log = logging.getLogger("deskmcp.connect.remote_sign_in")

STATE_SECONDS = 600.0
"""How long a user has to finish a sign-in they began."""


def url_path(name: str) -> str:
    """Where a user begins signing in to the remote `name`."""
    return f"/auth/{name}/url"


def callback_path(name: str) -> str:
    """Where the remote's authorization server sends the user's browser back."""
    return f"/auth/{name}/callback"


class Held(Protocol):
    """A record as read under its lock; `save` writes it before the lock goes."""

    data: dict[str, Any] | None

    def save(self, data: dict[str, Any]) -> None: ...


class TokenRecord(Protocol):
    """One user's sign-in to one remote, as a JSON object: `load` (None when there is none), `save`,
    `forget` (the record goes) and `refreshing` (the record held under its lock for a refresh, so
    two processes never spend one refresh token)."""

    def load(self) -> dict[str, Any] | None: ...

    def save(self, data: dict[str, Any]) -> None: ...

    def forget(self) -> None: ...

    def refreshing(self) -> AbstractContextManager[Held]: ...


class FileRecord:
    """A `TokenRecord` in one JSON file, mode 0600 in a 0700 folder, replaced atomically."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> dict[str, Any] | None:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            log.warning("ignoring the unreadable sign-in file %s: %s", self.path.name, type(exc).__name__)
            return None
        return data if isinstance(data, dict) else None

    def save(self, data: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=PRIVATE_FOLDER)
        atomic_write_text(self.path, json.dumps(data), mode=0o600)

    def forget(self) -> None:
        self.path.unlink(missing_ok=True)

    @contextmanager
    def refreshing(self) -> Iterator[Held]:
        """The record read and saved under the OS lock of a file beside it, for the time of a
        refresh: another process's (or thread's) refresh of the same record waits for this one, then
        finds the new tokens, so one refresh token is never spent twice."""
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=PRIVATE_FOLDER)
        fd = os.open(self.path.with_name(f".{self.path.name}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            lock_exclusively(fd, wait=True)
            yield _FileHeld(self)
        finally:
            os.close(fd)  # lets the lock go


class _FileHeld:
    def __init__(self, record: FileRecord) -> None:
        self.record = record
        self.data = record.load()

    def save(self, data: dict[str, Any]) -> None:
        self.record.save(data)
        self.data = data


@dataclass(frozen=True)
class RemoteAccount:
    """What a sign-in needs of one user: the remote's MCP address (from the deployment's settings,
    never the user's) and their own record."""

    url: str
    record: TokenRecord


def signed_in_to(record: TokenRecord, url: str) -> bool:
    """Whether `record` holds tokens issued for `url`."""
    data = record.load() or {}
    return data.get("url") == url and isinstance(data.get("tokens"), dict)


# -- discovery and registration --------------------------------------------------------------


def _json(client: httpx2.Client, url: str) -> dict[str, Any] | None:
    try:
        response = client.get(url, headers={"Accept": "application/json"})
    except httpx2.HTTPError as exc:
        raise ExternalServiceError(f"{url} could not be reached: {type(exc).__name__}.", {}) from exc
    if response.status_code != 200:
        return None
    try:
        data = response.json()
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


_Model = TypeVar("_Model", bound=BaseModel)


def _first(client: httpx2.Client, addresses: list[str], model: type[_Model]) -> _Model | None:
    """The first of the well-known `addresses` answering a valid `model`, in the order given."""
    for address in addresses:
        data = _json(client, address)
        if data is None:
            continue
        try:
            return model.model_validate(data)
        except ValidationError:
            continue
    return None


@dataclass(frozen=True)
class Discovered:
    resource: str
    metadata: OAuthMetadata
    scopes: list[str]


def discover(client: httpx2.Client, url: str, service: str) -> Discovered:
    """The remote's protected-resource metadata and its authorization server's metadata."""
    resource_metadata = _first(
        client, build_protected_resource_metadata_discovery_urls(None, url), ProtectedResourceMetadata
    )
    if resource_metadata is None or not resource_metadata.authorization_servers:
        raise ExternalServiceError(
            f"{service} publishes no protected-resource metadata naming its authorization server.", {}
        )
    issuer = str(resource_metadata.authorization_servers[0])
    metadata = _first(client, build_oauth_authorization_server_metadata_discovery_urls(issuer, url), OAuthMetadata)
    if metadata is None:
        raise ExternalServiceError(f"{service}'s authorization server publishes no metadata.", {})
    if str(metadata.issuer).rstrip("/") != issuer.rstrip("/"):
        raise ExternalServiceError(f"{service}'s authorization server metadata names another issuer.", {})
    scopes = list(resource_metadata.scopes_supported or [])
    if "offline_access" in (metadata.scopes_supported or []):
        scopes.append("offline_access")  # a refresh token: the sync keeps going unattended
    return Discovered(str(resource_metadata.resource or url), metadata, scopes)


def register(
    client: httpx2.Client, metadata: OAuthMetadata, redirect_uri: str, scopes: list[str], service: str
) -> dict[str, Any]:
    """deskmcp registered as a client of the authorization server (RFC 7591): the registration's
    client id, secret and authentication method."""
    if metadata.registration_endpoint is None:
        raise ExternalServiceError(f"{service}'s authorization server offers no dynamic client registration.", {})
    body: dict[str, Any] = {
        "client_name": "deskmcp",
        "software_id": "deskmcp",
        "software_version": __version__,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "client_secret_basic",
    }
    if scopes:
        body["scope"] = " ".join(scopes)
    try:
        response = client.post(str(metadata.registration_endpoint), json=body)
    except httpx2.HTTPError as exc:
        raise ExternalServiceError(f"{service}'s registration could not be reached: {type(exc).__name__}.", {}) from exc
    try:
        info = OAuthClientInformationFull.model_validate_json(response.content)
    except ValidationError:
        info = None
    if response.status_code not in (200, 201) or info is None:
        raise ExternalServiceError(
            f"{service}'s authorization server refused to register deskmcp ({response.status_code}).", {}
        )
    return {
        "client_id": info.client_id,
        "client_secret": info.client_secret,
        "method": info.token_endpoint_auth_method or "client_secret_basic",
    }


def _token_request(client_info: dict[str, Any], form: dict[str, str]) -> tuple[dict[str, str], tuple[str, str] | None]:
    """The form and HTTP basic credentials of a token request, per the registration's method."""
    form = {**form, "client_id": str(client_info["client_id"])}
    secret = client_info.get("client_secret")
    if not secret or client_info.get("method") == "none":
        return form, None
    if client_info.get("method") == "client_secret_post":
        return {**form, "client_secret": str(secret)}, None
    return form, (urllib.parse.quote(str(client_info["client_id"]), safe=""), urllib.parse.quote(str(secret), safe=""))


def _tokens(response: httpx2.Response, service: str) -> OAuthToken:
    try:
        tokens = OAuthToken.model_validate_json(response.content)
    except ValidationError:
        tokens = None
    if response.status_code != 200 or tokens is None:
        try:
            reason = str(response.json().get("error", response.status_code))
        except (ValueError, AttributeError):
            reason = str(response.status_code)
        raise AuthRequired(f"{service}'s authorization server refused: {reason}.", {"reason": reason[:100]})
    return tokens


def stored(tokens: OAuthToken, now: float, prior: dict[str, Any]) -> dict[str, Any]:
    """`prior`'s record with `tokens` (the refresh token kept when the server did not rotate it)."""
    data = tokens.model_dump(mode="json", exclude_none=True)
    old = prior.get("tokens")
    if "refresh_token" not in data and isinstance(old, dict) and old.get("refresh_token"):
        data["refresh_token"] = old["refresh_token"]
    expires_at = now + tokens.expires_in if tokens.expires_in is not None else None
    return {**prior, "tokens": data, "expires_at": expires_at}


# -- the sync's side: tokens sent, refreshed ---------------------------------------------------


class RemoteTokens(httpx2.Auth):
    """Bearer tokens from one user's record, for requests to `url` only, refreshed when expired or
    refused once (see the module docstring). Anything that needs the user to sign in again raises
    `signed_out()`."""

    def __init__(
        self,
        record: TokenRecord,
        url: str,
        signed_out: Callable[[], AuthRequired],
        *,
        clock: Callable[[], float] = time.time,
        transport: httpx2.BaseTransport | None = None,
        leeway: float = 30.0,
    ) -> None:
        self.record = record
        self.url = url
        self.signed_out = signed_out
        self.clock = clock
        self.transport = transport
        self.leeway = leeway
        self.refreshes = 0

    def signed_in(self) -> bool:
        return signed_in_to(self.record, self.url)

    def _current(self, data: dict[str, Any] | None) -> dict[str, Any]:
        if not data or data.get("url") != self.url or not isinstance(data.get("tokens"), dict):
            raise self.signed_out()
        return data

    def _fresh(self, data: dict[str, Any]) -> bool:
        expires_at = data.get("expires_at")
        return not isinstance(expires_at, int | float) or expires_at - self.leeway > self.clock()

    def access_token(self, *, refused: str | None = None) -> str:
        """The access token to send; refreshed first when expired, or when `refused` (the token the
        remote just answered 401 to) is still the one kept."""
        data = self._current(self.record.load())
        token = str(data["tokens"].get("access_token", ""))
        if token and self._fresh(data) and token != refused:
            return token
        with self.record.refreshing() as held:
            data = self._current(held.data)
            token = str(data["tokens"].get("access_token", ""))
            if token and self._fresh(data) and token != refused:
                return token  # another process refreshed it while this one waited
            refreshed = self._refresh(data)
            held.save(refreshed)
        return str(refreshed["tokens"]["access_token"])

    def _refresh(self, data: dict[str, Any]) -> dict[str, Any]:
        refresh_token = data["tokens"].get("refresh_token")
        client_info = data.get("client_info")
        if not refresh_token or not isinstance(client_info, dict) or not data.get("token_endpoint"):
            raise self.signed_out()
        form, basic = _token_request(
            client_info,
            {
                "grant_type": "refresh_token",
                "refresh_token": str(refresh_token),
                "resource": str(data.get("resource") or self.url),
            },
        )
        try:
            with httpx2.Client(transport=self.transport, timeout=30.0) as client:
                response = client.post(str(data["token_endpoint"]), data=form, auth=basic or httpx2.USE_CLIENT_DEFAULT)
        except httpx2.HTTPError as exc:
            raise ExternalServiceError(
                f"The token endpoint could not be reached to refresh the sign-in: {type(exc).__name__}.", {}
            ) from exc
        try:
            tokens = _tokens(response, "The remote")
        except AuthRequired:
            raise self.signed_out() from None
        self.refreshes += 1
        return stored(tokens, self.clock(), data)

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        if not str(request.url).startswith(_origin(self.url)):
            yield request  # tokens go to the address they were issued for, nowhere else
            return
        token = await anyio.to_thread.run_sync(self.access_token)
        request.headers["Authorization"] = f"Bearer {token}"
        response = yield request
        if response.status_code == 401:
            token = await anyio.to_thread.run_sync(lambda: self.access_token(refused=token))
            request.headers["Authorization"] = f"Bearer {token}"
            yield request


def _origin(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}/"


# -- the routes ------------------------------------------------------------------------------


def _kept_registration(record: TokenRecord, metadata: OAuthMetadata, redirect_uri: str) -> dict[str, Any] | None:
    """The registration of the user's last sign-in, when it was made with the same authorization
    server for the same callback: signing in again then registers no new client."""
    data = record.load() or {}
    info = data.get("client_info")
    if not isinstance(info, dict) or not info.get("client_id"):
        return None
    same_server = str(data.get("issuer", "")).rstrip("/") == str(metadata.issuer).rstrip("/")
    return info if same_server and data.get("redirect_uri") == redirect_uri else None


def _challenge(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")


@dataclass(frozen=True)
class Returned:
    """A sign-in's state as it came back: checked, spent, and the principal who began it."""

    owner: Principal
    payload: dict[str, Any]


class PrincipalRemoteSignIn:
    """The sign-in flow of the signed-in principal to one remote (module docstring), in steps that
    take the user's `RemoteAccount` as data: `begin`, `returned` (the state opened, checked and
    spent), `finish` (the code exchanged, the tokens kept), `sign_out`. The HTTP routes that resolve
    each user's account and call these steps are the serving layer's (`serving.signin`).
    `transport` lets tests answer the remote's HTTP themselves."""

    def __init__(
        self,
        name: str,
        service: str,
        keys: Sealer,
        *,
        spent: OnceLedger | None = None,
        ttl: float = STATE_SECONDS,
        clock: Callable[[], float] = time.time,
        transport: httpx2.BaseTransport | None = None,
    ) -> None:
        self.name = name
        self.service = service
        self.keys = keys
        self.spent = spent or ledger(None)
        self.ttl = ttl
        self.clock = clock
        self.transport = transport
        self.associated = f"deskmcp {name} sign-in state".encode()

    @property
    def route_name(self) -> str:
        return f"{self.name}_callback"

    def _client(self) -> httpx2.Client:
        return httpx2.Client(transport=self.transport, timeout=30.0, follow_redirects=False)

    def begin(self, principal: Principal, account: RemoteAccount, redirect_uri: str) -> str:
        """The authorization address for `principal`, whose account is `account` (blocking:
        discovery, and registration unless their last one serves)."""
        with self._client() as client:
            found = discover(client, account.url, self.service)
            client_info = _kept_registration(account.record, found.metadata, redirect_uri) or register(
                client, found.metadata, redirect_uri, found.scopes, self.service
            )
        verifier = secrets.token_urlsafe(64)
        expires = self.clock() + self.ttl
        payload = {
            "iss": principal.issuer,
            "sub": principal.subject,
            "v": verifier,
            "r": redirect_uri,
            "u": account.url,
            "res": found.resource,
            "t": str(found.metadata.token_endpoint),
            "i": str(found.metadata.issuer),
            "ri": bool(found.metadata.authorization_response_iss_parameter_supported),
            "c": client_info,
            "e": expires,
            "n": secrets.token_urlsafe(18),
        }
        state = seal_state(self.keys, payload, self.associated)
        query = {
            "response_type": "code",
            "client_id": client_info["client_id"],
            "redirect_uri": redirect_uri,
            "state": state,
            "code_challenge": _challenge(verifier),
            "code_challenge_method": "S256",
            "resource": found.resource,
        }
        if found.scopes:
            query["scope"] = " ".join(found.scopes)
        if "offline_access" in found.scopes:
            query["prompt"] = "consent"  # OpenID Connect grants offline access only with consent asked
        return f"{found.metadata.authorization_endpoint}?{urllib.parse.urlencode(query)}"

    def _opened(self, state: str | None) -> dict[str, Any]:
        unknown = BadRequest(
            f"Unknown or expired state: this sign-in was not begun here, or took too long. Open "
            f"{url_path(self.name)} again.",
            {},
        )
        return open_state(self.keys, state, self.associated, self.clock(), unknown)

    def returned(self, state: str | None, caller: Principal | None, iss: str | None = None) -> Returned:
        """The state the browser brought back: opened, bound to the principal who began (a `caller`
        signed in as someone else is refused), from the authorization server the sign-in began
        with (RFC 9207 `iss`), and spent, so it finishes once."""
        payload = self._opened(state)
        other_user = PermissionDenied(
            f"This sign-in to {self.service} was begun by another user; begin your own from {url_path(self.name)}.",
            {},
        )
        owner = state_owner(payload, caller, other_user)
        issuer = str(payload.get("i", ""))
        if (iss is not None and iss.rstrip("/") != issuer.rstrip("/")) or (iss is None and payload.get("ri")):
            raise BadRequest(
                f"This answer does not come from the authorization server the sign-in to {self.service} began "
                f"with; begin again from {url_path(self.name)}.",
                {},
            )
        used = BadRequest(
            f"This sign-in to {self.service} was already used; each one finishes once. Open "
            f"{url_path(self.name)} again.",
            {},
        )
        spend_state(self.spent, f"{self.name}-state", payload, used)
        return Returned(owner, payload)

    def finish(self, returned: Returned, account: RemoteAccount, code: str | None, error: str | None) -> None:
        """The code exchanged at the sign-in's token endpoint and the tokens kept in `account`'s
        record (the account of `returned.owner`)."""
        payload = returned.payload
        if error:
            raise AuthRequired(f"{self.service} did not authorise deskmcp: {error[:100]}.", {})
        if not code:
            raise BadRequest("The callback carries no code.", {})
        if account.url != payload["u"]:
            raise BadRequest(f"{self.service}'s address changed since this sign-in began; begin again.", {})
        form, basic = _token_request(
            payload["c"],
            {
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": str(payload["r"]),
                "code_verifier": str(payload["v"]),
                "resource": str(payload["res"]),
            },
        )
        try:
            with self._client() as client:
                response = client.post(str(payload["t"]), data=form, auth=basic or httpx2.USE_CLIENT_DEFAULT)
        except httpx2.HTTPError as exc:
            raise ExternalServiceError(
                f"{self.service}'s token endpoint could not be reached: {type(exc).__name__}.", {}
            ) from exc
        tokens = _tokens(response, self.service)
        prior = {
            "url": payload["u"],
            "resource": payload["res"],
            "token_endpoint": payload["t"],
            "client_info": payload["c"],
            "issuer": payload["i"],
            "redirect_uri": payload["r"],
        }
        account.record.save(stored(tokens, self.clock(), prior))
        log.info("a user signed in to %s", self.service)

    def sign_out(self, account: RemoteAccount) -> bool:
        """The user's tokens for the remote forgotten here (the remote's own list of connected apps
        is where the grant itself is withdrawn); whether there were any."""
        had = account.record.load() is not None
        account.record.forget()
        log.info("a user signed out of %s", self.service)
        return had


def authorised(service: str) -> HTMLResponse:
    return HTMLResponse(page_html("deskmcp is authorised", f"{service} is connected. You can close this window."))


def not_authorised(exc: DeskError) -> HTMLResponse:
    return HTMLResponse(page_html("deskmcp was not authorised", exc.message), status_code=exc.http_status)
