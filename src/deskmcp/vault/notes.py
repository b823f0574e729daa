"""Notes on disk: which paths are notes, reading them, and walking the vault.

Every path a caller gives goes through `note_path` / `folder_path`, which use
`core.paths.safe_join` (no `..`, absolute, drive, UNC, NUL, or symlink escapes) and
also refuse hidden parts: `.obsidian/`, `.git/`, `.trash/` and dotfiles belong to
Obsidian and other tools, not to the assistant.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from deskmcp.core import frontmatter
from deskmcp.core.dates import iso
from deskmcp.core.errors import BadRequest, IOFailure, NotFound, ParseError, PermissionDenied
from deskmcp.core.files import atomic_write_bytes, failure_text, read_bytes_limited
from deskmcp.core.paths import hidden_denied, is_hidden, relative_posix, root_relative, safe_join, split_relative
from deskmcp.core.search.terms import nfc
from deskmcp.vault.links import title
from deskmcp.vault.models import NoteContent

NOTE_SUFFIX = ".md"
MAX_NAME_BYTES = 255  # the limit of common file systems for one path part
MAX_PATH_BYTES = 1024


def note_path(root: Path, user_path: str) -> tuple[str, Path]:
    """The canonical vault-relative path of a note (`.md` added when missing) and its file."""
    relative = root_relative(root, user_path)
    parts = split_relative(user_path if relative is None else relative)
    if not parts:
        raise BadRequest("A note path is required, e.g. 'Projects/Alpha.md'.", {"path": user_path})
    if is_hidden("/".join(parts)):
        raise hidden_denied(user_path)
    name = parts[-1]
    if not name.lower().endswith(NOTE_SUFFIX):
        name += NOTE_SUFFIX
    if len(user_path.encode("utf-8")) > MAX_PATH_BYTES or any(
        len(part.encode("utf-8")) > MAX_NAME_BYTES for part in (*parts[:-1], name)
    ):
        raise BadRequest(
            f"The path {user_path[:80]!r}... is too long ({MAX_NAME_BYTES} bytes a name, {MAX_PATH_BYTES} in all). "
            "Use shorter names.",
            {"path": user_path[:200]},
        )
    rel = "/".join((*parts[:-1], name))
    full = safe_join(root, rel)
    if not full.exists() and not rel.isascii() and (spelled := _spelled_on_disk(root, rel)) is not None:
        rel, full = spelled, safe_join(root, spelled)
    if is_hidden(relative_posix(root, full)):  # a symlink into .obsidian/ or similar
        raise hidden_denied(user_path)
    return rel, full


def _spelled_on_disk(root: Path, rel: str) -> str | None:
    """The path of the existing note `rel` names with its accents encoded another way (`é` as one
    character or as `e` and a combining accent, as macOS may write names), as the file system
    spells it; None when there is no such note, or more than one."""
    folder = root
    spelled: list[str] = []
    for part in rel.split("/"):
        if not (folder / part).exists():
            try:
                names = [p.name for p in folder.iterdir() if nfc(p.name) == nfc(part)]
            except OSError:
                return None
            if len(names) != 1:
                return None
            part = names[0]
        spelled.append(part)
        folder = folder / part
    return "/".join(spelled)


def folder_path(root: Path, user_path: str | None) -> tuple[str, Path]:
    """A vault folder ("" for the root) that must exist."""
    text = (user_path or "").strip()
    relative = root_relative(root, text)
    parts = split_relative(text if relative is None else relative)
    if is_hidden("/".join(parts)):
        raise hidden_denied(text)
    rel = "/".join(parts)
    full = safe_join(root, rel, allow_root=True)
    if rel and is_hidden(relative_posix(root, full)):
        raise hidden_denied(text)
    if not full.is_dir():
        raise NotFound(
            f"There is no folder {rel!r} in the vault. Call list_notes without a directory to see the notes.",
            {"directory": rel},
        )
    return rel, full


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def decode(data: bytes, rel: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ParseError(
            f"{rel} is not UTF-8 text (bad byte at offset {exc.start}). Convert it to UTF-8 in an editor.",
            {"path": rel, "offset": exc.start},
        ) from exc


@dataclass(frozen=True)
class NoteFile:
    """A note as read from disk."""

    rel: str
    data: bytes
    text: str
    parts: frontmatter.Split
    frontmatter: dict[str, Any]
    frontmatter_error: ParseError | None
    mtime_ns: int
    size: int

    @property
    def hash(self) -> str:
        return content_hash(self.data)


def parse_note(rel: str, data: bytes, mtime_ns: int, *, strict_text: bool = True) -> NoteFile:
    """Split and parse a note's bytes; corrupt frontmatter is kept as `frontmatter_error`."""
    text = decode(data, rel) if strict_text else data.decode("utf-8", errors="replace")
    parts = frontmatter.split(text)
    error: ParseError | None = None
    values: dict[str, Any] = {}
    if parts.has_block:
        try:
            values = frontmatter.parse(parts.yaml_text, rel)
        except ParseError as exc:
            error = exc
    return NoteFile(rel, data, text, parts, values, error, mtime_ns, len(data))


