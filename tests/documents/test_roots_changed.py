"""When the configured folders change, the index answers only from the folders configured now."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from deskmcp.documents.server import create_server
from deskmcp.documents.settings import DocumentsSettings
from tests.documents.samples import ok
from tests.helpers.files import write

pytestmark = pytest.mark.anyio


def _settings(tmp_path: Path, main: Path, *extra: Path) -> DocumentsSettings:
    return DocumentsSettings(workspace=tmp_path / "ws", documents_path=main, extra_roots=tuple(str(p) for p in extra))


async def test_search_answers_nothing_from_a_documents_folder_no_longer_configured(tmp_path: Path) -> None:
    old, new = tmp_path / "old", tmp_path / "new"
    for i in range(30):
        write(old, f"n{i:02}.md", f"# Old {i}\n\nzebra crossing\n")
    write(old, "report.md", "# Report\n\nzebra stripes\n")
    write(new, "report.md", "# Report\n\nnew quarter\n")
    async with Client(create_server(_settings(tmp_path, old))) as c:
        await ok(c, "index_folder")
    async with Client(create_server(_settings(tmp_path, new))) as c:
        found = await ok(c, "search_documents", query="zebra", limit=2)
        listing = await ok(c, "list_documents")
        opened = [await c.call_tool("get_document", {"path": h["path"]}) for h in found["items"]]
    assert [(h["path"], h["snippet"]) for h in found["items"]] == []
    assert found["total"] == 0
    assert all(r.is_error or "zebra" not in r.content[0].text for r in opened)  # type: ignore[union-attr]
    assert [d["path"] for d in listing["items"] if d["path"] != "report.md"] == []
    assert listing["total"] == len(listing["items"])


async def test_a_removed_extra_root_leaves_search_listing_and_tags(tmp_path: Path) -> None:
    main, archive = tmp_path / "docs", tmp_path / "Archive"
    write(main, "plan.md", "# Plan\n\nnew plan\n")
    write(archive, "2019/plan.md", "# Old plan\n\nmammoth project\n")
    async with Client(create_server(_settings(tmp_path, main, archive))) as c:
        await ok(c, "index_folder", path="archive:", tags=["old"])
        await ok(c, "index_folder")
    async with Client(create_server(_settings(tmp_path, main))) as c:
        listing = await ok(c, "list_documents")
        tags = await ok(c, "list_tags")
        found = await ok(c, "search_documents", query="mammoth")
    assert found["items"] == []
    assert [d["path"] for d in listing["items"]] == ["plan.md"]
    assert tags["tags"] == []


async def test_an_unplugged_extra_root_keeps_its_entries(tmp_path: Path) -> None:
    main, archive = tmp_path / "docs", tmp_path / "Archive"
    write(main, "plan.md", "# Plan\n")
    write(archive, "2019/plan.md", "# Old plan\n\nmammoth project\n")
    async with Client(create_server(_settings(tmp_path, main, archive))) as c:
        await ok(c, "index_folder", path="archive:")
    archive.rename(tmp_path / "unplugged")
    async with Client(create_server(_settings(tmp_path, main, archive))) as c:
        roots = await ok(c, "list_roots")
    assert [(r["name"], r["exists"], r["documents"]) for r in roots["roots"]][1] == ("archive", False, 1)
