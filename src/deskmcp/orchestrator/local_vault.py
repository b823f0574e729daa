"""`LocalVault`: the vault's files in this process, with no index.

The orchestrator needs four operations on the vault, all on its own few folders: read a note,
write a note (replacing one only with the content hash it was read with), move a note (never
over another) and list the notes of one folder (with a `status` filter). None of them needs the
vault's search index: a note is read by path, and a folder of the flow holds tens of notes, so
reading them is cheaper than keeping an index of the whole vault fresh. So this side opens no
index at all: no second copy of the vault's index on disk, no full scan of a large vault when the
vault server is down, and no wait on the index's writer lock, which a hung vault server may hold.

The files are handled by the vault's own modules (paths, parsing, frontmatter that keeps the
lines it did not change, size limit) and written atomically, so a note written here is byte for
byte what the vault server would have written. The vault server, when it runs, notices these
writes like any edit on disk (its watcher, or its re-scan by mtime).

It does not refuse the protected folders (VAULT_PROTECTED_FOLDERS): they are the flow's own.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

from deskmcp.core.errors import BadRequest, Conflict, DeskError, IOFailure, NotFound
from deskmcp.core.paths import is_hidden
from deskmcp.vault import links
from deskmcp.vault.models import MoveResult, NoteContent, NoteList, NoteMatch
from deskmcp.vault.notes import (
    NoteFile,
    ensure_size,
    folder_path,
    modified,
    note_content,
    note_path,
    parse_note,
    read_note_file,
    rename_no_replace,
    store_note,
    with_frontmatter,
)
from deskmcp.vault.settings import VaultSettings


def has_status(note: NoteFile, status: str) -> bool:
    """The vault's `status:<value>` filter: the key and the value compared case-insensitively,
    any item of a list matching."""
    wanted = status.strip().lower()
    return any(
        wanted in links.scalar_values(value) for key, value in note.frontmatter.items() if key.lower() == "status"
    )


class LocalVault:
    """The vault on disk (see the module docstring). Every path goes through the vault's `note_path`."""

    def __init__(self, root: Path, *, max_note_bytes: int | None = None) -> None:
        self.root = root
        # The vault server's limit (VAULT_MAX_NOTE_BYTES), so both sides read and write the same notes.
        self.limit = max_note_bytes or VaultSettings(vault_path=root).max_note_bytes

    def _root(self) -> Path:
        # Resolved on each call: the vault may be created (first run) or remounted after this was built.
        return self.root.resolve()

    async def read_note(self, path: str) -> NoteContent:
        rel, full = note_path(self._root(), path)
        if not full.exists():
            raise NotFound(f"No note {rel!r} in the vault; it was moved or deleted.", {"path": rel})
        return note_content(read_note_file(full, rel, self.limit))

    async def write_note(
        self, path: str, body: str, frontmatter: dict[str, Any], *, expected_hash: str | None = None
    ) -> NoteContent:
        root = self._root()
        rel, full = note_path(root, path)
        if full.is_dir():
            raise BadRequest(f"{rel!r} is a folder, not a note.", {"path": rel})
        current = read_note_file(full, rel, self.limit) if full.exists() else None
        _check_hash(rel, current, expected_hash)
        try:  # what a client could send over MCP: plain JSON values
            values = orjson.loads(orjson.dumps(frontmatter))
        except (TypeError, orjson.JSONEncodeError) as exc:
            raise BadRequest("Frontmatter values must be JSON values.", {"path": rel}) from exc
        data = with_frontmatter(current, values, rel).with_body(body).text().encode("utf-8")
        ensure_size(data, self.limit, rel)
        if not root.is_dir():
            raise NotFound(f"The vault folder {root} does not exist; nothing was written.", {"root": str(root)})
        if current is None or current.data != data:
            store_note(full, rel, data)
        return note_content(parse_note(rel, data, full.stat().st_mtime_ns))

    async def move_note(self, source: str, destination: str) -> MoveResult:
        root = self._root()
        src_rel, src = note_path(root, source)
        dst_rel, dst = note_path(root, destination)
        if src_rel == dst_rel:
            raise BadRequest("The source and destination are the same note.", {"source": src_rel})
        if not src.is_file():
            raise NotFound(f"No note {src_rel!r} to move.", {"source": src_rel})
        details = {"source": src_rel, "destination": dst_rel}
        if dst.exists():
            raise Conflict(f"{dst_rel!r} already exists; a move never overwrites.", details)
        try:
            dst.parent.mkdir(parents=True, exist_ok=True)
            rename_no_replace(src, dst)
        except FileExistsError as exc:
            raise Conflict(f"{dst_rel!r} already exists; a move never overwrites.", details) from exc
        except OSError as exc:
            raise IOFailure(f"Could not move {src_rel!r}: {exc.strerror}. Nothing was changed.", details) from exc
        return MoveResult(moved=True, source=src_rel, destination=dst_rel)

    async def list_notes(self, directory: str, *, status: str | None = None) -> NoteList:
        """Every note directly in `directory` (alphabetical; none when the folder is missing), only
        those whose frontmatter `status` is `status` when given. Unreadable notes are left out of a
        filtered list, as the vault's index leaves them out of a filtered query."""
        try:
            rel_dir, full_dir = folder_path(self._root(), directory)
        except NotFound:
            return NoteList(notes=[], total=0)
        matches: list[NoteMatch] = []
        for name in sorted(_note_names(full_dir)):
            rel = f"{rel_dir}/{name}" if rel_dir else name
            try:
                note = read_note_file(full_dir / name, rel, self.limit)
            except DeskError:
                if status is None:
                    matches.append(NoteMatch(path=rel, title=links.title({}, rel)))
                continue
            if status is not None and not has_status(note, status):
                continue
            lines = links.blank_code(note.parts.body)
            tags = links.note_tags(note.frontmatter, lines)
            matches.append(
                NoteMatch(
                    path=rel,
                    title=links.title(note.frontmatter, rel),
                    tags=tags,
                    modified=modified(note.mtime_ns),
                )
            )
        return NoteList(notes=matches, total=len(matches))


def _note_names(folder: Path) -> list[str]:
    """Names of the notes directly in `folder`: as the vault's walk, no hidden entries, no symlinks."""
    try:
        with os.scandir(folder) as entries:
            return [
                e.name
                for e in entries
                if e.name.lower().endswith(".md") and not is_hidden(e.name) and e.is_file(follow_symlinks=False)
            ]
    except OSError:
        return []


def _check_hash(rel: str, current: NoteFile | None, expected_hash: str | None) -> None:
    """A note is replaced only by a writer who read it as it is now."""
    if current is None:
        if expected_hash:
            raise Conflict(f"The note {rel!r} no longer exists (moved or deleted since it was read).", {"path": rel})
        return
    if not expected_hash:
        raise Conflict(
            f"The note {rel!r} already exists; read it and pass its content_hash to replace it.",
            {"path": rel, "content_hash": current.hash},
        )
    if expected_hash != current.hash:
        raise Conflict(
            f"The note {rel!r} changed since it was read; read it again.",
            {"path": rel, "expected_hash": expected_hash, "content_hash": current.hash},
        )
