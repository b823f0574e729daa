"""Every vault tool, driven through the SDK's in-memory client."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from mcp import Client

from deskmcp.vault.server import create_server
from tests.helpers.files import real, write
from tests.helpers.tool_calls import Connect, call, fail

pytestmark = pytest.mark.anyio

ALPHA = """---
title: Project Alpha
status: active
tags: [project/alpha, work]
due: 2026-03-01
---
# Alpha

Kick-off with [[Ann Lee|Ann]] about the **rocket** engine. See [[Beta#Risks]].
Embedded: ![[diagram.png]] #urgent
"""


async def test_write_then_read_note_round_trips_frontmatter_and_body(connect: Connect, vault: Path) -> None:
    async with connect() as client:
        written = await call(
            client,
            "write_note",
            {"path": "Inbox/first", "frontmatter": {"status": "pending", "count": 3}, "body": "Hello\n"},
        )
        assert written["path"] == "Inbox/first.md"
        assert (vault / "Inbox" / "first.md").read_text(
            encoding="utf-8"
        ) == "---\nstatus: pending\ncount: 3\n---\nHello\n"
        read = await call(client, "read_note", {"path": "Inbox/first.md"})
        assert read["frontmatter"] == {"status": "pending", "count": 3}
        assert read["body"] == "Hello\n"
        assert read["content_hash"] == written["content_hash"]


async def test_read_note_reports_missing_note_as_not_found(client: Client) -> None:
    error = await fail(client, "read_note", {"path": "nope"})
    assert error["error"] == "not_found"
    assert "list_notes" in error["message"]


async def test_list_notes_filters_by_directory_and_frontmatter_field(connect: Connect, vault: Path) -> None:
    write(vault, "Needs_Action/a.md", "---\nstatus: pending\n---\nA\n")
    write(vault, "Needs_Action/b.md", "---\nstatus: done\n---\nB\n")
    write(vault, "Needs_Action/deep/c.md", "---\nstatus: pending\n---\nC\n")
    write(vault, "NeedsXAction/d.md", "---\nstatus: pending\n---\nD\n")
    async with connect() as client:
        listed = await call(client, "list_notes", {"directory": "Needs_Action", "filter": "status:pending"})
        assert [n["path"] for n in listed["notes"]] == ["Needs_Action/a.md", "Needs_Action/deep/c.md"]
        assert listed["total"] == 2
        flat = await call(client, "list_notes", {"directory": "Needs_Action", "recursive": False})
        assert [n["path"] for n in flat["notes"]] == ["Needs_Action/a.md", "Needs_Action/b.md"]
        error = await fail(client, "list_notes", {"filter": "no colon"})
        assert error["error"] == "bad_request"


async def test_a_field_filter_without_a_value_finds_every_note_that_sets_the_field(
    connect: Connect, vault: Path
) -> None:
    write(vault, "map.md", "---\nmeta:\n  owner: ann\n---\nA\n")
    write(vault, "empty.md", "---\naliases: []\nmeta: {}\n---\nB\n")
    write(vault, "plain.md", "---\nmeta: x\naliases: [x]\nnone:\n---\nC\n")
    write(vault, "other.md", "---\nstatus: x\n---\nD\n")
    async with connect() as client:
        for wanted, expected in (("meta:", ["empty.md", "map.md", "plain.md"]), ("aliases:", ["empty.md", "plain.md"])):
            listed = await call(client, "list_notes", {"filter": wanted})
            assert [n["path"] for n in listed["notes"]] == expected, wanted
        assert [n["path"] for n in (await call(client, "list_notes", {"filter": "none:"}))["notes"]] == ["plain.md"]
        assert [n["path"] for n in (await call(client, "list_notes", {"filter": "meta:x"}))["notes"]] == ["plain.md"]
        error = await fail(client, "list_notes", {"filter": "meta:\x00"})
        assert error["error"] == "bad_request"


async def test_list_notes_pages_with_opaque_cursors(connect: Connect, vault: Path) -> None:
    for i in range(7):
        write(vault, f"n{i}.md", f"note {i}\n")
    seen: list[str] = []
    cursor = None
    async with connect() as client:
        while True:
            args: dict[str, object] = {"limit": 3}
            if cursor:
                args["cursor"] = cursor
            page = await call(client, "list_notes", args)
            seen += [n["path"] for n in page["notes"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert seen == [f"n{i}.md" for i in range(7)]
        error = await fail(client, "list_notes", {"limit": 3, "directory": "", "filter": "x:y", "cursor": "bogus!"})
        assert error["error"] == "bad_request"


async def test_search_notes_finds_body_and_frontmatter_values_with_snippets(connect: Connect, vault: Path) -> None:
    write(vault, "Projects/Alpha.md", ALPHA)
    write(vault, "Projects/Beta.md", "---\nowner: Zed Quimby\n---\n## Risks\nBudget.\n")
    write(vault, "Daily/2026-01-01.md", "Nothing about engines.\n")
    async with connect() as client:
        body_hit = await call(client, "search_notes", {"query": "rocket"})
        assert [n["path"] for n in body_hit["notes"]] == ["Projects/Alpha.md"]
        assert "⟦rocket⟧" in body_hit["notes"][0]["snippet"]
        fm_hit = await call(client, "search_notes", {"query": "Quimby"})
        assert [n["path"] for n in fm_hit["notes"]] == ["Projects/Beta.md"]


async def test_search_notes_filters_by_folder_tag_and_frontmatter(connect: Connect, vault: Path) -> None:
    write(vault, "Projects/Alpha.md", ALPHA)
    write(vault, "Archive/Alpha old.md", "---\nstatus: archived\n---\nrocket plans #project/alpha/old\n")
    write(vault, "Projects/Gamma.md", "---\nstatus: active\n---\nrocket fuel\n")
    async with connect() as client:
        by_folder = await call(client, "search_notes", {"query": "rocket", "folder": "Archive"})
        assert [n["path"] for n in by_folder["notes"]] == ["Archive/Alpha old.md"]
        assert by_folder["total"] == 1
        by_tag = await call(client, "search_notes", {"query": "rocket", "tag": "#project/alpha"})
        assert sorted(n["path"] for n in by_tag["notes"]) == ["Archive/Alpha old.md", "Projects/Alpha.md"]
        by_field = await call(client, "search_notes", {"query": "rocket", "filter": "status:active"})
        assert sorted(n["path"] for n in by_field["notes"]) == ["Projects/Alpha.md", "Projects/Gamma.md"]
        first = await call(client, "search_notes", {"query": "rocket", "limit": 2})
        assert len(first["notes"]) == 2 and first["next_cursor"]
        assert first["total"] == 3
        rest = await call(client, "search_notes", {"query": "rocket", "limit": 2, "cursor": first["next_cursor"]})
        assert {n["path"] for n in first["notes"] + rest["notes"]} == {
            "Projects/Alpha.md",
            "Archive/Alpha old.md",
            "Projects/Gamma.md",
        }


async def test_list_note_tags_counts_frontmatter_and_inline_tags(connect: Connect, vault: Path) -> None:
    write(vault, "Projects/Alpha.md", ALPHA)
    write(vault, "b.md", "---\ntags: work\n---\n#urgent and `#not-a-tag` and #123 and [[x#heading]]\n")
    async with connect() as client:
        tags = await call(client, "list_note_tags")
        counts = {t["tag"]: t["count"] for t in tags["tags"]}
        assert counts == {"work": 2, "urgent": 2, "project/alpha": 1}
        only = await call(client, "list_note_tags", {"prefix": "project"})
        assert [t["tag"] for t in only["tags"]] == ["project/alpha"]


async def test_get_links_resolves_wikilinks_obsidian_style(connect: Connect, vault: Path) -> None:
    write(vault, "Projects/Alpha.md", ALPHA)
    write(vault, "People/Ann Lee.md", "Ann.\n")
    write(vault, "Projects/Beta.md", "## Risks\n")
    write(vault, "Archive/Deep/Beta.md", "an older Beta\n")
    async with connect() as client:
        links = await call(client, "get_links", {"path": "Projects/Alpha"})
        by_target = {link["target"]: link for link in links["links"]}
        assert by_target["Ann Lee"]["resolved_path"] == "People/Ann Lee.md"
        assert by_target["Ann Lee"]["alias"] == "Ann"
        assert by_target["Beta"]["resolved_path"] == "Projects/Beta.md"
        assert by_target["Beta"]["heading"] == "Risks"
        assert by_target["diagram.png"]["embed"] is True
        assert by_target["diagram.png"]["resolved_path"] is None


async def test_get_backlinks_lists_notes_that_resolve_to_the_note(connect: Connect, vault: Path) -> None:
    write(vault, "People/Ann Lee.md", "Ann.\n")
    write(vault, "Projects/Alpha.md", ALPHA)
    write(vault, "Daily/2026-01-02.md", "Lunch with [[People/Ann Lee]].\n")
    write(vault, "Other/Sub/Ann Lee.md", "A different Ann, deeper in the vault.\n")
    write(vault, "Other/Sub/links.md", "[[Ann Lee]] here means Other/Sub/Ann Lee (same folder).\n")
    write(vault, "Daily/code.md", "intro\n  Ask [[People/Ann Lee]] about `[[Beta]]` first.  \n")
    async with connect() as client:
        backlinks = await call(client, "get_backlinks", {"path": "People/Ann Lee.md"})
        found = sorted((b["source"], b["line"], b["context"]) for b in backlinks["backlinks"])
        assert found == [
            ("Daily/2026-01-02.md", 1, "Lunch with [[People/Ann Lee]]."),
            ("Daily/code.md", 2, "Ask [[People/Ann Lee]] about " + " " * len("`[[Beta]]`") + " first."),
            ("Projects/Alpha.md", 3, "Kick-off with [[Ann Lee|Ann]] about the **rocket** engine. See [[Beta#Risks]]."),
        ]
        other = await call(client, "get_backlinks", {"path": "Other/Sub/Ann Lee"})
        assert [b["source"] for b in other["backlinks"]] == ["Other/Sub/links.md"]


async def test_frontmatter_keys_differing_in_case_filter_as_one(connect: Connect, vault: Path) -> None:
    write(vault, "a.md", "---\nStatus: Done\nstatus: done\nSTATUS: [done, later]\n---\nbody\n")
    write(vault, "b.md", "---\nstatus: later\n---\nbody\n")
    async with connect() as client:
        done = await call(client, "list_notes", {"filter": "status:done"})
        later = await call(client, "list_notes", {"filter": "status:later"})
    assert [n["path"] for n in done["notes"]] == ["a.md"]
    assert sorted(n["path"] for n in later["notes"]) == ["a.md", "b.md"]


async def test_append_note_adds_text_on_a_new_line_and_keeps_the_rest(connect: Connect, vault: Path) -> None:
    path = write(vault, "log.md", "---\nkind: log\n---\nfirst")
    before = path.read_bytes()
    async with connect() as client:
        result = await call(client, "append_note", {"path": "log", "text": "- second"})
        assert path.read_bytes() == before + b"\n- second\n"
        assert result["body"] == "first\n- second\n"
        error = await fail(client, "append_note", {"path": "missing", "text": "x"})
        assert error["error"] == "not_found"
        created = await call(client, "append_note", {"path": "new", "text": "x", "create": True})
        assert created["body"] == "x\n"


async def test_patch_frontmatter_changes_one_line_only(connect: Connect, vault: Path) -> None:
    original = (
        "---\n# who owns it\nowner:   'Ann'\nstatus: pending  # set by triage\ntime: 09:30\nday: 2026-01-05\n"
        "---\nBody\n"
    )
    path = write(vault, "t.md", original)
    async with connect() as client:
        read = await call(client, "read_note", {"path": "t"})
        result = await call(
            client,
            "patch_frontmatter",
            {"path": "t", "key": "status", "value": "done", "expected_hash": read["content_hash"]},
        )
        assert path.read_text(encoding="utf-8") == original.replace(
            "status: pending  # set by triage\n", "status: done\n"
        )
        assert result["frontmatter"] == {"owner": "Ann", "status": "done", "time": "09:30", "day": "2026-01-05"}
        removed = await call(client, "patch_frontmatter", {"path": "t", "key": "owner", "remove": True})
        assert "owner" not in removed["frontmatter"]
        assert path.read_text(encoding="utf-8").startswith("---\n# who owns it\nstatus: done\ntime: 09:30\n")


async def test_recent_notes_lists_newest_first(connect: Connect, vault: Path) -> None:
    for i, name in enumerate(["old", "middle", "new"]):
        path = write(vault, f"{name}.md", name)
        os.utime(path, ns=(1_700_000_000_000_000_000 + i * 10**12, 1_700_000_000_000_000_000 + i * 10**12))
    async with connect() as client:
        recent = await call(client, "recent_notes", {"limit": 2})
        assert [n["path"] for n in recent["notes"]] == ["new.md", "middle.md"]
        assert recent["notes"][0]["modified"].startswith("2023-11-")


async def test_move_note_moves_creates_folders_and_refuses_to_overwrite(connect: Connect, vault: Path) -> None:
    write(vault, "a.md", "A\n")
    write(vault, "b.md", "B\n")
    async with connect() as client:
        moved = await call(client, "move_note", {"source": "a", "destination": "Archive/2026/a.md"})
        assert moved == {"moved": True, "source": "a.md", "destination": "Archive/2026/a.md", "updated": []}
        assert not (vault / "a.md").exists()
        assert (vault / "Archive/2026/a.md").read_text(encoding="utf-8") == "A\n"
        error = await fail(client, "move_note", {"source": "Archive/2026/a.md", "destination": "b.md"})
        assert error["error"] == "conflict"
        assert (vault / "b.md").read_text(encoding="utf-8") == "B\n"
        assert (vault / "Archive/2026/a.md").exists()
        listed = await call(client, "list_notes")
        assert [n["path"] for n in listed["notes"]] == ["Archive/2026/a.md", "b.md"]


async def test_vault_status_reports_the_root_and_note_count(connect: Connect, vault: Path) -> None:
    write(vault, "a.md", "A\n")
    root = real(vault)
    async with connect() as client:
        status = await call(client, "vault_status")
        assert status["root"] == root
        assert status["notes"] == 1
        assert status["read_only"] is False


async def test_read_only_vault_does_not_offer_write_tools_and_names_the_setting(vault: Path, settings_for) -> None:
    write(vault, "a.md", "A\n")
    async with Client(create_server(settings_for(vault, read_only=True))) as c:
        names = {t.name for t in (await c.list_tools()).tools}
        assert "read_note" in names and "search_notes" in names
        assert names.isdisjoint({"write_note", "append_note", "patch_frontmatter", "move_note"})
        error = await fail(c, "write_note", {"path": "b", "body": "x"})
        assert error["error"] == "permission_denied"
        assert "vault is read-only (VAULT_READ_ONLY=1): write_note is not available" in error["message"]
    assert not (vault / "b.md").exists()


def test_read_only_service_refuses_writes_with_permission_denied(vault: Path, settings_for) -> None:
    from deskmcp.core.errors import PermissionDenied
    from deskmcp.vault.service import VaultService

    service = VaultService(settings_for(vault, read_only=True))
    try:
        with pytest.raises(PermissionDenied):
            service.write_note("b", "x")
        with pytest.raises(PermissionDenied):
            service.move_note("a", "c")
    finally:
        service.close()
    assert not (vault / "b.md").exists()


async def test_a_missing_configured_vault_is_reported_and_never_created(
    tmp_path: Path, settings_for, caplog: pytest.LogCaptureFixture
) -> None:
    from deskmcp.vault.server import unavailable

    missing = tmp_path / "no-such-vault"
    settings = settings_for(missing)
    assert "VAULT_PATH" in (unavailable(settings) or "")
    with caplog.at_level("WARNING"):
        async with Client(create_server(settings)) as client:
            error = await fail(client, "write_note", {"path": "a", "body": "x"})
            listed = await fail(client, "list_notes")
            status = await call(client, "vault_status")
    assert error["error"] == listed["error"] == "not_found"
    assert "VAULT_PATH" in listed["message"]
    assert status["notes"] == 0
    assert "does not exist" in status["problem"]
    problems = [r for r in caplog.records if r.levelname in ("WARNING", "ERROR")]
    assert len(problems) == 1
    assert problems[0].exc_info is None
    assert "VAULT_PATH" in problems[0].getMessage()
    assert not missing.exists()


def test_the_default_vault_is_created_in_the_workspace(tmp_path: Path) -> None:
    from deskmcp.vault.server import Settings, create_service, unavailable

    settings = Settings(workspace=tmp_path / "ws")
    assert unavailable(settings) is None
    service = create_service(settings)
    try:
        assert (tmp_path / "ws" / "vault").is_dir()
        assert service.write_note("hello", "Hi\n").path == "hello.md"
        assert (tmp_path / "ws" / "vault" / "hello.md").read_text(encoding="utf-8") == "Hi\n"
    finally:
        service.close()


def test_vault_is_registered_with_the_server_contract(tmp_path: Path) -> None:
    from deskmcp.servers import get_spec

    spec = get_spec("vault")
    module = spec.load()
    for name in ("Settings", "create_service", "register", "create_server", "unavailable"):
        assert hasattr(module, name), name
    settings = spec.settings(workspace=tmp_path / "ws")
    assert settings.root == tmp_path / "ws" / "vault"


async def test_absolute_note_paths_inside_the_vault_work_and_outside_are_refused_security(
    connect: Connect, vault: Path, tmp_path: Path
) -> None:
    write(vault, "Projects/Alpha.md", ALPHA)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.md").write_text("secret", encoding="utf-8")
    (vault / "escape").symlink_to(tmp_path / "outside")
    async with connect() as client:
        read = await call(client, "read_note", {"path": str(vault / "Projects" / "Alpha")})
        listed = await call(client, "list_notes", {"directory": str(vault / "Projects")})
        outside = await fail(client, "read_note", {"path": str(tmp_path / "outside" / "secret.md")})
        escaped = await fail(client, "read_note", {"path": str(vault / "escape" / "secret.md")})
    assert read["path"] == "Projects/Alpha.md"
    assert [n["path"] for n in listed["notes"]] == ["Projects/Alpha.md"]
    assert outside["error"] == escaped["error"] == "permission_denied"
