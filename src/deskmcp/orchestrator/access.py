"""The vault and the mailbox as the orchestrator uses them, over MCP.

`VaultAccess` calls the vault server's tools; when that server is unavailable it falls back
to the vault service in this process (the same atomic file operations, its own index), so
the flow never stops for a dead vault server. Without a client it uses the service directly
(the orchestrator's own MCP tools, which run beside the vault server anyway).

`MailAccess` calls the mail server's tools and has no fallback: when mail is unavailable
nothing is fetched or sent and the items wait for the next pass.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from deskmcp.core.errors import Conflict
from deskmcp.orchestrator.mcp_client import MCPClient
from deskmcp.vault.service import VaultService
from deskmcp.vault.settings import VaultSettings

MAX_PAGES = 50


class VaultAccess:
    def __init__(self, root: Path, workspace: Path, client: MCPClient | None = None) -> None:
        self.root = root
        self.workspace = workspace
        self.client = client
        self._local: VaultService | None = None

    @property
    def local(self) -> VaultService:
        if self._local is None:
            settings = VaultSettings(
                workspace=self.workspace,
                vault_path=self.root,
                watch=False,
                index_dir=self.workspace / ".deskmcp" / "orchestrator-index",
                protected_folders="",  # the flow's own folders: this service is the orchestrator's
            )
            self._local = VaultService(settings)
            self._local.rescan_seconds = 0.0
        return self._local

    def close(self) -> None:
        if self._local is not None:
            self._local.close()
            self._local = None

    async def _call(self, tool: str, arguments: dict[str, Any], direct: Any) -> dict[str, Any]:
        def fallback() -> dict[str, Any]:
            return direct().model_dump()

        if self.client is None:
            return fallback()
        return await self.client.call_tool(tool, arguments, fallback)

    async def read_note(self, path: str) -> dict[str, Any]:
        return await self._call("read_note", {"path": path}, lambda: self.local.read_note(path))

    async def write_note(
        self, path: str, body: str, frontmatter: dict[str, Any], *, expected_hash: str | None = None
    ) -> dict[str, Any]:
        args: dict[str, Any] = {"path": path, "body": body, "frontmatter": frontmatter}
        if expected_hash:
            args["expected_hash"] = expected_hash
        return await self._call(
            "write_note", args, lambda: self.local.write_note(path, body, frontmatter, expected_hash=expected_hash)
        )

    async def update_note(self, path: str, changes: dict[str, Any], body: str | None = None) -> dict[str, Any]:
        """Set frontmatter keys (and optionally the body) of an existing note, never clobbering an edit."""
        for attempt in range(3):
            note = await self.read_note(path)
            if note.get("frontmatter_error"):
                from deskmcp.core.errors import ParseError

                raise ParseError(
                    f"{path} has corrupt frontmatter ({note['frontmatter_error']}); fix it in the editor.",
                    {"path": path},
                )
            values = {**note["frontmatter"], **changes}
            try:
                return await self.write_note(
                    path, note["body"] if body is None else body, values, expected_hash=note["content_hash"]
                )
            except Conflict:
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    async def move_note(self, source: str, destination: str) -> dict[str, Any]:
        return await self._call(
            "move_note",
            {"source": source, "destination": destination},
            lambda: self.local.move_note(source, destination),
        )

    async def list_paths(self, directory: str, filter: str | None = None) -> list[str]:
        """Every note path in `directory` (not recursive), alphabetical."""
        if not (self.root / directory).is_dir():
            return []
        paths: list[str] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            args: dict[str, Any] = {"directory": directory, "recursive": False, "limit": 1000}
            if filter:
                args["filter"] = filter
            if cursor:
                args["cursor"] = cursor
            page = await self._call(
                "list_notes",
                args,
                lambda a=args: self.local.list_notes(
                    a["directory"], a.get("filter"), recursive=False, limit=1000, cursor=a.get("cursor")
                ),
            )
            paths.extend(n["path"] for n in page.get("notes", []))
            cursor = page.get("next_cursor")
            if not cursor:
                break
        if filter is None:
            # A server's index can lag a note moved in a moment ago (by Obsidian, by a person):
            # the names on disk are added, so an approval is never missed for a poll interval.
            paths.extend(self._names_on_disk(directory))
        return sorted(set(paths))

    def _names_on_disk(self, directory: str) -> list[str]:
        try:
            with os.scandir(self.root / directory) as entries:
                return [
                    f"{directory}/{e.name}"
                    for e in entries
                    if e.name.endswith(".md") and not e.name.startswith(".") and e.is_file(follow_symlinks=False)
                ]
        except OSError:
            return []


class MailAccess:
    def __init__(self, client: MCPClient) -> None:
        self.client = client

    async def list_emails(self, query: str, max_results: int) -> list[dict[str, Any]]:
        result = await self.client.call_tool("list_emails", {"query": query, "max_results": max_results})
        return list(result.get("emails", []))

    async def get_email(self, message_id: str) -> dict[str, Any]:
        return await self.client.call_tool("get_email", {"message_id": message_id})

    async def send_email(self, **arguments: Any) -> dict[str, Any]:
        return await self.client.call_tool("send_email", {k: v for k, v in arguments.items() if v is not None})

    async def add_label(self, message_id: str, label: str) -> dict[str, Any]:
        return await self.client.call_tool("add_label", {"message_id": message_id, "label_name": label})
