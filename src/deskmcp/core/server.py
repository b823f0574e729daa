"""`DeskServer`: the SDK's `MCPServer` with deskmcp's tool surface, the same for every server.

Every server package builds its tools on a `DeskServer`. What it adds to the SDK:

- every failed tool call comes back as an `isError` result holding the taxonomy's JSON body,
  converted once in `call_tool`: a `DeskError` as is, an argument that fails the input schema
  or is not a parameter at all as `bad_request` (naming the valid ones), an unknown tool as
  `not_found`, a withheld tool (`withhold`) as the error it was withheld with, a crash as
  `internal_error` (traceback to the log, never to the client);
- results carry their structured content once more as compact JSON text (no indentation);
- tool definitions are published compactly (`core.schema`), output schemas only on request;
- tools belong to toolsets (`core.toolsets`) that configuration, or the client itself in
  dynamic mode, switches on and off;
- client-safe names (`DESKMCP_TOOL_NAMES=safe`, the default) wherever a tool name is shown, and
  calls by the dotted names still answered;
- a person's confirmation through MCP elicitation (`ask_person`, `person_agreed`), for the
  tools whose action a person, not the model, must approve.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager, suppress
from contextvars import ContextVar
from typing import Annotated, Any, Literal, Protocol, TypeVar

import orjson
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.mcpserver import (
    AcceptedElicitation,
    CancelledElicitation,
    Context,
    DeclinedElicitation,
    Elicit,
    ElicitationResult,
    Icon,
    MCPServer,
)
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.request_state import RequestStateBoundary
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from mcp.types import Tool as MCPTool
from pydantic import BaseModel, Field, ValidationError

from deskmcp import __version__
from deskmcp.core import stdio
from deskmcp.core.errors import BadRequest, DeskError, InternalError, NotFound, PermissionDenied
from deskmcp.core.principal import current_principal
from deskmcp.core.schema import argument_names, compact_description, compact_schema
from deskmcp.core.scopes import tool_scope
from deskmcp.core.toolsets import Toolset, declare, select

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
    """Map whatever the SDK raised around a tool call onto the taxonomy. A `DeskError` raised by
    the tool reaches here as the `__cause__` of the SDK's wrapper (an `UnexpectedToolError`, as
    for any exception that is not the SDK's own), so it is looked for first."""
    cause = exc.__cause__
    if isinstance(cause, DeskError):
        return cause
    if isinstance(exc, UnexpectedToolError):
        log.error("tool %s crashed", tool, exc_info=cause or exc)
        return InternalError(f"Tool {tool} failed unexpectedly; the server log has the details.", {"tool": tool})
    if isinstance(cause, ValidationError):
        return validation_error(cause)
    # A ToolError or ResourceError raised by a dependency: its text is safe to pass on.
    return BadRequest(str(cause or exc).removeprefix(f"Error executing tool {tool}: "), {"tool": tool})


class Confirmation(BaseModel):
    """The form a person answers to confirm an action: one box to tick."""

    confirm: bool = Field(title="Yes, do it", description="Tick to go ahead; decline to stop")


Answer = ElicitationResult[Confirmation]
"""What a person answered (accept, decline or cancel); see `ask_person`."""

NOT_ASKED = "not asked"
"""A resolver's answer when the person could not be asked (see `ask_person`)."""

COULD_NOT_ASK = "could not ask"
"""A resolver's answer when the client can ask the person (or may: see `cannot_reach_person`) but
this call has no way to reach it (stateless serving and a client of protocol 2025-11-25 or older:
no request can be sent to it in the middle of a call). `person_agreed` refuses the action then."""


_SEALED_STATE: ContextVar[str | None] = ContextVar("deskmcp_sealed_state", default=None)


def sealed_request_state() -> str | None:
    """The request state of the current call as the client sent it back, still sealed (None
    without one). The SDK hands tools what it opened, which is the same for the same question and
    answer; the sealed form differs each time the server asks (a random nonce and the sealing time),
    so it names one question asked once (`deskmcp.mail.confirm.spend_yes`)."""
    return _SEALED_STATE.get()


