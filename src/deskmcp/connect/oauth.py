"""`deskmcp connect` as an OAuth client of a remote deskmcp that asks for authorization.

The remote answers 401 with its Protected Resource Metadata; the SDK's `OAuthClientProvider`
(`mcp.client.auth`) then discovers the authorization server, registers (dynamic registration, a
client ID metadata document URL, or a pre-registered client), sends the person's browser to
authorize with PKCE and the RFC 8707 `resource`, checks the RFC 9207 `iss` of the answer, and
exchanges the code. This module gives it what stays on this machine:

- `TokenFile`: the tokens and client registration, one 0600 JSON file per remote under the user
  config folder; an access token past its expiry is not handed back, only its refresh token, so
  the next request refreshes instead of using a dead token; the authorization server's metadata
  is kept beside the tokens, so a new process refreshes at that server's token endpoint (the SDK,
  knowing no metadata yet, would send the refresh to the MCP server's own origin);
- `LoopbackRedirect`: the redirect URI, `http://127.0.0.1:PORT/callback`, answered by a one-shot
  listener while the person signs in (the port is kept in the token file, since the registration
  names it);
- `oauth_for`: the provider for one remote URL, with the browser to open (or the address printed
  on stderr when there is none).
"""

from __future__ import annotations

import hashlib
import http.server
import json
import logging
import socket
import sys
import threading
import time
import urllib.parse
import webbrowser
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import platformdirs
from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
)

from deskmcp import __version__
from deskmcp.core.files import atomic_write_text

log = logging.getLogger("deskmcp.connect.bridge")

SIGN_IN_SECONDS = 300.0
"""How long the person has to finish signing in, once the browser is open."""

Browser = Callable[[str], Awaitable[None]]


def token_folder() -> Path:
    """Where `deskmcp connect` keeps its tokens: `<user config dir>/deskmcp/connect`."""
    return Path(platformdirs.user_config_dir("deskmcp", appauthor=False)) / "connect"


def token_path(folder: Path, url: str) -> Path:
    digest = hashlib.blake2b(url.encode(), digest_size=8).hexdigest()
    return folder / f"oauth-{digest}.json"


class TokenFile:
    """The SDK's `TokenStorage` over one JSON file (mode 0600): tokens with their expiry time,
    the client registration, and the loopback port the registration's redirect URI names."""

    def __init__(self, path: Path, *, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self.clock = clock
        self.metadata_of: Callable[[], OAuthMetadata | None] = lambda: None
        """The authorization server's metadata when tokens are stored (set by `oauth_for`)."""

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.warning("ignoring the unreadable token file %s: %s", self.path, exc)
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, **changes: Any) -> None:
        data = {**self._read(), **changes}
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        atomic_write_text(self.path, json.dumps(data, indent=1), mode=0o600)

    async def get_tokens(self) -> OAuthToken | None:
        raw = self._read().get("tokens")
        if not isinstance(raw, dict):
            return None
        try:
            tokens = OAuthToken.model_validate(raw)
        except ValueError:
            return None
        expires_at = self._read().get("expires_at")
        if isinstance(expires_at, int | float):
            left = int(expires_at - self.clock())
            if left <= 0:
                # Expired: without an access token the SDK refreshes before the next request.
                return tokens.model_copy(update={"access_token": "", "expires_in": 0}) if tokens.refresh_token else None
            tokens = tokens.model_copy(update={"expires_in": left})
        return tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        expires_at = self.clock() + tokens.expires_in if tokens.expires_in is not None else None
        changes: dict[str, Any] = {
            "tokens": tokens.model_dump(mode="json", exclude_none=True),
            "expires_at": expires_at,
        }
        if (metadata := self.metadata_of()) is not None:
            changes["authorization_server"] = metadata.model_dump(mode="json", exclude_none=True)
        self._write(**changes)

    def authorization_server(self) -> OAuthMetadata | None:
        """The metadata of the authorization server that issued the kept tokens, if recorded."""
        raw = self._read().get("authorization_server")
        if not isinstance(raw, dict):
            return None
        try:
            return OAuthMetadata.model_validate(raw)
        except ValueError:
            return None

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        raw = self._read().get("client_info")
        if not isinstance(raw, dict):
            return None
        try:
            return OAuthClientInformationFull.model_validate(raw)
        except ValueError:
            return None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.keep_registration(client_info)

    def redirect_port(self) -> int | None:
        port = self._read().get("redirect_port")
        return port if isinstance(port, int) and 0 < port < 65536 else None

    def keep_redirect_port(self, port: int) -> None:
        if self.redirect_port() != port:
            self._write(redirect_port=port)

    def keep_registration(self, info: OAuthClientInformationFull) -> None:
        """`set_client_info`, for callers outside the event loop (a pre-registered client)."""
        self._write(client_info=info.model_dump(mode="json", exclude_none=True))

    def forget(self) -> None:
        """Drop the tokens and the registration (the file goes)."""
        self.path.unlink(missing_ok=True)


@dataclass
class _Answer:
    params: dict[str, str]