def modified(mtime_ns: int | None) -> str | None:
    """A note's modification time as the tools answer it (ISO, UTC); None when unknown."""
    return iso(datetime.fromtimestamp(mtime_ns / 1e9, UTC)) if mtime_ns else None


def note_content(note: NoteFile) -> NoteContent:
    """A note as read_note answers it."""
    return NoteContent(
        path=note.rel,
        frontmatter=note.frontmatter,
        body=note.parts.body,
        content_hash=note.hash,
        title=title(note.frontmatter, note.rel),
        modified=modified(note.mtime_ns),
        size=note.size,
        frontmatter_error=note.frontmatter_error.message if note.frontmatter_error else None,
    )


def with_frontmatter(current: NoteFile | None, wanted: dict[str, Any], rel: str) -> frontmatter.Split:
    """The note's parts with its frontmatter set to `wanted`, keeping the lines of an intact block
    that did not change."""
    parts = current.parts if current is not None else frontmatter.split("")
    if current is not None and current.frontmatter_error is None and parts.has_block:
        yaml_text = frontmatter.update(parts.yaml_text, current.frontmatter, wanted, rel)
    else:  # no block yet, or a corrupt one the caller has seen and chosen to replace
        yaml_text = frontmatter.render(wanted, parts.newline)
    return parts.with_yaml(yaml_text)


def read_note_file(full: Path, rel: str, limit: int) -> NoteFile:
    data = read_bytes_limited(full, limit, label=rel)
    try:
        mtime_ns = full.stat().st_mtime_ns
    except OSError:
        mtime_ns = 0
    return parse_note(rel, data, mtime_ns)


def read_for_index(full: Path, limit: int) -> tuple[bytes | None, int, int]:
    """(bytes or None when over `limit`, mtime_ns, size) from one open file, so they agree.

    Read with plain descriptor calls: a first index reads tens of thousands of small files, and a
    buffered file object costs more to set up than the read itself."""
    fd = os.open(full, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if st.st_size > limit:
            return None, st.st_mtime_ns, st.st_size
        data = os.read(fd, st.st_size + 1)  # fewer bytes than asked: the end of the file
        if len(data) > st.st_size:  # it grew since fstat: read on, up to the limit
            parts = [data]
            while len(data) <= limit and (chunk := os.read(fd, limit + 1 - len(data))):
                parts.append(chunk)
                data = b"".join(parts)
    finally:
        os.close(fd)
    if len(data) > limit:
        return None, st.st_mtime_ns, len(data)
    return data, st.st_mtime_ns, st.st_size


def walk(root: Path, folder: str = "") -> Iterator[tuple[str, int, int]]:
    """(relative path, mtime_ns, size) of every note under `folder`, stat only, no reads.

    Hidden entries are skipped, and so are symlinks (a link could lead out of the vault
    or loop); a symlinked note can still be opened by path.
    """
    stack = [folder]
    base = str(root)
    while stack:
        rel_dir = stack.pop()
        try:
            with os.scandir(f"{base}/{rel_dir}" if rel_dir else base) as entries:
                for entry in entries:
                    name = entry.name
                    if is_hidden(name):
                        continue
                    rel = f"{rel_dir}/{name}" if rel_dir else name
                    try:
                        if entry.is_symlink():
                            continue
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(rel)
                        elif name.lower().endswith(NOTE_SUFFIX) and entry.is_file(follow_symlinks=False):
                            st = entry.stat(follow_symlinks=False)
                            yield rel, st.st_mtime_ns, st.st_size
                    except OSError:
                        continue
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            continue


def ensure_size(data: bytes, limit: int, rel: str) -> None:
    if len(data) > limit:
        raise IOFailure(
            f"The note {rel} would be {len(data):,} bytes, over the {limit:,}-byte limit. Split it into several notes.",
            {"path": rel, "size": len(data), "limit": limit},
        )


def store_note(full: Path, rel: str, data: bytes) -> None:
    """Write a note's bytes atomically (its folder created), failures as the taxonomy's errors."""
    try:
        full.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(full, data)
    except PermissionError as exc:
        raise PermissionDenied(f"{rel} cannot be written: permission denied.", {"path": rel}) from exc
    except OSError as exc:
        raise IOFailure(
            f"{rel} could not be written: {failure_text(exc)}. Nothing was changed.", {"path": rel}
        ) from exc


def rename_no_replace(src: Path, dst: Path) -> None:
    """Move `src` to `dst`, failing with FileExistsError rather than replacing `dst`."""
    try:
        os.link(src, dst)  # fails if dst exists: no window in which it could be clobbered
    except FileExistsError:
        raise
    except OSError:  # a file system without hard links
        if dst.exists():
            raise FileExistsError(str(dst)) from None
        src.replace(dst)
        return
    src.unlink()
