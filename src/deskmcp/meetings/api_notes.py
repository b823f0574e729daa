"""A note from Granola's public API as the same meeting a cache document becomes.

The note is laid out as the cache's pieces (document, transcript, folders) and normalised by the
very code that reads the cache (`cache_records.RawMeeting`), so a meeting reads the same
whichever source it came from. Fields of a note (docs.granola.ai, "Get note"):

- `title`; `created_at`, `updated_at` (ISO 8601).
- `owner` `{name, email}`: the meeting's creator.
- `attendees` `[{name, email}]`: its attendees.
- `calendar_event` `{event_title, invitees: [{email}], organiser, calendar_event_id,
  scheduled_start_time, scheduled_end_time}`: the start and end; its invitees stand for the
  attendees when the note names none (as the cache's calendar event does).
- `folder_membership` `[{id, object, name}]`: its folders.
- `summary_markdown`, else `summary_text`: the notes.
- `transcript` `[{speaker: {source, diarization_label?}, text, start_time, end_time}]`:
  `source` `microphone` is the user ("me"), `speaker` the other side ("them", the cache's
  `system`); the diarization label (iOS) is not kept.
- `web_url`: the note's page on Granola.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from deskmcp.meetings.cache_records import PARSER_VERSION, RawMeeting
from deskmcp.meetings.entries import index_entry
from deskmcp.meetings.models import FolderRef
from deskmcp.meetings.normalize import as_dict, as_list, text_of

_SIDES = {"microphone": "microphone", "speaker": "system"}


def fingerprint(updated_at: str, note: dict[str, Any]) -> str:
    """What the index keeps of the version it holds: the note's `updated_at` (compared with the
    listing's, so an unchanged note is not fetched again), then a hash of what it was built from."""
    digest = hashlib.sha256(PARSER_VERSION.encode() + orjson.dumps(note, option=orjson.OPT_SORT_KEYS))
    return f"{updated_at}|{PARSER_VERSION}|{digest.hexdigest()[:24]}"


def listed_version(stored: str | None) -> str | None:
    """The `updated_at` a stored fingerprint was made from, if it is of this normalisation."""
    if not stored:
        return None
    updated, _, rest = stored.partition("|")
    return updated if rest.split("|", 1)[0] == PARSER_VERSION else None


def _segment(item: object) -> dict[str, Any] | None:
    segment = as_dict(item)
    text = segment.get("text")
    if not isinstance(text, str):
        return None
    source = as_dict(segment.get("speaker")).get("source")
    return {
        "source": _SIDES.get(source) if isinstance(source, str) else None,
        "text": text,
        "start_timestamp": segment.get("start_time"),
        "end_timestamp": segment.get("end_time"),
        "is_final": True,
    }


def raw_meeting(note: dict[str, Any]) -> RawMeeting:
    """The note as the cache's pieces of one meeting."""
    event = as_dict(note.get("calendar_event"))
    doc: dict[str, Any] = {
        "id": note.get("id"),
        "title": note.get("title"),
        "created_at": note.get("created_at"),
        "updated_at": note.get("updated_at"),
        "people": {"creator": note.get("owner"), "attendees": as_list(note.get("attendees"))},
        "google_calendar_event": {
            "summary": event.get("event_title"),
            "start": {"dateTime": event.get("scheduled_start_time")},
            "end": {"dateTime": event.get("scheduled_end_time")},
            "attendees": [as_dict(i) for i in as_list(event.get("invitees"))],
        },
        "notes_markdown": note.get("summary_markdown"),
        "notes_plain": note.get("summary_text"),
    }
    segments = [s for s in (_segment(item) for item in as_list(note.get("transcript"))) if s is not None]
    folders = [
        FolderRef(id=str(f["id"]), name=text_of(f.get("name")) or str(f["id"]))
        for f in (as_dict(x) for x in as_list(note.get("folder_membership")))
        if text_of(f.get("id"))
    ]
    folders.sort(key=lambda f: f.name.lower())  # as a cache's meeting lists them: by folder name
    return RawMeeting(id=str(note["id"]), doc=doc, meta=None, panels=None, transcript=segments or None, folders=folders)


def index_fields(note: dict[str, Any], updated_at: str) -> dict[str, Any] | None:
    """The fields of the note's index record (see `entries.index_entry`); None for a note that
    is no meeting (no id)."""
    if not text_of(note.get("id")):
        return None
    built = raw_meeting(note).for_index()
    if built is None:
        return None
    meeting, transcript, digest = built
    meeting.web_url = text_of(note.get("web_url"))
    return index_entry(meeting, transcript, digest, fingerprint(updated_at or note.get("updated_at") or "", note))