class LoopbackRedirect:
    """Receives the authorization server's redirect at `http://127.0.0.1:PORT/callback`.

    `port` 0 takes a free one. The listener runs (in a thread) only from `listen()` until one
    callback arrived."""

    def __init__(self, port: int = 0) -> None:
        self.port = port or _free_port()
        self.redirect_uri = f"http://127.0.0.1:{self.port}/callback"
        self._answer: _Answer | None = None
        self._arrived = threading.Event()
        self._server: http.server.HTTPServer | None = None

    def listen(self) -> None:
        if self._server is not None:
            return
        self._answer = None
        self._arrived.clear()
        redirect = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = urllib.parse.urlsplit(self.path)
                if parts.path != "/callback":
                    self.send_error(404)
                    return
                params = dict(urllib.parse.parse_qsl(parts.query))
                failed = "error" in params or "code" not in params
                text = (
                    "Sign-in failed: " + params.get("error_description", params.get("error", "no code")) + "."
                    if failed
                    else "Signed in. You can close this tab and go back to your assistant."
                )
                body = f"<!doctype html><title>deskmcp</title><p>{_html(text)}</p>".encode()
                self.send_response(400 if failed else 200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                redirect._answer = _Answer(params)
                redirect._arrived.set()

            def log_message(self, format: str, *args: Any) -> None:
                log.debug("redirect listener: " + format, *args)

        self._server = http.server.HTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    async def wait(self, seconds: float = SIGN_IN_SECONDS) -> AuthorizationCodeResult:
        """The redirect's code, state and `iss`; raises `OAuthFlowError` for an error answer or none in time."""
        try:
            arrived = await anyio.to_thread.run_sync(self._arrived.wait, seconds, abandon_on_cancel=True)
        finally:
            self.close()
        if not arrived or self._answer is None:
            raise OAuthFlowError(f"No answer from the sign-in page within {seconds:g} seconds.")
        params = self._answer.params
        if "error" in params or "code" not in params:
            reason = params.get("error_description") or params.get("error") or "no authorization code"
            raise OAuthFlowError(f"The authorization server refused: {reason}.")
        return AuthorizationCodeResult(code=params["code"], state=params.get("state"), iss=params.get("iss"))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


async def open_browser(url: str) -> None:
    """Open `url` in the person's browser; where there is none, print it on stderr (stdout is the protocol)."""
    opened = await anyio.to_thread.run_sync(webbrowser.open, url)
    if not opened:
        print(f"deskmcp connect: open this address to sign in: {url}", file=sys.stderr, flush=True)


class _KeptServerProvider(OAuthClientProvider):
    """The SDK's provider, starting from the authorization server metadata kept in the token file:
    a refresh in a new process then goes to that server's token endpoint. A 401 still runs the
    discovery anew, so a moved authorization server is found again."""

    def __init__(self, store: TokenFile, **kwargs: Any) -> None:
        super().__init__(storage=store, **kwargs)
        self._store = store
        store.metadata_of = lambda: self.context.oauth_metadata

    async def _initialize(self) -> None:
        await super()._initialize()
        if self.context.oauth_metadata is None:
            self.context.oauth_metadata = self._store.authorization_server()


@dataclass(frozen=True)
class ClientSettings:
    """How `deskmcp connect` identifies itself to the authorization server: a client ID metadata
    document URL (used where the server supports them), or a pre-registered client; otherwise it
    registers itself (dynamic client registration)."""

    client_metadata_url: str | None = None
    client_id: str | None = None
    client_secret: str | None = None

    @classmethod
    def from_environment(cls) -> ClientSettings:
        from deskmcp.connect.settings import ConnectSettings

        settings = ConnectSettings()
        secret = settings.client_secret.get_secret_value() if settings.client_secret is not None else ""
        return cls(
            client_metadata_url=settings.client_metadata_url,
            client_id=settings.client_id,
            client_secret=secret or None,
        )


def oauth_for(
    url: str,
    *,
    folder: Path | None = None,
    client: ClientSettings | None = None,
    browser: Browser = open_browser,
) -> OAuthClientProvider:
    """The SDK's OAuth client for the remote at `url` (its MCP endpoint), keeping its tokens in
    `folder` (default `token_folder()`)."""
    client = client or ClientSettings()
    store = TokenFile(token_path(folder or token_folder(), url))
    redirect = LoopbackRedirect(store.redirect_port() or 0)
    store.keep_redirect_port(redirect.port)
    if client.client_id:
        # A pre-registered client: stored as the registration, so the SDK never registers.
        info = OAuthClientInformationFull(
            client_id=client.client_id,
            client_secret=client.client_secret,
            redirect_uris=[redirect.redirect_uri],  # type: ignore[list-item]
            token_endpoint_auth_method="client_secret_basic" if client.client_secret else "none",
        )
        store.keep_registration(info)

    async def redirect_handler(authorization_url: str) -> None:
        redirect.listen()
        await browser(authorization_url)

    metadata = OAuthClientMetadata(
        client_name="deskmcp connect",
        software_id="deskmcp",
        software_version=__version__,
        redirect_uris=[redirect.redirect_uri],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
    )
    return _KeptServerProvider(
        store,
        server_url=url,
        client_metadata=metadata,
        redirect_handler=redirect_handler,
        callback_handler=redirect.wait,
        client_metadata_url=client.client_metadata_url,
    )
