"""`MCPClient`: one MCP server (mail or vault) as the orchestrator sees it.

It talks to the server with the official SDK client, over stdio (the server started as a
subprocess, once, and kept for the client's life) or over streamable HTTP (a running
`deskmcp serve all --http`). Every call has a timeout. When the server does not answer
(it would not start, it died, it hung, the URL is down) the client logs an `mcp_unavailable`
event to the vault's `Logs/`, drops the connection (the next call starts afresh) and runs the
fallback if one was given, else raises `MCPUnavailable` so the caller leaves the item for
later. A tool that answers with an error raises that error from the taxonomy: the server is
fine, the request was not.

All calls of one client must come from one task (the SDK's transports own task groups).
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import os
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import orjson
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.types import CallToolResult, TextContent

from deskmcp.core.errors import DeskError, InternalError, MCPUnavailable, from_payload
from deskmcp.orchestrator.journal import Journal

log = logging.getLogger("deskmcp.orchestrator")

Fallback = Callable[[], dict[str, Any] | Awaitable[dict[str, Any]]]


def tool_error(result: CallToolResult, tool: str) -> DeskError:
    """The taxonomy error a failed tool result carries."""
    text = "".join(c.text for c in result.content if isinstance(c, TextContent))
    try:
        payload = orjson.loads(text)
    except orjson.JSONDecodeError:
        return InternalError(f"{tool} failed: {text[:500]}", {"tool": tool})
    if isinstance(payload, dict) and "error" in payload:
        return from_payload(payload)
    return InternalError(f"{tool} failed: {text[:500]}", {"tool": tool})


class MCPClient:
    """Calls tools of one MCP server, with a timeout, an `mcp_unavailable` log line and a fallback."""

    def __init__(
        self,
        server_name: str,
        command: list[str],
        vault_path: Path,
        *,
        url: str | None = None,
        timeout: float = 30.0,
        env: dict[str, str] | None = None,
        server: Any = None,
    ) -> None:
        self.server_name = server_name
        self.command = command
        self.vault_path = vault_path
        self.url = url
        self.timeout = timeout
        self.env = env
        self.server = server  # an in-process MCP server instead of a command or URL
        self.journal = Journal(vault_path / "Logs")
        self._stack: AsyncExitStack | None = None
        self._client: Client | None = None

    @property
    def target(self) -> str:
        return self.url or " ".join(self.command)

    async def __aenter__(self) -> MCPClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        stack, self._stack, self._client = self._stack, None, None
        if stack is not None:
            try:
                await stack.aclose()
            except Exception as exc:  # a transport torn down after its peer died: nothing left to save
                log.debug("closing the %s connection: %r", self.server_name, exc)

    async def _connect(self) -> Client:
        if self._client is not None:
            return self._client
        if self.server is not None:
            target: Any = self.server
        elif self.url:
            target = self.url
        else:
            env = dict(os.environ) if self.env is None else self.env
            target = StdioServerParameters(command=self.command[0], args=self.command[1:], env=env)
        stack = AsyncExitStack()
        try:
            client = await stack.enter_async_context(Client(target, read_timeout_seconds=self.timeout))
        except BaseException:
            with contextlib.suppress(Exception):
                await stack.aclose()
            raise
        self._stack, self._client = stack, client
        return client

    async def call_tool(
        self, tool_name: str, arguments: dict[str, Any], fallback: Fallback | None = None
    ) -> dict[str, Any]:
        """Call `tool_name`; on an unavailable server log it, then run `fallback` or raise `MCPUnavailable`."""
        try:
            client = await self._connect()
            result = await client.call_tool(tool_name, arguments, read_timeout_seconds=self.timeout)
        except Exception as exc:  # the SDK raises many kinds for a dead or hung peer; all mean "unavailable"
            await self.close()
            reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            self.journal.write(
                "mcp_unavailable",
                "WARNING",
                server=self.server_name,
                tool=tool_name,
                target=self.target,
                error=reason[:500],
                fallback=fallback is not None,
            )
            if fallback is None:
                raise MCPUnavailable(
                    f"The {self.server_name} server did not answer {tool_name} ({reason[:200]}); "
                    "the item waits for the next pass.",
                    {"server": self.server_name, "tool": tool_name},
                ) from exc
            value = fallback()
            if inspect.isawaitable(value):
                value = await value
            return value
        if result.is_error:
            raise tool_error(result, tool_name)
        if result.structured_content is not None:
            return dict(result.structured_content)
        text = "".join(c.text for c in result.content if isinstance(c, TextContent))
        try:
            parsed = orjson.loads(text) if text else {}
        except orjson.JSONDecodeError:
            return {"text": text}
        return parsed if isinstance(parsed, dict) else {"result": parsed}
