"""`deskmcp connect URL`: a stdio MCP server that forwards every tool call to a deskmcp elsewhere.

For MCP clients that only speak stdio, to use a deskmcp shared over streamable HTTP. It starts
whether or not the remote is up; while the remote cannot be reached, each call answers
`mcp_unavailable` (and tools/list answers the tools last seen, kept in the workspace), and the
next call after the remote is back goes through. Each call opens its own short HTTP session, so
a restarted remote needs no reconnect logic.

A remote that asks for OAuth authorization (401 with its resource metadata) is signed in to in
the browser, once, by `deskmcp.connect.oauth`; the tokens are kept and refreshed there. A static
bearer token (DESKMCP_REMOTE_TOKEN) is sent as it is instead.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, TextContent
from mcp.types import Tool as MCPTool

from deskmcp import __version__
from deskmcp.core import stdio
from deskmcp.core.errors import AuthRequired, DeskError, MCPUnavailable, PermissionDenied
from deskmcp.core.files import atomic_write_text
from deskmcp.core.server import error_result

if TYPE_CHECKING:
    import httpx2

log = logging.getLogger("deskmcp.connect.bridge")


def endpoint(url: str) -> str:
    """`http://host:8765` -> `http://host:8765/mcp`; a URL with a path is kept as given."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"{url!r} is not an http(s) URL")
    return url.rstrip("/") + "/mcp" if parts.path in ("", "/") else url


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        out: list[BaseException] = []
        for inner in exc.exceptions:
            out += _leaves(inner)
        return out
    return [exc]


class ForwardingServer(MCPServer[Any]):
    """Lists and calls the tools of a remote deskmcp, one HTTP session per request."""

    def __init__(
        self, url: str, *, token: str | None = None, cache_dir: Path | None = None, auth: httpx2.Auth | None = None
    ) -> None:
        self.url = endpoint(url)
        self.token = token
        self.auth = auth
        """The OAuth client (`deskmcp.connect.oauth.oauth_for`), used when no static token is set."""
        digest = hashlib.blake2b(self.url.encode(), digest_size=6).hexdigest()
        self.cache_file = cache_dir / f"connect-tools-{digest}.json" if cache_dir else None
        self._tools: list[MCPTool] | None = None
        self._refusal = ""
        """The WWW-Authenticate of the last 403 (the scope a call lacked)."""
        super().__init__(
            "deskmcp-connect",
            instructions=f"Tools of the deskmcp at {self.url}. If a call answers mcp_unavailable, "
            "that server is down or unreachable: try again later.",
            version=__version__,
        )

    def _client(self) -> tuple[Any, Any, list[int]]:
        """A fresh HTTP client and MCP client, and the list the HTTP statuses are recorded in."""
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        statuses: list[int] = []

        async def record(response: httpx2.Response) -> None:
            statuses.append(response.status_code)
            if response.status_code == 403:
                self._refusal = response.headers.get("www-authenticate", "")

        http = httpx2.AsyncClient(
            headers=headers,
            auth=None if self.token else self.auth,
            timeout=httpx2.Timeout(30.0, read=300.0),
            event_hooks={"response": [record]},
        )
        return http, Client(streamable_http_client(self.url, http_client=http)), statuses

    def _unavailable(self, exc: BaseException, statuses: list[int]) -> DeskError:
        import httpx2
        from mcp.client.auth import OAuthFlowError

        for leaf in _leaves(exc):
            if isinstance(leaf, OAuthFlowError):
                return AuthRequired(
                    f"Signing in to the deskmcp at {self.url} did not complete: {leaf}. Call again to sign in "
                    "in the browser once more.",
                    {"url": self.url},
                )
        if statuses and statuses[-1] == 403:
            scope = re.search(r'scope="([^"]*)"', self._refusal)
            needed = f" (it needs the scope {scope.group(1)!r})" if scope else ""
            return PermissionDenied(
                f"The deskmcp at {self.url} refused this call{needed}, also after signing in again: your account "
                "was not granted it. Ask the administrator of its authorization server.",
                {"url": self.url, **({"scope": scope.group(1)} if scope else {})},
            )
        for leaf in _leaves(exc):
            if 401 in statuses or (isinstance(leaf, httpx2.HTTPStatusError) and leaf.response.status_code == 401):
                return AuthRequired(
                    f"The deskmcp at {self.url} refused the token. Set DESKMCP_REMOTE_TOKEN (or DESKMCP_TOKEN) "
                    "to the token it printed at start-up.",
                    {"url": self.url},
                )
        reason = "; ".join(f"{type(e).__name__}: {e}" for e in _leaves(exc))[:300]
        log.warning("remote %s unavailable: %s", self.url, reason)
        return MCPUnavailable(
            f"The deskmcp at {self.url} cannot be reached right now. Try again once it is running.",
            {"url": self.url, "reason": reason},
        )

    async def run_stdio_async(self) -> None:
        """Serve over stdio, read and written in the event loop where it can be (`core.stdio`)."""
        await stdio.serve(self._lowlevel_server)

    async def list_tools(self) -> list[MCPTool]:
        http, client, statuses = self._client()
        try:
            async with http, client:
                tools = (await client.list_tools()).tools
        except Exception as exc:  # the remote boundary: whatever failed, the remote is unusable now
            self._unavailable(exc, statuses)
            return self._tools if self._tools is not None else self._cached_tools()
        self._tools = list(tools)
        self._save_tools(self._tools)
        return self._tools

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None) -> Any:
        http, client, statuses = self._client()
        try:
            async with http, client:
                result = await client.call_tool(name, arguments)
        except MCPError as exc:
            if 401 in statuses or not statuses or statuses[-1] >= 400:
                return error_result(self._unavailable(exc, statuses))
            return CallToolResult(
                content=[TextContent(type="text", text=json.dumps({"error": "bad_request", "message": str(exc)}))],
                is_error=True,
            )
        except Exception as exc:  # the remote boundary
            return error_result(self._unavailable(exc, statuses))
        return result

    def _cached_tools(self) -> list[MCPTool]:
        if self.cache_file is None:
            return []
        try:
            data = json.loads(self.cache_file.read_text(encoding="utf-8"))
            return [MCPTool.model_validate(t) for t in data]
        except (OSError, ValueError):
            return []

    def _save_tools(self, tools: list[MCPTool]) -> None:
        if self.cache_file is None:
            return
        try:
            self.cache_file.parent.mkdir(parents=True, exist_ok=True)
            payload = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]
            atomic_write_text(self.cache_file, json.dumps(payload))
        except OSError as exc:
            log.info("could not keep the remote tool list: %s", exc)


def token_from_environment() -> str | None:
    """DESKMCP_REMOTE_TOKEN, else DESKMCP_TOKEN, else None (sign in with OAuth)."""
    from deskmcp.connect.settings import ConnectSettings

    return ConnectSettings().sent_token
