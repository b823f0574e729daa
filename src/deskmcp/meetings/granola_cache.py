"""Finding and reading Granola's local cache, in every plain format it has had.

- `cache-v3.json`: `{"cache": "<JSON string>"}` whose inner JSON holds `state`.
- `cache-v4.json` / `cache-v6.json`: `{"cache": {"state": ..., "version": N}}`.
- `cache-v6.json.enc`: encrypted (key in the OS keychain); when it is newer than the plain
  file, the plain file is a stale stub and we say so instead of serving it.

Every key is optional. The file is read once, whole, into memory and never written,
locked or moved.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import orjson

from deskmcp.core.errors import IOFailure, NotFound, ParseError
from deskmcp.core.files import read_bytes_limited
from deskmcp.meetings.models import FolderRef, Meeting
from deskmcp.meetings.normalize import (
    Segment,
    as_dict,
    as_list,
    build_meeting,
    norm_id,
    text_of,
    transcript_segments,
)

_CACHE_NAME = re.compile(r"^cache-v(\d+)\.json$")
_ENC_NAME = re.compile(r"^cache-v(\d+)\.json\.enc$")


def granola_folders() -> list[Path]:
    """Where the Granola desktop app keeps its cache on this operating system."""
    home = Path.home()
    places: list[Path] = []
    if sys.platform == "darwin":
        places.append(home / "Library" / "Application Support" / "Granola")
    elif sys.platform == "win32":
        appdata = os.environ.get("APPDATA")
        if appdata:
            places.append(Path(appdata) / "Granola")
    else:
        places.append(Path(os.environ.get("XDG_CONFIG_HOME", home / ".config")) / "Granola")
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
class FolderInfo:
    id: str
    name: str
    description: str | None
    meeting_ids: list[str]


@dataclass
class ParsedCache:
    meetings: list[Meeting]
    transcripts: dict[str, list[Segment]]
    folders: list[FolderInfo]
    format: str
    skipped: int = 0
    warnings: list[str] = field(default_factory=list)


class _LazyState(msgspec.Struct):
    """The parts of a cache state we read, with each record left as raw JSON bytes."""

    documents: dict[str, msgspec.Raw] = {}
    meetingsMetadata: dict[str, msgspec.Raw] = {}
    documentPanels: dict[str, msgspec.Raw] = {}
    transcripts: dict[str, msgspec.Raw] = {}
    documentLists: dict[str, Any] = {}
    documentListsMetadata: dict[str, Any] = {}


class _LazyCache(msgspec.Struct):
    state: _LazyState | None = None


class _LazyFile(msgspec.Struct):
    cache: _LazyCache | str


def _lazy_state(data: bytes) -> tuple[dict[str, Any], str] | None:
    """The state with records as `msgspec.Raw`: validated but not built into Python objects,
    so unchanged meetings cost a hash instead of a parse. None when the file has a shape
    this fast path does not expect (the tolerant path then reads it)."""
    try:
        outer = msgspec.json.decode(data, type=_LazyFile)
        fmt = "object"
        cache = outer.cache
        if isinstance(cache, str):
            fmt = "string"
            cache = msgspec.json.decode(cache, type=_LazyCache)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    state = cache.state
    if state is None:
        return None
    return {f: getattr(state, f) for f in state.__struct_fields__}, fmt


def load_state(path: Path, max_bytes: int, *, lazy: bool = False) -> tuple[dict[str, Any], str]:
    """Read the file and return Granola's `state` object and the format's name.

    With `lazy`, records may be `msgspec.Raw` (see `RawMeeting`).
    """
    data = read_bytes_limited(path, max_bytes, label=path.name)
    if not data.strip():
        raise ParseError(
            f"{path.name} is empty. Granola may be writing it; try again, or check the Granola app.",
            {"path": str(path)},
        )
    version = _version_of(path)
    if lazy and (fast := _lazy_state(data)) is not None:
        state, fmt = fast
        return state, f"cache-v{version} ({fmt})" if version else fmt
    try:
        outer = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ParseError(
            f"{path.name} is not valid JSON ({exc}). It may be truncated; reopen Granola to rewrite it.",
            {"path": str(path)},
        ) from exc
    if not isinstance(outer, dict):
        raise ParseError(f"{path.name} holds a JSON {type(outer).__name__}, not an object.", {"path": str(path)})
    cache = outer.get("cache", outer)
    fmt = "object"
    if isinstance(cache, str):
        fmt = "string"
        try:
            cache = orjson.loads(cache)
        except orjson.JSONDecodeError as exc:
            raise ParseError(f"The inner cache JSON of {path.name} is invalid ({exc}).", {"path": str(path)}) from exc
    if not isinstance(cache, dict):
        raise ParseError(f"The cache in {path.name} is not an object.", {"path": str(path)})
    state = cache.get("state", cache)
    if not isinstance(state, dict):
        raise ParseError(f"The cache state in {path.name} is not an object.", {"path": str(path)})
    name = f"cache-v{version} ({fmt})" if version else fmt
    return state, name


def parse(path: Path, max_bytes: int) -> ParsedCache:
    state, fmt = load_state(path, max_bytes)
    return parse_state(state, fmt)


PARSER_VERSION = "1"
"""Part of every meeting's fingerprint: bump it when normalisation changes."""


