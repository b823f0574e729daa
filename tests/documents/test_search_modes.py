"""search_documents by words, by meaning or both (mode), and what happens with no model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from deskmcp.documents.server import create_server
from deskmcp.documents.settings import DocumentsSettings
from tests.helpers.embedders import add_static_model
from tests.helpers.tool_calls import call, fail

pytestmark = pytest.mark.anyio


def put(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def paths(answer: dict[str, Any]) -> list[str]:
    return [item["path"] for item in answer["items"]]


FILES = {
    "pets.md": "# Pets\nThe kitten purrs and the puppy barks.\n",
    "costs.md": "# Costs\nThe invoice total was paid.\n",
    "weather.txt": "Rain and snow tomorrow, then a storm.\n",
}


async def test_search_documents_without_a_model_is_lexical_and_says_so(
    settings: DocumentsSettings, docs_root: Path
) -> None:
    put(docs_root, FILES)
    async with Client(create_server(settings)) as client:
        await call(client, "index_folder")
        found = await call(client, "search_documents", {"query": "invoice", "mode": "hybrid"})
        error = await fail(client, "search_documents", {"query": "invoice", "mode": "semantic"})
    assert found["mode"] == "lexical" and paths(found) == ["costs.md"]
    assert found["items"][0]["lexical_rank"] == 1 and found["items"][0]["semantic_rank"] is None
    assert error["error"] == "bad_request" and "DESKMCP_EMBEDDER" in error["message"]


async def test_search_documents_with_a_model_finds_documents_by_meaning(
    tmp_path: Path, docs_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "models"
    add_static_model(store, "topics")
    monkeypatch.setenv("DESKMCP_MODELS_DIR", str(store))
    put(docs_root, FILES)
    settings = DocumentsSettings(workspace=tmp_path / "ws", documents_path=docs_root, embedder="topics")
    async with Client(create_server(settings)) as client:
        await call(client, "index_folder")
        by_meaning = await call(client, "search_documents", {"query": "umbrella", "mode": "semantic", "limit": 1})
        hybrid = await call(client, "search_documents", {"query": "cat", "limit": 2})
        filtered = await call(client, "search_documents", {"query": "umbrella", "mode": "semantic", "kind": "markdown"})
    assert by_meaning["mode"] == "semantic" and paths(by_meaning) == ["weather.txt"]
    assert hybrid["mode"] == "hybrid" and paths(hybrid)[0] == "pets.md"
    assert hybrid["items"][0]["lexical_rank"] is None and hybrid["items"][0]["semantic_rank"] == 1
    assert "weather.txt" not in paths(filtered)
