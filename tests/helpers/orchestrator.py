"""The orchestrator tests' mail store (the JSON file behind tests/orchestrator/mail_stub.py) and triage rules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
