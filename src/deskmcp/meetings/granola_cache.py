"""Finding and reading Granola's local cache, in every plain format it has had.

- `cache-v3.json`: `{"cache": "<JSON string>"}` whose inner JSON holds `state`.
- `cache-v4.json` / `cache-v6.json`: `{"cache": {"state": ..., "version": N}}`.
- `cache-v6.json.enc`: encrypted (key in the OS keychain); when it is newer than the plain
  file, the plain file is a stale stub and we say so instead of serving it.

Every key is optional. The file is read once, whole, into memory and never written,
locked or moved.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from deskmcp.core.dates import iso, parse_timestamp
from deskmcp.core.errors import IOFailure, NotFound, ParseError
from deskmcp.core.files import read_bytes_limited
from deskmcp.meetings.models import FolderRef, Meeting, Participant, Platform
from deskmcp.meetings.prosemirror import to_markdown

_CACHE_NAME = re.compile(r"^cache-v(\d+)\.json$")
_ENC_NAME = re.compile(r"^cache-v(\d+)\.json\.enc$")
Segment = dict[str, Any]
_URL = re.compile(r"https?://[^\s<>\"')\]]+")


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


def load_state(path: Path, max_bytes: int) -> tuple[dict[str, Any], str]:
    """Read the file and return Granola's `state` object and the format's name."""
    data = read_bytes_limited(path, max_bytes, label=path.name)
    if not data.strip():
        raise ParseError(
            f"{path.name} is empty. Granola may be writing it; try again, or check the Granola app.",
            {"path": str(path)},
        )
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
    version = _version_of(path)
    name = f"cache-v{version} ({fmt})" if version else fmt
    return state, name


def parse(path: Path, max_bytes: int) -> ParsedCache:
    state, fmt = load_state(path, max_bytes)
    return parse_state(state, fmt)


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _str(value: object) -> str | None:
    if isinstance(value, str):
        text = value.strip()
        return text or None
    return None


def _norm_id(value: str) -> str:
    return value.replace("-", "").lower()


def parse_state(state: dict[str, Any], fmt: str = "object") -> ParsedCache:
    documents = _dict(state.get("documents"))
    metadata = _dict(state.get("meetingsMetadata"))
    panels = _dict(state.get("documentPanels"))
    transcripts_raw = _dict(state.get("transcripts"))
    transcripts_by_norm = {_norm_id(str(k)): v for k, v in transcripts_raw.items()}
    metadata_by_norm = {_norm_id(str(k)): v for k, v in metadata.items()}

    folders = _folders(state)
    folders_of: dict[str, list[FolderRef]] = {}
    for info in folders:
        for mid in info.meeting_ids:
            folders_of.setdefault(_norm_id(mid), []).append(FolderRef(id=info.id, name=info.name))

    meetings: list[Meeting] = []
    transcripts: dict[str, list[Segment]] = {}
    skipped = 0
    for key, raw in documents.items():
        doc = _dict(raw)
        if not doc:
            skipped += 1
            continue
        doc_id = _str(doc.get("id")) or _str(key)
        if doc_id is None:
            skipped += 1
            continue
        if doc.get("deleted_at") or doc.get("deleted") is True:
            continue
        kind = doc.get("type")
        if kind not in (None, "meeting"):
            continue
        norm = _norm_id(doc_id)
        meta = _dict(metadata.get(doc_id) or metadata_by_norm.get(norm))
        segments = _segments(transcripts_raw.get(doc_id) or transcripts_by_norm.get(norm))
        if segments:
            transcripts[doc_id] = segments
        meetings.append(_meeting(doc_id, doc, meta, _dict(panels.get(doc_id)), segments, folders_of.get(norm, [])))
    meetings.sort(key=lambda m: m.start_ts or "", reverse=True)
    return ParsedCache(meetings=meetings, transcripts=transcripts, folders=folders, format=fmt, skipped=skipped)


def _folders(state: dict[str, Any]) -> list[FolderInfo]:
    lists = _dict(state.get("documentLists"))
    lists_meta = _dict(state.get("documentListsMetadata"))
    out: list[FolderInfo] = []
    for list_id in {*lists.keys(), *lists_meta.keys()}:
        meta = _dict(lists_meta.get(list_id))
        members = lists.get(list_id)
        ids: list[str] = []
        for member in _list(members) or _list(meta.get("documents")):
            if isinstance(member, str):
                ids.append(member)
            elif isinstance(member, dict) and _str(member.get("id")):
                ids.append(str(member["id"]))
        name = _str(meta.get("title")) or _str(meta.get("name")) or str(list_id)
        out.append(FolderInfo(str(list_id), name, _str(meta.get("description")), ids))
    out.sort(key=lambda f: f.name.lower())
    return out


def _person(value: object, role: str) -> Participant | None:
    person = _dict(value)
    details = _dict(person.get("details"))
    details_person = _dict(details.get("person"))
    details_name = _dict(details_person.get("name"))
    name = (
        _str(person.get("name"))
        or _str(person.get("displayName"))
        or _str(person.get("display_name"))
        or _str(details_name.get("fullName"))
    )
    email = _str(person.get("email"))
    if name is None and email is None:
        return None
    return Participant(name=name, email=email.lower() if email else None, role=role)  # type: ignore[arg-type]


def _participants(doc: dict[str, Any], meta: dict[str, Any]) -> list[Participant]:
    found: list[Participant] = []
    people = doc.get("people")
    if isinstance(people, dict):
        creator = _person(people.get("creator"), "creator")
        if creator:
            found.append(creator)
        found.extend(p for p in (_person(a, "attendee") for a in _list(people.get("attendees"))) if p)
    elif isinstance(people, list):
        found.extend(p for p in (_person(a, "attendee") for a in people) if p)
    if not found:
        event = _dict(doc.get("google_calendar_event"))
        found.extend(p for p in (_person(a, "attendee") for a in _list(event.get("attendees"))) if p)
    if not found:
        found.extend(p for p in (_person(a, "attendee") for a in _list(meta.get("attendees"))) if p)
    seen: set[str] = set()
    unique: list[Participant] = []
    for p in found:
        key = (p.email or p.name or "").lower()
        if key in seen:
            # Keep the richer record: a later entry may add a name to a bare email.
            for existing in unique:
                if (existing.email or existing.name or "").lower() == key and not existing.name and p.name:
                    existing.name = p.name
            continue
        seen.add(key)
        unique.append(p)
    return unique


def _platform(doc: dict[str, Any], meta: dict[str, Any], links: list[str]) -> Platform | None:
    conference = _dict(meta.get("conference"))
    event = _dict(doc.get("google_calendar_event"))
    solution = _dict(_dict(event.get("conferenceData")).get("conferenceSolution"))
    hints = " ".join(
        str(x)
        for x in (
            conference.get("provider"),
            meta.get("platform"),
            solution.get("name"),
            _dict(solution.get("key")).get("type"),
            event.get("hangoutLink"),
            *links,
        )
        if x
    ).lower()
    if not hints:
        return None
    if "zoom" in hints:
        return "zoom"
    if "meet" in hints and ("google" in hints or "meet.google" in hints or "hangout" in hints):
        return "meet"
    if "teams" in hints:
        return "teams"
    if "hangout" in hints or "google_meet" in hints:
        return "meet"
    return "other"


def _links(doc: dict[str, Any], meta: dict[str, Any]) -> list[str]:
    event = _dict(doc.get("google_calendar_event"))
    conference = _dict(meta.get("conference"))
    candidates: list[str] = []
    for value in (conference.get("url"), conference.get("join_url"), event.get("hangoutLink")):
        if _str(value):
            candidates.append(str(value).strip())
    for entry in _list(_dict(event.get("conferenceData")).get("entryPoints")):
        uri = _str(_dict(entry).get("uri"))
        if uri and uri.startswith("http"):
            candidates.append(uri)
    for text in (event.get("location"), event.get("description")):
        if isinstance(text, str):
            candidates.extend(_URL.findall(text))
    if _str(event.get("htmlLink")):
        candidates.append(str(event["htmlLink"]).strip())
    return list(dict.fromkeys(candidates))


def _notes(doc: dict[str, Any], panels: dict[str, Any]) -> str:
    for key in ("notes_markdown", "notes_plain"):
        text = _str(doc.get(key))
        if text:
            return text
    rendered = to_markdown(doc.get("notes"))
    if rendered:
        return rendered
    parts: list[str] = []
    for panel in panels.values():
        p = _dict(panel)
        body = to_markdown(p.get("content")) or _strip_html(_str(p.get("original_content")) or "")
        if body:
            title = _str(p.get("title"))
            parts.append(f"## {title}\n\n{body}" if title else body)
    if parts:
        return "\n\n".join(parts)
    summary = _str(doc.get("summary")) or _str(doc.get("overview"))
    return summary or ""


_TAG = re.compile(r"<[^>]+>")


def _strip_html(html: str) -> str:
    text = re.sub(r"</(p|div|li|h\d)>|<br\s*/?>", "\n", html, flags=re.IGNORECASE)
    text = _TAG.sub("", text)
    import html as html_lib

    return re.sub(r"\n{3,}", "\n\n", html_lib.unescape(text)).strip()


def _event_time(event: dict[str, Any], key: str) -> datetime | None:
    value = event.get(key)
    if isinstance(value, dict):
        return parse_timestamp(value.get("dateTime") or value.get("date"))
    return parse_timestamp(value)


def _segments(raw: object) -> list[Segment]:
    """Final transcript segments as plain dicts (the fields of `TranscriptSegment`).

    Plain dicts because a large cache holds hundreds of thousands of them.
    """
    if isinstance(raw, dict):  # some caches wrap the list
        raw = raw.get("segments") or raw.get("transcript") or raw.get("entries")
    segments: list[Segment] = []
    first: datetime | None = None
    for item in _list(raw):
        entry = _dict(item)
        text = _str(entry.get("text"))
        if not text or entry.get("is_final") is False:
            continue
        start = parse_timestamp(entry.get("start_timestamp") or entry.get("start"))
        end = parse_timestamp(entry.get("end_timestamp") or entry.get("end"))
        if start and first is None:
            first = start
        source = _str(entry.get("source"))
        speaker = _str(entry.get("speaker")) or {"microphone": "me", "system": "them"}.get(source or "")
        segments.append(
            {
                "start": iso(start),
                "end": iso(end),
                "offset_seconds": round((start - first).total_seconds(), 3) if start and first else None,
                "source": source,
                "speaker": speaker,
                "text": text,
            }
        )
    return segments


def _meeting(
    doc_id: str,
    doc: dict[str, Any],
    meta: dict[str, Any],
    panels: dict[str, Any],
    segments: list[Segment],
    folders: list[FolderRef],
) -> Meeting:
    event = _dict(doc.get("google_calendar_event"))
    created = parse_timestamp(doc.get("created_at"))
    start = _event_time(event, "start") or parse_timestamp(meta.get("start_time")) or created
    end = _event_time(event, "end") or parse_timestamp(meta.get("end_time"))
    if end is None and segments and segments[-1]["end"]:
        end = parse_timestamp(segments[-1]["end"])
    duration = round((end - start).total_seconds() / 60, 1) if start and end and end > start else None
    links = _links(doc, meta)
    title = _str(doc.get("title")) or _str(event.get("summary")) or "(untitled meeting)"
    return Meeting(
        id=doc_id,
        title=title,
        start_ts=iso(start),
        end_ts=iso(end),
        created_at=iso(created),
        updated_at=iso(parse_timestamp(doc.get("updated_at"))),
        duration_minutes=duration,
        platform=_platform(doc, meta, links),
        participants=_participants(doc, meta),
        folders=folders,
        links=links,
        notes=_notes(doc, panels),
        has_transcript=bool(segments),
        transcript_segments=len(segments),
    )


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
