"""The triage flow in one process: ingest, every decision, approval by moving a file, send, Done."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from deskmcp.orchestrator.layout import draft_id_for
from tests.helpers.files import only
from tests.helpers.orchestrator import add_mail, sent, write_rules
from tests.orchestrator import mail_stub

pytestmark = pytest.mark.anyio


def frontmatter(path: Path) -> dict:
    text = path.read_text(encoding="utf-8")
    return yaml.safe_load(text.split("---\n")[1])


async def test_ingest_writes_a_pending_note_and_labels_the_mail(orchestrator, vault: Path, store: Path) -> None:
    add_mail(store, "m1", "Ana Silva <ana@example.org>", "Budget question", "Can you check the numbers?\nThanks")
    async with orchestrator(decider="assistant") as o:
        summary = await o.run_pass()
    assert summary.ingested == 1
    path = only(vault / "Needs_Action")
    front = frontmatter(path)
    assert front["status"] == "pending"
    assert front["message_id"] == "m1"
    assert front["from"] == "Ana Silva <ana@example.org>"
    assert "> Can you check the numbers?" in path.read_text(encoding="utf-8")
    assert "AI_PROCESSED" in mail_stub.load(store)["inbox"][0]["labels"]
    state = json.loads((vault / "Logs" / "orchestrator_state.json").read_text(encoding="utf-8"))
    assert state["ingested"]["m1"]["labelled"] is True


async def test_a_mail_is_never_ingested_twice(orchestrator, vault: Path, store: Path) -> None:
    add_mail(store, "m1", "ana@example.org", "Hello", "Hi")
    async with orchestrator(decider="assistant") as o:
        await o.run_pass()
        # the label is lost (another client removed it): the state file still knows the mail
        data = mail_stub.load(store)
        data["inbox"][0]["labels"] = ["INBOX"]
        mail_stub.save(store, data)
        again = await o.run_pass()
    assert again.ingested == 0
    assert len(list((vault / "Needs_Action").glob("*.md"))) == 1


async def test_rules_decide_each_branch_of_the_state_machine(orchestrator, vault: Path, store: Path) -> None:
    write_rules(vault)
    add_mail(store, "n1", "newsletter@shop.example", "Weekly deals", "Sale")
    add_mail(store, "d1", "Ana Silva <ana@example.org>", "Can we meet?", "Tuesday?")
    add_mail(store, "u1", "ops@example.org", "Outage in eu-west", "Everything is down")
    add_mail(store, "g1", "bob@example.org", "Payment", "Please pay the attached invoice")
    add_mail(store, "i1", "carol@example.org", "Hmm", "Thoughts?")
    async with orchestrator() as o:
        summary = await o.run_pass()
    assert summary.ingested == 5
    assert summary.decided == 5
    by_id = {frontmatter(p)["message_id"]: p for p in (vault / "Needs_Action").glob("*.md")}
    by_id |= {frontmatter(p)["message_id"]: p for p in (vault / "Done").glob("*.md")}
    assert by_id["n1"].parent.name == "Done"
    assert frontmatter(by_id["n1"])["status"] == "done"
    assert frontmatter(by_id["i1"])["status"] == "needs_info"
    delegated = frontmatter(by_id["g1"])
    assert delegated["status"] == "pending_approval"
    assert delegated["delegate_to"] == "finance@example.com"
    assert "Delegate to finance@example.com" in by_id["g1"].read_text(encoding="utf-8")
    drafts = {frontmatter(p)["reply_to_message_id"]: p for p in (vault / "Drafts").glob("*.md")}
    assert set(drafts) == {"d1", "u1"}
    reply = frontmatter(drafts["d1"])
    assert reply["status"] == "pending_approval"
    assert reply["priority"] == "normal"
    assert reply["to"] == "Ana Silva <ana@example.org>"
    assert reply["subject"] == "Re: Can we meet?"
    assert reply["draft_id"] == draft_id_for("d1")
    assert "Hi Ana Silva,\n\nTuesday works. About Can we meet?." in drafts["d1"].read_text(encoding="utf-8")
    assert frontmatter(drafts["u1"])["priority"] == "urgent"
    assert frontmatter(by_id["d1"])["status"] == "pending_approval"
    assert sent(store) == []  # nothing leaves without approval


async def test_an_approved_draft_is_sent_as_edited_threads_and_ends_in_done(
    orchestrator, vault: Path, store: Path
) -> None:
    write_rules(vault)
    add_mail(store, "d1", "ana@example.org", "Let us meet", "When?")
    async with orchestrator() as o:
        await o.run_pass()
        draft = only(vault / "Drafts")
        edited = draft.read_text(encoding="utf-8").replace("Tuesday works.", "Wednesday is better.")
        (vault / "Approved" / draft.name).write_text(edited, encoding="utf-8")  # the person's move
        draft.unlink()
        summary = await o.run_pass()
        again = await o.run_pass()
    assert summary.sent == 1
    assert again.sent == 0
    [mail] = sent(store)
    assert mail["to"] == "ana@example.org"
    assert mail["subject"] == "Re: Let us meet"
    assert mail["reply_to_message_id"] == "d1"
    assert "Wednesday is better." in mail["body"]
    assert list((vault / "Approved").glob("*.md")) == []
    done = {p.name: frontmatter(p) for p in (vault / "Done").glob("*.md")}
    assert len(done) == 2  # the reply and the mail it answers
    assert {f["status"] for f in done.values()} == {"done"}
    assert any(f.get("sent_message_id") == "sent-1" for f in done.values())
    events = [json.loads(line)["event"] for p in (vault / "Logs").glob("orchestrator_*.jsonl") for line in p.open()]
    assert events.count("sent") == 1
    assert "done" in events


async def test_a_failed_send_stays_in_approved_with_the_error(orchestrator, vault: Path, store: Path) -> None:
    write_rules(vault)
    add_mail(store, "d1", "ana@example.org", "Let us meet", "When?")
    async with orchestrator() as o:
        await o.run_pass()
        draft = only(vault / "Drafts")
        draft.rename(vault / "Approved" / draft.name)
        data = mail_stub.load(store)
        data["fail_send"] = True
        mail_stub.save(store, data)
        failed = await o.run_pass()
        front = frontmatter(vault / "Approved" / draft.name)
        data["fail_send"] = False
        mail_stub.save(store, data)
        retried = await o.run_pass()
    assert failed.failed == 1
    assert front["send_error"].startswith("send_failed: The SMTP server refused")
    assert front["send_attempts"] == 1
    assert retried.sent == 1
    assert len(sent(store)) == 1


async def test_a_reply_written_by_hand_to_an_allowed_recipient_gets_an_id_before_it_is_sent(
    orchestrator, vault: Path, store: Path
) -> None:
    (vault / "Approved").mkdir()
    (vault / "Approved" / "hello.md").write_text("---\nto: bob@example.org\nsubject: Hello\n---\nHi Bob\n")
    async with orchestrator(decider="assistant", trusted_recipients="@example.org") as o:
        await o.run_pass()
    done = frontmatter(vault / "Done" / "hello.md")
    assert done["draft_id"].startswith("draft-")
    assert sent(store)[0]["body"] == "Hi Bob\n"


async def test_an_approved_draft_without_recipient_is_refused_with_the_reason(
    orchestrator, vault: Path, store: Path
) -> None:
    (vault / "Approved").mkdir()
    (vault / "Approved" / "x.md").write_text("---\nsubject: Hello\n---\nHi\n")
    async with orchestrator(decider="assistant") as o:
        summary = await o.run_pass()
    assert summary.failed == 1
    assert "has no to" in frontmatter(vault / "Approved" / "x.md")["send_error"]
    assert sent(store) == []


async def test_a_mail_that_cannot_be_read_becomes_a_note_saying_so(orchestrator, vault: Path, store: Path) -> None:
    add_mail(store, "b1", "x@example.org", "Garbled", "", broken=True)
    async with orchestrator(decider="assistant") as o:
        first = await o.run_pass()
        second = await o.run_pass()
    assert first.ingested == 1
    assert second.ingested == 0
    front = frontmatter(only(vault / "Needs_Action"))
    assert front["status"] == "needs_info"
    assert "cannot be decoded" in front["ingest_error"]


async def test_corrupt_frontmatter_is_logged_and_the_pass_goes_on(orchestrator, vault: Path, store: Path) -> None:
    write_rules(vault)
    (vault / "Approved").mkdir()
    bad = "---\nto: [unclosed\n---\nbody\n"
    (vault / "Approved" / "bad.md").write_text(bad)
    add_mail(store, "d1", "ana@example.org", "Let us meet", "When?")
    async with orchestrator() as o:
        summary = await o.run_pass()
    assert summary.failed == 1
    assert summary.ingested == 1
    assert (vault / "Approved" / "bad.md").read_text() == bad  # untouched, nothing lost
    lines = [json.loads(line) for p in (vault / "Logs").glob("orchestrator_*.jsonl") for line in p.open()]
    assert any(e["event"] == "send_failed" and "corrupt frontmatter" in e["error"] for e in lines)


async def test_a_vanished_vault_skips_the_pass_with_a_clear_reason(orchestrator, vault: Path, store: Path) -> None:
    add_mail(store, "m1", "ana@example.org", "Hello", "Hi")
    async with orchestrator(decider="assistant") as o:
        os.rename(vault, vault.with_name("moved"))
        summary = await o.run_pass()
        os.rename(vault.with_name("moved"), vault)
        after = await o.run_pass()
    assert summary.skipped is not None and "does not exist" in summary.skipped
    assert not vault.with_name("moved").exists()
    assert after.ingested == 1


async def test_dry_run_reports_and_changes_nothing(orchestrator, vault: Path, store: Path) -> None:
    write_rules(vault)
    add_mail(store, "d1", "ana@example.org", "Let us meet", "When?")
    async with orchestrator(dry_run=True) as o:
        summary = await o.run_pass()
    assert summary.ingested == 1
    assert "would ingest" in summary.events[0]
    assert list((vault / "Needs_Action").glob("*.md")) == []
    assert "AI_PROCESSED" not in mail_stub.load(store)["inbox"][0]["labels"]


async def test_a_send_repeated_after_a_lost_state_file_is_not_sent_twice(
    orchestrator, vault: Path, store: Path
) -> None:
    write_rules(vault)
    add_mail(store, "d1", "ana@example.org", "Let us meet", "When?")
    async with orchestrator() as o:
        await o.run_pass()
        draft = only(vault / "Drafts")
        draft.rename(vault / "Approved" / draft.name)
        await o.run_pass()
    # the note is put back and the state forgotten: the idempotency key still holds
    done = vault / "Done" / draft.name
    done.rename(vault / "Approved" / draft.name)
    (vault / "Logs" / "orchestrator_state.json").write_text("{not json")
    async with orchestrator() as o:
        summary = await o.run_pass()
    assert summary.done == 1
    assert len(sent(store)) == 1
    assert list((vault / "Logs").glob("orchestrator_state.json.corrupt-*"))


async def test_an_interrupted_move_to_done_is_finished_without_a_duplicate(
    orchestrator, vault: Path, store: Path
) -> None:
    write_rules(vault)
    add_mail(store, "d1", "ana@example.org", "Let us meet", "When?")
    async with orchestrator() as o:
        await o.run_pass()
        draft = only(vault / "Drafts")
        draft.rename(vault / "Approved" / draft.name)
        await o.run_pass()
    # as if the move had linked the new name and died before removing the old one
    (vault / "Approved" / draft.name).hardlink_to(vault / "Done" / draft.name)
    async with orchestrator() as o:
        await o.run_pass()
    assert not (vault / "Approved" / draft.name).exists()
    assert [p.name for p in (vault / "Done").glob("Re-*")] == [draft.name]
    assert len(sent(store)) == 1
