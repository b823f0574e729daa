"""Notes the server writes: a slug from the title, a name that never replaces an existing file.

A second note with a title already used gets the next free suffix (`weekly-plan-2.md`,
`weekly-plan-3.md`, ...) instead of an error, so a note is never lost and never clobbers
another. The name is chosen and the file written under one lock, and the file is written
atomically (temp file, fsync, rename), so an interrupted write leaves no note at all.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from deskmcp.core.dates import iso
from deskmcp.core.errors import BadRequest, IOFailure
from deskmcp.core.files import atomic_write_text
from deskmcp.documents.frontmatter import render_note

MAX_SLUG = 80
MAX_SUFFIX = 10_000
_NOT_SLUG = re.compile(r"[^a-z0-9]+")
_TAG_CHARS = re.compile(r"[^\w/-]+", re.UNICODE)

_write_lock = threading.Lock()


def slugify(title: str) -> str:
    """`Q3 Planning: Café notes!` -> `q3-planning-cafe-notes`; 'note' when nothing is left."""
    ascii_title = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode("ascii")
    slug = _NOT_SLUG.sub("-", ascii_title.lower()).strip("-")
    return slug[:MAX_SLUG].rstrip("-") or "note"


def clean_tags(tags: list[str] | None) -> list[str]:
    """Tags lower-cased, without a leading '#', spaces as '-', duplicates dropped, order kept."""
    cleaned: list[str] = []
    for raw in tags or []:
        if not isinstance(raw, str):
            raise BadRequest("Tags must be strings.", {"tag": repr(raw)})
        tag = _TAG_CHARS.sub("-", raw.strip().lstrip("#").lower()).strip("-")
        if not tag:
            continue
        if len(tag) > 64:
            raise BadRequest(f"The tag {raw[:70]!r} is longer than 64 characters.", {"tag": raw[:70]})
        if tag not in cleaned:
            cleaned.append(tag)
    return cleaned


@dataclass(frozen=True)
class WrittenNote:
    path: Path
    title: str
    created: str
    renamed: bool


def check_title(title: str) -> str:
    clean = " ".join(title.split()) if isinstance(title, str) else ""
    if not clean:
        raise BadRequest("A note needs a title with at least one visible character.")
    if len(clean) > 200:
        raise BadRequest("The title is longer than 200 characters; shorten it.", {"length": len(clean)})
    return clean


def write_note(folder: Path, title: str, content: str, tags: list[str], *, now: datetime | None = None) -> WrittenNote:
    """Write a new Markdown note with frontmatter in `folder` under the first free slugged name."""
    created = iso((now or datetime.now(UTC)).replace(microsecond=0)) or ""
    text = render_note(title, tags, created, content)
    slug = slugify(title)
    with _write_lock:
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise IOFailure(f"The folder for the note cannot be created: {exc.strerror}.") from exc
        for n in range(1, MAX_SUFFIX):
            candidate = folder / (f"{slug}.md" if n == 1 else f"{slug}-{n}.md")
            # A dangling symlink also holds the name.
            if not candidate.exists() and not candidate.is_symlink():
                break
        else:
            raise IOFailure(f"Too many notes are named {slug!r}; choose another title.", {"slug": slug})
        try:
            atomic_write_text(candidate, text)
        except OSError as exc:
            raise IOFailure(
                f"The note could not be written: {exc.strerror or exc}. Nothing was saved; try again.",
                {"path": candidate.name},
            ) from exc
    return WrittenNote(candidate, title, created, renamed=n > 1)
