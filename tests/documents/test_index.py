from __future__ import annotations

import os
from pathlib import Path

import pytest
from mcp import Client

from deskmcp.documents.server import create_server
from deskmcp.documents.settings import DocumentsSettings
from tests.documents.samples import fails, ok, pdf_bytes

pytestmark = pytest.mark.anyio


def _touch_later(path: Path, text: str) -> None:
    """Rewrite a file and move its mtime forward so the change is visible on coarse clocks."""
    before = path.stat().st_mtime_ns
    path.write_text(text, encoding="utf-8")
    os.utime(path, ns=(before + 2_000_000_000, before + 2_000_000_000))


async def test_changed_file_is_reindexed_in_place(settings: DocumentsSettings, docs_root: Path) -> None:
    note = docs_root / "status.md"
    note.write_text("# Status\n\nThe project is amber.\n", encoding="utf-8")
    async with Client(create_server(settings)) as c:
        first = await ok(c, "index_document", path="status.md", tags=["weekly"])
        _touch_later(note, "# Status\n\nThe project is green now.\n")
        second = await ok(c, "index_document", path="status.md")
        old = await ok(c, "search_documents", query="amber")
        new = await ok(c, "search_documents", query="green")
        listing = await ok(c, "list_documents")
    assert first["status"] == "added"
    assert second["status"] == "updated"
    assert second["tags"] == ["weekly"]
    assert old["items"] == []
    assert [h["path"] for h in new["items"]] == ["status.md"]
    assert listing["total"] == 1


async def test_indexing_an_unchanged_file_again_changes_nothing(settings: DocumentsSettings, docs_root: Path) -> None:
    (docs_root / "a.txt").write_text("alpha", encoding="utf-8")
    async with Client(create_server(settings)) as c:
        await ok(c, "index_document", path="a.txt", tags=["one"])
        again = await ok(c, "index_document", path="a.txt", tags=["one"])
    assert again["status"] == "unchanged"


async def test_tags_given_replace_the_old_ones_and_omitted_tags_are_kept(
    settings: DocumentsSettings, docs_root: Path
) -> None:
    (docs_root / "a.txt").write_text("alpha", encoding="utf-8")
    async with Client(create_server(settings)) as c:
        await ok(c, "index_document", path="a.txt", tags=["#Finance", "Q3 Review", "finance"])
        kept = await ok(c, "index_document", path="a.txt")
        replaced = await ok(c, "index_document", path="a.txt", tags=["legal"])
        tags = await ok(c, "list_tags")
    assert kept["tags"] == ["finance", "q3-review"]
    assert replaced["status"] == "updated"
    assert replaced["tags"] == ["legal"]
    assert tags["tags"] == [{"tag": "legal", "count": 1}]


async def test_deleted_file_disappears_from_search_results(settings: DocumentsSettings, docs_root: Path) -> None:
    for name in ("keep.md", "gone.md"):
        (docs_root / name).write_text(f"# {name}\n\nshared keyword orchid\n", encoding="utf-8")
    async with Client(create_server(settings)) as c:
        await ok(c, "index_folder")
        (docs_root / "gone.md").unlink()
        found = await ok(c, "search_documents", query="orchid")
        listing = await ok(c, "list_documents")
    assert [h["path"] for h in found["items"]] == ["keep.md"]
    assert found["pruned"] == 1
    assert found["total"] == 1
    assert [d["path"] for d in listing["items"]] == ["keep.md"]


async def test_search_flags_a_file_changed_since_it_was_indexed(settings: DocumentsSettings, docs_root: Path) -> None:
    target = docs_root / "draft.md"
    target.write_text("# Draft\n\nheron sightings\n", encoding="utf-8")
    async with Client(create_server(settings)) as c:
        await ok(c, "index_document", path="draft.md")
        _touch_later(target, "# Draft\n\nheron sightings, revised\n")
        found = await ok(c, "search_documents", query="heron")
    assert found["items"][0]["changed_since_indexed"] is True


