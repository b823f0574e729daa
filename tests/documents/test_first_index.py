"""A configured folder nothing was ever indexed from is indexed by the first search, never answered
with a silent empty list: a small one before the answer, a large one in the background with its
progress in every answer meanwhile."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from deskmcp.documents.server import create_server
from deskmcp.documents.service import DocumentService
from deskmcp.documents.settings import DocumentsSettings
from tests.documents.samples import ok
from tests.helpers.files import write

pytestmark = pytest.mark.anyio


async def test_the_first_search_of_a_folder_never_indexed_finds_its_documents(tmp_path: Path) -> None:
    docs, archive = tmp_path / "docs", tmp_path / "Archive"
    write(docs, "birds/heron.md", "# Heron\n\nA grey heron by the canal.\n")
    write(docs, "plain.txt", "nothing about birds")
    write(archive, "2019/heron-count.txt", "heron count for 2019")
    settings = DocumentsSettings(workspace=tmp_path / "ws", documents_path=docs, extra_roots=str(archive))
    async with Client(create_server(settings)) as c:
        found = await ok(c, "search_documents", query="heron")
        listing = await ok(c, "list_documents")
    assert sorted(h["path"] for h in found["items"]) == ["archive:2019/heron-count.txt", "birds/heron.md"]
    assert (found["partial"], found["indexing"]) == (False, None)
    assert listing["total"] == 3


async def test_a_large_folder_is_searched_while_it_is_indexed_and_says_how_far(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    for i in range(40):
        write(docs, f"n{i:02}.md", f"# Note {i}\n\nkestrel sighting {i}\n")
    service = DocumentService(DocumentsSettings(workspace=tmp_path / "ws", documents_path=docs))
    service.first_index.wait_below = 0  # as a folder too large to wait for
    async with Client(create_server(service.settings, service)) as c:
        first = await ok(c, "search_documents", query="kestrel", limit=50)
        assert service.wait_indexed(60)
        done = await ok(c, "search_documents", query="kestrel", limit=50)
    if first["indexing"] is None:  # indexing outran the answer
        assert (first["partial"], first["total"]) == (False, 40)
    else:
        assert first["partial"] is True
        assert first["indexing"]["total"] == 40
        assert first["indexing"]["done"] <= 40
    assert (done["partial"], done["indexing"], done["total"]) == (False, None, 40)


async def test_a_folder_indexed_by_hand_is_left_as_the_person_indexed_it(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    write(docs, "a.md", "# A\n\nosprey\n")
    write(docs, "b.md", "# B\n\nosprey too\n")
    settings = DocumentsSettings(workspace=tmp_path / "ws", documents_path=docs)
    async with Client(create_server(settings)) as c:
        await ok(c, "index_document", path="a.md")
        await ok(c, "remove_document", path="a.md")
        found = await ok(c, "search_documents", query="osprey")
    assert (found["items"], found["partial"]) == ([], False)
