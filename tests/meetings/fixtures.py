"""Small Granola caches written by the tests, in each format Granola has used."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ALPHA = "6f1c2a3b-0000-4000-8000-000000000001"
BETA = "6f1c2a3b-0000-4000-8000-000000000002"
GAMMA = "6f1c2a3b-0000-4000-8000-000000000003"
DELETED = "6f1c2a3b-0000-4000-8000-000000000004"


def state() -> dict[str, Any]:
    """Three live meetings and one deleted, covering the shapes real caches use."""
    return {
        "documents": {
            ALPHA: {
                "id": ALPHA,
                "title": "Quarterly budget review",
                "type": "meeting",
                "created_at": "2024-05-06T09:05:00Z",
                "google_calendar_event": {
                    "start": {"dateTime": "2024-05-06T11:00:00+02:00"},
                    "end": {"dateTime": "2024-05-06T12:00:00+02:00"},
                    "hangoutLink": "https://meet.google.com/abc-defg-hij",
                },
                "people": {
                    "creator": {"name": "Sam Rivera", "email": "Sam@Example.com"},
                    "attendees": [
                        {"email": "alice@example.com", "details": {"person": {"name": {"fullName": "Alice Okafor"}}}},
                        {"displayName": "Bob Stone", "email": "bob@example.com"},
                    ],
                },
                "notes": {
                    "type": "doc",
                    "content": [
                        {"type": "heading", "attrs": {"level": 2}, "content": [{"type": "text", "text": "Decisions"}]},
                        {
                            "type": "bulletList",
                            "content": [
                                {
                                    "type": "listItem",
                                    "content": [
                                        {
                                            "type": "paragraph",
                                            "content": [
                                                {"type": "text", "text": "Cut cloud spend by "},
                                                {"type": "text", "text": "ten percent", "marks": [{"type": "bold"}]},
                                            ],
                                        }
                                    ],
                                }
                            ],
                        },
                    ],
                },
            },
            BETA: {
                "id": BETA,
                "title": "Hiring sync",
                "created_at": 1715158800000,  # 2024-05-08T09:00:00Z in milliseconds
                "notes_markdown": "Discussed the **backend** opening.",
                "people": [{"name": "Carol Diaz", "email": "carol@example.com"}],
            },
            GAMMA: {
                "id": GAMMA,
                "title": "Design critique",
                "type": "meeting",
                "created_at": "2024-05-10T15:00:00Z",
                "notes_plain": "",
            },
            DELETED: {"id": DELETED, "title": "Gone", "deleted_at": "2024-05-01T00:00:00Z"},
            "note-1": {"id": "note-1", "title": "A plain note", "type": "note"},
        },
        "meetingsMetadata": {
            BETA: {"conference": {"provider": "zoom", "url": "https://zoom.us/j/123"}},
            GAMMA: {"attendees": [{"name": "Dana Lee", "email": "dana@example.com"}]},
        },
        "documentPanels": {
            GAMMA: {"p1": {"title": "Summary", "original_content": "<p>Navigation &amp; empty states</p>"}},
        },
        "transcripts": {
            ALPHA.replace("-", ""): [
                {
                    "document_id": ALPHA,
                    "start_timestamp": "2024-05-06T09:00:05Z",
                    "end_timestamp": "2024-05-06T09:00:09Z",
                    "text": "Welcome to the budget review.",
                    "source": "microphone",
                    "is_final": True,
                },
                {
                    "document_id": ALPHA,
                    "start_timestamp": "2024-05-06T09:00:10Z",
                    "end_timestamp": "2024-05-06T09:00:20Z",
                    "text": "Cloud costs rose in April.",
                    "source": "system",
                    "is_final": True,
                },
                {
                    "document_id": ALPHA,
                    "start_timestamp": "2024-05-06T09:00:21Z",
                    "end_timestamp": "2024-05-06T09:00:22Z",
                    "text": "partial words",
                    "source": "system",
                    "is_final": False,
                },
                {
                    "document_id": ALPHA,
                    "start_timestamp": "2024-05-06T09:01:00Z",
                    "end_timestamp": "2024-05-06T09:01:30Z",
                    "text": "Let's cut ten percent.",
                    "source": "microphone",
                    "is_final": True,
                },
            ],
        },
        "documentLists": {"list-fin": [ALPHA], "list-people": [BETA, DELETED]},
        "documentListsMetadata": {
            "list-fin": {"title": "Finance", "description": "Money matters"},
            "list-people": {"title": "Hiring"},
        },
    }


def write(folder: Path, data: dict[str, Any] | None = None, *, version: int = 6) -> Path:
    """Write a cache file as Granola does (v3: `cache` is a JSON string; v4+: an object), in
    compact UTF-8 JSON, as JavaScript's `JSON.stringify` writes it."""
    folder.mkdir(parents=True, exist_ok=True)
    inner: Any = {"state": data if data is not None else state(), "version": version}
    compact = {"separators": (",", ":"), "ensure_ascii": False}
    if version == 3:
        inner = json.dumps(inner, **compact)
    path = folder / f"cache-v{version}.json"
    path.write_text(json.dumps({"cache": inner}, **compact), encoding="utf-8")
    return path
