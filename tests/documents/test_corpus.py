"""The documents server over a real Markdown vault (the Quartz documentation), read in place."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from deskmcp.documents.server import create_server
from deskmcp.documents.settings import DocumentsSettings
from tests.documents.samples import ok
from tests.helpers.corpora import shared_corpus

pytestmark = pytest.mark.anyio


async def test_real_vault_in_an_extra_root_is_indexed_and_searchable(tmp_path: Path, docs_root: Path) -> None:
    vault = shared_corpus("quartz-docs")
    settings = DocumentsSettings(workspace=tmp_path / "ws", documents_path=docs_root, extra_roots=str(vault))
    async with Client(create_server(settings)) as c:
        indexed = await ok(c, "index_folder", path="quartz-docs:")
        found = await ok(c, "search_documents", query="callouts")
        tags = await ok(c, "list_tags")
        spaced = await ok(c, "search_documents", filename="setting up")
        meta = await ok(c, "extract_metadata", path="quartz-docs:features/callouts.md")
    assert indexed["added"] == 78  # 77 Markdown files and LICENSE.txt
    assert indexed["failed"] == []
    assert indexed["skipped"] == 7
    assert "quartz-docs:features/callouts.md" in [h["path"] for h in found["items"][:3]]
    assert tags["tags"]
    assert any(h["path"].endswith("setting up your GitHub repository.md") for h in spaced["items"])
    assert meta["frontmatter"].get("title")
