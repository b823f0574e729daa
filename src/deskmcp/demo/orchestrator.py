"""A demo of the triage flow: a small offline mailbox (the mail demo's generator) and a vault.

The tour ingests the mailbox into Needs_Action/, lets the rules file decide, approves the
draft by moving the file from Drafts/ to Approved/ itself (what a person does in Obsidian; a
tool cannot approve without asking the person), sends it on
the next pass (filed in the mailbox's Sent folder: no SMTP server is configured), files it in
Done/ and shows the state with the pre-send audit line.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from deskmcp.demo.mail import write_mailbox

RULES = """\
# Demo triage rules (the flow writes a commented example when a vault has none).
rules:
  - name: invoices
    match: {subject: invoice}
    decision: delegate
    delegate_to: finance@example.org
    reason: Finance pays invoices
  - name: incidents
    match: {subject: "latency|security"}
    decision: urgent
    reason: Something is broken or exposed
    reply: |
      Hi {sender_name},

      Thanks for flagging this. I'm on it and will send an update today.
  - name: projects
    match: {subject: "budget|hiring|launch|offsite|pricing|revenue|research"}
    decision: draft_reply
    reason: A colleague's update on a project
    reply: |
      Hi {sender_name},

      Thanks for the update on "{subject}". That works for me; let's go ahead.
default:
  decision: needs_info
  reason: No rule matched
"""


def generate(root: Path, rng: random.Random) -> None:
    """`root/mail`: a small mailbox from the mail demo's generator; `root/vault`: a vault with rules."""
    (root / "vault").mkdir(parents=True, exist_ok=True)
    (root / "vault" / "triage-rules.yaml").write_text(RULES, encoding="utf-8")
    write_mailbox(root / "mail", rng, messages=14)


def environment(workspace: Path) -> dict[str, str]:
    base = workspace / "triage"
    return {
        "VAULT_PATH": str(base / "vault"),
        "MAIL_MAILDIR": str(base / "mail"),
        "MAIL_ADDRESS": "me@localhost",
        "ORCHESTRATOR_DECIDER": "rules",
        # the demo mailbox is dated around 2026-11-20, older than the default query's last week
        "ORCHESTRATOR_QUERY": "in:inbox -label:AI_PROCESSED",
    }


def approve_in_vault(workspace: Path, arguments: dict[str, Any]) -> dict[str, Any]:
    """What a person does in their vault app to approve a reply: move its note from Drafts/ to
    Approved/. Done by the tour itself, not through a tool: only a person approves."""
    vault = Path(environment(workspace)["VAULT_PATH"])
    source = vault / arguments["path"]
    target = vault / "Approved" / source.name
    target.parent.mkdir(exist_ok=True)
    if target.exists():
        raise FileExistsError(target)
    source.rename(target)
    return {"moved": True, "path": f"Approved/{source.name}", "from": arguments["path"]}


PERSON_STEPS = {"approve_in_vault": approve_in_vault}
"""Steps the person running the demo takes (by name in STEPS), outside the assistant."""

STEPS: list[tuple[str, str, dict[str, Any]]] = [
    (
        "One pass: fetch the unread mail into Needs_Action/ notes and decide each by triage-rules.yaml",
        "triage_run",
        {},
    ),
    ("Drafted replies waiting for approval (nothing is sent without it)", "triage_list", {"stage": "approval"}),
    (
        "You approve the first draft: moved from Drafts/ to Approved/, as you would in Obsidian "
        "(the assistant cannot approve for you)",
        "approve_in_vault",
        {"path": "$last.items.0.path"},
    ),
    ("Next pass: the approved reply is sent (threaded under the original) and filed in Done/", "triage_run", {}),
    ("The state: notes per folder, what was sent, recent events and the pre-send audit line", "triage_status", {}),
]
