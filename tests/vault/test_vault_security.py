"""Hostile paths: every one is refused with permission_denied and nothing outside the vault changes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.files import names, read, write
from tests.helpers.tool_calls import Connect, call, fail

pytestmark = pytest.mark.anyio


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "outside" / "secret.md"
    secret.parent.mkdir()
    secret.write_text("---\nkey: hunter2\n---\nsecret\n", encoding="utf-8")
    return secret


async def test_read_note_rejects_symlink_escape(connect: Connect, vault: Path, outside: Path) -> None:
    (vault / "link.md").symlink_to(outside)
    (vault / "dir").symlink_to(outside.parent, target_is_directory=True)
    async with connect() as client:
        for path in ("link.md", "dir/secret.md"):
            error = await fail(client, "read_note", {"path": path})
            assert error["error"] == "permission_denied", path
            assert "hunter2" not in str(error)
        found = await call(client, "search_notes", {"query": "hunter2"})
        assert found["notes"] == []


async def test_write_note_rejects_symlink_escape(connect: Connect, vault: Path, outside: Path) -> None:
    (vault / "dir").symlink_to(outside.parent, target_is_directory=True)
    async with connect() as client:
        error = await fail(client, "write_note", {"path": "dir/new.md", "body": "x"})
        assert error["error"] == "permission_denied"
        error = await fail(client, "write_note", {"path": "dir/secret.md", "body": "x", "overwrite": True})
        assert error["error"] == "permission_denied"
    assert names(outside.parent) == ["secret.md"]
    assert read(outside) == b"---\nkey: hunter2\n---\nsecret\n"


async def test_tools_reject_dot_dot_paths(client, vault: Path, outside: Path) -> None:
    for args in (
        ("read_note", {"path": "../outside/secret.md"}),
        ("read_note", {"path": "a/../../outside/secret"}),
        ("write_note", {"path": "../outside/evil.md", "body": "x"}),
        ("move_note", {"source": "a.md", "destination": "../outside/a.md"}),
        ("list_notes", {"directory": ".."}),
        ("append_note", {"path": "..\\outside\\secret.md", "text": "x"}),
    ):
        error = await fail(client, *args)
        assert error["error"] == "permission_denied", args
    assert names(outside.parent) == ["secret.md"]


async def test_tools_reject_absolute_paths(client, outside: Path) -> None:
    for path in (str(outside), "/etc/passwd", "\\etc\\passwd"):
        error = await fail(client, "read_note", {"path": path})
        assert error["error"] == "permission_denied", path
    error = await fail(client, "write_note", {"path": str(outside.parent / "evil.md"), "body": "x"})
    assert error["error"] == "permission_denied"
    assert not (outside.parent / "evil.md").exists()


async def test_tools_reject_nul_bytes(client) -> None:
    for name, args in (
        ("read_note", {"path": "a\x00.md"}),
        ("write_note", {"path": "a.md\x00.txt", "body": "x"}),
        ("search_notes", {"query": "x", "folder": "a\x00"}),
    ):
        error = await fail(client, name, args)
        assert error["error"] == "permission_denied", name


async def test_tools_reject_windows_drive_and_unc_paths(client) -> None:
    for path in ("C:\\Users\\me\\note.md", "c:/notes/a.md", "\\\\server\\share\\a.md", "//server/share/a.md"):
        error = await fail(client, "read_note", {"path": path})
        assert error["error"] == "permission_denied", path
        error = await fail(client, "write_note", {"path": path, "body": "x"})
        assert error["error"] == "permission_denied", path


async def test_dotfolders_and_dotfiles_are_neither_listed_nor_writable(connect: Connect, vault: Path) -> None:
    write(vault, ".obsidian/workspace.md", "obsidian internals quokka\n")
    write(vault, ".trash/old.md", "deleted quokka\n")
    write(vault, ".git/notes.md", "git quokka\n")
    write(vault, ".hidden.md", "dotfile quokka\n")
    write(vault, "visible.md", "visible quokka\n")
    async with connect() as client:
        listed = await call(client, "list_notes")
        assert [n["path"] for n in listed["notes"]] == ["visible.md"]
        found = await call(client, "search_notes", {"query": "quokka"})
        assert [n["path"] for n in found["notes"]] == ["visible.md"]
        for path in (".obsidian/workspace.md", ".trash/old", ".git/notes.md", ".hidden.md", "a/.b/c.md"):
            error = await fail(client, "write_note", {"path": path, "body": "x", "overwrite": True})
            assert error["error"] == "permission_denied", path
            error = await fail(client, "read_note", {"path": path})
            assert error["error"] == "permission_denied", path
        error = await fail(client, "move_note", {"source": "visible", "destination": ".trash/visible.md"})
        assert error["error"] == "permission_denied"
        error = await fail(client, "list_notes", {"directory": ".obsidian"})
        assert error["error"] == "permission_denied"
    assert (vault / ".obsidian/workspace.md").read_text(encoding="utf-8") == "obsidian internals quokka\n"
    assert (vault / "visible.md").exists()


async def test_symlink_into_a_dotfolder_is_refused(connect: Connect, vault: Path) -> None:
    write(vault, ".obsidian/plugins.md", "internal\n")
    (vault / "plugins.md").symlink_to(vault / ".obsidian" / "plugins.md")
    async with connect() as client:
        error = await fail(client, "read_note", {"path": "plugins.md"})
        assert error["error"] == "permission_denied"


async def test_only_markdown_notes_are_touched(client, vault: Path) -> None:
    (vault / "image.png").write_bytes(b"\x89PNG")
    note = await call(client, "write_note", {"path": "image.png", "body": "x"})
    assert note["path"] == "image.png.md"
    assert (vault / "image.png").read_bytes() == b"\x89PNG"


async def test_overlong_names_are_a_bad_request(client) -> None:
    error = await fail(client, "write_note", {"path": "x" * 300, "body": "x"})
    assert error["error"] == "bad_request"
    error = await fail(client, "read_note", {"path": "a/" + "é" * 200})
    assert error["error"] == "bad_request"
    error = await fail(client, "write_note", {"path": "/".join(["d" * 200] * 30), "body": "x"})
    assert error["error"] == "bad_request"


async def test_notes_reached_through_a_link_inside_the_vault_are_not_written_or_moved(
    connect: Connect, vault: Path
) -> None:
    write(vault, "Projects/Real.md", "# Real\n")
    write(vault, "Index.md", "see [[Real]]\n")
    (vault / "Alias.md").symlink_to("Projects/Real.md")
    (vault / "Sub").symlink_to("Projects", target_is_directory=True)
    async with connect() as client:
        for tool, args in [
            ("move_note", {"source": "Alias.md", "destination": "Archive/Alias.md", "update_links": True}),
            ("move_note", {"source": "Index.md", "destination": "Sub/Index.md"}),
            ("write_note", {"path": "Alias.md", "body": "x\n", "overwrite": True}),
            ("write_note", {"path": "Sub/New.md", "body": "x\n"}),
            ("append_note", {"path": "Sub/Real.md", "text": "x"}),
            ("patch_frontmatter", {"path": "Alias.md", "key": "k", "value": "v"}),
        ]:
            error = await fail(client, tool, args)
            assert error["error"] == "bad_request", (tool, args)
            assert "symbolic link" in error["message"] and "Projects/" in error["message"], error
        assert read(vault / "Projects" / "Real.md") == b"# Real\n"
        assert read(vault / "Index.md") == b"see [[Real]]\n"
        assert (vault / "Alias.md").is_symlink() and not (vault / "Archive").exists()
        assert not (vault / "Projects" / "New.md").exists()
        # At its own path the note moves, and the link to it still finds it.
        moved = await call(client, "move_note", {"source": "Projects/Real", "destination": "Archive/Real"})
        assert moved["destination"] == "Archive/Real.md"
        links = await call(client, "get_links", {"path": "Index.md"})
        assert [link["resolved_path"] for link in links["links"]] == ["Archive/Real.md"]


async def test_a_note_cannot_be_made_under_a_note_or_with_blanks_around_a_name(client, vault: Path) -> None:
    write(vault, "keep.md", "keep\n")
    write(vault, "src.md", "src\n")
    for tool, args in [
        ("move_note", {"source": "src.md", "destination": "keep.md/sub.md"}),
        ("write_note", {"path": "keep.md/sub.md", "body": "x"}),
    ]:
        error = await fail(client, tool, args)
        assert error["error"] == "bad_request", error
        assert "'keep.md' is a file, not a folder" in error["message"], error
    for tool, args in [
        ("write_note", {"path": "Alpha.md ", "body": "x"}),
        ("write_note", {"path": " Folder/Alpha.md", "body": "x"}),
        ("move_note", {"source": "src.md", "destination": "Archive/src.md "}),
    ]:
        error = await fail(client, tool, args)
        assert error["error"] == "bad_request" and "blank" in error["message"], error
    assert names(vault) == ["keep.md", "src.md"]
