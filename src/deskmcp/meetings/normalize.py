"""Turning one raw Granola document into a `Meeting`: times, people, notes, links, transcript.

Every input is untrusted JSON: any key may be missing or of the wrong type.
"""

from __future__ import annotations

import html as html_lib
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import msgspec

from deskmcp.core.dates import iso, parse_timestamp
from deskmcp.meetings.models import FolderRef, Meeting, Participant, Platform
from deskmcp.meetings.prosemirror import to_markdown

Segment = dict[str, Any]
_URL = re.compile(r"https?://[^\s<>\"')\]]+")


def as_dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def text_of(value: object) -> str | None:
    if isinstance(value, str):
        text = value.strip()
        return text or None
    return None


def norm_id(value: str) -> str:
    return value.replace("-", "").lower()


def _person(value: object, role: str) -> Participant | None:
    person = as_dict(value)
    details = as_dict(person.get("details"))
    details_person = as_dict(details.get("person"))
    details_name = as_dict(details_person.get("name"))
    name = (
        text_of(person.get("name"))
        or text_of(person.get("displayName"))
        or text_of(person.get("display_name"))
        or text_of(details_name.get("fullName"))
    )
    email = text_of(person.get("email"))
    if name is None and email is None:
        return None
    return Participant(name=name, email=email.lower() if email else None, role=role)  # type: ignore[arg-type]


