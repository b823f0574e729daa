"""The vault behind `VaultPort`: the vault server over MCP and the files in this process answer the
same operations with the vault's own models, and the fallback opens no index of its own."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from deskmcp.core.errors import Conflict, ExternalServiceError, NotFound, PermissionDenied
from deskmcp.core.server import DeskServer
from deskmcp.orchestrator.access import MailAccess
from deskmcp.orchestrator.deciders import create_decider
from deskmcp.orchestrator.local_vault import LocalVault
from deskmcp.orchestrator.mcp_client import MCPClient
from deskmcp.orchestrator.mcp_vault import McpVault, open_vault
from deskmcp.orchestrator.server import create_server as create_orchestrator
from deskmcp.orchestrator.service import Orchestrator
from deskmcp.orchestrator.settings import OrchestratorSettings
from deskmcp.orchestrator.vault_port import VaultPort, list_paths, update_note
from deskmcp.vault.models import MoveResult, NoteContent, NoteList
from deskmcp.vault.server import Settings as VaultSettings
from deskmcp.vault.server import create_server as create_vault
from tests.helpers.orchestrator import add_mail
from tests.helpers.tool_calls import call
from tests.orchestrator import mail_stub

pytestmark = pytest.mark.anyio

NOTE = "---\nstatus: pending   # kept as written\nsubject: Lunch\n---\n# Lunch\n\nFriday?\n"


def vault_client(tmp_path: Path, vault: Path) -> MCPClient:
    settings = VaultSettings(workspace=tmp_path / "ws", vault_path=vault, protected_folders="", watch=False)
    return MCPClient("vault", ["unused"], vault, server=create_vault(settings))


def events(vault: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for p in (vault / "Logs").glob("orchestrator_*.jsonl") for line in p.open()]


def index_files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if "index" in p.name or p.suffix == ".sqlite3"]


async def exercise(port: VaultPort, vault: Path) -> dict[str, Any]:
    """The four operations of the port on one vault, and what each returned."""
    (vault / "Needs_Action").mkdir(exist_ok=True)
    (vault / "Needs_Action" / "a.md").write_text(NOTE, encoding="utf-8")
    (vault / "Needs_Action" / "b.md").write_text("---\nstatus: Done\n---\nold\n", encoding="utf-8")
    read = await port.read_note("Needs_Action/a.md")
    written = await port.write_note("Drafts/Re-a.md", "Yes.\n", {"to": "ana@example.org", "draft_id": "d1"})
    updated = await update_note(port, "Needs_Action/a.md", {"status": "pending_approval", "draft": "[[Re-a]]"})
    pending = await port.list_notes("Needs_Action", status="pending_approval")
    moved = await port.move_note("Drafts/Re-a.md", "Approved/Re-a.md")
    return {"read": read, "written": written, "updated": updated, "pending": pending, "moved": moved}


async def test_the_mcp_adapter_and_the_files_answer_the_vault_models_alike(tmp_path: Path) -> None:
    over_mcp, on_disk = tmp_path / "a", tmp_path / "b"
    over_mcp.mkdir()
    on_disk.mkdir()
    async with vault_client(tmp_path, over_mcp) as client:
        remote = await exercise(McpVault(client, over_mcp), over_mcp)
    local = await exercise(LocalVault(on_disk), on_disk)
    for answers in (remote, local):
        assert isinstance(answers["read"], NoteContent) and answers["read"].frontmatter["status"] == "pending"
        assert isinstance(answers["written"], NoteContent) and isinstance(answers["updated"], NoteContent)
        assert isinstance(answers["pending"], NoteList)
        assert [n.path for n in answers["pending"].notes] == ["Needs_Action/a.md"]
        assert answers["moved"] == MoveResult(moved=True, source="Drafts/Re-a.md", destination="Approved/Re-a.md")
    for name in ("Needs_Action/a.md", "Approved/Re-a.md"):  # byte for byte what the vault server writes
        assert (on_disk / name).read_bytes() == (over_mcp / name).read_bytes()
    assert "status: pending_approval" in (on_disk / "Needs_Action/a.md").read_text(encoding="utf-8")
    assert "subject: Lunch\n" in (on_disk / "Needs_Action/a.md").read_text(encoding="utf-8")
    assert remote["updated"].content_hash == local["updated"].content_hash


async def test_the_files_refuse_to_replace_a_note_unread_or_changed_since_it_was_read(vault: Path) -> None:
    port = LocalVault(vault)
    first = await port.write_note("Drafts/x.md", "one\n", {"status": "pending_approval"})
    with pytest.raises(Conflict):
        await port.write_note("Drafts/x.md", "two\n", {})
    (vault / "Drafts" / "x.md").write_text("---\nstatus: edited\n---\nby hand\n", encoding="utf-8")
    with pytest.raises(Conflict):
        await port.write_note("Drafts/x.md", "two\n", {}, expected_hash=first.content_hash)
    assert (vault / "Drafts" / "x.md").read_text(encoding="utf-8").endswith("by hand\n")


async def test_the_files_never_move_a_note_over_another(vault: Path) -> None:
    port = LocalVault(vault)
    await port.write_note("Drafts/x.md", "mine\n", {})
    await port.write_note("Done/x.md", "theirs\n", {})
    with pytest.raises(Conflict):
        await port.move_note("Drafts/x.md", "Done/x.md")
    with pytest.raises(NotFound):
        await port.move_note("Drafts/gone.md", "Done/gone.md")
    assert (vault / "Done" / "x.md").read_text(encoding="utf-8").endswith("theirs\n")
    assert (vault / "Drafts" / "x.md").exists()


async def test_the_files_list_one_folder_filtered_by_status_like_the_vault_index(vault: Path) -> None:
    folder = vault / "Needs_Action"
    folder.mkdir()
    (folder / "a.md").write_text("---\nstatus: Pending\n---\n", encoding="utf-8")
    (folder / "b.md").write_text("---\nstatus: [done, pending]\n---\n", encoding="utf-8")
    (folder / "c.md").write_text("---\nstatus: done\n---\n", encoding="utf-8")
    (folder / "d.md").write_text("---\nstatus: [unclosed\n---\n", encoding="utf-8")
    (folder / ".hidden.md").write_text("---\nstatus: pending\n---\n", encoding="utf-8")
    (folder / "sub").mkdir()
    (folder / "sub" / "e.md").write_text("---\nstatus: pending\n---\n", encoding="utf-8")
    port = LocalVault(vault)
    assert await list_paths(port, "Needs_Action", status="pending") == ["Needs_Action/a.md", "Needs_Action/b.md"]
    assert await list_paths(port, "Needs_Action") == [f"Needs_Action/{n}.md" for n in "abcd"]
    assert await list_paths(port, "Approved") == []


async def test_security_the_files_refuse_paths_leaving_the_vault_or_into_hidden_folders(
    tmp_path: Path, vault: Path
) -> None:
    (tmp_path / "outside.md").write_text("secret\n", encoding="utf-8")
    (vault / "link").symlink_to(tmp_path)
    port = LocalVault(vault)
    for path in ("../outside.md", "link/outside.md", "/etc/passwd", ".obsidian/x.md"):
        with pytest.raises(PermissionDenied):
            await port.read_note(path)
        with pytest.raises(PermissionDenied):
            await port.write_note(path, "x\n", {})
    with pytest.raises(PermissionDenied):
        await port.move_note("Drafts/x.md", "../outside.md")


async def test_the_mcp_adapter_reads_every_page_and_adds_notes_the_index_has_not_seen_yet(
    tmp_path: Path, vault: Path
) -> None:
    folder = vault / "Approved"
    folder.mkdir()
    for n in range(5):
        (folder / f"n{n}.md").write_text("---\nstatus: pending_approval\n---\nok\n", encoding="utf-8")
    async with vault_client(tmp_path, vault) as client:
        port = McpVault(client, vault, page_size=2)
        assert len(await list_paths(port, "Approved", status="pending_approval")) == 5
        (folder / "late.md").write_text("moved in a moment ago\n", encoding="utf-8")
        listed = await list_paths(port, "Approved")
    assert listed == ["Approved/late.md", *(f"Approved/n{n}.md" for n in range(5))]


async def test_the_mcp_adapter_reports_an_answer_of_another_shape_as_an_external_service_error(vault: Path) -> None:
    impostor = DeskServer("not-a-vault")

    @impostor.tool("read_note")
    def read_note(path: str) -> dict[str, Any]:
        return {"path": path, "text": "no frontmatter, no hash"}

    async with MCPClient("vault", ["unused"], vault, server=impostor) as client:
        with pytest.raises(ExternalServiceError) as raised:
            await McpVault(client, vault).read_note("Needs_Action/a.md")
    assert "read_note" in raised.value.message and "NoteContent" in raised.value.message


@pytest.mark.e2e
async def test_a_pass_on_a_dead_vault_server_falls_back_to_the_files_and_builds_no_second_index(
    tmp_path: Path, vault: Path, store: Path
) -> None:
    add_mail(store, "m1", "ana@example.org", "Hello", "Hi")
    workspace = tmp_path / "ws"
    settings = OrchestratorSettings(workspace=workspace, vault_path=vault, decider="assistant")
    dead = MCPClient("vault", [sys.executable, "-c", "pass"], vault, timeout=30)
    mail = MCPClient("mail", ["unused"], vault, server=mail_stub.create_server(store))
    async with dead, mail:
        port = open_vault(vault, dead)
        with anyio.fail_after(120):
            summary = await Orchestrator(settings, port, MailAccess(mail), create_decider(settings)).run_pass()
    assert summary.ingested == 1 and summary.failed == 0
    assert len(list((vault / "Needs_Action").glob("*.md"))) == 1
    assert any(e["event"] == "mcp_unavailable" and e["fallback"] for e in events(vault))
    assert index_files(tmp_path) == []


async def test_the_triage_tools_work_on_the_files_and_build_no_index(tmp_path: Path, vault: Path) -> None:
    (vault / "Needs_Action").mkdir()
    (vault / "Needs_Action" / "lunch.md").write_text(
        "---\nstatus: pending\nfrom: ana@example.org\nsubject: Lunch?\nmessage_id: m1\n---\n> Friday?\n",
        encoding="utf-8",
    )
    settings = OrchestratorSettings(workspace=tmp_path / "ws", vault_path=vault, decider="assistant")
    async with Client(create_orchestrator(settings)) as client:
        [item] = (await call(client, "triage_list"))["items"]
        decided = await call(client, "triage_decide", {"path": item["path"], "decision": "draft_reply", "reply": "Yes"})
        drafts = await call(client, "triage_list", {"stage": "approval"})
    assert [d["path"] for d in drafts["items"]] == [decided["draft"]]
    assert (vault / decided["draft"]).read_text(encoding="utf-8").endswith("Yes\n")
    assert index_files(tmp_path) == []
