"""The registry of deskmcp's servers: one entry per server package, imported lazily, and the
contract every server module keeps.

Each server package `deskmcp.<name>` has a `server` module that is a `ServerModule`:

- `Settings`: its frozen settings class (a `WorkspaceSettings` subclass);
- `INSTRUCTIONS`, `TOOLSETS`, `DEFAULT_TOOLSETS`: what the client reads, and its toolsets;
- `create_service(settings)`: the service object its tools call;
- `register(server, service)`: adds its tools, resources and prompts to a `DeskServer`;
- `unavailable(settings)`: None when it can run, else one line saying what is missing;
- `USERS`: a `UserPolicy`, what a user of a shared server (users mode) may set for it in their own
  settings file and where its data lives in their workspace; `deskmcp.serving.users` reads these
  declarations for every server alike and names none.

Settings with a `read_only` attribute that is true (and `read_only_switch`, the setting that says
so, e.g. `MAIL_MODE=read_only`) keep only the tools annotated `readOnlyHint`: `keep_read_only`
withholds the others right after `register`, in `create_server` and in the gateway alike, and a
call to one answers permission_denied naming the setting. Services refuse changes in that mode
as well, as a second check.

`create_server(module, settings)` builds a `DeskServer` with one server's tools; `deskmcp serve
NAME` and the all-in-one gateway go through this table. Importing it costs nothing: the CLI
reads it for its help text before any server (or the SDK) is imported.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast, runtime_checkable

from deskmcp.core.errors import BadRequest, PermissionDenied

if TYPE_CHECKING:
    from collections.abc import Iterable

    from deskmcp.core.config import WorkspaceSettings
    from deskmcp.core.server import DeskServer


USER_SETTINGS_FILE = "settings.env"
"""A user's own settings, in their workspace (users mode)."""


@dataclass(frozen=True)
class RemoteSignIn:
    """A remote MCP server a user of a shared server signs in to with their own account (OAuth), for
    one server to read on their behalf: the HTTP app serves `/auth/<name>/url` and
    `/auth/<name>/callback` for it (`deskmcp.connect.remote_sign_in`), and each user's settings of the
    server carry who they are (`principal`), so that the server finds that user's own tokens."""

    name: str
    """The routes' segment (`/auth/<name>/url`)."""
    service: str
    """The remote as said to the user."""
    url: Callable[[Any], str]
    """The remote's MCP address, from a user's settings of the server (the deployment's, never the user's)."""
    record: Callable[[Any], Any]
    """That user's `remote_sign_in.TokenRecord`, from their settings of the server."""
    principal: str
    """The setting that gets (issuer, subject) of the user."""
    database: str | None = None
    """The setting that gets the deployment's token database (`DESKMCP_DATABASE_URL`)."""
    keys: str | None = None
    """The setting that gets the deployment's sealing keys (`DESKMCP_TOKEN_KEYS`)."""