class SealedStateWitness:
    """Server middleware, placed outside the SDK's request-state boundary (which replaces the
    sealed state with what it opened): keeps the sealed state for `sealed_request_state`."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        params = ctx.params
        wire = params.get("requestState") if isinstance(params, Mapping) else None
        reset = _SEALED_STATE.set(wire if isinstance(wire, str) else None)
        try:
            return await call_next(ctx)
        finally:
            _SEALED_STATE.reset(reset)


def _declares_elicitation(capabilities: Any) -> bool:
    elicitation = capabilities.elicitation if capabilities is not None else None
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


def cannot_reach_person(context: Context[Any, Any]) -> bool:
    """Whether this MCP call comes from a client that can ask the person, or may (stateless serving
    does not know what a client of protocol 2025-11-25 or older declared when it connected), while no
    question can reach it: such a call has no request channel back to the client."""
    try:
        version = context.protocol_version
        if version is None or version >= "2026-07-28" or context.session.can_send_request:
            return False
        capabilities = context.client_capabilities
    except (ValueError, RuntimeError, AttributeError):  # no request behind the context
        return False
    return capabilities is None or _declares_elicitation(capabilities)


def can_ask_person(context: Context[Any, Any]) -> bool:
    """Whether this call can put a question to the person: the client declared form elicitation
    and the call has a channel for it (the result itself from protocol 2026-07-28 on, a request
    on the call's stream before). A call without MCP (the HTTP tool API, `deskmcp call`) cannot."""
    try:
        capabilities = context.client_capabilities
        version = context.protocol_version
        channel = version is not None and (version >= "2026-07-28" or context.session.can_send_request)
    except (ValueError, RuntimeError, AttributeError):  # no request behind the context
        return False
    return channel and _declares_elicitation(capabilities)


def ask_person(context: Context[Any, Any], message: str) -> Elicit[Confirmation] | str:
    """A resolver's question to the person (`Resolve`): the client shows `message` with a box to
    tick and answers accept, decline or cancel. `NOT_ASKED` when the client cannot ask,
    `COULD_NOT_ASK` when it could but this call cannot reach it."""
    if can_ask_person(context):
        return Elicit(message, Confirmation)
    return COULD_NOT_ASK if cannot_reach_person(context) else NOT_ASKED


def person_agreed(answer: Answer | AcceptedElicitation[Any], action: str, unasked: DeskError | None) -> bool:
    """True when the person accepted with the box ticked. A decline, a cancel or an unticked box
    raises `permission_denied` saying nothing was done; a call that could not ask raises `unasked`,
    or returns False when `unasked` is None (the action needs no person then), except that a
    client declaring that it can ask, which this call could not reach (`COULD_NOT_ASK`), is
    always refused."""
    if isinstance(answer, AcceptedElicitation) and isinstance(answer.data, Confirmation):
        if answer.data.confirm:
            return True
        raise PermissionDenied(f"The person did not tick the box to confirm; {action}.", {"answer": "unticked"})
    if isinstance(answer, DeclinedElicitation):
        raise PermissionDenied(f"The person declined; {action}.", {"answer": "decline"})
    if isinstance(answer, CancelledElicitation):
        raise PermissionDenied(f"The person dismissed the question; {action}.", {"answer": "cancel"})
    if unasked is not None:
        raise unasked
    # A resolver's plain answer (NOT_ASKED, COULD_NOT_ASK) reaches the tool as an accepted one.
    if (answer.data if isinstance(answer, AcceptedElicitation) else answer) == COULD_NOT_ASK:
        raise PermissionDenied(
            f"This needs the person's confirmation and their client can show questions, but this server "
            f"could not ask: it serves without sessions (--stateless) and the client speaks a protocol older "
            f"than 2026-07-28, to which no question can be sent in the middle of a call; {action}. Use a "
            f"client of protocol 2026-07-28, or a server with sessions, or an allowlist of recipients.",
            {"elicitation": "unreachable"},
        )
    return False


ToolNames = Literal["spec", "safe"]
"""`safe` (the default): dots become underscores (`granola_meetings_list`), the names every client
accepts (`^[a-zA-Z0-9_-]{1,64}$`: Claude Desktop and some CLIs refuse others); a call by the
dotted name is still answered. `spec`: tool names as specified (`granola.meetings.list`), which
the MCP specification allows, for clients that show them grouped."""


class ToolsetInfo(BaseModel):
    id: str = Field(description="Toolset id, e.g. 'vault.write'")
    description: str
    enabled: bool
    tools: list[str]


class ToolsetList(BaseModel):
    toolsets: list[ToolsetInfo]
    changed: bool = Field(default=False, description="True when this call enabled or disabled something")


ToolsetArg = Annotated[
    str, Field(description="A toolset id from list_toolsets ('vault.write'), or a server name for all of its")
]

CORE_GROUP = "deskmcp"
"""Group of the server's own tools (the dynamic-mode toolset tools), always enabled."""


class DeskServer(MCPServer[Any]):
    """An `MCPServer` with deskmcp's tool surface (see the module docstring)."""

    def __init__(
        self,
        name: str,
        *,
        instructions: str | None = None,
        tool_names: ToolNames = "safe",
        output_schemas: bool = False,
        **kwargs: Any,
    ) -> None:
        self._service_contexts: list[ServiceContext] = []
        self._safe_names = tool_names == "safe"
        self._renamed: dict[str, str] = {}
        self._instructions_text = instructions
        self.output_schemas = output_schemas
        self.registering = name.removeprefix("deskmcp-")
        """The server whose tools are being registered: the first part of their toolset ids."""
        self.toolsets: dict[str, Toolset] = {}
        self.tool_toolsets: dict[str, str] = {}
        """Published tool name -> toolset id (`vault.read`)."""
        self.enabled_toolsets: frozenset[str] | None = None
        """None: every tool is on (a server built directly, as in tests)."""
        self._registered: dict[str, ToolAnnotations | None] = {}
        """Published tool name -> the annotations it was registered with."""
        self.withheld_tools: dict[str, DeskError] = {}
        """Tools known here but not offered (a read-only mode, a server not running): published
        name -> the error a call to one answers instead of "Unknown tool"."""
        self._definitions: dict[bool, list[MCPTool]] = {}
        super().__init__(
            name,
            instructions=instructions,
            version=__version__,
            lifespan=self._lifespan,
            **kwargs,
        )
        # Toolsets can change while a client is connected: say so in the capabilities.
        lowlevel = self._lowlevel_server
        initialization_options = lowlevel.create_initialization_options

        def with_tools_changed(notification_options: NotificationOptions | None = None, *args: Any, **kw: Any) -> Any:
            options = notification_options or NotificationOptions(tools_changed=True)
            return initialization_options(options, *args, **kw)

        lowlevel.create_initialization_options = with_tools_changed  # type: ignore[method-assign]
        # Outside the request-state boundary, so the sealed state is still there to see.
        boundary = next(
            (i for i, each in enumerate(lowlevel.middleware) if isinstance(each, RequestStateBoundary)),
            len(lowlevel.middleware),
        )
        lowlevel.middleware.insert(boundary, SealedStateWitness())

    async def run_stdio_async(self) -> None:
        """Serve over stdio, read and written in the event loop where it can be (`core.stdio`)."""
        await stdio.serve(self._lowlevel_server)

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

    # -- registering ----------------------------------------------------------------------------

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
        self.tool_toolsets[published] = f"{self.registering}.{toolset or ('read' if read_only else 'write')}"
        self._definitions.clear()
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
        self._registered[published] = annotations

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

    def remove_tool(self, name: str) -> None:
        super().remove_tool(name)
        self._registered.pop(name, None)
        self.tool_toolsets.pop(name, None)
        self._definitions.clear()

    def withhold(self, name: str, error: DeskError) -> None:
        """Take tool `name` away (when registered): it is not listed, and a call to it answers `error`."""
        if name in self._registered:
            self.remove_tool(name)
        self.withheld_tools[name] = error

    def tool_annotations(self, name: str) -> ToolAnnotations | None:
        """The annotations tool `name` was registered with (None: no such tool, or none given)."""
        return self._registered.get(name)

    # -- client-safe tool names ---------------------------------------------------------------

    def tool_scope(self, name: str) -> str:
        """The OAuth scope a call to tool `name` needs (`core.scopes`: read, write or send)."""
        annotations = self._registered.get(name)
        return tool_scope(
            self.tool_toolsets.get(name),
            read_only=bool(annotations and annotations.read_only_hint),
            open_world=bool(annotations and annotations.open_world_hint),
        )

    def tools_for_principal(self, tools: list[MCPTool]) -> list[MCPTool]:
        """`tools` less those the verified principal's token has no scope for (all without a principal)."""
        principal = current_principal()
        if principal is None:
            return tools
        return [t for t in tools if self.tool_scope(t.name) in principal.scopes]

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

    def _published_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        compact = compact_schema(schema)
        if self._renamed:  # descriptions inside the schema name tools too
            compact = orjson.loads(self.published(orjson.dumps(compact).decode()) or "{}")
        return compact

    # -- toolsets -----------------------------------------------------------------------------

    def declare_toolsets(self, server: str, toolsets: dict[str, str], defaults: tuple[str, ...]) -> None:
        """Record the toolsets one server module declares (`TOOLSETS`, `DEFAULT_TOOLSETS`)."""
        for toolset in declare(server, toolsets, defaults):
            self.toolsets[toolset.id] = toolset

    def select_toolsets(self, spec: str | None, absent: Iterable[str] = (), source: str = "DESKMCP_TOOLSETS") -> None:
        """Apply a `DESKMCP_TOOLSETS` value (or one from `source`, e.g. the `--toolsets` flag); in
        dynamic mode add the tools that switch toolsets."""
        undeclared = sorted(
            {t for t in self.tool_toolsets.values() if t not in self.toolsets and not t.startswith(f"{CORE_GROUP}.")}
        )
        if undeclared:
            raise ValueError(f"tools are registered in undeclared toolsets: {', '.join(undeclared)}")
        selection = select(spec, self.toolsets.values(), absent, source)
        self.enabled_toolsets = selection.enabled
        self._definitions.clear()
        if selection.dynamic:
            self._add_toolset_tools()

    def tool_enabled(self, name: str) -> bool:
        toolset = self.tool_toolsets.get(name)
        if self.enabled_toolsets is None or toolset is None or toolset.startswith(f"{CORE_GROUP}."):
            return True
        return toolset in self.enabled_toolsets

    def toolset_list(self, *, changed: bool = False) -> ToolsetList:
        members: dict[str, list[str]] = {}
        for tool, toolset in self.tool_toolsets.items():
            members.setdefault(toolset, []).append(tool)
        enabled = self.enabled_toolsets
        return ToolsetList(
            toolsets=[
                ToolsetInfo(
                    id=t.id,
                    description=t.description,
                    enabled=enabled is None or t.id in enabled,
                    tools=members.get(t.id, []),
                )
                for t in self.toolsets.values()
                if members.get(t.id)
            ],
            changed=changed,
        )

    def _add_toolset_tools(self) -> None:
        registering, self.registering = self.registering, CORE_GROUP
        try:
            self._register_toolset_tools()
        finally:
            self.registering = registering

    def _register_toolset_tools(self) -> None:
        @self.tool("list_toolsets", annotations=READ_ONLY, toolset="dynamic")
        def list_toolsets() -> ToolsetList:
            """Toolsets with their tools and whether each is enabled. Enable one with enable_toolset."""
            return self.toolset_list()

        @self.tool("enable_toolset", annotations=writes(destructive=False, idempotent=True), toolset="dynamic")
        async def enable_toolset(toolset: ToolsetArg, context: Context[Any, Any]) -> ToolsetList:
            """Enable a toolset; its tools are listed from now on (the client is notified)."""
            return await self._switch(toolset, True, context)

        @self.tool("disable_toolset", annotations=writes(destructive=False, idempotent=True), toolset="dynamic")
        async def disable_toolset(toolset: ToolsetArg, context: Context[Any, Any]) -> ToolsetList:
            """Disable a toolset to shorten the tool list (the client is notified)."""
            return await self._switch(toolset, False, context)

    async def _switch(self, word: str, on: bool, context: Context[Any, Any]) -> ToolsetList:
        named = select(word, self.toolsets.values()).enabled if word not in ("default", "dynamic") else frozenset()
        if not named:
            raise BadRequest(
                f"No toolset {word!r}. Call list_toolsets for the ids.",
                {"toolset": word, "toolsets": list(self.toolsets)},
            )
        current = self.enabled_toolsets or frozenset()
        updated = current | named if on else current - named
        changed = updated != current
        self.enabled_toolsets = updated
        if changed:
            await _notify_tools_changed(context)
        return self.toolset_list(changed=changed)

    # -- listing and calling ------------------------------------------------------------------

    async def tool_definitions(self, *, output_schemas: bool | None = None, enabled_only: bool = True) -> list[MCPTool]:
        """The published tool definitions (compact; output schemas only when asked for)."""
        with_output = self.output_schemas if output_schemas is None else output_schemas
        if with_output not in self._definitions:
            self._definitions[with_output] = [
                tool.model_copy(
                    update={
                        "annotations": published_annotations(tool.annotations),
                        "description": compact_description(self.published(tool.description)),
                        "input_schema": {**self._published_schema(tool.input_schema), "additionalProperties": False},
                        "output_schema": self._published_schema(tool.output_schema)
                        if with_output and tool.output_schema
                        else None,
                    }
                )
                for tool in await super().list_tools()
            ]
        tools = self._definitions[with_output]
        return [t for t in tools if self.tool_enabled(t.name)] if enabled_only else list(tools)

    async def list_tools(self) -> list[MCPTool]:
        return self.tools_for_principal(await self.tool_definitions())

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None, context: Context[Any, Any] | None = None
    ) -> Any:
        result = await super().get_prompt(name, arguments, context)
        for message in getattr(result, "messages", None) or ():
            content = message.content
            if isinstance(content, TextContent):
                content.text = self.published(content.text) or ""
        return result

    async def check_arguments(self, name: str, arguments: dict[str, Any]) -> None:
        """Refuse an unknown or disabled tool, and arguments the tool does not take, naming what is valid."""
        if name not in self._registered:
            if name in self.withheld_tools:
                raise copy.copy(self.withheld_tools[name])  # a copy: error_result rewrites the message it gets
            raise NotFound(f"Unknown tool {name!r}. List the tools to see valid names.", {"tool": name})
        if not self.tool_enabled(name):
            toolset = self.tool_toolsets[name]
            raise NotFound(
                f"Tool {name} is in toolset {toolset!r}, which is not enabled. Enable it with enable_toolset "
                f"(when offered) or add {toolset} to DESKMCP_TOOLSETS.",
                {"tool": name, "toolset": toolset},
            )
        principal = current_principal()
        if principal is not None and (needed := self.tool_scope(name)) not in principal.scopes:
            raise PermissionDenied(
                f"Tool {name} needs the {needed!r} scope, which this access token was not granted. "
                f"Authorize again asking for scope {needed!r}.",
                {"tool": name, "scope": needed},
            )
        definition = next(t for t in await self.tool_definitions(enabled_only=False) if t.name == name)
        valid = argument_names(definition.input_schema)
        unknown = [key for key in arguments if key not in valid]
        if unknown:
            listed = ", ".join(valid) or "none"
            raise BadRequest(
                f"Unknown argument{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))} for {name}. "
                f"Valid arguments: {listed}.",
                {"unknown": unknown, "valid": valid},
            )

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None) -> Any:
        """Run a tool. Every failure comes back here, once, as the taxonomy's error result (the
        same conversion the SDK applies to a `ToolError`), so MCP clients and the tool API see
        the same body. A tool published under its safe name answers to its dotted name too."""
        name = self._renamed.get(name, name)
        try:
            await self.check_arguments(name, arguments)
            result = await super().call_tool(name, arguments, context)
        except DeskError as exc:
            return self.error_result(exc, name)
        except ToolError as exc:
            return self.error_result(as_desk_error(exc, name), name)
        return compact_result(result)

    def error_result(self, error: DeskError, tool: str) -> CallToolResult:
        """`error` as the tool result the model reads, tool names written as the client sees them
        (but for an unknown tool's own name, quoted as the client wrote it)."""
        if not (isinstance(error, NotFound) and tool not in self._registered and error.details.get("tool") == tool):
            error.message = self.published(error.message) or ""
        log.info("tool %s failed: %s %r", tool, error.code, error.message)
        return error_result(error)


