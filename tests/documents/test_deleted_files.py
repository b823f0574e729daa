"""A file deleted outside the server is never listed, counted or returned as if it were there."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from mcp import Client

from deskmcp.documents.server import create_server
from deskmcp.documents.settings import DocumentsSettings
from tests.documents.samples import ok
from tests.helpers.files import write

pytestmark = pytest.mark.anyio


def _age(folder: Path) -> int:
    """Set a folder's mtime an hour back, as for a folder nobody touched lately; that mtime."""
    past = folder.stat().st_mtime_ns - 3_600_000_000_000
    os.utime(folder, ns=(past, past))
    return past


async def test_a_deleted_file_is_not_listed_or_counted(settings: DocumentsSettings, docs_root: Path) -> None:
    write(docs_root, "gone.txt", "Budget memo\nquarterly budget numbers\n")
    write(docs_root, "kept.txt", "Kept memo\nother text\n")
    async with Client(create_server(settings)) as c:
        await ok(c, "index_document", path="gone.txt", tags=["finance"])
        await ok(c, "index_document", path="kept.txt")
        (docs_root / "gone.txt").unlink()
        listing = await ok(c, "list_documents")
        finance = await ok(c, "list_documents", tags=["finance"])
        tags = await ok(c, "list_tags")
        roots = await ok(c, "list_roots")
    assert [d["path"] for d in listing["items"]] == ["kept.txt"]
    assert listing["total"] == 1
    assert (finance["items"], finance["total"]) == ([], 0)
    assert tags["tags"] == []
    assert [r["documents"] for r in roots["roots"]] == [1]


async def test_a_file_deleted_from_a_folder_listed_before_is_not_listed(
    settings: DocumentsSettings, docs_root: Path
) -> None:
    for name in ("a.txt", "b.txt", "deep/c.txt", "deep/d.txt"):
        write(docs_root, name, f"{name}\n")
    _age(docs_root / "deep")
    _age(docs_root)
    async with Client(create_server(settings)) as c:
        await ok(c, "index_folder", tags=["memo"])
        first = await ok(c, "list_documents")
        (docs_root / "deep" / "c.txt").unlink()
        (docs_root / "a.txt").unlink()
        second = await ok(c, "list_tags")
        listing = await ok(c, "list_documents")
        roots = await ok(c, "list_roots")
    assert first["total"] == 4
    assert second["tags"] == [{"tag": "memo", "count": 2}]
    assert sorted(d["path"] for d in listing["items"]) == ["b.txt", "deep/d.txt"]
    assert listing["total"] == 2
    assert [r["documents"] for r in roots["roots"]] == [2]


async def test_a_file_indexed_after_its_folder_was_listed_is_checked_too(
    settings: DocumentsSettings, docs_root: Path
) -> None:
    write(docs_root, "a.txt", "alpha\n")
    late = write(docs_root, "late.txt", "late\n")
    aged = _age(docs_root)
    async with Client(create_server(settings)) as c:
        await ok(c, "index_document", path="a.txt")
        await ok(c, "list_documents")
        await ok(c, "index_document", path="late.txt")
        late.unlink()
        os.utime(docs_root, ns=(aged, aged))  # the folder looks untouched: only the file itself can tell
        listing = await ok(c, "list_documents")
    assert [d["path"] for d in listing["items"]] == ["a.txt"]


async def test_search_never_returns_a_file_deleted_outside_the_server(
    settings: DocumentsSettings, docs_root: Path
) -> None:
    for i in range(8):
        write(docs_root, f"f{i}.txt", f"Memo {i}\n" + "kiwi " * (10 - i) + "\n")
    async with Client(create_server(settings)) as c:
        await ok(c, "index_folder")
        for i in range(7):
            (docs_root / f"f{i}.txt").unlink()
        found = await ok(c, "search_documents", query="kiwi", limit=1)
        browsed = await ok(c, "search_documents", kind="text", limit=1)
    assert [h["path"] for h in found["items"]] == ["f7.txt"]
    assert (found["pruned"], found["total"], found["next_cursor"]) == (7, 1, None)
    assert found["total_approximate"] is False
    assert [h["path"] for h in browsed["items"]] == ["f7.txt"]
    assert browsed["total"] == 1


async def test_a_search_total_says_when_it_counts_files_not_checked(
    settings: DocumentsSettings, docs_root: Path
) -> None:
    for i in range(4):
        write(docs_root, f"f{i}.txt", f"Memo {i}\n" + "kiwi " * (10 - i) + "\n")
    async with Client(create_server(settings)) as c:
        await ok(c, "index_folder")
        (docs_root / "f3.txt").unlink()
        first = await ok(c, "search_documents", query="kiwi", limit=1)
        await ok(c, "list_documents")
        whole = await ok(c, "search_documents", query="kiwi", limit=10)
    assert [h["path"] for h in first["items"]] == ["f0.txt"]
    assert (first["total"], first["total_approximate"]) == (4, True)
    assert sorted(h["path"] for h in whole["items"]) == ["f0.txt", "f1.txt", "f2.txt"]
    assert (whole["total"], whole["total_approximate"]) == (3, False)
