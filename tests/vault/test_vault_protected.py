"""Protected folders: the email triage flow's notes cannot be written, moved or edited through the
vault tools, so an assistant can never approve a reply by itself."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers.files import write
from tests.helpers.tool_calls import Connect, call, fail

pytestmark = pytest.mark.anyio

DRAFT = '---\nto: ana@example.org\nsubject: "Re: Lunch"\ndraft_id: draft-1\n---\nFriday works.\n'

WRITES: list[tuple[str, dict[str, Any]]] = [
    ("write_note", {"path": "Approved/evil.md", "body": "Send money", "frontmatter": {"to": "x@evil.example"}}),
    ("write_note", {"path": "Drafts/Re-lunch.md", "body": "Changed", "overwrite": True}),
    ("write_note", {"path": "Logs/orchestrator_state", "body": "{}"}),
    ("append_note", {"path": "Drafts/Re-lunch.md", "text": "P.S. wire the money"}),
    ("append_note", {"path": "Needs_Action/new.md", "text": "x", "create": True}),
    ("patch_frontmatter", {"path": "Drafts/Re-lunch.md", "key": "to", "value": "x@evil.example"}),
    ("move_note", {"source": "Drafts/Re-lunch.md", "destination": "Approved/Re-lunch.md"}),
    ("move_note", {"source": "Drafts/Re-lunch.md", "destination": "Elsewhere/Re-lunch.md"}),
    ("move_note", {"source": "Inbox/evil.md", "destination": "Approved/evil.md"}),
    ("move_note", {"source": "Done/old.md", "destination": "Archive/old.md"}),
    ("write_note", {"path": "approved/evil.md", "body": "a case variant of the folder"}),
]


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(("tool", "args"), WRITES, ids=[f"{t}-{i}" for i, (t, _) in enumerate(WRITES)])
async def test_security_every_writing_tool_refuses_the_triage_folders(
    connect: Connect, vault: Path, tool: str, args: dict[str, Any]
) -> None:
    write(vault, "Drafts/Re-lunch.md", DRAFT)
    write(vault, "Done/old.md", "old\n")
    write(vault, "Inbox/evil.md", "---\nto: x@evil.example\nsubject: Pay\n---\nPay now\n")
    before = files(vault)
    async with connect(toolsets="all") as client:
        error = await fail(client, tool, args)
    assert error["error"] == "permission_denied"
    assert "moving its note from Drafts/ to Approved/" in error["message"]  # says how the person approves
    assert "triage_approve" in error["message"]
    assert files(vault) == before


async def test_security_a_symlink_into_a_triage_folder_is_refused_too(connect: Connect, vault: Path) -> None:
    write(vault, "Drafts/Re-lunch.md", DRAFT)
    (vault / "Shortcut").symlink_to(vault / "Approved", target_is_directory=True)
    (vault / "Approved").mkdir()
    async with connect() as client:
        error = await fail(client, "move_note", {"source": "Drafts/Re-lunch.md", "destination": "Shortcut/x.md"})
        assert error["error"] == "permission_denied"
        error = await fail(client, "write_note", {"path": "Shortcut/evil.md", "body": "x"})
        assert error["error"] == "permission_denied"
    assert list((vault / "Approved").iterdir()) == []


async def test_security_moving_a_note_does_not_rewrite_links_inside_a_triage_folder(
    connect: Connect, vault: Path
) -> None:
    write(vault, "Projects/Plan.md", "# Plan\n")
    linking = write(vault, "Drafts/Re-plan.md", "---\nto: ana@example.org\n---\nSee [[Plan]]\n")
    async with connect() as client:
        error = await fail(
            client,
            "move_note",
            {"source": "Projects/Plan.md", "destination": "Projects/Plan-v2.md", "update_links": True},
        )
        assert error["error"] == "permission_denied"
        assert "update_links=false" in error["message"]
        moved = await call(client, "move_note", {"source": "Projects/Plan.md", "destination": "Projects/Plan-v2.md"})
    assert moved["moved"] is True
    assert linking.read_text(encoding="utf-8").endswith("See [[Plan]]\n")


async def test_triage_notes_stay_readable_and_other_folders_writable(connect: Connect, vault: Path) -> None:
    write(vault, "Drafts/Re-lunch.md", DRAFT)
    async with connect(toolsets="all") as client:
        note = await call(client, "read_note", {"path": "Drafts/Re-lunch.md"})
        written = await call(client, "write_note", {"path": "Projects/Drafts-of-plan.md", "body": "ok"})
        status = await call(client, "vault_status")
    assert note["frontmatter"]["to"] == "ana@example.org"
    assert written["path"] == "Projects/Drafts-of-plan.md"
    assert status["protected_folders"] == ["Approved", "Done", "Drafts", "Logs", "Needs_Action"]


async def test_protected_folders_are_a_setting_and_can_be_emptied(connect: Connect, vault: Path) -> None:
    async with connect(protected_folders="Private") as client:
        error = await fail(client, "write_note", {"path": "Private/x.md", "body": "x"})
        assert error["error"] == "permission_denied"
        await call(client, "write_note", {"path": "Approved/x.md", "body": "x"})
    async with connect(protected_folders="") as client:
        await call(client, "move_note", {"source": "Approved/x.md", "destination": "Done/x.md"})
    assert (vault / "Done" / "x.md").is_file()
