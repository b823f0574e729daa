"""Write a small deskmcp workspace for the conformance run and the HTTP benchmark.

Usage: python conformance/workspace.py DIR

Today it holds a Granola cache (`DIR/granola/cache-v4.json`) of a few meetings with
notes, attendees, a folder and a transcript; servers added later find their own data
folders empty, and the gateway reports them as skipped.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

TOPICS = ["Budget review", "Roadmap planning", "Hiring sync", "Design critique", "Customer call"]
PEOPLE = [
    ("Ada Lovelace", "ada@example.com"),
    ("Alan Turing", "alan@example.com"),
    ("Grace Hopper", "grace@example.com"),
]


def granola_state(count: int = 5) -> dict[str, object]:
    start = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
    documents: dict[str, object] = {}
    transcripts: dict[str, object] = {}
    for i in range(count):
        doc_id = f"0000000{i}-aaaa-bbbb-cccc-dddddddddddd"
        begins = start + timedelta(days=i, hours=i % 3)
        name, email = PEOPLE[i % len(PEOPLE)]
        topic = TOPICS[i % len(TOPICS)]
        documents[doc_id] = {
            "id": doc_id,
            "title": f"{TOPICS[i % len(TOPICS)]} #{i}",
            "created_at": begins.isoformat(),
            "notes_markdown": f"## Notes\n\n- decided the {topic.lower()} plan\n- follow up with {name}",
            "people": {
                "creator": {"name": "Me Myself", "email": "me@example.com"},
                "attendees": [{"name": name, "email": email}],
            },
            "google_calendar_event": {
                "start": {"dateTime": begins.isoformat()},
                "end": {"dateTime": (begins + timedelta(minutes=30)).isoformat()},
                "hangoutLink": "https://meet.google.com/abc-defg-hij",
            },
        }
        transcripts[doc_id] = [
            {
                "document_id": doc_id,
                "start_timestamp": (begins + timedelta(seconds=10 * k)).isoformat(),
                "end_timestamp": (begins + timedelta(seconds=10 * k + 8)).isoformat(),
                "text": f"Line {k} about the {TOPICS[i % len(TOPICS)].lower()}.",
                "source": "microphone" if k % 2 == 0 else "system",
                "is_final": True,
            }
            for k in range(4)
        ]
    folder_ids = list(documents)[:2]
    return {
        "documents": documents,
        "transcripts": transcripts,
        "documentLists": {"folder-1": folder_ids},
        "documentListsMetadata": {"folder-1": {"title": "Planning", "description": "Planning meetings"}},
    }


def write_workspace(root: Path, meetings: int = 5) -> Path:
    folder = root / "granola"
    folder.mkdir(parents=True, exist_ok=True)
    cache = folder / "cache-v4.json"
    cache.write_text(json.dumps({"cache": {"state": granola_state(meetings), "version": 4}}), encoding="utf-8")
    return root


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    print(write_workspace(Path(sys.argv[1])))
