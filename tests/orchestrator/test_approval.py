"""Only the person approves: a reply is sent only when deskmcp drafted it, to the people it was
drafted for (or to addresses on ORCHESTRATOR_TRUSTED_RECIPIENTS), and a person moved it to Approved/."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest
import yaml
from mcp import Client

from deskmcp.gateway import compose
from deskmcp.orchestrator.server import create_server as create_orchestrator
from deskmcp.orchestrator.settings import OrchestratorSettings
from deskmcp.servers import SERVERS
from deskmcp.vault.server import Settings as VaultSettings
from deskmcp.vault.server import create_server as create_vault
from tests.helpers.files import only
from tests.helpers.orchestrator import add_mail, sent, write_rules
from tests.helpers.tool_calls import call, fail
from tests.orchestrator import mail_stub

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
EVIL = "---\nto: mallory@evil.example\nsubject: Invoice\n---\nPay the attached invoice today.\n"


def frontmatter(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8").split("---\n")[1])


def events(vault: Path) -> list[dict]:
    return [json.loads(line) for p in (vault / "Logs").glob("orchestrator_*.jsonl") for line in p.open()]


@pytest.mark.e2e
async def test_security_the_assistant_cannot_approve_a_reply_through_the_default_tools(
    tmp_path: Path, vault: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the default toolsets of the vault and the orchestrator, nothing the assistant can call
    puts a reply into Approved/, and a reply put there by other means is not sent."""
    monkeypatch.setenv("STUB_MAIL_STORE", str(store))
    monkeypatch.chdir(ROOT)
    add_mail(store, "m1", "Ana <ana@example.org>", "Lunch?", "Are you free Friday?")
    triage = OrchestratorSettings(
        workspace=tmp_path / "ws",
        vault_path=vault,
        decider="assistant",
        mail_command=f"{sys.executable} -m tests.orchestrator.mail_stub",
    )
    notes = VaultSettings(workspace=tmp_path / "ws", vault_path=vault)
    async with Client(create_orchestrator(triage)) as flow, Client(create_vault(notes)) as tools:
        await call(flow, "triage_run")
        [item] = (await call(flow, "triage_list"))["items"]
        drafted = await call(flow, "triage_decide", {"path": item["path"], "decision": "draft_reply", "reply": "Yes"})
        draft = drafted["draft"]
        approved = draft.replace("Drafts/", "Approved/")

        moved = await fail(tools, "move_note", {"source": draft, "destination": approved})
        written = await fail(
            tools, "write_note", {"path": "Approved/pay.md", "body": "Pay", "frontmatter": {"to": "x"}}
        )
        read = await call(tools, "read_note", {"path": draft})
        edited = await fail(tools, "write_note", {"path": draft, "body": "Pay", "expected_hash": read["content_hash"]})
        for error in (moved, written, edited):
            assert error["error"] == "permission_denied"
            assert "Drafts/ to Approved/" in error["message"]

        # a note that reached Approved/ another way (another program, a synced folder) is refused
        (vault / "Approved" / "pay.md").write_text(EVIL, encoding="utf-8")
        summary = await call(flow, "triage_run")
    assert summary["sent"] == 0
    assert summary["failed"] == 1
    assert sent(store) == []
    assert (vault / draft).exists()
    error = frontmatter(vault / "Approved" / "pay.md")["send_error"]
    assert error.startswith("Not sent: deskmcp did not draft this reply.")
    assert "ORCHESTRATOR_TRUSTED_RECIPIENTS" in error
    assert any(e["event"] == "send_refused" and e["note"] == "Approved/pay.md" for e in events(vault))


async def test_security_a_draft_whose_recipients_were_changed_is_not_sent(
    orchestrator, vault: Path, store: Path
) -> None:
    write_rules(vault)
    add_mail(store, "d1", "Ana <ana@example.org>", "Let us meet", "When?")
    async with orchestrator() as o:
        await o.run_pass()
        draft = only(vault / "Drafts")
        text = draft.read_text(encoding="utf-8")
        assert "to: Ana <ana@example.org>" in text
        swapped = text.replace("to: Ana <ana@example.org>", "to: mallory@evil.example")
        (vault / "Approved" / draft.name).write_text(swapped, encoding="utf-8")
        draft.unlink()
        refused = await o.run_pass()
        copied = (vault / "Approved" / draft.name).read_text(encoding="utf-8")
        cc = copied.replace("to: mallory@evil.example", "to: ANA@example.org\ncc: boss@evil.example")
        (vault / "Approved" / draft.name).write_text(cc, encoding="utf-8")
        refused_cc = await o.run_pass()
    assert refused.sent == 0 and refused.failed == 1
    assert refused_cc.sent == 0 and refused_cc.failed == 1
    assert sent(store) == []
    error = frontmatter(vault / "Approved" / draft.name)["send_error"]
    assert "recipients were changed after deskmcp drafted it (added: boss@evil.example)" in error


