"""A demo of the triage flow: a small offline mailbox and an empty vault, and one whole cycle.

The tour ingests the mailbox into Needs_Action/, lets the rules file decide, approves the
draft by moving it from Drafts/ to Approved/ (what a person does in Obsidian), sends it on
the next pass (filed in the mailbox's Sent folder: no SMTP server is configured), files it in
Done/ and shows the state with the pre-send audit line.
"""

from __future__ import annotations

import mailbox
import random
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid
from pathlib import Path
from typing import Any

MAILS = [
    (
        "Maya Chen <maya@harbor.example>",
        "Can we meet about the Atlas launch?",
        "Could we meet on Tuesday to go over the launch checklist?",
    ),
    ("newsletter@tools.example", "This week in tooling", "Ten links about build systems and one about coffee."),
    ("Ops Bot <ops@platform.example>", "Outage: search latency in eu-west", "Search latency is above 2s since 09:10."),
    ("Jonas Berg <jonas@finance.example>", "Q4 numbers", "Attached are the draft Q4 numbers; anything missing?"),
]


def generate(root: Path, rng: random.Random) -> None:
    """`root/mail`: a Maildir with a few unread mails; `root/vault`: an empty vault."""
    (root / "vault").mkdir(parents=True, exist_ok=True)
    box = mailbox.Maildir(root / "mail", create=True)
    start = datetime(2026, 11, 20, 8, 30, tzinfo=UTC)
    for n, (sender, subject, body) in enumerate(MAILS):
        msg = EmailMessage()
        msg["From"] = sender
        msg["To"] = "Me <me@localhost>"
        msg["Subject"] = subject
        msg["Date"] = format_datetime(start + timedelta(minutes=17 * n + rng.randint(0, 9)))
        msg["Message-ID"] = make_msgid(domain=sender.split("@")[1].rstrip(">"))
        msg.set_content(body + "\n")
        box.add(msg)
    box.close()


def environment(workspace: Path) -> dict[str, str]:
    base = workspace / "triage"
    return {
        "VAULT_PATH": str(base / "vault"),
        "MAIL_MAILDIR": str(base / "mail"),
        "MAIL_ADDRESS": "me@localhost",
        "ORCHESTRATOR_DECIDER": "rules",
    }


STEPS: list[tuple[str, str, dict[str, Any]]] = [
    (
        "One pass: fetch the unread mail into Needs_Action/ notes and decide each by triage-rules.yaml",
        "triage_run",
        {},
    ),
    ("Drafted replies waiting for approval (nothing is sent without it)", "triage_list", {"stage": "approval"}),
    (
        "Approve the first draft: it moves from Drafts/ to Approved/, as a person does in Obsidian",
        "triage_approve",
        {"path": "$last.items.0.path"},
    ),
    ("Next pass: the approved reply is sent (threaded under the original) and filed in Done/", "triage_run", {}),
    ("The state: notes per folder, what was sent, recent events and the pre-send audit line", "triage_status", {}),
]
