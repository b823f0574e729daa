"""`DeskServer`: the SDK's `MCPServer` with deskmcp's error contract and composition hooks.

Every server package builds its tools on a `DeskServer`. The one thing it adds to the SDK
is that every failed tool call comes back as the taxonomy's JSON body: a `DeskError` as is,
an argument that fails the input schema as `bad_request`, an unknown tool as `not_found`,
and a crash as `internal_error` (traceback to the log, never to the client).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Any, Literal, Protocol, TypeVar

from mcp.server.mcpserver import Context, Icon, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import TextContent, ToolAnnotations
from mcp.types import Tool as MCPTool
from pydantic import ValidationError

from deskmcp import __version__
from deskmcp.core.errors import BadRequest, DeskError, InternalError, NotFound

log = logging.getLogger("deskmcp")

_Fn = TypeVar("_Fn", bound=Callable[..., Any])
ServiceContext = Callable[[], AbstractAsyncContextManager[object]]


class Closeable(Protocol):
    def close(self) -> None: ...


READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
"""Annotations of a tool that only reads local data."""


def writes(*, destructive: bool, idempotent: bool, open_world: bool = False) -> ToolAnnotations:
    """Annotations of a tool that changes something."""
    return ToolAnnotations(
        read_only_hint=False,
        destructive_hint=destructive,
        idempotent_hint=idempotent,
        open_world_hint=open_world,
    )


def validation_error(exc: ValidationError) -> BadRequest:
    problems = [
        {"field": ".".join(str(p) for p in err["loc"]) or "(arguments)", "problem": err["msg"]} for err in exc.errors()
    ]
    summary = "; ".join(f"{p['field']}: {p['problem']}" for p in problems[:5])
    return BadRequest(f"Invalid arguments: {summary}", {"problems": problems})


def as_desk_error(exc: ToolError, tool: str) -> DeskError:
    """Map whatever the SDK raised around a tool call onto the taxonomy."""
    cause = exc.__cause__
    if isinstance(exc, DeskError):
        return exc
    if isinstance(cause, DeskError):
        return cause
    if isinstance(exc, UnexpectedToolError):
        log.error("tool %s crashed", tool, exc_info=cause or exc)
        return InternalError(f"Tool {tool} failed unexpectedly; the server log has the details.", {"tool": tool})
    if isinstance(cause, ValidationError):
        return validation_error(cause)
    if cause is None and str(exc).startswith("Unknown tool"):
        return NotFound(f"Unknown tool {tool!r}. List the tools to see valid names.", {"tool": tool})
    # A ToolError or ResourceError raised by a dependency: its text is safe to pass on.
    return BadRequest(str(cause or exc).removeprefix(f"Error executing tool {tool}: "), {"tool": tool})


ToolNames = Literal["spec", "safe"]
"""`spec`: tool names as specified (`granola.meetings.list`). `safe`: dots become underscores
(`granola_meetings_list`), for clients that accept only `^[a-zA-Z0-9_-]{1,64}$` (Claude Desktop,
some CLIs), although the MCP specification allows dots."""


class DeskServer(MCPServer[Any]):
    """An `MCPServer` whose tool errors follow the taxonomy and whose services can be composed."""

    def __init__(
        self, name: str, *, instructions: str | None = None, tool_names: ToolNames = "spec", **kwargs: Any
    ) -> None:
        self._service_contexts: list[ServiceContext] = []
        self._safe_names = tool_names == "safe"
        self._renamed: dict[str, str] = {}
        self._instructions_text = instructions
        self.tool_toolsets: dict[str, str] = {}
        """Published tool name -> the toolset it belongs to (`read`, `write`, `admin`, ...)."""
        super().__init__(
            name,
            instructions=instructions,
            version=__version__,
            lifespan=self._lifespan,
            **kwargs,
        )

    def add_service_context(self, factory: ServiceContext) -> None:
        """Run `factory()` as an async context for as long as the server runs."""
        self._service_contexts.append(factory)

    def close_on_shutdown(self, resource: Closeable) -> None:
        """Call `resource.close()` when the server stops (e.g. a service holding an index)."""

        @asynccontextmanager
        async def closing() -> AsyncIterator[object]:
            try:
                yield resource
            finally:
                resource.close()

        self.add_service_context(closing)

    @asynccontextmanager
    async def _lifespan(self, _server: MCPServer[Any]) -> AsyncIterator[object]:
        async with AsyncExitStack() as stack:
            for factory in self._service_contexts:
                await stack.enter_async_context(factory())
            yield {}

    # -- client-safe tool names ---------------------------------------------------------------

    def add_tool(
        self,
        fn: Callable[..., Any],
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | None = None,
        icons: list[Icon] | None = None,
        meta: dict[str, Any] | None = None,
        structured_output: bool | None = None,
        toolset: str | None = None,
    ) -> None:
        """Register `fn` as a tool in `toolset` (default: `read` for read-only tools, else `write`)."""
        published = self.tool_name(name or fn.__name__)
        read_only = bool(annotations and annotations.read_only_hint)
        self.tool_toolsets[published] = toolset or ("read" if read_only else "write")
        super().add_tool(
            fn,
            name=published,
            title=title,
            description=description,
            annotations=annotations,
            icons=icons,
            meta=meta,
            structured_output=structured_output,
        )

    def tool(  # type: ignore[override]
        self,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | None = None,
        icons: list[Icon] | None = None,
        meta: dict[str, Any] | None = None,
        structured_output: bool | None = None,
        toolset: str | None = None,
    ) -> Callable[[_Fn], _Fn]:
        """The SDK's `@tool` decorator, plus the `toolset` the tool belongs to."""

        def decorator(fn: _Fn) -> _Fn:
            self.add_tool(
                fn,
                name=name,
                title=title,
                description=description,
                annotations=annotations,
                icons=icons,
                meta=meta,
                structured_output=structured_output,
                toolset=toolset,
            )
            return fn

        return decorator

    def tool_name(self, name: str) -> str:
        """The name a tool registered as `name` is published under (a hook for subclasses)."""
        if self._safe_names and "." in name:
            self._renamed[name] = name.replace(".", "_")
            self._lowlevel_server.instructions = self.published(self._instructions_text)
            return self._renamed[name]
        return name

    def published(self, text: str | None) -> str | None:
        """`text` with every renamed tool written as the client sees it."""
        if not text or not self._renamed:
            return text
        for original in sorted(self._renamed, key=len, reverse=True):
            text = text.replace(original, self._renamed[original])
        return text

    async def list_tools(self) -> list[MCPTool]:
        tools = await super().list_tools()
        if self._renamed:
            for tool in tools:
                tool.description = self.published(tool.description)
        return tools

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None, context: Context[Any, Any] | None = None
    ) -> Any:
        result = await super().get_prompt(name, arguments, context)
        for message in getattr(result, "messages", None) or ():
            content = message.content
            if isinstance(content, TextContent):
                content.text = self.published(content.text) or ""
        return result

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None) -> Any:
        try:
            result = await super().call_tool(name, arguments, context)
        except DeskError as exc:
            exc.message = self.published(exc.message) or ""
            raise
        except ToolError as exc:
            error = as_desk_error(exc, name)
            error.message = self.published(error.message) or ""
            raise error from exc
        return result
