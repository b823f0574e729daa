"""What one meeting becomes in the search index: its texts, filter columns and side rows.

Plain data (no index types), so the worker process can build entries and send them over a
pipe; the service turns each into an `IndexRecord`.
"""

from __future__ import annotations

from typing import Any

import zstandard

from deskmcp.core.search.terms import fold
from deskmcp.meetings.models import Meeting, MeetingSummary
from deskmcp.meetings.normalize import TranscriptDigest


def summary(meeting: Meeting) -> MeetingSummary:
    return MeetingSummary(
        id=meeting.id,
        title=meeting.title,
        start_ts=meeting.start_ts,
        platform=meeting.platform,
        participants=[p.name or p.email or "" for p in meeting.participants],
        folders=[f.name for f in meeting.folders],
        has_transcript=meeting.has_transcript,
    )


def index_entry(
    meeting: Meeting, transcript: bytes | memoryview | None, digest: TranscriptDigest, fingerprint: str
) -> dict[str, Any]:
    """The fields of the meeting's `IndexRecord`. `transcript` is the raw JSON from the cache,
    stored compressed and normalised when read."""
    return {
        "key": meeting.id,
        "fingerprint": fingerprint,
        "texts": {
            "title": meeting.title,
            "participants": " ".join(f"{p.name or ''} {p.email or ''}" for p in meeting.participants),
            "folders": " ".join(f.name for f in meeting.folders),
            "notes": meeting.notes,
            "transcript": digest.text,
        },
        "columns": {
            "start_ts": meeting.start_ts,
            "platform": meeting.platform,
            "minutes": meeting.duration_minutes,
            "summary": summary(meeting).model_dump_json().encode(),
            "transcript_json": pack_transcript(transcript),
        },
        "data": meeting.model_dump_json().encode(),
        "side": {
            "people": [(p.name, p.name.lower() if p.name else None, p.email) for p in meeting.participants],
            "folder_members": [(f.id, f.name, fold(f.name)) for f in meeting.folders],
        },
    }


TRANSCRIPT_LEVEL = 1
"""zstd level for stored transcripts: raw cache JSON shrinks several times even at the
fastest level, and a first index compresses every transcript of the cache."""


def pack_transcript(raw: bytes | memoryview | None) -> bytes | None:
    """The transcript JSON as stored in the index (a zstd frame)."""
    return None if raw is None else zstandard.ZstdCompressor(level=TRANSCRIPT_LEVEL).compress(raw)


def unpack_transcript(stored: bytes | None) -> bytes | None:
    return None if stored is None else zstandard.ZstdDecompressor().decompress(stored)
