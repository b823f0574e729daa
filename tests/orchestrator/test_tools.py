"""The orchestrator's MCP tools through the SDK's in-memory client: the assistant as decider."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from mcp import Client

from deskmcp.orchestrator.server import create_server
from deskmcp.orchestrator.settings import OrchestratorSettings
from tests.helpers.orchestrator import add_mail, sent
from tests.helpers.person import Person
from tests.helpers.tool_calls import call, fail

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]


def settings(tmp_path: Path, vault: Path, store: Path) -> OrchestratorSettings:
    command = f"{sys.executable} -m tests.orchestrator.mail_stub"
    return OrchestratorSettings(workspace=tmp_path / "ws", vault_path=vault, decider="assistant", mail_command=command)


@pytest.mark.e2e
async def test_the_assistant_decides_approves_and_a_pass_sends(
    tmp_path: Path, vault: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STUB_MAIL_STORE", str(store))
    monkeypatch.chdir(ROOT)
    add_mail(store, "m1", "Ana <ana@example.org>", "Lunch?", "Are you free Friday?")
    add_mail(store, "m2", "news@example.org", "Digest", "Links")
    person = Person("accept")
    async with Client(create_server(settings(tmp_path, vault, store)), elicitation_callback=person.answer) as client:
        first = await call(client, "triage_run")
        assert first["ingested"] == 2
        pending = await call(client, "triage_list")
        assert pending["total"] == 2
        lunch = next(i for i in pending["items"] if i["subject"] == "Lunch?")
        assert "Are you free Friday?" in lunch["body"]
        digest = next(i for i in pending["items"] if i["subject"] == "Digest")
        archived = await call(client, "triage_decide", {"path": digest["path"], "decision": "archive"})
        assert archived["path"].startswith("Done/")
        drafted = await call(
            client,
            "triage_decide",
            {"path": lunch["path"], "decision": "draft_reply", "reason": "Friendly", "reply": "Friday works!"},
        )
        assert drafted["draft"].startswith("Drafts/")
        drafts = await call(client, "triage_list", {"stage": "approval"})
        assert [d["path"] for d in drafts["items"]] == [drafted["draft"]]
        approved = await call(client, "triage_approve", {"path": drafted["draft"]})
        assert approved["path"].startswith("Approved/")
        [question] = person.asked
        assert "To: Ana <ana@example.org>" in question
        assert "Friday works!" in question
        second = await call(client, "triage_run")
        assert second["sent"] == 1
        status = await call(client, "triage_status")
    assert status["sent"] == 1
    assert status["ingested"] == 2
    assert status["folders"]["Done"] == 3
    assert [m["body"] for m in sent(store)] == ["Friday works!\n"]


async def test_triage_decide_needs_reply_text_for_a_draft(tmp_path: Path, vault: Path, store: Path) -> None:
    async with Client(create_server(settings(tmp_path, vault, store))) as client:
        error = await fail(client, "triage_decide", {"path": "Needs_Action/x.md", "decision": "draft_reply"})
    assert error["error"] == "bad_request"


async def test_triage_decide_refuses_a_note_outside_needs_action(tmp_path: Path, vault: Path, store: Path) -> None:
    async with Client(create_server(settings(tmp_path, vault, store))) as client:
        error = await fail(client, "triage_decide", {"path": "../etc/passwd", "decision": "archive"})
    assert error["error"] in ("bad_request", "permission_denied")


@pytest.mark.e2e
async def test_a_rejected_draft_is_filed_and_the_mail_waits_for_a_new_decision(
    tmp_path: Path, vault: Path, store: Path
) -> None:
    note = vault / "Needs_Action" / "a.md"
    note.parent.mkdir()
    note.write_text("---\nstatus: pending\nmessage_id: m1\nfrom: ana@example.org\nsubject: Hi\n---\n> hello\n")
    async with Client(create_server(settings(tmp_path, vault, store))) as client:
        drafted = await call(
            client, "triage_decide", {"path": "Needs_Action/a.md", "decision": "urgent", "reply": "No."}
        )
        rejected = await call(client, "triage_reject", {"path": drafted["draft"], "reason": "Too curt"})
        pending = await call(client, "triage_list")
        again = await call(
            client, "triage_decide", {"path": "Needs_Action/a.md", "decision": "draft_reply", "reply": "Yes!"}
        )
    assert rejected["status"] == "rejected"
    assert pending["items"][0]["status"] == "needs_info"
    assert pending["items"][0]["reason"] == "Draft rejected: Too curt"
    assert again["draft"] != drafted["draft"]  # a new draft with a new id: the rejected one is never sent


@pytest.mark.e2e
async def test_triage_run_reports_a_mail_server_that_does_not_start(tmp_path: Path, vault: Path, store: Path) -> None:
    broken = OrchestratorSettings(
        workspace=tmp_path / "ws", vault_path=vault, mail_command=f"{sys.executable} -c pass", call_timeout=10
    )
    async with Client(create_server(broken)) as client:
        summary = await call(client, "triage_run")
    assert summary["waiting"] == 1
    log = "".join(p.read_text() for p in (vault / "Logs").glob("orchestrator_*.jsonl"))
    assert '"event":"mcp_unavailable"' in log
