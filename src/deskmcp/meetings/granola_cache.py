"""Finding and reading Granola's local cache, in every plain format it has had.

- `cache-v3.json`: `{"cache": "<JSON string>"}` whose inner JSON holds `state`.
- `cache-v4.json` / `cache-v6.json`: `{"cache": {"state": ..., "version": N}}`.
- `cache-v6.json.enc`: encrypted (key in the OS keychain); when it is newer than the plain
  file, the plain file is a stale stub and we say so instead of serving it.

Every key is optional. The file is never written, locked or moved (see `cache_file` for how
it is read, and `cache_records` for its records).
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deskmcp.core.errors import IOFailure, NotFound, ParseError
from deskmcp.core.settings import variable
from deskmcp.meetings import cache_file
from deskmcp.meetings.cache_records import FolderInfo, lazy_state, raw_meetings, tolerant_state
from deskmcp.meetings.models import Meeting
from deskmcp.meetings.normalize import Segment

_CACHE_NAME = re.compile(r"^cache-v(\d+)\.json$")
_ENC_NAME = re.compile(r"^cache-v(\d+)\.json\.enc$")


def granola_folders() -> list[Path]:
    """Where the Granola desktop app keeps its cache on this operating system."""
    home = Path.home()
    places: list[Path] = []
    if sys.platform == "darwin":
        places.append(home / "Library" / "Application Support" / "Granola")
    elif sys.platform == "win32":
        appdata = variable("APPDATA")
        if appdata:
            places.append(Path(appdata) / "Granola")
    else:
        places.append(Path(variable("XDG_CONFIG_HOME") or home / ".config") / "Granola")
    return places


@dataclass(frozen=True)
class CacheLocation:
    """The plain cache file chosen, and a newer encrypted one if there is one."""

    path: Path | None
    version: int | None
    encrypted_newer: Path | None
    searched: tuple[Path, ...]


def _candidates(folder: Path, pattern: re.Pattern[str]) -> list[tuple[float, int, Path]]:
    found: list[tuple[float, int, Path]] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return found
    for entry in entries:
        match = pattern.match(entry.name)
        if not match:
            continue
        try:
            if not entry.is_file():
                continue
            mtime = entry.stat().st_mtime
        except OSError:
            continue
        found.append((mtime, int(match.group(1)), Path(entry.path)))
    return found


def locate(configured: Path | None, fallbacks: list[Path]) -> CacheLocation:
    """Pick the newest plain `cache-v*.json` (by modification time, then version).

    `configured` may be a file or a folder; without it the OS folders, then `fallbacks`.
    """
    if configured is not None and not configured.is_dir():
        folders = [configured.parent]
        plain = [(0.0, _version_of(configured), configured)] if configured.is_file() else []
        if plain:
            plain[0] = (configured.stat().st_mtime, plain[0][1], configured)
    else:
        folders = [configured] if configured is not None else [*granola_folders(), *fallbacks]
        plain = []
        for folder in folders:
            plain = _candidates(folder, _CACHE_NAME)
            if plain:
                folders = [folder]
                break
    if not plain:
        return CacheLocation(None, None, None, tuple(folders))
    mtime, version, path = max(plain, key=lambda c: (c[0], c[1]))
    encrypted = [c for c in _candidates(path.parent, _ENC_NAME) if c[0] > mtime]
    newer = max(encrypted, key=lambda c: c[0])[2] if encrypted else None
    return CacheLocation(path, version, newer, tuple(folders))


def _version_of(path: Path) -> int:
    match = _CACHE_NAME.match(path.name)
    return int(match.group(1)) if match else 0


# -- parsing -------------------------------------------------------------------------------


@dataclass
class ParsedCache:
    meetings: list[Meeting]
    transcripts: dict[str, list[Segment]]
    folders: list[FolderInfo]
    format: str
    skipped: int = 0
    warnings: list[str] = field(default_factory=list)


def load_state(path: Path, max_bytes: int, *, lazy: bool = False) -> tuple[dict[str, Any], str]:
    """Read the file and return Granola's `state` object and the format's name.

    With `lazy`, records may be `msgspec.Raw` (see `RawMeeting`).
    """
    document = cache_file.read_document(path, max_bytes)
    fast = lazy_state(document.data, inner=document.inner) if lazy else None
    state, fmt = fast or tolerant_state(document.data, path.name, inner=document.inner)
    version = _version_of(path)
    return state, f"cache-v{version} ({fmt})" if version else fmt


def parse(path: Path, max_bytes: int) -> ParsedCache:
    state, fmt = load_state(path, max_bytes)
    return parse_state(state, fmt)


def parse_state(state: dict[str, Any], fmt: str = "object") -> ParsedCache:
    """Every meeting of a cache state, normalised, newest first."""
    raws, folders = raw_meetings(state)
    meetings: list[Meeting] = []
    transcripts: dict[str, list[Segment]] = {}
    skipped = 0
    for raw in raws:
        built = raw.normalize()
        if built is None:
            skipped += 1
            continue
        meeting, segments = built
        meetings.append(meeting)
        if segments:
            transcripts[meeting.id] = segments
    meetings.sort(key=lambda m: m.start_ts or "", reverse=True)
    return ParsedCache(meetings=meetings, transcripts=transcripts, folders=folders, format=fmt, skipped=skipped)


def require_location(location: CacheLocation) -> Path:
    if location.path is None:
        where = ", ".join(str(p) for p in location.searched) or "(nowhere)"
        raise NotFound(
            f"No Granola cache (cache-v*.json) was found; looked in {where}. "
            "Set GRANOLA_CACHE_PATH to the file or its folder, or run `deskmcp demo`.",
            {"searched": [str(p) for p in location.searched]},
        )
    if location.encrypted_newer is not None:
        raise ParseError(
            f"Granola now keeps its cache encrypted ({location.encrypted_newer.name}), and the plain "
            f"{location.path.name} is an older stub: serving it would show stale meetings. Take meetings "
            "from Granola's public API instead: create a key in the Granola app (Settings -> Connectors -> "
            "API keys; Business and Enterprise plans) and set GRANOLA_API_KEY to it; or, on any plan, run "
            "`deskmcp auth granola` to sign in to Granola's hosted MCP server. Or point GRANOLA_CACHE_PATH "
            "at a plain cache. The README's 'Connect Granola' says which fits which plan.",
            {"path": str(location.path), "encrypted": str(location.encrypted_newer)},
        )
    if not os.access(location.path, os.R_OK):
        raise IOFailure(f"{location.path} is not readable.", {"path": str(location.path)})
    return location.path
