from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from deskmcp.documents.server import create_server
from deskmcp.documents.settings import DocumentsSettings
from tests.documents.samples import fails, ok

pytestmark = pytest.mark.anyio


async def test_title_match_ranks_above_a_passing_mention(settings: DocumentsSettings, docs_root: Path) -> None:
    (docs_root / "mention.md").write_text(
        "# Weekly notes\n\n" + "Many unrelated words about planning. " * 20 + "A budget came up once.\n",
        encoding="utf-8",
    )
    (docs_root / "budget.md").write_text("# Budget 2025\n\nNumbers for the year.\n", encoding="utf-8")
    for i in range(5):  # bm25 needs documents without the term to weigh it
        (docs_root / f"other{i}.md").write_text(f"# Other {i}\n\nNothing relevant here.\n", encoding="utf-8")
    async with Client(create_server(settings)) as c:
        await ok(c, "index_folder")
        found = await ok(c, "search_documents", query="budget")
    assert [h["path"] for h in found["items"]] == ["budget.md", "mention.md"]
    assert found["items"][0]["score"] > found["items"][1]["score"]
    assert "⟦budget⟧" in found["items"][1]["snippet"].lower()


async def test_tags_are_intersected(settings: DocumentsSettings, docs_root: Path) -> None:
    for name in ("a.md", "b.md", "c.md"):
        (docs_root / name).write_text(f"# {name}\n\nreport text\n", encoding="utf-8")
    async with Client(create_server(settings)) as c:
        for name, tags in (("a.md", ["finance", "q3"]), ("b.md", ["finance"]), ("c.md", ["q3"])):
            await ok(c, "index_document", path=name, tags=tags)
        both = await ok(c, "search_documents", query="report", tags=["finance", "Q3"])
        finance = await ok(c, "search_documents", tags=["finance"])
        tags = await ok(c, "list_tags")
    assert [h["path"] for h in both["items"]] == ["a.md"]
    assert sorted(h["path"] for h in finance["items"]) == ["a.md", "b.md"]
    assert all(h["score"] is None for h in finance["items"])
    assert tags["tags"] == [{"tag": "finance", "count": 2}, {"tag": "q3", "count": 2}]


async def test_filename_filter_takes_a_substring_or_a_glob(settings: DocumentsSettings, docs_root: Path) -> None:
    for name in ("Invoice-2024.txt", "invoice-2025.md", "receipt.txt"):
        (docs_root / name).write_text("payment due", encoding="utf-8")
    async with Client(create_server(settings)) as c:
        await ok(c, "index_folder")
        substring = await ok(c, "search_documents", query="payment", filename="INVOICE")
        glob = await ok(c, "search_documents", filename="*.txt")
        kind = await ok(c, "search_documents", query="payment", kind="markdown")
    assert sorted(h["path"] for h in substring["items"]) == ["Invoice-2024.txt", "invoice-2025.md"]
    assert sorted(h["path"] for h in glob["items"]) == ["Invoice-2024.txt", "receipt.txt"]
    assert [h["path"] for h in kind["items"]] == ["invoice-2025.md"]


async def test_pages_follow_cursors_without_gaps_or_repeats(settings: DocumentsSettings, docs_root: Path) -> None:
    for i in range(23):
        (docs_root / f"doc{i:02d}.txt").write_text(f"common word, document number {i}", encoding="utf-8")
    async with Client(create_server(settings)) as c:
        await ok(c, "index_folder")
        seen: list[str] = []
        cursor = None
        pages = 0
        while True:
            args = {"query": "common", "limit": 10} | ({"cursor": cursor} if cursor else {})
            result = await ok(c, "search_documents", **args)
            seen += [h["path"] for h in result["items"]]
            pages += 1
            assert result["total"] == 23
            cursor = result["next_cursor"]
            if cursor is None:
                break
        listed: list[str] = []
        cursor = None
        while True:
            args = {"limit": 7} | ({"cursor": cursor} if cursor else {})
            listing = await ok(c, "list_documents", **args)
            listed += [d["path"] for d in listing["items"]]
            cursor = listing["next_cursor"]
            if cursor is None:
                break
    assert pages == 3
    assert sorted(seen) == sorted(f"doc{i:02d}.txt" for i in range(23))
    assert len(set(seen)) == 23
    assert sorted(listed) == sorted(seen)


async def test_a_cursor_from_another_query_is_refused(settings: DocumentsSettings, docs_root: Path) -> None:
    for i in range(3):
        (docs_root / f"d{i}.txt").write_text("apple banana", encoding="utf-8")
    async with Client(create_server(settings)) as c:
        await ok(c, "index_folder")
        first = await ok(c, "search_documents", query="apple", limit=1)
        error = await fails(c, "search_documents", query="banana", limit=1, cursor=first["next_cursor"])
        garbage = await fails(c, "search_documents", query="apple", cursor="not-a-cursor")
    assert error["error"] == "bad_request"
    assert garbage["error"] == "bad_request"


async def test_query_syntax_in_user_text_is_searched_as_words(settings: DocumentsSettings, docs_root: Path) -> None:
    (docs_root / "a.txt").write_text("near the OR gate we said NOT yet; title pending", encoding="utf-8")
    async with Client(create_server(settings)) as c:
        await ok(c, "index_document", path="a.txt")
        found = await ok(c, "search_documents", query='NEAR( "OR gate" NOT* title:')
        phrase_miss = await ok(c, "search_documents", query='"gate OR"')
        only_symbols = await fails(c, "search_documents", query="*** ()")
    assert [h["path"] for h in found["items"]] == ["a.txt"]
    assert phrase_miss["items"] == []
    assert only_symbols["error"] == "bad_request"


async def test_search_needs_at_least_one_criterion(settings: DocumentsSettings) -> None:
    async with Client(create_server(settings)) as c:
        error = await fails(c, "search_documents")
        bad_limit = await fails(c, "search_documents", query="x", limit=0)
    assert error["error"] == "bad_request"
    assert "list_documents" in error["message"]
    assert bad_limit["error"] == "bad_request"


async def test_stemming_matches_other_forms_of_a_word(settings: DocumentsSettings, docs_root: Path) -> None:
    (docs_root / "a.md").write_text("# Hiring\n\nWe are hiring engineers.\n", encoding="utf-8")
    async with Client(create_server(settings)) as c:
        await ok(c, "index_document", path="a.md")
        found = await ok(c, "search_documents", query="engineer hire")
    assert [h["path"] for h in found["items"]] == ["a.md"]