@dataclass
class RawMeeting:
    """One document's raw pieces from the cache, before normalisation.

    Pieces are JSON values, or `msgspec.Raw` bytes when the cache was read lazily.
    """

    id: str
    doc: Any
    meta: Any
    panels: Any
    transcript: Any
    folders: list[FolderRef]

    def fingerprint(self) -> str:
        """A hash of everything the meeting is built from: unchanged input, unchanged meeting."""
        digest = hashlib.blake2b(PARSER_VERSION.encode(), digest_size=16)
        for part in (self.doc, self.meta, self.panels, self.transcript):
            digest.update(b"\x1e")
            digest.update(part if isinstance(part, msgspec.Raw) else orjson.dumps(part))
        digest.update(orjson.dumps([(f.id, f.name) for f in self.folders]))
        return digest.hexdigest()

    def normalize(self) -> tuple[Meeting, list[Segment]] | None:
        """The meeting and its transcript; None for a deleted, non-meeting or malformed document."""
        doc = as_dict(_decoded(self.doc))
        if not doc or doc.get("deleted_at") or doc.get("deleted") is True:
            return None
        if doc.get("type") not in (None, "meeting"):
            return None
        segments = transcript_segments(_decoded(self.transcript))
        meeting = build_meeting(
            self.id, doc, as_dict(_decoded(self.meta)), as_dict(_decoded(self.panels)), segments, self.folders
        )
        return meeting, segments


def _decoded(value: Any) -> Any:
    if isinstance(value, msgspec.Raw):
        try:
            return msgspec.json.decode(value)
        except msgspec.DecodeError:
            return None
    return value


def raw_meetings(state: dict[str, Any]) -> tuple[list[RawMeeting], list[FolderInfo]]:
    """Every document of a cache state with its metadata, panels, transcript and folders."""
    documents = as_dict(state.get("documents"))
    metadata = as_dict(state.get("meetingsMetadata"))
    panels = as_dict(state.get("documentPanels"))
    transcripts = as_dict(state.get("transcripts"))
    transcripts_by_norm = {norm_id(str(k)): v for k, v in transcripts.items()}
    metadata_by_norm = {norm_id(str(k)): v for k, v in metadata.items()}

    folders = _folders(state)
    folders_of: dict[str, list[FolderRef]] = {}
    for info in folders:
        for mid in info.meeting_ids:
            folders_of.setdefault(norm_id(mid), []).append(FolderRef(id=info.id, name=info.name))

    raws: list[RawMeeting] = []
    for key, doc in documents.items():
        if not isinstance(key, str) or not key.strip():
            continue
        norm = norm_id(key)
        raws.append(
            RawMeeting(
                id=key,
                doc=doc,
                meta=metadata.get(key) or metadata_by_norm.get(norm),
                panels=panels.get(key),
                transcript=transcripts.get(key) or transcripts_by_norm.get(norm),
                folders=folders_of.get(norm, []),
            )
        )
    return raws, folders


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


def _folders(state: dict[str, Any]) -> list[FolderInfo]:
    lists = as_dict(state.get("documentLists"))
    lists_meta = as_dict(state.get("documentListsMetadata"))
    out: list[FolderInfo] = []
    for list_id in {*lists.keys(), *lists_meta.keys()}:
        meta = as_dict(lists_meta.get(list_id))
        members = lists.get(list_id)
        ids: list[str] = []
        for member in as_list(members) or as_list(meta.get("documents")):
            if isinstance(member, str):
                ids.append(member)
            elif isinstance(member, dict) and text_of(member.get("id")):
                ids.append(str(member["id"]))
        name = text_of(meta.get("title")) or text_of(meta.get("name")) or str(list_id)
        out.append(FolderInfo(str(list_id), name, text_of(meta.get("description")), ids))
    out.sort(key=lambda f: f.name.lower())
    return out


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
            f"{location.path.name} is an older stub: serving it would show stale meetings. "
            "Export from the Granola app, or point GRANOLA_CACHE_PATH at a plain cache.",
            {"path": str(location.path), "encrypted": str(location.encrypted_newer)},
        )
    if not os.access(location.path, os.R_OK):
        raise IOFailure(f"{location.path} is not readable.", {"path": str(location.path)})
    return location.path
