"""search_documents reads a question as words: any word ranks, stop words are never needed,
"phrases" stay phrases, +word is required, -word excluded, and words no document holds are named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from deskmcp.documents.server import create_server
from deskmcp.documents.settings import DocumentsSettings
from tests.helpers.tool_calls import call, fail

pytestmark = pytest.mark.anyio


def put(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


async def search(client: Client, query: str, **filters: Any) -> dict[str, Any]:
    return await call(client, "search_documents", {"query": query, **filters})


def paths(answer: dict[str, Any]) -> list[str]:
    return [item["path"] for item in answer["items"]]


async def test_search_documents_answers_a_question_with_the_documents_holding_its_words(
    settings: DocumentsSettings, docs_root: Path
) -> None:
    put(docs_root, {"n1.txt": "The team agreed the remote control budget.\n", "n2.txt": "Lunch is at noon.\n"})
    async with Client(create_server(settings)) as client:
        await call(client, "index_folder")
        found = await search(client, "What was the budget for the zorblax?")
    assert paths(found) == ["n1.txt"]
    assert found["total"] == 1
    assert found["unmatched_terms"] == ["zorblax"]
    assert "⟦budget⟧" in found["items"][0]["snippet"]


async def test_search_documents_ranks_documents_holding_every_word_first(
    settings: DocumentsSettings, docs_root: Path
) -> None:
    put(docs_root, {f"f{i}.txt": f"review notes item{i} x\n" for i in range(8)})  # "review" weighs little
    put(docs_root, {"many.txt": "budget budget budget x\n", "both.txt": "budget review x y\n"})
    async with Client(create_server(settings)) as client:
        await call(client, "index_folder")
        found = await search(client, "budget review", limit=3)
    assert paths(found)[:2] == ["both.txt", "many.txt"]


async def test_search_documents_keeps_a_quoted_phrase_exact(settings: DocumentsSettings, docs_root: Path) -> None:
    put(docs_root, {"a.txt": "annual renewals are due\n", "b.txt": "renewals annual report\n"})
    async with Client(create_server(settings)) as client:
        await call(client, "index_folder")
        phrase = await search(client, '"annual renewals" zorblax')
        words = await search(client, "annual renewals")
    assert paths(phrase) == ["a.txt"]
    assert sorted(paths(words)) == ["a.txt", "b.txt"]


async def test_search_documents_requires_a_plus_word_and_excludes_a_minus_word(
    settings: DocumentsSettings, docs_root: Path
) -> None:
    put(docs_root, {"a.txt": "budget review\n", "b.txt": "budget draft\n", "c.txt": "review only\n"})
    async with Client(create_server(settings)) as client:
        await call(client, "index_folder")
        required = await search(client, "+budget review")
        excluded = await search(client, "budget review -draft")
        only_excluded = await fail(client, "search_documents", {"query": "-draft"})
    assert sorted(paths(required)) == ["a.txt", "b.txt"]
    assert sorted(paths(excluded)) == ["a.txt", "c.txt"]
    assert only_excluded["error"] == "bad_request"


async def test_search_documents_with_no_match_names_the_words_and_filters_stay_exact(
    settings: DocumentsSettings, docs_root: Path
) -> None:
    put(docs_root, {"old.txt": "rocket engine\n", "plan.md": "# Plan\n\nbudget review\n"})
    async with Client(create_server(settings)) as client:
        await call(client, "index_folder")
        nothing = await search(client, "zorblax quux")
        markdown_only = await search(client, "the rocket", kind="markdown")
    assert nothing["items"] == [] and nothing["total"] == 0
    assert nothing["unmatched_terms"] == ["zorblax", "quux"]
    assert markdown_only["items"] == [] and markdown_only["unmatched_terms"] == ["rocket"]
