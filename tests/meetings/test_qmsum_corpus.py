"""Real meeting transcripts (the QMSum corpus) shaped into a Granola cache."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from deskmcp.meetings.server import create_server
from deskmcp.meetings.settings import MeetingsSettings
from tests.helpers.corpora import shared_corpus

from .fixtures import write

pytestmark = pytest.mark.anyio


def qmsum_state(folder: Path) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    documents: dict[str, Any] = {}
    transcripts: dict[str, Any] = {}
    originals: dict[str, dict[str, Any]] = {}
    start = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)
    for n, path in enumerate(sorted(folder.glob("*.json"))):
        data = json.loads(path.read_text(encoding="utf-8"))
        doc_id = f"qmsum-{path.stem}"
        originals[doc_id] = data
        begins = start + timedelta(days=n)
        speakers = sorted({turn["speaker"] for turn in data["meeting_transcripts"]})
        documents[doc_id] = {
            "id": doc_id,
            "title": f"{path.stem}: {data['topic_list'][0]['topic']}",
            "created_at": begins.isoformat(),
            "notes_markdown": data["general_query_list"][0]["answer"],
            "people": {"attendees": [{"name": s} for s in speakers]},
        }
        t = begins
        segments = []
        for turn in data["meeting_transcripts"]:
            segments.append(
                {
                    "document_id": doc_id,
                    "start_timestamp": t.isoformat().replace("+00:00", "Z"),
                    "end_timestamp": (t + timedelta(seconds=5)).isoformat().replace("+00:00", "Z"),
                    "text": turn["content"],
                    "speaker": turn["speaker"],
                    "source": "system",
                    "is_final": True,
                }
            )
            t += timedelta(seconds=6)
        transcripts[doc_id] = segments
    return {"documents": documents, "transcripts": transcripts}, originals


@pytest.fixture
def corpus(tmp_path: Path) -> tuple[MeetingsSettings, dict[str, dict[str, Any]]]:
    state, originals = qmsum_state(shared_corpus("qmsum"))
    write(tmp_path / "granola", state)
    settings = MeetingsSettings(workspace=tmp_path / "ws", cache_path=tmp_path / "granola", timezone="UTC")
    return settings, originals


async def test_every_qmsum_meeting_is_indexed_with_its_whole_transcript(corpus):
    settings, originals = corpus
    async with Client(create_server(settings)) as client:
        status = (await client.call_tool("granola.cache.status", {})).structured_content
        transcript = (await client.call_tool("granola.meetings.transcript", {"id": "qmsum-ES2002a"})).structured_content
    assert status is not None and status["meetings"] == len(originals) == 40
    assert transcript is not None
    expected = [t for t in originals["qmsum-ES2002a"]["meeting_transcripts"] if t["content"].strip()]
    assert transcript["total_segments"] == len(expected)
    assert transcript["segments"][0]["speaker"] == expected[0]["speaker"]


async def test_search_over_real_transcripts_ranks_the_product_design_series_for_remote_control(corpus):
    settings, _ = corpus
    async with Client(create_server(settings)) as client:
        result = await client.call_tool("granola.meetings.search", {"q": "remote control buttons", "limit": 10})
    assert result.structured_content is not None
    ids = [h["id"] for h in result.structured_content["items"]]
    assert ids, "the AMI remote-control design meetings talk about buttons"
    assert all(i.split("-")[1][:2] in ("ES", "IS", "TS") for i in ids[:5])


async def test_participant_filter_finds_committee_meetings_by_a_speakers_name(corpus):
    settings, originals = corpus
    chair = next(t["speaker"] for t in originals["qmsum-covid_0"]["meeting_transcripts"] if "Chair" in t["speaker"])
    async with Client(create_server(settings)) as client:
        result = await client.call_tool("granola.meetings.list", {"participants": [chair], "limit": 50})
    assert result.structured_content is not None
    assert "qmsum-covid_0" in [m["id"] for m in result.structured_content["items"]]


async def test_export_of_a_long_real_meeting_is_capped_and_says_so(corpus):
    settings, _ = corpus
    async with Client(create_server(settings)) as client:
        result = await client.call_tool(
            "granola.meetings.export_markdown",
            {"id": "qmsum-Bmr014", "sections": ["header", "transcript"], "max_chars": 5000},
        )
    assert result.structured_content is not None
    assert result.structured_content["truncated"] is True
    assert len(result.structured_content["markdown"]) <= 5200
