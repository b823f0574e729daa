"""`MCPClient`: one MCP server (mail or vault) as the orchestrator sees it.

It talks to the server with the official SDK client, over stdio (the server started as a
subprocess, once, and kept for the client's life) or over streamable HTTP (a running
`deskmcp serve all --http`). Every call has a timeout. When the server does not answer
(it would not start, it died, it hung, the URL is down) the client logs an `mcp_unavailable`
event to the vault's `Logs/`, drops the connection (the next call starts afresh) and runs the
fallback if one was given, else raises `MCPUnavailable` so the caller leaves the item for
later. A tool that answers with an error raises that error from the taxonomy: the server is
fine, the request was not.

The connection lives in a task of the client's own (`async with MCPClient(...)`), so calls may
come from any task: the loop, a tool handler, a watcher.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar, overload

import anyio
import anyio.abc
import orjson
from anyio.streams.memory import MemoryObjectSendStream
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.types import CallToolResult, TextContent

from deskmcp.core.errors import DeskError, InternalError, MCPUnavailable, from_payload
from deskmcp.core.settings import environment
from deskmcp.orchestrator.journal import Journal

log = logging.getLogger("deskmcp.orchestrator")

_Request = tuple[str, dict[str, Any], MemoryObjectSendStream[CallToolResult | BaseException]]
T = TypeVar("T")
Fallback = Callable[[], T | Awaitable[T]]
"""What answers instead of an unavailable server: any value (the vault's fallback returns the vault's models)."""


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
        self._tg: anyio.abc.TaskGroup | None = None
        self._requests: MemoryObjectSendStream[_Request] | None = None
        self._scope: anyio.CancelScope | None = None

    @property
    def target(self) -> str:
        return self.url or " ".join(self.command)

    async def __aenter__(self) -> MCPClient:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
        if self._tg is not None:
            tg, self._tg = self._tg, None
            tg.cancel_scope.cancel()
            await tg.__aexit__(None, None, None)

    async def close(self) -> None:
        """Drop the connection (the subprocess is stopped); the next call starts a new one."""
        requests, self._requests = self._requests, None
        if requests is not None:
            await requests.aclose()
        scope, self._scope = self._scope, None
        if scope is not None:
            scope.cancel()

    def _target(self) -> Any:
        if self.server is not None:
            return self.server
        if self.url:
            return self.url
        env = environment() if self.env is None else self.env
        return StdioServerParameters(command=self.command[0], args=self.command[1:], env=env)

    async def _serve(self, *, task_status: anyio.abc.TaskStatus[MemoryObjectSendStream[_Request]]) -> None:
        """Own one connection in a task of its own, answering requests until closed or broken.

        The SDK's transports hold task groups and cancel scopes that must be entered and left
        by one task; this task is that one, whichever task the calls come from.
        """
        send, receive = anyio.create_memory_object_stream[_Request](0)
        started = False
        with anyio.CancelScope() as scope:
            self._scope = scope
            try:
                async with Client(self._target(), read_timeout_seconds=self.timeout) as client, receive:
                    task_status.started(send)
                    started = True
                    async for name, arguments, reply in receive:
                        try:
                            outcome: CallToolResult | BaseException = await client.call_tool(
                                name, arguments, read_timeout_seconds=self.timeout
                            )
                        except Exception as exc:  # a dead or hung peer: answer, then drop the connection
                            outcome = exc
                        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                            await reply.send(outcome)
                        if isinstance(outcome, BaseException):
                            break
            except Exception as exc:
                if not started:
                    raise
                log.debug("the %s connection ended: %r", self.server_name, exc)
            finally:
                if self._scope is scope:
                    self._scope = None

    async def _call(self, tool_name: str, arguments: dict[str, Any]) -> CallToolResult:
        if self._tg is None:
            raise RuntimeError("MCPClient must be entered with `async with` before calling tools")
        requests = self._requests
        if requests is None:
            requests = self._requests = await self._tg.start(self._serve)
        reply_send, reply_receive = anyio.create_memory_object_stream[CallToolResult | BaseException](1)
        with anyio.fail_after(self.timeout + 5), reply_receive:
            await requests.send((tool_name, arguments, reply_send))
            outcome = await reply_receive.receive()
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    @overload
    async def call_tool(self, tool_name: str, arguments: dict[str, Any]) -> dict[str, Any]: ...

    @overload
    async def call_tool(
        self, tool_name: str, arguments: dict[str, Any], fallback: Fallback[T]
    ) -> dict[str, Any] | T: ...

    async def call_tool(self, tool_name: str, arguments: dict[str, Any], fallback: Fallback[Any] | None = None) -> Any:
        """Call `tool_name`; on an unavailable server log it, then run `fallback` or raise `MCPUnavailable`."""
        try:
            result = await self._call(tool_name, arguments)
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
