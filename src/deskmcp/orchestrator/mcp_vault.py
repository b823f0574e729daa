"""`McpVault`: the vault server's tools over MCP, answering the vault's own models.

Each tool's structured result is validated into the model the vault server declares for it
(`NoteContent`, `NoteList`, `MoveResult`); an answer of another shape is an
`external_service_error` naming the tool, not a half-read dict deep in the flow. When the server
does not answer, `MCPClient` logs `mcp_unavailable` and the same operation runs on the fallback
port (the files in this process); without a fallback the error reaches the caller and the item
waits for the next pass. `open_vault` chooses between the server and the files, in one place.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from deskmcp.core.errors import ExternalServiceError
from deskmcp.core.paths import is_hidden
from deskmcp.orchestrator.local_vault import LocalVault
from deskmcp.orchestrator.mcp_client import MCPClient
from deskmcp.orchestrator.vault_port import VaultPort
from deskmcp.vault.models import MoveResult, NoteContent, NoteList, NoteMatch

M = TypeVar("M", bound=BaseModel)

MAX_PAGES = 50
PAGE = 1000  # the vault server's largest list_notes page


def validated(model: type[M], result: dict[str, Any], tool: str) -> M:
    """The tool's structured result as `model`, or an external_service_error saying what was wrong."""
    try:
        return model.model_validate(result)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'result'}: {e['msg']}" for e in exc.errors()[:3])
        raise ExternalServiceError(
            f"The vault server answered {tool} with something that is not a {model.__name__} ({problems}). "
            "Check that ORCHESTRATOR_VAULT_COMMAND starts deskmcp's vault server (`deskmcp serve vault`).",
            {"tool": tool, "model": model.__name__},
        ) from exc


class McpVault:
    """`VaultPort` over the vault server's MCP tools, with an optional fallback port."""

    def __init__(
        self, client: MCPClient, root: Path, *, fallback: VaultPort | None = None, page_size: int = PAGE
    ) -> None:
        self.client = client
        self.root = root
        self.fallback = fallback
        self.page_size = page_size

    async def _call(
        self,
        tool: str,
        arguments: dict[str, Any],
        model: type[M],
        local: Callable[[VaultPort], Awaitable[M]],
    ) -> M:
        fallback = self.fallback
        if fallback is None:
            result: dict[str, Any] | M = await self.client.call_tool(tool, arguments)
        else:
            result = await self.client.call_tool(tool, arguments, lambda: local(fallback))
        return validated(model, result, tool) if isinstance(result, dict) else result

    async def read_note(self, path: str) -> NoteContent:
        return await self._call("read_note", {"path": path}, NoteContent, lambda v: v.read_note(path))

    async def write_note(
        self, path: str, body: str, frontmatter: dict[str, Any], *, expected_hash: str | None = None
    ) -> NoteContent:
        args: dict[str, Any] = {"path": path, "body": body, "frontmatter": frontmatter}
        if expected_hash:
            args["expected_hash"] = expected_hash
        return await self._call(
            "write_note",
            args,
            NoteContent,
            lambda v: v.write_note(path, body, frontmatter, expected_hash=expected_hash),
        )

    async def move_note(self, source: str, destination: str) -> MoveResult:
        return await self._call(
            "move_note",
            {"source": source, "destination": destination},
            MoveResult,
            lambda v: v.move_note(source, destination),
        )

    async def list_notes(self, directory: str, *, status: str | None = None) -> NoteList:
        if not (self.root / directory).is_dir():
            return NoteList(notes=[], total=0)
        notes: list[NoteMatch] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            args: dict[str, Any] = {"directory": directory, "recursive": False, "limit": self.page_size}
            if status is not None:
                args["filter"] = f"status:{status}"
            if cursor:
                args["cursor"] = cursor
            page = await self._call("list_notes", args, NoteList, lambda v: v.list_notes(directory, status=status))
            if page.next_cursor is None and page.total == len(page.notes):
                notes = list(page.notes)  # complete on its own: one page, or the fallback's whole answer
                break
            notes.extend(page.notes)
            cursor = page.next_cursor
            if not cursor:
                break
        if status is None:
            # The server's index can lag a note moved in a moment ago (by Obsidian, by a person):
            # the names on disk are added, so an approval is never missed for a poll interval.
            listed = {n.path for n in notes}
            notes.extend(NoteMatch(path=p) for p in self._names_on_disk(directory) if p not in listed)
            notes.sort(key=lambda n: n.path)
        return NoteList(notes=notes, total=len(notes))

    def _names_on_disk(self, directory: str) -> list[str]:
        try:
            with os.scandir(self.root / directory) as entries:
                return [
                    f"{directory}/{e.name}"
                    for e in entries
                    if e.name.endswith(".md") and not is_hidden(e.name) and e.is_file(follow_symlinks=False)
                ]
        except OSError:
            return []


def open_vault(root: Path, client: MCPClient | None = None) -> VaultPort:
    """The vault server over `client`, falling back to the files; the files alone without a client."""
    local = LocalVault(root)
    return local if client is None else McpVault(client, root, fallback=local)
