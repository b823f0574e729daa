"""A document's tags: those a caller gave stay until replaced, those of its frontmatter follow the file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from mcp import Client

from deskmcp.documents.server import create_server
from deskmcp.documents.settings import DocumentsSettings
from tests.documents.samples import ok

pytestmark = pytest.mark.anyio


def _retag(path: Path, tags: str) -> None:
    """Rewrite a note's frontmatter tags, moving its mtime forward so the change is seen on coarse clocks."""
    before = path.stat().st_mtime_ns
    path.write_text(f"---\ntags: {tags}\n---\n# Plan\n\nsteps\n", encoding="utf-8")
    os.utime(path, ns=(before + 2_000_000_000, before + 2_000_000_000))


async def test_a_tag_removed_from_the_frontmatter_leaves_the_document(
    settings: DocumentsSettings, docs_root: Path
) -> None:
    plan = docs_root / "plan.md"
    plan.write_text("---\ntags: [draft]\n---\n# Plan\n\nsteps\n", encoding="utf-8")
    async with Client(create_server(settings)) as c:
        first = await ok(c, "index_document", path="plan.md")
        _retag(plan, "[final]")
        second = await ok(c, "index_document", path="plan.md")
        drafts = await ok(c, "search_documents", tags=["draft"])
        meta = await ok(c, "extract_metadata", path="plan.md")
        tags = await ok(c, "list_tags")
    assert first["tags"] == ["draft"]
    assert second["tags"] == ["final"]
    assert drafts["items"] == []
    assert meta["tags"] == ["final"]
    assert tags["tags"] == [{"tag": "final", "count": 1}]


async def test_tags_a_caller_gave_stay_when_the_frontmatter_changes(
    settings: DocumentsSettings, docs_root: Path
) -> None:
    plan = docs_root / "plan.md"
    plan.write_text("---\ntags: [draft, q3]\n---\n# Plan\n\nsteps\n", encoding="utf-8")
    async with Client(create_server(settings)) as c:
        given = await ok(c, "index_document", path="plan.md", tags=["projects", "q3"])
        _retag(plan, "[final]")
        kept = await ok(c, "index_document", path="plan.md")
    assert given["tags"] == ["projects", "q3", "draft"]
    assert kept["tags"] == ["projects", "q3", "final"]


async def test_index_folder_drops_tags_removed_from_the_frontmatter(
    settings: DocumentsSettings, docs_root: Path
) -> None:
    plan = docs_root / "plan.md"
    plan.write_text("---\ntags: [draft]\n---\n# Plan\n\nsteps\n", encoding="utf-8")
    async with Client(create_server(settings)) as c:
        await ok(c, "index_folder", tags=["batch"])
        _retag(plan, "[final]")
        again = await ok(c, "index_folder")
        listing = await ok(c, "list_documents")
    assert again["updated"] == 1
    assert listing["items"][0]["tags"] == ["batch", "final"]


async def test_a_note_loses_a_tag_removed_from_its_frontmatter(settings: DocumentsSettings, docs_root: Path) -> None:
    async with Client(create_server(settings)) as c:
        note = await ok(c, "create_note", title="Plan", content="steps", tags=["draft", "q3"])
        path = docs_root / note["path"]
        before = path.stat().st_mtime_ns
        path.write_text(path.read_text(encoding="utf-8").replace("- draft\n", ""), encoding="utf-8")
        os.utime(path, ns=(before + 2_000_000_000, before + 2_000_000_000))
        again = await ok(c, "index_document", path=note["path"])
    assert note["tags"] == ["draft", "q3"]
    assert again["tags"] == ["q3"]
