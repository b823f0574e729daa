from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anyio
import pytest
from mcp import Client

from deskmcp.documents.server import create_server
from deskmcp.documents.service import DocumentService
from deskmcp.documents.settings import DocumentsSettings
from tests.documents.samples import ok

pytestmark = pytest.mark.anyio


async def test_concurrent_index_and_search_calls_all_succeed(settings: DocumentsSettings, docs_root: Path) -> None:
    for i in range(30):
        (docs_root / f"doc{i:02d}.md").write_text(f"# Doc {i}\n\nshared token kestrel number{i}\n", encoding="utf-8")
    searches: list[int] = []
    async with Client(create_server(settings)) as c:

        async def index(i: int) -> None:
            result = await ok(c, "index_document", path=f"doc{i:02d}.md", tags=[f"t{i % 3}"])
            # "updated" when the first search's indexing of the folder (never indexed) got there first
            assert result["status"] in ("added", "updated")

        async def search() -> None:
            result = await ok(c, "search_documents", query="kestrel", limit=50)
            paths = [h["path"] for h in result["items"]]
            assert len(paths) == len(set(paths))
            searches.append(len(paths))

        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                for i in range(30):
                    tg.start_soon(index, i)
                    if i % 3 == 0:
                        tg.start_soon(search)
        final = await ok(c, "search_documents", query="kestrel", limit=50)
        tags = await ok(c, "list_tags")
    assert len(searches) == 10
    assert all(0 <= n <= 30 for n in searches)
    assert final["total"] == 30
    assert sorted(t["count"] for t in tags["tags"]) == [10, 10, 10]


def test_service_tolerates_threads_indexing_the_same_file_while_others_search(
    settings: DocumentsSettings, docs_root: Path
) -> None:
    (docs_root / "shared.md").write_text("# Shared\n\nosprey\n", encoding="utf-8")
    service = DocumentService(settings)
    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            writes = [pool.submit(service.index_document, "shared.md", ["x"]) for _ in range(20)]
            reads = [pool.submit(service.catalog.search, "osprey") for _ in range(20)]
            statuses = [f.result(timeout=60).status for f in writes]
            totals = [f.result(timeout=60).total for f in reads]
        assert "added" in statuses
        assert set(statuses) <= {"added", "updated", "unchanged"}
        assert set(totals) <= {0, 1}
        assert service.catalog.list_documents().total == 1
    finally:
        service.close()


def test_tags_given_to_a_document_while_a_folder_walk_reads_it_are_never_undone_by_the_walk(
    settings: DocumentsSettings, docs_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A walk (index_folder, or the first indexing in the background) reads every file, then writes
    the records in batches; index_document tagging one of those files in between keeps its tags."""
    for name in ("a.md", "b.md", "c.md"):
        (docs_root / name).write_text(f"# {name}\n\nheron\n", encoding="utf-8")
    service = DocumentService(settings)
    read_located = service._read_located
    tagged: list[str] = []

    def reading(located):  # the walk reads b.md while the person tags it through index_document
        result = read_located(located)
        if located.address == "b.md" and not tagged:
            tagged.append("b.md")
            service.index_document("b.md", ["keep"])
        return result

    monkeypatch.setattr(service, "_read_located", reading)
    try:
        service.index_folder("", ["walk"])
        tags = {d.path: d.tags for d in service.catalog.list_documents().items}
    finally:
        service.close()
    assert tagged == ["b.md"]
    assert tags["b.md"] == ["keep"]
    assert tags["a.md"] == tags["c.md"] == ["walk"]