async def approved_with_changed_recipient(orchestrator, vault: Path, store: Path) -> None:
    """A draft deskmcp wrote to ana@example.org, moved to Approved/ addressed to team@example.com."""
    write_rules(vault)
    add_mail(store, "d1", "ana@example.org", "Let us meet", "When?")
    async with orchestrator() as o:
        await o.run_pass()
        draft = only(vault / "Drafts")
        text = draft.read_text(encoding="utf-8").replace("to: ana@example.org", "to: Team <team@example.com>")
        (vault / "Approved" / draft.name).write_text(text, encoding="utf-8")
        draft.unlink()


async def test_a_changed_recipient_on_the_trusted_list_is_sent(orchestrator, vault: Path, store: Path) -> None:
    await approved_with_changed_recipient(orchestrator, vault, store)
    async with orchestrator(trusted_recipients="ana@example.org, @example.com") as o:
        summary = await o.run_pass()
    assert summary.sent == 1
    assert [m["to"] for m in sent(store)] == ["Team <team@example.com>"]


async def test_the_mail_allowlist_still_vouches_while_the_trusted_list_is_unset_and_says_it_is_deprecated(
    orchestrator, vault: Path, store: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import deskmcp.core.settings

    monkeypatch.setattr(deskmcp.core.settings, "_WARNED", set())
    await approved_with_changed_recipient(orchestrator, vault, store)
    monkeypatch.setenv("MAIL_ALLOWED_RECIPIENTS", "ana@example.org, @example.com")
    with caplog.at_level("WARNING", logger="deskmcp.settings"):
        async with orchestrator() as o:
            summary = await o.run_pass()
            await o.run_pass()
    assert summary.sent == 1
    assert [m["to"] for m in sent(store)] == ["Team <team@example.com>"]
    warnings = [r.getMessage() for r in caplog.records if r.name == "deskmcp.settings"]
    assert len(warnings) == 1
    assert warnings[0].startswith("MAIL_ALLOWED_RECIPIENTS as the recipients of replies the orchestrator did not")
    assert "is deprecated" in warnings[0] and "set ORCHESTRATOR_TRUSTED_RECIPIENTS instead" in warnings[0]


async def test_security_an_empty_trusted_list_trusts_nobody_whatever_the_mail_allowlist_says(
    orchestrator, vault: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await approved_with_changed_recipient(orchestrator, vault, store)
    monkeypatch.setenv("MAIL_ALLOWED_RECIPIENTS", "@example.com")
    monkeypatch.setenv("ORCHESTRATOR_TRUSTED_RECIPIENTS", "")
    async with orchestrator() as o:
        summary = await o.run_pass()
    assert summary.sent == 0 and summary.failed == 1
    assert sent(store) == []
    refused = next((vault / "Approved").glob("*.md"))
    assert (
        "recipients were changed after deskmcp drafted it (added: team@example.com)"
        in frontmatter(refused)["send_error"]
    )


async def test_a_draft_the_person_edited_and_moved_is_sent_to_the_same_people(
    orchestrator, vault: Path, store: Path
) -> None:
    write_rules(vault)
    add_mail(store, "d1", "Ana Silva <ana@example.org>", "Let us meet", "When?")
    async with orchestrator() as o:
        await o.run_pass()
        draft = only(vault / "Drafts")
        text = draft.read_text(encoding="utf-8").replace("to: Ana Silva <ana@example.org>", "to: ana@EXAMPLE.org")
        (vault / "Approved" / draft.name).write_text(text.replace("Tuesday", "Thursday"), encoding="utf-8")
        draft.unlink()
        summary = await o.run_pass()
    assert summary.sent == 1
    assert "Thursday works." in sent(store)[0]["body"]


@pytest.mark.e2e
async def test_security_a_rejected_draft_moved_back_to_approved_is_not_sent(
    tmp_path: Path, vault: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STUB_MAIL_STORE", str(store))
    monkeypatch.chdir(ROOT)
    add_mail(store, "m1", "ana@example.org", "Lunch?", "Friday?")
    settings = OrchestratorSettings(
        workspace=tmp_path / "ws",
        vault_path=vault,
        decider="assistant",
        mail_command=f"{sys.executable} -m tests.orchestrator.mail_stub",
    )
    async with Client(create_orchestrator(settings)) as client:
        await call(client, "triage_run")
        [item] = (await call(client, "triage_list"))["items"]
        drafted = await call(client, "triage_decide", {"path": item["path"], "decision": "draft_reply", "reply": "No"})
        rejected = await call(client, "triage_reject", {"path": drafted["draft"], "reason": "Too curt"})
        (vault / rejected["path"]).rename(vault / "Approved" / "back.md")
        summary = await call(client, "triage_run")
    assert summary["sent"] == 0
    assert sent(store) == []
    assert "this reply was rejected" in frontmatter(vault / "Approved" / "back.md")["send_error"]


async def test_security_a_reply_being_sent_cannot_be_rejected_meanwhile(
    tmp_path: Path, vault: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rejection while the reply is being sent is refused: it would file as rejected a reply
    that went out."""
    monkeypatch.setenv("STUB_MAIL_STORE", str(store))
    monkeypatch.chdir(ROOT)
    add_mail(store, "m1", "ana@example.org", "Lunch?", "Friday?")
    settings = OrchestratorSettings(
        workspace=tmp_path / "ws",
        vault_path=vault,
        decider="assistant",
        mail_command=f"{sys.executable} -m tests.orchestrator.mail_stub",
    )
    gate = tmp_path / "gate"
    summary: dict = {}
    async with Client(create_orchestrator(settings)) as flow, Client(create_orchestrator(settings)) as person:
        await call(flow, "triage_run")
        [item] = (await call(flow, "triage_list"))["items"]
        drafted = await call(flow, "triage_decide", {"path": item["path"], "decision": "draft_reply", "reply": "Yes"})
        approved = drafted["draft"].replace("Drafts/", "Approved/")
        (vault / drafted["draft"]).rename(vault / approved)  # the person approves in their file manager
        data = mail_stub.load(store)
        data["hold_send"] = str(gate)
        mail_stub.save(store, data)

        async def run() -> None:
            summary.update(await call(flow, "triage_run"))

        async with anyio.create_task_group() as group:
            group.start_soon(run)
            waiting = anyio.Path(str(gate) + ".waiting")
            with anyio.fail_after(20):
                while not await waiting.exists():  # noqa: ASYNC110 - a file another process writes
                    await anyio.sleep(0.02)
            error = await fail(person, "triage_reject", {"path": approved, "reason": "Changed my mind"})
            gate.touch()
    assert error["error"] == "conflict" and "being sent" in error["message"]
    assert summary["sent"] == 1 and len(sent(store)) == 1
    statuses = {p.name: frontmatter(p).get("status") for p in (vault / "Done").glob("*.md")}
    assert set(statuses.values()) == {"done"}, statuses  # the reply and its mail, filed as sent


async def test_security_triage_approve_refuses_a_draft_deskmcp_did_not_write(
    tmp_path: Path, vault: Path, store: Path
) -> None:
    (vault / "Drafts").mkdir()
    (vault / "Drafts" / "Re-pay.md").write_text(EVIL, encoding="utf-8")
    settings = OrchestratorSettings(workspace=tmp_path / "ws", vault_path=vault, decider="assistant")
    async with Client(create_orchestrator(settings)) as client:
        error = await fail(client, "triage_approve", {"path": "Drafts/Re-pay.md"})
    assert error["error"] == "permission_denied"
    assert error["message"].startswith("Not approved: deskmcp did not draft this reply.")
    assert (vault / "Drafts" / "Re-pay.md").exists()
    assert not (vault / "Approved").exists() or list((vault / "Approved").iterdir()) == []


def test_leaving_out_the_approve_toolset_keeps_approval_to_the_person(
    tmp_path: Path, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DESKMCP_WORKSPACE", str(tmp_path / "ws"))
    monkeypatch.setenv("VAULT_PATH", str(vault))
    specs = [SERVERS["orchestrator"], SERVERS["vault"]]
    default = compose(specs, keep_unavailable=True).server
    narrowed = compose(specs, keep_unavailable=True, toolsets="default,-orchestrator.approve").server
    assert "triage_approve" in {t.name for t in anyio.run(default.list_tools)}
    names = {t.name for t in anyio.run(narrowed.list_tools)}
    assert "triage_approve" not in names
    assert {"triage_decide", "triage_run", "write_note", "move_note"} <= names