def published_annotations(annotations: ToolAnnotations | None) -> ToolAnnotations | None:
    """`annotations` without the hints that say what the specification's defaults already say
    (readOnlyHint false, idempotentHint false, openWorldHint true), nor idempotentHint on a read-only
    tool (meaningful only for tools that write): every tool list carries them. destructiveHint is kept
    on every tool that writes, though true is its default: clients that guard destructive tools read it."""
    if annotations is None:
        return None
    read_only = annotations.read_only_hint is True
    return annotations.model_copy(
        update={
            "read_only_hint": True if read_only else None,
            "destructive_hint": None if read_only else annotations.destructive_hint,
            "idempotent_hint": True if annotations.idempotent_hint and not read_only else None,
            "open_world_hint": False if annotations.open_world_hint is False else None,
        }
    )


def error_result(error: DeskError) -> CallToolResult:
    """The MCP form of a failed call: `isError` and the JSON body as the only text."""
    return CallToolResult(content=[TextContent(type="text", text=error.to_json())], is_error=True)


def compact_result(result: Any) -> Any:
    """The structured content once more as compact JSON text, in place of the SDK's indented copy."""
    if (
        isinstance(result, CallToolResult)
        and result.structured_content is not None
        and not result.is_error
        and len(result.content) == 1
        and isinstance(result.content[0], TextContent)
    ):
        try:
            text = orjson.dumps(result.structured_content).decode()
        except TypeError:  # what orjson does not write (a whole number beyond 64 bits): the SDK's copy
            return result
        return result.model_copy(update={"content": [TextContent(type="text", text=text)]})
    return result


async def _notify_tools_changed(context: Context[Any, Any]) -> None:
    """Tell the client the tool list changed: on its session (handshake protocol) and to
    `subscriptions/listen` streams (the stateless protocol)."""
    with suppress(ValueError, RuntimeError, AttributeError):  # no session: called outside MCP (tool API)
        await context.session.send_tool_list_changed()
    with suppress(ValueError, RuntimeError):
        await context.notify_tools_changed()