@dataclass(frozen=True)
class UserPolicy:
    """What a user of a shared server (users mode, `deskmcp.serving.users`) may set for one server in
    their own settings file, and where the server's data lives in their workspace.

    Settings are named by their field in the module's `Settings` (a user's file may use any of a
    field's names). Whatever a server declares, every path a user's settings name must lie inside
    their workspace after symlinks, the values are read as data, and the deployment's settings (how
    tools are published, the workspace, the Google client) are not theirs to set."""

    offered: bool = True
    """False: the server is not offered to the users of a shared server (`not_offered` says why)."""
    not_offered: str = ""
    forbidden: frozenset[str] = frozenset()
    """Settings a user's file may not set: a file naming one is refused (permission_denied)."""
    fixed: Mapping[str, object] = field(default_factory=dict)
    """Values every user gets whatever their file says (e.g. no OS keyring: it is the server's OS user's)."""
    ignored: frozenset[str] = frozenset()
    """Settings a user's file may name but whose value is dropped for the default (e.g. the URL their
    own API key is sent to)."""
    deployment: frozenset[str] = frozenset()
    """Settings every user takes from the deployment's own settings of the server (this process's
    environment), whatever their file says (e.g. the address the server's sign-in tokens are sent to)."""
    remote_sign_in: RemoteSignIn | None = None
    """A remote MCP server each user signs in to with their own account (see `RemoteSignIn`)."""
    data: Mapping[str, str] = field(default_factory=dict)
    """Where the server's data lives when the user names no place: setting -> folder of their workspace."""
    refused_schemes: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Settings listing URL schemes (comma-separated), each with the schemes a user may not list there
    (`file`: a file:// URL reads folders of this machine, other users' included)."""
    team_folders: Mapping[str, bool] = field(default_factory=dict)
    """Path-list settings the deployment's team folders (`DESKMCP_TEAM_FOLDERS`) go into, the only
    paths outside a workspace a user's settings may hold: setting -> whether the user's own value
    is kept before them (False: the team folders alone)."""
    team_derived: tuple[str, ...] = ()
    """Properties derived from `team_folders`' settings, which may name the team folders too."""
    chosen: Callable[[Mapping[str, str]], dict[str, Any]] | None = None
    """Values decided from the user's own (setting -> value, before validation); raises a `DeskError`
    for a choice not offered to a user."""
    check: Callable[[Any, Path], None] | None = None
    """A last check of a user's validated settings against their workspace; raises a `DeskError`."""


@runtime_checkable
class ServerModule(Protocol):
    """The contract of a `deskmcp.<name>.server` module (see the module docstring)."""

    @property
    def __name__(self) -> str: ...
    # Upper-case properties: module attributes, read-only here so each module's own types conform.
    @property
    def Settings(self) -> type[WorkspaceSettings]: ...
    @property
    def INSTRUCTIONS(self) -> str: ...
    @property
    def TOOLSETS(self) -> dict[str, str]: ...
    @property
    def DEFAULT_TOOLSETS(self) -> tuple[str, ...]: ...
    @property
    def USERS(self) -> UserPolicy: ...

    def create_service(self, settings: Any, /) -> Any: ...
    def register(self, server: DeskServer, service: Any, /) -> None: ...
    def unavailable(self, settings: Any, /) -> str | None: ...


def server_name(module: ServerModule) -> str:
    """`vault` for `deskmcp.vault.server`."""
    return module.__name__.split(".")[1]


def create_server(module: ServerModule, settings: WorkspaceSettings, service: object | None = None) -> DeskServer:
    """A `DeskServer` with only `module`'s tools, every one enabled (tests, benchmarks, embedding);
    `service` defaults to `module.create_service(settings)`."""
    from deskmcp.core.server import DeskServer  # the SDK: only once a server is built

    server = DeskServer(
        f"deskmcp-{server_name(module)}",
        instructions=module.INSTRUCTIONS,
        tool_names=settings.tool_names,
        output_schemas=settings.output_schemas,
    )
    module.register(server, module.create_service(settings) if service is None else service)
    keep_read_only(server, server_name(module), settings, list(server.tool_toolsets))
    return server


def keep_read_only(server: DeskServer, name: str, settings: object, tools: Iterable[str]) -> None:
    """When `settings` say server `name` is read-only, withhold those of its `tools` (published
    names) not annotated readOnlyHint."""
    if not getattr(settings, "read_only", False):
        return
    switch = getattr(settings, "read_only_switch", f"{name.upper()}_READ_ONLY=1")
    for tool in tools:
        annotations = server.tool_annotations(tool)
        if annotations is not None and annotations.read_only_hint:
            continue
        server.withhold(
            tool,
            PermissionDenied(
                f"{name} is read-only ({switch}): {tool} is not available. Use its reading tools, or ask the "
                f"user to change {switch.split('=', 1)[0]} and restart deskmcp.",
                {"tool": tool, "server": name, "read_only": True, "setting": switch},
            ),
        )


@dataclass(frozen=True)
class ServerSpec:
    name: str
    summary: str
    module: str

    def load(self) -> ServerModule:
        return cast("ServerModule", importlib.import_module(self.module))

    def create_server(self, settings: WorkspaceSettings, service: object | None = None) -> DeskServer:
        return create_server(self.load(), settings, service)

    def settings(self, **overrides: Any) -> Any:
        cls = self.load().Settings
        return cls(**{k: v for k, v in overrides.items() if v is not None})


SERVERS: dict[str, ServerSpec] = {
    spec.name: spec
    for spec in (
        ServerSpec(
            "meetings",
            "Granola meetings: list, search, transcripts, export (read-only)",
            "deskmcp.meetings.server",
        ),
        ServerSpec(
            "vault", "Markdown notes vault (Obsidian): read, write, search, tags, links", "deskmcp.vault.server"
        ),
        ServerSpec(
            "documents", "Documents: index, search and annotate md/txt/html/pdf/docx", "deskmcp.documents.server"
        ),
        ServerSpec("mail", "Mail: list, search, read, send (threaded, never twice), labels", "deskmcp.mail.server"),
        ServerSpec(
            "orchestrator",
            "Email triage in the vault: decisions, drafts, approval, send exactly once",
            "deskmcp.orchestrator.server",
        ),
        ServerSpec("sheets", "Spreadsheets: local xlsx/ods/csv workbooks or Google Sheets", "deskmcp.sheets.server"),
        ServerSpec(
            "diagrams",
            "Project files from a folder, git or GitHub; Mermaid diagrams rendered offline",
            "deskmcp.diagrams.server",
        ),
    )
}


def get_spec(name: str) -> ServerSpec:
    try:
        return SERVERS[name]
    except KeyError:
        raise BadRequest(f"No server {name!r}. Servers: {', '.join(SERVERS)}.", {"server": name}) from None