async def test_remove_document_drops_it_from_the_index_but_not_from_disk(
    settings: DocumentsSettings, docs_root: Path
) -> None:
    (docs_root / "a.md").write_text("# A\n\ncormorant\n", encoding="utf-8")
    async with Client(create_server(settings)) as c:
        await ok(c, "index_document", path="a.md", tags=["bird"])
        removed = await ok(c, "remove_document", path="a.md")
        found = await ok(c, "search_documents", query="cormorant")
        tags = await ok(c, "list_tags")
        again = await fails(c, "remove_document", path="a.md")
    assert removed == {"path": "a.md", "removed": True, "file_deleted": False}
    assert (docs_root / "a.md").exists()
    assert found["items"] == []
    assert tags["tags"] == []
    assert again["error"] == "not_found"


async def test_remove_document_accepts_a_file_already_deleted(settings: DocumentsSettings, docs_root: Path) -> None:
    (docs_root / "sub").mkdir()
    (docs_root / "sub" / "a.md").write_text("# A\n", encoding="utf-8")
    async with Client(create_server(settings)) as c:
        await ok(c, "index_document", path="sub/a.md")
        (docs_root / "sub" / "a.md").unlink()
        removed = await ok(c, "remove_document", path="sub/a.md")
        listing = await ok(c, "list_documents")
    assert removed["path"] == "sub/a.md"
    assert listing["total"] == 0


async def test_index_folder_indexes_supported_files_and_reports_failures(
    settings: DocumentsSettings, docs_root: Path
) -> None:
    (docs_root / "a.md").write_text("# A\n", encoding="utf-8")
    (docs_root / "deep" / "er").mkdir(parents=True)
    (docs_root / "deep" / "er" / "b.pdf").write_bytes(pdf_bytes([["bee"]]))
    (docs_root / "deep" / "c.pdf").write_bytes(b"not a pdf")
    (docs_root / "deep" / "image.png").write_bytes(b"\x89PNG")
    (docs_root / ".hidden").mkdir()
    (docs_root / ".hidden" / "secret.md").write_text("# hidden\n", encoding="utf-8")
    async with Client(create_server(settings)) as c:
        first = await ok(c, "index_folder", tags=["batch"])
        second = await ok(c, "index_folder")
        shallow = await ok(c, "index_folder", path="deep", recursive=False, tags=["deep"])
        listing = await ok(c, "list_documents", tags=["deep"])
    assert (first["added"], first["updated"], first["unchanged"], first["skipped"]) == (2, 0, 0, 1)
    assert [(f["path"], f["error"]) for f in first["failed"]] == [("deep/c.pdf", "parse_error")]
    assert (second["added"], second["unchanged"]) == (0, 2)
    assert (shallow["added"], shallow["updated"], shallow["unchanged"]) == (0, 0, 0)
    assert listing["total"] == 0


async def test_index_folder_adds_its_tags_to_unchanged_files(settings: DocumentsSettings, docs_root: Path) -> None:
    (docs_root / "a.md").write_text("# A\n", encoding="utf-8")
    async with Client(create_server(settings)) as c:
        await ok(c, "index_folder", tags=["first"])
        result = await ok(c, "index_folder", tags=["second"])
        listing = await ok(c, "list_documents", tags=["first", "second"])
    assert result["updated"] == 1
    assert [d["path"] for d in listing["items"]] == ["a.md"]


async def test_index_folder_stops_at_max_files(settings: DocumentsSettings, docs_root: Path) -> None:
    for i in range(5):
        (docs_root / f"n{i}.txt").write_text(f"note {i}", encoding="utf-8")
    async with Client(create_server(settings)) as c:
        result = await ok(c, "index_folder", max_files=3)
    assert result["added"] == 3
    assert result["truncated"] is True


async def test_index_survives_a_server_restart(settings: DocumentsSettings, docs_root: Path) -> None:
    (docs_root / "a.md").write_text("# Persistent\n\nnarwhal\n", encoding="utf-8")
    async with Client(create_server(settings)) as c:
        await ok(c, "index_document", path="a.md", tags=["kept"])
    async with Client(create_server(settings)) as c:
        found = await ok(c, "search_documents", query="narwhal", tags=["kept"])
    assert [h["path"] for h in found["items"]] == ["a.md"]


