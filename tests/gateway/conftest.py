"""Fixtures for the gateway: a workspace with a small Granola cache, and a real uvicorn on loopback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.helpers.network import Serving, serving

MEETINGS = [
    ("m-budget", "Budget review", "2026-11-02T09:00:00Z", "Ada Lovelace", "ada@example.com"),
    ("m-roadmap", "Roadmap planning", "2026-11-03T10:00:00Z", "Alan Turing", "alan@example.com"),
    ("m-hiring", "Hiring sync", "2026-11-04T11:00:00Z", "Grace Hopper", "grace@example.com"),
]


def write_granola_cache(folder: Path) -> Path:
    documents = {
        doc_id: {
            "id": doc_id,
            "title": title,
            "created_at": start,
            "notes_markdown": f"Notes of the {title.lower()} with {name}.",
            "people": {"attendees": [{"name": name, "email": email}]},
        }
        for doc_id, title, start, name, email in MEETINGS
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "cache-v4.json"
    path.write_text(json.dumps({"cache": {"state": {"documents": documents}, "version": 4}}), encoding="utf-8")
    return path


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace whose Granola cache holds three meetings; the environment points every server at it."""
    root = tmp_path / "workspace"
    write_granola_cache(root / "granola")
    monkeypatch.setenv("DESKMCP_WORKSPACE", str(root))
    monkeypatch.setenv("GRANOLA_CACHE_PATH", str(root / "granola"))
    monkeypatch.delenv("DESKMCP_TOKEN", raising=False)
    return root


@pytest.fixture
def empty_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace with no data at all: every server that needs a source is unavailable."""
    root = tmp_path / "empty"
    (root / "granola").mkdir(parents=True)
    monkeypatch.setenv("DESKMCP_WORKSPACE", str(root))
    monkeypatch.setenv("GRANOLA_CACHE_PATH", str(root / "granola"))
    monkeypatch.delenv("DESKMCP_TOKEN", raising=False)
    return root


@pytest.fixture
def serve() -> Serving:
    """`with serve(app) as base_url:` runs the app on loopback for the block."""
    return serving
