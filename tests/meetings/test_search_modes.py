"""granola.meetings.search by words, by meaning or both (mode), the related meetings, and what
happens with no model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from deskmcp.meetings.server import create_server
from deskmcp.meetings.settings import MeetingsSettings
from tests.helpers.embedders import add_static_model
from tests.helpers.tool_calls import call, fail

from .fixtures import state, write

pytestmark = pytest.mark.anyio

RAIN = "6f1c2a3b-0000-4000-8000-000000000011"
SNOW = "6f1c2a3b-0000-4000-8000-000000000012"
PETS = "6f1c2a3b-0000-4000-8000-000000000013"


def meeting(id: str, title: str, notes: str) -> dict[str, Any]:
    return {"id": id, "title": title, "created_at": "2024-05-09T10:00:00Z", "notes_markdown": notes}


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    data = state()
    data["documents"][RAIN] = meeting(RAIN, "Site visit", "Rain and a storm are forecast; bring an umbrella.")
    data["documents"][SNOW] = meeting(SNOW, "Ski trip", "Snow, wind and cloudy skies all week.")
    data["documents"][PETS] = meeting(PETS, "Shelter", "The kitten purrs, the puppy barks.")
    return write(tmp_path / "granola", data)


def ids(answer: dict[str, Any]) -> list[str]:
    return [item["id"] for item in answer["items"]]


async def test_meetings_search_without_a_model_is_lexical_and_semantic_says_how_to_set_one_up(
    tmp_path: Path, cache: Path
) -> None:
    settings = MeetingsSettings(workspace=tmp_path / "ws", cache_path=tmp_path / "granola", timezone="UTC")
    async with Client(create_server(settings)) as client:
        found = await call(client, "granola.meetings.search", {"q": "umbrella"})
        error = await fail(client, "granola.meetings.search", {"q": "umbrella", "mode": "semantic"})
    assert found["mode"] == "lexical" and ids(found) == [RAIN]
    assert found["items"][0]["lexical_rank"] == 1 and found["items"][0]["semantic_rank"] is None
    assert error["error"] == "bad_request" and "DESKMCP_EMBEDDER" in error["message"]


async def test_meetings_search_with_a_model_finds_meetings_by_meaning_and_lists_related_ones(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "models"
    add_static_model(store, "topics")
    monkeypatch.setenv("DESKMCP_MODELS_DIR", str(store))
    settings = MeetingsSettings(
        workspace=tmp_path / "ws",
        cache_path=tmp_path / "granola",
        timezone="UTC",
        embedder="topics",
        toolsets="read,more",
    )
    async with Client(create_server(settings)) as client:
        semantic = await call(client, "granola.meetings.search", {"q": "sunny", "mode": "semantic", "limit": 2})
        hybrid = await call(client, "granola.meetings.search", {"q": "umbrella", "limit": 3})
        related = await call(client, "granola.meetings.related", {"id": RAIN, "limit": 1})
    assert semantic["mode"] == "semantic" and set(ids(semantic)) == {RAIN, SNOW}
    assert hybrid["mode"] == "hybrid" and ids(hybrid)[:2] == [RAIN, SNOW]
    ranks = {item["id"]: (item["lexical_rank"], item["semantic_rank"]) for item in hybrid["items"]}
    assert ranks[RAIN][0] == 1 and ranks[SNOW][0] is None
    assert ids(related) == [SNOW] and related["mode"] == "semantic"
