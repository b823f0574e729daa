"""The registry of deskmcp's servers: one entry per server package, imported lazily.

Each server package `deskmcp.<name>` has a `server` module exposing:

- `Settings`: its frozen settings class (a `WorkspaceSettings` subclass);
- `create_service(settings)`: the service object its tools call;
- `register(server, service)`: adds its tools, resources and prompts to a `DeskServer`;
- `create_server(settings)`: a `DeskServer` with only this server's tools;
- `unavailable(settings)`: None when it can run, else one line saying what is missing.

`deskmcp serve NAME` and the all-in-one gateway both go through this table. Importing it costs
nothing: the CLI reads it for its help text before any server (or the SDK) is imported.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from deskmcp.core.errors import BadRequest


@dataclass(frozen=True)
class ServerSpec:
    name: str
    summary: str
    module: str

    def load(self) -> ModuleType:
        return importlib.import_module(self.module)

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
