from __future__ import annotations

import os
from pathlib import Path

import pytest
from mcp import Client

from deskmcp.documents.server import create_server
from deskmcp.documents.settings import DocumentsSettings
from tests.documents.samples import fails, ok, tree

pytestmark = pytest.mark.anyio

HOSTILE = {
    "dotdot": "../outside/secret.md",
    "nested_dotdot": "sub/../../outside/secret.md",
    "absolute": "/etc/passwd",
    "nul": "notes\x00.md",
    "drive": "C:/Windows/win.ini",
    "drive_relative": "C:secret.md",
    "unc": "//server/share/secret.md",
    "backslash_unc": "\\\\server\\share\\secret.md",
    "backslash_dotdot": "..\\outside\\secret.md",
}


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.md").write_text("# Secret\n\ncrown jewels\n", encoding="utf-8")
    return folder


@pytest.mark.parametrize("tool", ["index_document", "extract_metadata", "get_document", "remove_document"])
@pytest.mark.parametrize("case", sorted(HOSTILE))
async def test_document_tools_reject_paths_outside_the_root_security(
    settings: DocumentsSettings, outside: Path, tool: str, case: str
) -> None:
    async with Client(create_server(settings)) as c:
        error = await fails(c, tool, path=HOSTILE[case])
        listing = await ok(c, "list_documents")
    assert error["error"] == "permission_denied"
    assert listing["total"] == 0


@pytest.mark.parametrize("case", sorted(HOSTILE))
async def test_create_note_rejects_folders_outside_the_root_security(
    settings: DocumentsSettings, tmp_path: Path, case: str
) -> None:
    before = tree(tmp_path, skip="ws")
    async with Client(create_server(settings)) as c:
        error = await fails(c, "create_note", title="Escape", content="x", folder=HOSTILE[case])
    after = tree(tmp_path, skip="ws")
    assert error["error"] == "permission_denied"
    assert after == before


async def test_index_document_rejects_symlink_escape(
    settings: DocumentsSettings, docs_root: Path, outside: Path
) -> None:
    (docs_root / "link.md").symlink_to(outside / "secret.md")
    (docs_root / "linkdir").symlink_to(outside, target_is_directory=True)
    async with Client(create_server(settings)) as c:
        file_link = await fails(c, "index_document", path="link.md")
        dir_link = await fails(c, "get_document", path="linkdir/secret.md")
        found = await ok(c, "search_documents", query="jewels")
    assert file_link["error"] == "permission_denied"
    assert dir_link["error"] == "permission_denied"
    assert found["items"] == []


async def test_create_note_rejects_symlink_escape(settings: DocumentsSettings, docs_root: Path, outside: Path) -> None:
    (docs_root / "out").symlink_to(outside, target_is_directory=True)
    async with Client(create_server(settings)) as c:
        error = await fails(c, "create_note", title="Planted", content="x", folder="out")
    assert error["error"] == "permission_denied"
    assert tree(outside) == ["secret.md"]


async def test_index_folder_skips_symlink_escape_and_reports_it(
    settings: DocumentsSettings, docs_root: Path, outside: Path
) -> None:
    (docs_root / "mine.md").write_text("# Mine\n\njewels of my own\n", encoding="utf-8")
    (docs_root / "link.md").symlink_to(outside / "secret.md")
    (docs_root / "linkdir").symlink_to(outside, target_is_directory=True)
    async with Client(create_server(settings)) as c:
        result = await ok(c, "index_folder")
        found = await ok(c, "search_documents", query="crown")
        escape = await fails(c, "index_folder", path="linkdir")
    assert result["added"] == 1
    assert [(f["path"], f["error"]) for f in result["failed"]] == [("link.md", "permission_denied")]
    assert found["items"] == []
    assert escape["error"] == "permission_denied"


async def test_index_folder_rejects_paths_outside_the_root_security(settings: DocumentsSettings) -> None:
    async with Client(create_server(settings)) as c:
        errors = [await fails(c, "index_folder", path=p) for p in ("..", "/tmp", "a\x00b")]
    assert [e["error"] for e in errors] == ["permission_denied"] * 3


async def test_extra_root_prefix_cannot_reach_outside_that_root_security(tmp_path: Path, docs_root: Path) -> None:
    extra = tmp_path / "shared"
    extra.mkdir()
    (tmp_path / "private.md").write_text("# private\n", encoding="utf-8")
    settings = DocumentsSettings(workspace=tmp_path / "ws", documents_path=docs_root, extra_roots=str(extra))
    async with Client(create_server(settings)) as c:
        errors = [
            await fails(c, "get_document", path=p)
            for p in ("shared:../private.md", "shared:/etc/passwd", "shared:sub/../../private.md")
        ]
    assert [e["error"] for e in errors] == ["permission_denied"] * 3


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
async def test_unreadable_file_is_reported_without_touching_the_index(
    settings: DocumentsSettings, docs_root: Path
) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads every file")
    target = docs_root / "locked.md"
    target.write_text("# Locked\n", encoding="utf-8")
    target.chmod(0)
    try:
        async with Client(create_server(settings)) as c:
            error = await fails(c, "index_document", path="locked.md")
            listing = await ok(c, "list_documents")
    finally:
        target.chmod(0o644)
    assert error["error"] == "permission_denied"
    assert listing["total"] == 0


async def test_absolute_paths_inside_the_root_are_accepted_and_answered_with_root_relative_ids(
    settings: DocumentsSettings, docs_root: Path, tmp_path: Path
) -> None:
    (docs_root / "reports").mkdir()
    (docs_root / "reports" / "q3.md").write_text("# Q3\n\nRevenue grew.\n", encoding="utf-8")
    linked = tmp_path / "linked-docs"
    linked.symlink_to(docs_root)
    async with Client(create_server(settings)) as c:
        indexed = await ok(c, "index_document", path=str(docs_root / "reports" / "q3.md"))
        via_link = await ok(c, "extract_metadata", path=str(linked / "reports" / "q3.md"))
        found = await ok(c, "search_documents", query="revenue")
    assert indexed["path"] == "reports/q3.md"
    assert via_link["path"] == "reports/q3.md"
    assert [hit["path"] for hit in found["items"]] == ["reports/q3.md"]


async def test_absolute_paths_that_leave_the_root_through_symlinks_or_dotdot_are_refused_security(
    settings: DocumentsSettings, docs_root: Path, outside: Path
) -> None:
    (docs_root / "escape").symlink_to(outside)
    async with Client(create_server(settings)) as c:
        through_link = await fails(c, "index_document", path=str(docs_root / "escape" / "secret.md"))
        through_dotdot = await fails(c, "extract_metadata", path=f"{docs_root}/../outside/secret.md")
        listing = await ok(c, "list_documents")
    assert through_link["error"] == through_dotdot["error"] == "permission_denied"
    assert listing["total"] == 0
