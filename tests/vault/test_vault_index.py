"""The index stays true: edits on disk, interrupted writes, concurrent calls, odd files."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import Client

import deskmcp.core.files
from deskmcp.vault.service import VaultService
from deskmcp.vault.watcher import VaultWatcher
from tests.helpers.files import disk_fingerprints, names, write
from tests.helpers.tool_calls import Connect, call, fail

pytestmark = pytest.mark.anyio


async def _until_watching(client: Client) -> None:
    while not (await call(client, "vault_status"))["watching"]:
        await anyio.lowlevel.checkpoint()


async def _until_found(client: Client, query: str, expected: list[str]) -> None:
    while sorted(n["path"] for n in (await call(client, "search_notes", {"query": query}))["notes"]) != expected:
        await anyio.lowlevel.checkpoint()


async def test_edits_on_disk_become_searchable_through_the_watcher(connect: Connect, vault: Path) -> None:
    write(vault, "Projects/a.md", "alpha\n")
    async with connect() as client:
        with anyio.fail_after(10):
            await _until_watching(client)
            write(vault, "Projects/a.md", "alpha now mentions zeppelin\n")
            write(vault, "Inbox/new.md", "---\nstatus: pending\n---\nanother zeppelin\n")
            await _until_found(client, "zeppelin", ["Inbox/new.md", "Projects/a.md"])
            (vault / "Inbox" / "new.md").unlink()
            await _until_found(client, "zeppelin", ["Projects/a.md"])
            (vault / "Projects").rename(vault / "Archive")
            await _until_found(client, "zeppelin", ["Archive/a.md"])
        listed = await call(client, "list_notes")
        assert [n["path"] for n in listed["notes"]] == ["Archive/a.md"]


async def test_edits_under_a_folder_that_is_also_linked_are_indexed_at_their_own_path(
    connect: Connect, vault: Path
) -> None:
    write(vault, "Projects/keep.md", "keep alpha\n")
    write(vault, "Projects/old.md", "old zebu\n")
    async with connect() as client:
        with anyio.fail_after(10):
            await _until_watching(client)
            # Linked now: the watcher may report the folder's changes under either name.
            (vault / "Sub").symlink_to("Projects", target_is_directory=True)
            write(vault, "Projects/new.md", "brand new wombat\n")
            write(vault, "Projects/keep.md", "keep alpha narwhal\n")
            (vault / "Projects" / "old.md").unlink()
            await _until_found(client, "wombat narwhal", ["Projects/keep.md", "Projects/new.md"])
            await _until_found(client, "zebu", [])
        listed = await call(client, "list_notes")
        assert [n["path"] for n in listed["notes"]] == ["Projects/keep.md", "Projects/new.md"]


def test_a_change_under_a_linked_folder_is_a_change_at_the_notes_own_path(vault: Path, settings_for) -> None:
    write(vault, "Projects/a.md", "alpha\n")
    (vault / "Sub").symlink_to("Projects", target_is_directory=True)
    outside = vault.parent / "outside"
    outside.mkdir()
    (vault / "Out").symlink_to(outside, target_is_directory=True)
    watcher = VaultWatcher(vault, lambda rel: None, lambda: None)
    assert watcher._relative(str(vault / "Sub" / "a.md")) == "Projects/a.md"
    assert watcher._relative(str(vault / "Sub" / "gone.md")) == "Projects/gone.md"
    assert watcher._relative(str(vault / "Sub")) == "Projects"
    assert watcher._relative(str(vault / "Out" / "x.md")) is None
    service = VaultService(settings_for(vault, watch=False))
    try:
        service.catalog.scan()
        service.catalog.refresh("Sub/a.md")
        service.catalog.refresh_path("Sub")
        assert sorted(service.catalog.index.fingerprints()) == ["Projects/a.md"]
    finally:
        service.close()


async def test_start_up_scan_picks_up_changes_made_while_stopped_and_rereads_nothing_else(
    vault: Path, settings_for
) -> None:
    for i in range(30):
        write(vault, f"n{i}.md", f"note {i}\n")
    first = VaultService(settings_for(vault, watch=False))
    assert first.catalog.scan().indexed == 30
    first.close()
    write(vault, "n3.md", "changed while stopped, with more bytes\n")
    (vault / "n4.md").unlink()
    second = VaultService(settings_for(vault, watch=False))
    try:
        stats = second.catalog.scan()
        assert (stats.seen, stats.indexed, stats.removed) == (29, 1, 1)
        assert [h.key for h in second.catalog.index.search("stopped")] == ["n3.md"]
    finally:
        second.close()


async def test_without_a_watcher_queries_rescan_by_mtime(connect: Connect, vault: Path) -> None:
    async with connect(watch=False) as client:
        assert (await call(client, "vault_status"))["watching"] is False
        write(vault, "late.md", "written behind the server's back: narwhal\n")
        with anyio.fail_after(10):
            await _until_found(client, "narwhal", ["late.md"])


async def test_interrupted_write_leaves_the_old_note_and_no_temp_file(
    connect: Connect, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(vault, "keep.md", "---\nstatus: safe\n---\noriginal body\n")
    before = path.read_bytes()

    def crash(src: Path, dst: Path) -> None:
        raise OSError(5, "Input/output error")

    async with connect() as client:
        note = await call(client, "read_note", {"path": "keep"})
        monkeypatch.setattr(deskmcp.core.files, "replace_file", crash)
        error = await fail(
            client, "write_note", {"path": "keep", "body": "new body\n", "expected_hash": note["content_hash"]}
        )
        assert error["error"] == "io_error"
        error = await fail(client, "patch_frontmatter", {"path": "keep", "key": "status", "value": "lost"})
        assert error["error"] == "io_error"
        assert path.read_bytes() == before
        assert names(vault) == ["keep.md"]
        found = await call(client, "search_notes", {"query": "original"})
        assert [n["path"] for n in found["notes"]] == ["keep.md"]
        monkeypatch.undo()
        again = await call(
            client, "write_note", {"path": "keep", "body": "new body\n", "expected_hash": note["content_hash"]}
        )
        assert again["body"] == "new body\n"


async def test_write_note_refuses_a_stale_hash_and_an_unseen_overwrite(connect: Connect, vault: Path) -> None:
    path = write(vault, "n.md", "v1\n")
    async with connect() as client:
        seen = await call(client, "read_note", {"path": "n"})
        path.write_text("v2 from another editor\n", encoding="utf-8")
        error = await fail(client, "write_note", {"path": "n", "body": "mine\n", "expected_hash": seen["content_hash"]})
        assert error["error"] == "conflict"
        assert "read_note" in error["message"]
        error = await fail(client, "write_note", {"path": "n", "body": "mine\n"})
        assert error["error"] == "conflict"
        assert path.read_text(encoding="utf-8") == "v2 from another editor\n"
        error = await fail(client, "append_note", {"path": "n", "text": "x", "expected_hash": seen["content_hash"]})
        assert error["error"] == "conflict"
        await call(client, "write_note", {"path": "n", "body": "mine\n", "overwrite": True})
        assert path.read_text(encoding="utf-8") == "mine\n"
        path.unlink()
        error = await fail(client, "write_note", {"path": "n", "body": "x", "expected_hash": seen["content_hash"]})
        assert error["error"] == "conflict"
        assert not path.exists()


async def test_concurrent_writes_and_reads_keep_the_index_consistent(connect: Connect, vault: Path) -> None:
    write(vault, "log.md", "# Log\n")
    results: list[dict] = []

    async def one(i: int) -> None:
        client_calls = [
            ("write_note", {"path": f"batch/n{i}", "frontmatter": {"n": i}, "body": f"word{i} shared\n"}),
            ("append_note", {"path": "log", "text": f"- entry {i}"}),
            ("search_notes", {"query": "shared", "limit": 100}),
            ("list_notes", {"directory": "", "limit": 5}),
        ]
        for name, args in client_calls:
            results.append(await call(client, name, args))

    async with connect() as client:
        with anyio.fail_after(60):
            async with anyio.create_task_group() as group:
                for i in range(25):
                    group.start_soon(one, i)
        log = (vault / "log.md").read_text(encoding="utf-8")
        assert sorted(line for line in log.splitlines() if line.startswith("- ")) == sorted(
            f"- entry {i}" for i in range(25)
        )
        found = await call(client, "search_notes", {"query": "shared", "limit": 100})
        assert sorted(n["path"] for n in found["notes"]) == sorted(f"batch/n{i}.md" for i in range(25))
        for i in (0, 13, 24):
            hit = await call(client, "search_notes", {"query": f"word{i}"})
            assert [n["path"] for n in hit["notes"]] == [f"batch/n{i}.md"]
        listed = await call(client, "list_notes", {"filter": "n:7"})
        assert [n["path"] for n in listed["notes"]] == ["batch/n7.md"]
    assert len(results) == 100
    service = open_service(vault)
    try:
        assert service.catalog.index.fingerprints() == disk_fingerprints(vault)
    finally:
        service.close()


def open_service(vault: Path) -> VaultService:
    from deskmcp.vault.settings import VaultSettings

    return VaultService(VaultSettings(workspace=vault.parent / "ws", vault_path=vault, watch=False))


async def test_huge_notes_are_refused_for_reading_and_writing_but_still_listed(connect: Connect, vault: Path) -> None:
    big = write(vault, "big.md", "---\ntitle: Big one\n---\n" + "x" * 5000)
    async with connect(max_note_bytes=2048) as client:
        error = await fail(client, "read_note", {"path": "big"})
        assert error["error"] == "io_error"
        assert error["details"]["limit"] == 2048
        listed = await call(client, "list_notes")
        assert [n["path"] for n in listed["notes"]] == ["big.md"]
        error = await fail(client, "write_note", {"path": "other", "body": "y" * 5000})
        assert error["error"] == "io_error"
        assert not (vault / "other.md").exists()
        error = await fail(client, "append_note", {"path": "big", "text": "more"})
        assert error["error"] == "io_error"
    assert big.stat().st_size == len("---\ntitle: Big one\n---\n") + 5000


async def test_malformed_files_do_not_break_the_index(connect: Connect, vault: Path) -> None:
    (vault / "latin1.md").write_bytes("caf\xe9 au lait\n".encode("latin-1"))
    write(vault, "unclosed.md", "---\ntitle: never closed\nbody text flamingo\n")
    write(vault, "list.md", "---\n- just\n- a list\n---\nflamingo list\n")
    write(vault, "empty.md", "")
    (vault / "folder.md").mkdir()
    async with connect() as client:
        error = await fail(client, "read_note", {"path": "latin1"})
        assert error["error"] == "parse_error"
        unclosed = await call(client, "read_note", {"path": "unclosed"})
        assert unclosed["frontmatter"] == {}
        assert unclosed["body"].startswith("---\ntitle: never closed")
        not_a_map = await call(client, "read_note", {"path": "list"})
        assert "not a set of key: value pairs" in not_a_map["frontmatter_error"]
        found = await call(client, "search_notes", {"query": "flamingo"})
        assert sorted(n["path"] for n in found["notes"]) == ["list.md", "unclosed.md"]
        assert (await call(client, "read_note", {"path": "empty"}))["body"] == ""
        error = await fail(client, "write_note", {"path": "folder.md", "body": "x", "overwrite": True})
        assert error["error"] == "bad_request"
        listed = await call(client, "list_notes")
        assert [n["path"] for n in listed["notes"]] == ["empty.md", "latin1.md", "list.md", "unclosed.md"]
