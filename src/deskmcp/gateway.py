"""All of deskmcp in one process: every server in `SERVERS` registered on one `DeskServer`.

`compose()` is the one place servers are put together; `deskmcp serve all`, `deskmcp tools`,
`deskmcp call` and the HTTP app (`deskmcp.serving`) all use it, so every path sees the same
tool registry and the same error mapping. A server whose backend is not configured is
skipped with one log line; its tools are not listed, but a call to one answers not_found naming
the server and why it is not running (the model, unlike the user, never sees the log), and the
server instructions say which servers are not running. A server in read-only mode keeps only its
read-only tools (`servers.keep_read_only`, as when it runs alone). Two servers claiming one tool or
prompt name is a start-up error.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver.prompts import Prompt

from deskmcp.core.config import WorkspaceSettings
from deskmcp.core.errors import BadRequest, DeskError, NotFound
from deskmcp.core.paths import shown_text
from deskmcp.core.server import CORE_GROUP, DeskServer
from deskmcp.servers import SERVERS, ServerModule, ServerSpec, keep_read_only

if TYPE_CHECKING:
    from mcp.server.request_state import RequestStateSecurity

log = logging.getLogger("deskmcp.gateway")

INSTRUCTIONS = """deskmcp: the user's own data and tools, one server per family of tools (the tool
name's first part says which). Errors are JSON objects with an
`error` code and a `message` saying how to recover."""


class NameClash(RuntimeError):
    """Two servers registered the same tool or prompt name: a programming error, found at start-up."""


class ComposedServer(DeskServer):
    """A `DeskServer` that remembers which server registered each tool and prompt, and refuses clashes.

    The SDK keeps the first of two tools with one name and only logs a warning; in a composition
    that would silently hide a tool, so here it is an error naming both owners.
    """

    def __init__(self, name: str, *, instructions: str | None = None, **kwargs: Any) -> None:
        super().__init__(name, instructions=instructions, **kwargs)
        self.tool_owners: dict[str, str] = {}
        self.prompt_owners: dict[str, str] = {}

    def tool_name(self, name: str) -> str:
        _claim(self.tool_owners, "tool", name, self.registering)
        return super().tool_name(name)

    def add_prompt(self, prompt: Prompt) -> None:
        _claim(self.prompt_owners, "prompt", prompt.name, self.registering)
        super().add_prompt(prompt)


def _claim(owners: dict[str, str], kind: str, name: str, owner: str) -> None:
    if name in owners:
        raise NameClash(
            f"{kind} name {name!r} is registered by both {owners[name]!r} and {owner!r}; "
            f"tool and prompt names must be unique across servers."
        )
    owners[name] = owner


class Deferred:
    """A server's service, built on first use: composing a server to list or describe its tools
    opens no index and creates no folder. `settings` is at hand without building anything."""

    def __init__(self, factory: Callable[[Any], Any], settings: Any) -> None:
        self.settings = settings
        self._factory = factory
        self._service: Any = None
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.built(), name)

    def built(self) -> Any:
        if self._service is None:
            with self._lock:
                if self._service is None:
                    self._service = self._factory(self.settings)
        return self._service

    def close(self) -> None:
        if self._service is not None:
            self._service.close()


@dataclass
class Composition:
    """The composed server plus what went into it."""

    server: ComposedServer
    included: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)


def _tool_names(name: str, module: ServerModule, settings: Any) -> list[str]:
    """The tools server `name` registers, learnt by registering it on a throwaway server: its
    service is `Deferred`, so nothing is opened or created. The names as specified (dotted), which
    the caller withholds under both spellings."""
    probe = DeskServer(f"deskmcp-{name}", tool_names="spec")
    module.register(probe, Deferred(module.create_service, settings))
    return list(probe.tool_toolsets)


def parse_names(value: str | None) -> list[str]:
    """`"a, b"` -> `["a", "b"]`; checks every name is a known server."""
    if not value:
        return []
    names = [part.strip() for part in value.split(",") if part.strip()]
    unknown = [n for n in names if n not in SERVERS]
    if unknown:
        raise BadRequest(
            f"Unknown server(s) {', '.join(unknown)}. Servers: {', '.join(SERVERS)}.",
            {"unknown": unknown, "servers": list(SERVERS)},
        )
    return names


def select(only: Iterable[str] = (), exclude: Iterable[str] = ()) -> list[ServerSpec]:
    """The servers to compose, in registry order."""
    wanted = set(only)
    dropped = set(exclude)
    for name in wanted | dropped:
        if name not in SERVERS:
            raise BadRequest(f"Unknown server {name!r}. Servers: {', '.join(SERVERS)}.", {"server": name})
    return [spec for name, spec in SERVERS.items() if (not wanted or name in wanted) and name not in dropped]


def compose(
    specs: Iterable[ServerSpec] | None = None,
    *,
    workspace: Path | None = None,
    keep_unavailable: bool = False,
    name: str = "deskmcp",
    toolsets: str | None = None,
    settings: Mapping[str, Any] | None = None,
    check_available: bool = True,
    request_state_security: RequestStateSecurity | None = None,
) -> Composition:
    """Register every selected server on one `ComposedServer`.

    A server whose `unavailable(settings)` gives a reason is skipped with one warning, unless
    `keep_unavailable` (for listing tools, or a server named explicitly: its tools then explain
    what is missing when called). `toolsets` overrides `DESKMCP_TOOLSETS` (see `core.toolsets`).
    `request_state_security`: the key ring replicas share (`deskmcp.serving.replicas`); None keeps the SDK's
    per-process key.
    Services are `Deferred`: built when a tool or the server's lifespan first needs them.
    `settings` maps each selected server's name to its settings, built by the caller instead of read
    from the environment (one user's own, `deskmcp.serving.users`); a `DeskError` in place of a
    server's settings skips that server with its message as the reason, `workspace`'s paths shown
    relative to it (`core.paths.shown_text`), as are the reasons of servers whose settings say so
    (`WorkspaceSettings.relative_paths`). `check_available=False` composes servers only to describe
    what they publish: `unavailable` is not asked (it may look for data) and every server is kept.
    """
    chosen = list(SERVERS.values()) if specs is None else list(specs)
    plan: list[tuple[ServerSpec, ServerModule, Any]] = []
    not_running: list[tuple[ServerSpec, ServerModule, Any]] = []
    skipped: dict[str, str] = {}
    for spec in chosen:
        module = spec.load()
        own = spec.settings(workspace=workspace) if settings is None else settings[spec.name]
        try:
            if isinstance(own, DeskError):
                raise own
            reason = module.unavailable(own) if check_available else None
            # A server wrote its reason before knowing who reads it: a user of a shared server
            # sees their workspace's paths relative to it (`WorkspaceSettings.shown_root`).
            reason = reason and shown_text(reason, getattr(own, "shown_root", None))
        except DeskError as exc:
            if settings is None:
                raise
            # Defaults, unvalidated: only to learn the tool names the server would have registered.
            own, reason = module.Settings.model_construct(workspace=workspace), shown_text(exc.message, workspace)
        if reason and not keep_unavailable:
            log.warning("skipping server %s: %s", spec.name, reason)
            skipped[spec.name] = reason
            not_running.append((spec, module, own))
            continue
        if reason:
            log.warning("server %s is not configured: %s", spec.name, reason)
        plan.append((spec, module, own))

    parts = [INSTRUCTIONS] + [m.INSTRUCTIONS for _, m, _ in plan if isinstance(getattr(m, "INSTRUCTIONS", None), str)]
    if skipped:
        lines = "\n".join(f"- {name}: {reason}" for name, reason in skipped.items())
        parts.append(
            "Not running (not configured), so their tools are not offered; tell the user what to fix:\n" + lines
        )
    shared = WorkspaceSettings() if workspace is None else WorkspaceSettings(workspace=workspace)
    server = ComposedServer(
        name,
        instructions="\n\n".join(parts),
        tool_names=shared.tool_names,
        output_schemas=shared.output_schemas,
        request_state_security=request_state_security,
    )
    composition = Composition(server, skipped=skipped)
    for spec, module, own in not_running:
        reason = skipped[spec.name]
        for tool in _tool_names(spec.name, module, own):
            for published in {tool, tool.replace(".", "_")}:
                server.withhold(
                    published,
                    NotFound(
                        f"Tool {published} belongs to the {spec.name} server, which is not running: {reason}. "
                        f"Fix that and restart deskmcp; meanwhile use the other servers' tools.",
                        {"tool": published, "server": spec.name, "reason": reason},
                    ),
                )
    for spec, module, own in plan:
        server.registering = spec.name
        server.declare_toolsets(spec.name, module.TOOLSETS, module.DEFAULT_TOOLSETS)
        before = set(server.tool_toolsets)
        module.register(server, Deferred(module.create_service, own))
        keep_read_only(server, spec.name, own, [t for t in server.tool_toolsets if t not in before])
        composition.included.append(spec.name)
    server.registering = CORE_GROUP  # tools a host program adds later are always on
    if toolsets is not None:
        server.select_toolsets(toolsets, absent=SERVERS, source="--toolsets")
    else:
        server.select_toolsets(shared.toolsets, absent=SERVERS)
    if not composition.included:
        log.warning("no server is available; only the health check will answer")
    return composition
