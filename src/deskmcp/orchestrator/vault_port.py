"""`VaultPort`: the vault as the orchestrator uses it, and the few steps the flow builds on it.

Two implementations answer it with the vault's own models (`deskmcp.vault.models`):

- `McpVault` (mcp_vault.py) calls the vault server's tools over MCP and, when that server does
  not answer, runs the same operation on a fallback port, so the flow never stops for a dead
  vault server;
- `LocalVault` (local_vault.py) works on the vault's files in this process, with no index: the
  fallback, and the vault of the orchestrator's own MCP tools (which run beside the vault server).

`open_vault` (mcp_vault.py) chooses between them, in one place.
"""

from __future__ import annotations

from typing import Any, Protocol

from deskmcp.core.errors import Conflict, ParseError
from deskmcp.vault.models import MoveResult, NoteContent, NoteList

UPDATE_ATTEMPTS = 3


class VaultPort(Protocol):
    """Notes of the vault by vault-relative path (`Needs_Action/x.md`); errors from the taxonomy."""

    async def read_note(self, path: str) -> NoteContent:
        """The note (not_found when it is gone); corrupt frontmatter is `frontmatter_error`, not an error."""
        ...

    async def write_note(
        self, path: str, body: str, frontmatter: dict[str, Any], *, expected_hash: str | None = None
    ) -> NoteContent:
        """Create a note, or replace the one read with `expected_hash`; any other case is a conflict."""
        ...

    async def move_note(self, source: str, destination: str) -> MoveResult:
        """Move a note; an existing destination is a conflict, never overwritten."""
        ...

    async def list_notes(self, directory: str, *, status: str | None = None) -> NoteList:
        """Every note directly in `directory`, alphabetical, all pages; with `status`, only the notes whose
        frontmatter status is that (case-insensitive). A missing folder lists nothing."""
        ...


async def list_paths(vault: VaultPort, directory: str, *, status: str | None = None) -> list[str]:
    """The paths of `vault.list_notes`."""
    return [note.path for note in (await vault.list_notes(directory, status=status)).notes]


async def update_note(vault: VaultPort, path: str, changes: dict[str, Any], body: str | None = None) -> NoteContent:
    """Set frontmatter keys (and optionally the body) of an existing note, never clobbering an edit:
    a note changed between the read and the write is read again and the change made on that."""
    for attempt in range(UPDATE_ATTEMPTS):
        note = await vault.read_note(path)
        if note.frontmatter_error:
            raise ParseError(
                f"{path} has corrupt frontmatter ({note.frontmatter_error}); fix it in the editor.", {"path": path}
            )
        values = {**note.frontmatter, **changes}
        try:
            return await vault.write_note(
                path, note.body if body is None else body, values, expected_hash=note.content_hash
            )
        except Conflict:
            if attempt == UPDATE_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")