def _participants(doc: dict[str, Any], meta: dict[str, Any]) -> list[Participant]:
    found: list[Participant] = []
    attendees: list[Participant] = []
    people = doc.get("people")
    if isinstance(people, dict):
        creator = _person(people.get("creator"), "creator")
        if creator:
            found.append(creator)
        attendees = [p for p in (_person(a, "attendee") for a in as_list(people.get("attendees"))) if p]
    elif isinstance(people, list):
        attendees = [p for p in (_person(a, "attendee") for a in people) if p]
    # The creator alone is not the meeting's attendees: they are then the calendar event's, or
    # else the metadata's.
    if not attendees:
        event = as_dict(doc.get("google_calendar_event"))
        attendees = [p for p in (_person(a, "attendee") for a in as_list(event.get("attendees"))) if p]
    if not attendees:
        attendees = [p for p in (_person(a, "attendee") for a in as_list(meta.get("attendees"))) if p]
    found.extend(attendees)
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
    conference = as_dict(meta.get("conference"))
    event = as_dict(doc.get("google_calendar_event"))
    solution = as_dict(as_dict(event.get("conferenceData")).get("conferenceSolution"))
    hints = " ".join(
        str(x)
        for x in (
            conference.get("provider"),
            meta.get("platform"),
            solution.get("name"),
            as_dict(solution.get("key")).get("type"),
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
    event = as_dict(doc.get("google_calendar_event"))
    conference = as_dict(meta.get("conference"))
    candidates: list[str] = []
    for value in (conference.get("url"), conference.get("join_url"), event.get("hangoutLink")):
        if text_of(value):
            candidates.append(str(value).strip())
    for entry in as_list(as_dict(event.get("conferenceData")).get("entryPoints")):
        uri = text_of(as_dict(entry).get("uri"))
        if uri and uri.startswith("http"):
            candidates.append(uri)
    for text in (event.get("location"), event.get("description")):
        if isinstance(text, str):
            candidates.extend(_URL.findall(text))
    if text_of(event.get("htmlLink")):
        candidates.append(str(event["htmlLink"]).strip())
    return list(dict.fromkeys(candidates))


def _notes(doc: dict[str, Any], panels: dict[str, Any]) -> str:
    for key in ("notes_markdown", "notes_plain"):
        text = text_of(doc.get(key))
        if text:
            return text
    rendered = to_markdown(doc.get("notes"))
    if rendered:
        return rendered
    parts: list[str] = []
    for panel in panels.values():
        p = as_dict(panel)
        body = to_markdown(p.get("content")) or _strip_html(text_of(p.get("original_content")) or "")
        if body:
            title = text_of(p.get("title"))
            parts.append(f"## {title}\n\n{body}" if title else body)
    if parts:
        return "\n\n".join(parts)
    summary = text_of(doc.get("summary")) or text_of(doc.get("overview"))
    return summary or ""


_TAG = re.compile(r"<[^>]+>")


def _strip_html(html: str) -> str:
    text = re.sub(r"</(p|div|li|h\d)>|<br\s*/?>", "\n", html, flags=re.IGNORECASE)
    text = _TAG.sub("", text)
    return re.sub(r"\n{3,}", "\n\n", html_lib.unescape(text)).strip()


def _event_time(event: dict[str, Any], key: str) -> datetime | None:
    value = event.get(key)
    if isinstance(value, dict):
        return parse_timestamp(value.get("dateTime") or value.get("date"))
    return parse_timestamp(value)


def _segment_time(value: object) -> tuple[str | None, datetime | None]:
    """A segment timestamp as ISO text and datetime. Transcripts hold tens of thousands of
    segments, so ISO text that is already UTC is kept as is."""
    if isinstance(value, str) and value.endswith("Z") and len(value) >= 20 and value[10] == "T":
        try:
            return value, datetime.fromisoformat(value)
        except ValueError:
            pass
    parsed = parse_timestamp(value)
    return iso(parsed), parsed


def transcript_segments(raw: object) -> list[Segment]:
    """Final transcript segments as plain dicts (the fields of `TranscriptSegment`).

    Plain dicts because a large cache holds hundreds of thousands of them.
    """
    if isinstance(raw, dict):  # some caches wrap the list
        raw = raw.get("segments") or raw.get("transcript") or raw.get("entries")
    segments: list[Segment] = []
    first: datetime | None = None
    for item in as_list(raw):
        if not isinstance(item, dict):
            continue
        text = item.get("text")
        if not isinstance(text, str) or not text.strip() or item.get("is_final") is False:
            continue
        start_text, start = _segment_time(item.get("start_timestamp") or item.get("start"))
        end_text, _ = _segment_time(item.get("end_timestamp") or item.get("end"))
        if start is not None and first is None:
            first = start
        source = item.get("source") if isinstance(item.get("source"), str) else None
        speaker = text_of(item.get("speaker")) or _SPEAKERS.get(source or "")
        segments.append(
            {
                "start": start_text,
                "end": end_text,
                "offset_seconds": round((start - first).total_seconds(), 3) if start and first else None,
                "source": source,
                "speaker": speaker,
                "text": text.strip(),
            }
        )
    return segments


_SPEAKERS = {"microphone": "me", "system": "them"}


@dataclass(frozen=True)
class TranscriptDigest:
    """What the index needs of a transcript: its words, how many final segments it has and
    when the last one ends. The segments themselves are normalised when they are read."""

    text: str
    segments: int
    end: str | None


class _Segment(msgspec.Struct):
    text: str | None = None
    is_final: bool | None = None
    end_timestamp: str | int | float | None = None
    end: str | int | float | None = None


_SEGMENT_LIST = msgspec.json.Decoder(list[_Segment])


def transcript_digest(raw: bytes | memoryview) -> TranscriptDigest:
    """The digest of a transcript's raw JSON. A list of segment objects (what Granola writes)
    is decoded field by field without building the other fields; any other shape goes
    through `transcript_segments`, with the same result."""
    try:
        items = _SEGMENT_LIST.decode(raw)
    except (msgspec.ValidationError, msgspec.DecodeError):
        try:
            segments = transcript_segments(msgspec.json.decode(raw))
        except msgspec.DecodeError:
            segments = []
        end = segments[-1]["end"] if segments else None
        return TranscriptDigest("\n".join(s["text"] for s in segments), len(segments), end)
    kept = [item for item in items if item.text and item.is_final is not False]
    texts = [item.text.strip() for item in kept if item.text]
    if len(texts) != len(kept) or not all(texts):  # blank texts are rare: filter them only then
        pairs = [(t, item) for t, item in zip(texts, kept, strict=True) if t]
        texts, kept = [t for t, _ in pairs], [item for _, item in pairs]
    end = _segment_time(kept[-1].end_timestamp or kept[-1].end)[0] if kept else None
    return TranscriptDigest("\n".join(texts), len(texts), end)


def build_meeting(
    doc_id: str,
    doc: dict[str, Any],
    meta: dict[str, Any],
    panels: dict[str, Any],
    segment_count: int,
    transcript_end: str | None,
    folders: list[FolderRef],
) -> Meeting:
    event = as_dict(doc.get("google_calendar_event"))
    created = parse_timestamp(doc.get("created_at"))
    start = _event_time(event, "start") or parse_timestamp(meta.get("start_time")) or created
    end = _event_time(event, "end") or parse_timestamp(meta.get("end_time"))
    if end is None and transcript_end:
        end = parse_timestamp(transcript_end)
    duration = round((end - start).total_seconds() / 60, 1) if start and end and end > start else None
    links = _links(doc, meta)
    title = text_of(doc.get("title")) or text_of(event.get("summary")) or "(untitled meeting)"
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
        has_transcript=segment_count > 0,
        transcript_segments=segment_count,
    )
