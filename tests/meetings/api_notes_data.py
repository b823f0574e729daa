"""The same meetings two ways: notes as Granola's public API sends them, and a plain cache
state holding them, so each source's answers can be compared with the other's.

Notes follow the API reference's "Get note" field by field (see tests/helpers/granola_api.py);
the cache state follows the layout deskmcp reads (docs/meetings.md, "Normalisation").
"""

from __future__ import annotations

import random
import string
from datetime import UTC, datetime, timedelta
from typing import Any

PEOPLE = [
    ("Oat Benson", "oat@example.com"),
    ("Raisin Patel", "Raisin.Patel@example.com"),
    ("Zoë Müller", "zoe@example.org"),
    ("Kofi Mensah", "kofi@example.net"),
    ("Ana Lima", "ana@example.com"),
    ("Li Wei", "li.wei@example.cn"),
]
TOPICS = [
    "Quarterly yoghurt budget review",
    "Hiring plan for the platform team",
    "Roadmap: search by meaning",
    "Customer call with Acme",
    "Incident retro: the sync outage",
    "Design critique of the onboarding flow",
]
FOLDERS = [
    ("fol_4y6LduVdwSKC27", "Top secret recipes"),
    ("fol_Hiring000000a", "Hiring"),
    ("fol_Café000000000b", "Café"),
]
WORDS = [
    "budget",
    "roadmap",
    "hiring",
    "latency",
    "rollout",
    "churn",
    "invoice",
    "yoghurt",
    "migration",
    "pricing",
    "onboarding",
    "retention",
]


def note_id(rng: random.Random) -> str:
    return "not_" + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(14))


def stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def make_note(rng: random.Random, index: int, start: datetime, *, transcript_lines: int = 6) -> dict[str, Any]:
    owner = PEOPLE[index % len(PEOPLE)]
    others = rng.sample([p for p in PEOPLE if p != owner], k=rng.randint(1, 3))
    attendees = [owner, *others]
    end = start + timedelta(minutes=rng.choice([15, 30, 45, 60]))
    title = f"{TOPICS[index % len(TOPICS)]} #{index}"
    folders = rng.sample(FOLDERS, k=rng.randint(0, 2)) if index % 4 else [FOLDERS[index % len(FOLDERS)]]
    words = rng.sample(WORDS, k=4)
    transcript = []
    for line in range(transcript_lines if index % 5 else 0):
        at = start + timedelta(seconds=20 * line)
        transcript.append(
            {
                "speaker": {"source": "microphone" if line % 2 == 0 else "speaker"},
                "text": f"Line {line} about {words[line % len(words)]} and {rng.choice(WORDS)}.",
                "start_time": stamp(at),
                "end_time": stamp(at + timedelta(seconds=15)),
            }
        )
    created = start - timedelta(minutes=5)
    return {
        "id": note_id(rng),
        "object": "note",
        "title": title,
        "owner": {"name": owner[0], "email": owner[1]},
        "created_at": stamp(created),
        "updated_at": stamp(end + timedelta(minutes=10)),
        "web_url": f"https://notes.granola.ai/d/{index:08d}",
        "calendar_event": {
            "event_title": title,
            "invitees": [{"email": p[1]} for p in attendees],
            "organiser": owner[1],
            "calendar_event_id": f"event{index:06d}_{start:%Y%m%dT%H%M%SZ}",
            "scheduled_start_time": stamp(start),
            "scheduled_end_time": stamp(end),
        },
        "attendees": [{"name": p[0], "email": p[1]} for p in attendees],
        "folder_membership": [{"id": f[0], "object": "folder", "name": f[1]} for f in folders],
        "summary_text": f"We discussed {', '.join(words)}.",
        "summary_markdown": (
            f"## Summary\n\n- We discussed **{words[0]}** and {words[1]}.\n- Next: {words[2]}, {words[3]}."
        ),
        "transcript": transcript,
    }


def make_notes(
    count: int, *, seed: int = 7, start: datetime | None = None, transcript_lines: int = 6
) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    first = start or datetime(2026, 10, 1, 9, 0, tzinfo=UTC)
    return [make_note(rng, i, first + timedelta(hours=7 * i), transcript_lines=transcript_lines) for i in range(count)]


def cache_state(notes: list[dict[str, Any]]) -> dict[str, Any]:
    """A Granola cache state holding the same meetings as `notes` (keyed by the same ids)."""
    documents: dict[str, Any] = {}
    transcripts: dict[str, Any] = {}
    lists: dict[str, list[str]] = {}
    names: dict[str, dict[str, str]] = {}
    for note in notes:
        event = note["calendar_event"]
        documents[note["id"]] = {
            "id": note["id"],
            "title": note["title"],
            "type": "meeting",
            "created_at": note["created_at"],
            "updated_at": note["updated_at"],
            "people": {"creator": note["owner"], "attendees": note["attendees"]},
            "google_calendar_event": {
                "summary": event["event_title"],
                "start": {"dateTime": event["scheduled_start_time"]},
                "end": {"dateTime": event["scheduled_end_time"]},
            },
            "notes_markdown": note["summary_markdown"],
        }
        if note["transcript"]:
            transcripts[note["id"]] = [
                {
                    "document_id": note["id"],
                    "source": "microphone" if seg["speaker"]["source"] == "microphone" else "system",
                    "text": seg["text"],
                    "start_timestamp": seg["start_time"],
                    "end_timestamp": seg["end_time"],
                    "is_final": True,
                }
                for seg in note["transcript"]
            ]
        for folder in note["folder_membership"]:
            lists.setdefault(folder["id"], []).append(note["id"])
            names[folder["id"]] = {"title": folder["name"]}
    return {
        "documents": documents,
        "transcripts": transcripts,
        "documentLists": lists,
        "documentListsMetadata": names,
    }
