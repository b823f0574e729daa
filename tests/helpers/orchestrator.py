"""The orchestrator tests' mail store (the JSON file behind tests/orchestrator/mail_stub.py), triage rules, and
mail notes waiting for a decision with their drafts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from mcp import Client

from deskmcp.orchestrator.layout import email_note
from tests.helpers.tool_calls import call
from tests.orchestrator import mail_stub

RULES = """
rules:
  - name: news
    match: {from: "newsletter@"}
    decision: archive
    reason: Newsletter
  - name: meeting
    match: {subject: "meet"}
    decision: draft_reply
    reason: Meeting request
    reply: "Hi {sender_name},\\n\\nTuesday works. About {subject}."
  - name: outage
    match: {subject: "outage"}
    decision: urgent
    reply: "On it."
  - name: invoices
    match: {body: "invoice"}
    decision: delegate
    delegate_to: finance@example.com
    reason: Finance handles invoices
default:
  decision: needs_info
  reason: No rule matched
"""


def write_rules(vault: Path, text: str = RULES) -> None:
    (vault / "triage-rules.yaml").write_text(text, encoding="utf-8")


def add_mail(store: Path, mid: str, sender: str, subject: str, body: str, **extra: Any) -> None:
    """Put one message in the stub's inbox."""
    data = mail_stub.load(store)
    data["inbox"].append(mail_stub.message(mid, sender, subject, body, **extra))
    mail_stub.save(store, data)


def sent(store: Path) -> list[dict[str, Any]]:
    """What the stub has sent so far."""
    return mail_stub.load(store)["sent"]


def write_mail_note(vault: Path) -> str:
    """A new mail waiting for a decision in Needs_Action/, as a pass writes it."""
    folder = vault / "Needs_Action"
    n = len(list(folder.glob("*.md"))) if folder.is_dir() else 0
    email = {"id": f"m{n}", "sender": "Ana <ana@example.org>", "to": "me@example.org", "subject": f"Lunch {n}?"}
    front, body = email_note(
        {**email, "body": "Are you free Friday?"}, ingested_at="2026-11-27T09:00:00Z", max_chars=1000
    )
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"lunch-{n}.md").write_text(f"---\n{yaml.safe_dump(front)}---\n{body}", encoding="utf-8")
    return f"Needs_Action/lunch-{n}.md"


async def drafted(client: Client, vault: Path) -> str:
    path = write_mail_note(vault)
    decided = await call(client, "triage_decide", {"path": path, "decision": "draft_reply", "reply": "Friday works!"})
    return decided["draft"]
