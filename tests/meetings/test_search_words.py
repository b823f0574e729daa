"""granola.meetings.search reads a question as words: any word ranks, stop words are never needed,
"phrases" stay phrases, +word is required, -word excluded, and words no meeting holds are named.
granola.meetings.list keeps q a filter: every word but the stop words must match."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from deskmcp.meetings.server import create_server
from deskmcp.meetings.settings import MeetingsSettings
from tests.helpers.tool_calls import call, fail

from .fixtures import ALPHA, BETA, state, write

pytestmark = pytest.mark.anyio

DELTA = "6f1c2a3b-0000-4000-8000-000000000005"


@pytest.fixture
def settings(tmp_path: Path) -> MeetingsSettings:
    data = state()
    data["documents"][DELTA] = {
        "id": DELTA,
        "title": "Hiring budget",
        "created_at": "2024-05-09T10:00:00Z",
        "notes_markdown": "Two roles approved.",
    }
    write(tmp_path / "granola", data)
    return MeetingsSettings(workspace=tmp_path / "ws", cache_path=tmp_path / "granola", timezone="UTC")


async def search(client: Client, q: str, **filters: Any) -> dict[str, Any]:
    return await call(client, "granola.meetings.search", {"q": q, **filters})


def ids(answer: dict[str, Any]) -> list[str]:
    return [item["id"] for item in answer["items"]]


async def test_search_answers_a_question_with_the_meetings_holding_its_words(settings: MeetingsSettings):
    async with Client(create_server(settings)) as client:
        found = await search(client, "What was the cloud spend for the zorblax?")
    assert ids(found) == [ALPHA]
    assert found["unmatched_terms"] == ["zorblax"]
    assert "⟦" in found["items"][0]["snippet"]


async def test_search_ranks_meetings_holding_every_word_first(settings: MeetingsSettings):
    async with Client(create_server(settings)) as client:
        found = await search(client, "hiring budget")
    assert ids(found)[0] == DELTA
    assert set(ids(found)) == {DELTA, ALPHA, BETA}


async def test_search_keeps_a_quoted_phrase_exact(settings: MeetingsSettings):
    async with Client(create_server(settings)) as client:
        phrase = await search(client, '"cloud costs" zorblax')
        reversed_phrase = await search(client, '"costs cloud"')
    assert ids(phrase) == [ALPHA]
    assert reversed_phrase["items"] == []
    assert reversed_phrase["unmatched_terms"] == ['"costs cloud"']


async def test_search_requires_a_plus_word_and_excludes_a_minus_word(settings: MeetingsSettings):
    async with Client(create_server(settings)) as client:
        required = await search(client, "+hiring budget")
        excluded = await search(client, "budget -cloud")
        only_excluded = await fail(client, "granola.meetings.search", {"q": "-cloud"})
    assert set(ids(required)) == {DELTA, BETA}
    assert ids(excluded) == [DELTA]
    assert only_excluded["error"] == "bad_request"


async def test_search_with_no_match_names_the_words_and_filters_stay_exact(settings: MeetingsSettings):
    async with Client(create_server(settings)) as client:
        nothing = await search(client, "zorblax quux")
        on_zoom = await search(client, "backend budget", platform="zoom")
        cloud_on_zoom = await search(client, "cloud", platform="zoom")
    assert nothing["items"] == [] and nothing["unmatched_terms"] == ["zorblax", "quux"]
    assert ids(on_zoom) == [BETA]
    assert on_zoom["unmatched_terms"] == ["budget"]  # held by other meetings, none on zoom
    assert cloud_on_zoom["items"] == [] and cloud_on_zoom["unmatched_terms"] == ["cloud"]


async def test_list_with_q_keeps_meetings_holding_every_word_but_the_stop_words(settings: MeetingsSettings):
    async with Client(create_server(settings)) as client:
        listed = await call(client, "granola.meetings.list", {"q": "what cloud budget"})
        both = await call(client, "granola.meetings.list", {"q": "hiring budget"})
        without = await call(client, "granola.meetings.list", {"q": "budget -cloud"})
    assert ids(listed) == [ALPHA] and listed["total"] == 1
    assert ids(both) == [DELTA] and both["total"] == 1
    assert ids(without) == [DELTA]
