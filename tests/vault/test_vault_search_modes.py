"""search_notes by words, by meaning or both (mode), related_notes, and what happens with no model."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from mcp import Client

from deskmcp.vault.server import Settings, create_server
from deskmcp.vault.service import VaultService
from tests.helpers.concept_vectors import ConceptEmbedder
from tests.helpers.embedders import add_static_model
from tests.helpers.files import write
from tests.helpers.tool_calls import Connect, call, fail

pytestmark = pytest.mark.anyio


def paths(answer: dict) -> list[str]:
    return [n["path"] for n in answer["notes"]]


@pytest.fixture
def with_model(vault: Path, settings_for: Callable[..., Settings]) -> Callable[[], Client]:
    def build() -> Client:
        settings = settings_for(vault)
        return Client(create_server(settings, VaultService(settings, embedder=ConceptEmbedder())))

    return build


def garage(vault: Path) -> None:
    write(vault, "Garage.md", "# Garage\nThe automobile needs new tyres before winter.\n")
    write(vault, "Log.md", "# Vehicle log\nMileage for March.\n")
    write(vault, "Lunch.md", "# Lunch\nSoup and bread at noon.\n")


async def test_search_notes_without_a_model_is_lexical_and_says_so(connect: Connect, vault: Path) -> None:
    garage(vault)
    async with connect() as client:
        default = await call(client, "search_notes", {"query": "vehicle"})
        hybrid = await call(client, "search_notes", {"query": "vehicle", "mode": "hybrid"})
    assert default["mode"] == hybrid["mode"] == "lexical"
    assert paths(default) == paths(hybrid) == ["Log.md"]
    assert default["notes"][0]["lexical_rank"] == 1 and default["notes"][0]["semantic_rank"] is None


async def test_search_notes_by_meaning_without_a_model_is_a_bad_request_saying_how_to_set_one_up(
    connect: Connect, vault: Path
) -> None:
    garage(vault)
    async with connect() as client:
        error = await fail(client, "search_notes", {"query": "vehicle", "mode": "semantic"})
    assert error["error"] == "bad_request"
    assert "DESKMCP_EMBEDDER" in error["message"] and "mode='lexical'" in error["message"]


async def test_search_notes_with_a_model_is_hybrid_and_shows_each_side_rank(
    with_model: Callable[[], Client], vault: Path
) -> None:
    garage(vault)
    async with with_model() as client:
        found = await call(client, "search_notes", {"query": "vehicle", "limit": 3})
        lexical = await call(client, "search_notes", {"query": "vehicle", "mode": "lexical"})
    assert found["mode"] == "hybrid"
    assert paths(found)[:2] == ["Log.md", "Garage.md"]
    ranks = {n["path"]: (n["lexical_rank"], n["semantic_rank"]) for n in found["notes"]}
    assert ranks["Log.md"][0] == 1
    assert ranks["Garage.md"][0] is None and ranks["Garage.md"][1] is not None
    assert lexical["mode"] == "lexical" and paths(lexical) == ["Log.md"]


async def test_search_notes_by_meaning_finds_a_note_sharing_no_word_and_follows_edits(
    with_model: Callable[[], Client], vault: Path
) -> None:
    garage(vault)
    async with with_model() as client:
        before = await call(client, "search_notes", {"query": "car tyres", "mode": "semantic", "limit": 1})
        await call(client, "write_note", {"path": "Lunch.md", "body": "Booked a car for Friday.\n", "overwrite": True})
        await call(client, "move_note", {"source": "Garage.md", "destination": "Old/Garage.md"})
        after = await call(client, "search_notes", {"query": "automobile", "mode": "semantic", "limit": 3})
        folder = await call(client, "search_notes", {"query": "car", "mode": "semantic", "folder": "Old"})
    assert before["mode"] == "semantic" and paths(before) == ["Garage.md"]
    assert "Garage.md" not in paths(after) and {"Old/Garage.md", "Lunch.md"} <= set(paths(after))
    assert paths(folder) == ["Old/Garage.md"]


async def test_related_notes_lists_the_nearest_notes_in_meaning(with_model: Callable[[], Client], vault: Path) -> None:
    garage(vault)
    async with with_model() as client:
        near = await call(client, "related_notes", {"path": "Garage.md", "limit": 1})
    assert paths(near) == ["Log.md"]
    assert near["mode"] == "semantic"


async def test_related_notes_without_a_model_says_how_to_set_one_up(connect: Connect, vault: Path) -> None:
    garage(vault)
    async with connect(toolsets="read,browse") as client:
        error = await fail(client, "related_notes", {"path": "Garage.md"})
    assert error["error"] == "bad_request" and "DESKMCP_EMBEDDER" in error["message"]


async def test_search_notes_uses_the_model_named_by_deskmcp_embedder(
    connect: Connect, vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "models"
    add_static_model(store, "topics")
    monkeypatch.setenv("DESKMCP_MODELS_DIR", str(store))
    write(vault, "Pets.md", "# Pets\nThe kitten purrs and the puppy barks.\n")
    write(vault, "Costs.md", "# Costs\nThe invoice total was paid.\n")
    async with connect(embedder="topics") as client:
        found = await call(client, "search_notes", {"query": "cat", "mode": "semantic", "limit": 1})
        default = await call(client, "search_notes", {"query": "expenses"})
    assert found["mode"] == "semantic" and paths(found) == ["Pets.md"]
    assert default["mode"] == "hybrid" and paths(default)[0] == "Costs.md"
    assert default["notes"][0]["lexical_rank"] is None and default["notes"][0]["semantic_rank"] == 1