async def test_extra_roots_are_addressed_by_name_and_listed(tmp_path: Path, docs_root: Path) -> None:
    archive = tmp_path / "Archive"
    (archive / "2019").mkdir(parents=True)
    (archive / "2019" / "plan.md").write_text("# Old plan\n\nmammoth project\n", encoding="utf-8")
    (docs_root / "plan.md").write_text("# New plan\n\nmammoth project too\n", encoding="utf-8")
    settings = DocumentsSettings(
        workspace=tmp_path / "ws", documents_path=docs_root, extra_roots=os.pathsep.join([str(archive)])
    )
    async with Client(create_server(settings)) as c:
        roots = await ok(c, "list_roots")
        extra = await ok(c, "index_document", path="archive:2019/plan.md")
        await ok(c, "index_folder", path="archive:")
        await ok(c, "index_document", path="plan.md")
        found = await ok(c, "search_documents", query="mammoth")
        only_archive = await ok(c, "list_documents", root="archive")
        meta = await ok(c, "extract_metadata", path="archive:2019/plan.md")
        escape = await fails(c, "get_document", path="archive:../Archive/2019/plan.md")
        unknown_root = await fails(c, "list_documents", root="nope")
    assert [(r["name"], r["main"]) for r in roots["roots"]] == [("documents", True), ("archive", False)]
    assert extra["path"] == "archive:2019/plan.md"
    assert sorted(h["path"] for h in found["items"]) == ["archive:2019/plan.md", "plan.md"]
    assert [d["path"] for d in only_archive["items"]] == ["archive:2019/plan.md"]
    assert meta["root"] == "archive"
    assert escape["error"] == "permission_denied"
    assert unknown_root["error"] == "bad_request"


async def test_index_folder_on_a_file_points_to_index_document(settings: DocumentsSettings, docs_root: Path) -> None:
    (docs_root / "a.md").write_text("# A\n", encoding="utf-8")
    async with Client(create_server(settings)) as c:
        on_file = await fails(c, "index_folder", path="a.md")
        missing = await fails(c, "index_folder", path="nope")
    assert on_file["error"] == "bad_request"
    assert "index_document" in on_file["message"]
    assert missing["error"] == "not_found"


async def test_index_folder_drops_entries_of_deleted_files_under_that_folder(
    settings: DocumentsSettings, docs_root: Path
) -> None:
    for rel in ("keep.md", "sub/gone.md", "sub/deeper/gone.md", "other/stays.md"):
        (docs_root / rel).parent.mkdir(parents=True, exist_ok=True)
        (docs_root / rel).write_text("# x\n", encoding="utf-8")
    async with Client(create_server(settings)) as c:
        await ok(c, "index_folder")
        (docs_root / "sub" / "gone.md").unlink()
        (docs_root / "sub" / "deeper" / "gone.md").unlink()
        (docs_root / "other" / "stays.md").unlink()
        shallow = await ok(c, "index_folder", path="sub", recursive=False)
        deep = await ok(c, "index_folder", path="sub")
        listing = await ok(c, "list_documents")
    assert shallow["removed"] == 1
    assert deep["removed"] == 1  # other/stays.md is outside the folder: not index_folder's to drop
    assert [d["path"] for d in listing["items"]] == ["keep.md"]  # listings check every file


async def test_index_folder_continues_where_the_last_call_stopped(settings: DocumentsSettings, docs_root: Path) -> None:
    for i in range(5):
        (docs_root / f"n{i}.txt").write_text(f"note {i}", encoding="utf-8")
    async with Client(create_server(settings)) as c:
        calls = [await ok(c, "index_folder", max_files=2) for _ in range(3)]
        listing = await ok(c, "list_documents")
    assert [(r["added"], r["truncated"], r["remaining"]) for r in calls] == [(2, True, 3), (2, True, 1), (1, False, 0)]
    assert listing["total"] == 5


async def test_index_folder_takes_its_per_call_limit_from_the_setting(tmp_path: Path, docs_root: Path) -> None:
    for i in range(3):
        (docs_root / f"n{i}.txt").write_text(f"note {i}", encoding="utf-8")
    settings = DocumentsSettings(workspace=tmp_path / "ws", documents_path=docs_root, index_max_files=2)
    async with Client(create_server(settings)) as c:
        first = await ok(c, "index_folder")
        second = await ok(c, "index_folder")
    assert (first["added"], first["truncated"], first["remaining"]) == (2, True, 1)
    assert (second["added"], second["unchanged"], second["truncated"], second["remaining"]) == (1, 2, False, 0)
