"""A generated mailbox: colleagues, threads, newsletters and attachments in a Maildir++ tree.

`generate` writes about 300 messages (conversations of 1 to 5 replies with In-Reply-To and
References, some read, a few with text or PDF attachments, a Sent folder); `write_mailbox`
writes any number, which is what the mail benchmark uses for its 50,000-message Maildir.
"""

from __future__ import annotations

import base64
import random
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any

FIRST = ["Maya", "Tomás", "Priya", "Jonas", "Amara", "Lena", "Sam", "Inès", "Kofi", "Yuki", "Omar", "Hanna"]
LAST = ["Chen", "Rivera", "Nair", "Berg", "Okafor", "Fischer", "Patel", "Moreau", "Mensah", "Sato", "Haddad"]
DOMAINS = ["northwind.test", "contoso.test", "fabrikam.test", "example.org"]
TOPICS = {
    "Budget review": "The budget is tight; travel is cut and the contractor line moves to next quarter.",
    "Hiring plan": "We agreed to open a backend role and to interview two designers next week.",
    "Launch date": "The launch slips one week so that the accessibility fixes can land first.",
    "Research findings": "Five user interviews show that onboarding is the main source of confusion.",
    "Security audit": "A dependency audit and rotated API keys are needed before the external review.",
    "Quarterly revenue": "Revenue grew twelve percent against plan, mostly from annual renewals.",
    "Search latency": "Search latency regressed after the index change; a rollback is on the table.",
    "Pricing test": "The pricing page test favours the annual plan; the monthly plan loses trial users.",
    "Offsite agenda": "The offsite is in Lisbon; please send agenda items and dietary needs by Friday.",
    "Invoice 2231": "Please find the invoice attached; payment terms are thirty days.",
}
REPLIES = [
    "Thanks, that works for me.",
    "Can we discuss this on Thursday? I have a few questions about the numbers.",
    "Agreed. I will update the plan and share it tomorrow.",
    "I am not sure about the timeline; the vendor contract is still open.",
    "Looping in the finance team for the budget part.",
    "Sounds good. Let us keep the rollout checklist as it is.",
]
FILLER = ("follow up roadmap draft review metrics customer feedback sprint backlog estimate risk owner scope").split()  # noqa: SIM905
ME = "me@localhost"
START = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)


def _person(rng: random.Random) -> tuple[str, str]:
    first, last = rng.choice(FIRST), rng.choice(LAST)
    email = f"{first.lower().replace('á', 'a').replace('è', 'e')}.{last.lower()}@{rng.choice(DOMAINS)}"
    return f"{first} {last}", email


def _header(name: str, value: str) -> str:
    if value.isascii():
        return f"{name}: {value}"
    encoded = base64.b64encode(value.encode("utf-8")).decode()
    return f"{name}: =?utf-8?b?{encoded}?="


def _address(display: str, email: str) -> str:
    if display.isascii():
        return f'"{display}" <{email}>'
    return f"=?utf-8?b?{base64.b64encode(display.encode()).decode()}?= <{email}>"


def render(
    *,
    sender: tuple[str, str],
    to: tuple[str, str],
    subject: str,
    body: str,
    when: datetime,
    msgid: str,
    parent: str | None = None,
    references: list[str] | None = None,
    attachment: tuple[str, str, bytes] | None = None,
) -> bytes:
    lines = [
        "From: " + _address(*sender),
        "To: " + _address(*to),
        _header("Subject", subject),
        "Date: " + format_datetime(when),
        f"Message-ID: {msgid}",
        "MIME-Version: 1.0",
    ]
    if parent:
        lines.append(f"In-Reply-To: {parent}")
        lines.append("References: " + " ".join(references or [parent]))
    text = body.encode("utf-8")
    if attachment is None:
        lines += ["Content-Type: text/plain; charset=utf-8", "Content-Transfer-Encoding: 8bit", "", body, ""]
        return "\r\n".join(lines).encode("utf-8")
    name, ctype, data = attachment
    boundary = f"=_b{abs(hash(msgid)) % 10**12}"
    encoded = base64.encodebytes(data).decode().replace("\n", "\r\n")
    lines += [
        f'Content-Type: multipart/mixed; boundary="{boundary}"',
        "",
        f"--{boundary}",
        "Content-Type: text/plain; charset=utf-8",
        "Content-Transfer-Encoding: 8bit",
        "",
        text.decode("utf-8"),
        f"--{boundary}",
        f'Content-Type: {ctype}; name="{name}"',
        f'Content-Disposition: attachment; filename="{name}"',
        "Content-Transfer-Encoding: base64",
        "",
        encoded,
        f"--{boundary}--",
        "",
    ]
    return "\r\n".join(lines).encode("utf-8")


def _store(root: Path, folder: str, key: str, data: bytes, seen: bool) -> None:
    base = root / folder if folder else root
    if seen:
        (base / "cur" / f"{key}:2,S").write_bytes(data)
    else:
        (base / "new" / key).write_bytes(data)


def write_mailbox(root: Path, rng: random.Random, *, messages: int = 300, me: str = ME) -> int:
    """Write about `messages` messages as conversations; returns how many were written."""
    for folder in ("", ".Sent", ".Drafts", ".Trash", ".Junk"):
        for sub in ("cur", "new", "tmp"):
            (root / folder / sub if folder else root / sub).mkdir(parents=True, exist_ok=True)
    written = 0
    thread = 0
    myself = ("Me", me)
    while written < messages:
        thread += 1
        topic = rng.choice(list(TOPICS))
        other = _person(rng)
        when = START - timedelta(minutes=rng.randint(10, 60 * 24 * 200))
        chain: list[str] = []
        subject = topic if rng.random() < 0.7 else f"{topic} ({rng.choice(FILLER)})"
        for turn in range(min(rng.randint(1, 5), messages - written)):
            mine = turn % 2 == 1
            msgid = f"<t{thread}.{turn}.{rng.getrandbits(32):08x}@{(me if mine else other[1]).split('@')[1]}>"
            body = TOPICS[topic] if turn == 0 else rng.choice(REPLIES)
            body += "\n\n" + " ".join(rng.sample(FILLER, 6)).capitalize() + ".\n\n" + (other[0] if not mine else "Me")
            attachment = None
            if turn == 0 and rng.random() < 0.12:
                if topic.startswith("Invoice"):
                    attachment = ("invoice-2231.pdf", "application/pdf", b"%PDF-1.4\n% demo invoice\n%%EOF\n")
                else:
                    notes = f"Notes on {topic}\n- " + "\n- ".join(rng.sample(FILLER, 4)) + "\n"
                    attachment = (f"{topic.lower().replace(' ', '-')}-notes.txt", "text/plain", notes.encode())
            data = render(
                sender=myself if mine else other,
                to=other if mine else myself,
                subject=subject if turn == 0 else f"Re: {subject}",
                body=body,
                when=when,
                msgid=msgid,
                parent=chain[-1] if chain else None,
                references=list(chain),
                attachment=attachment,
            )
            key = f"{int(when.timestamp())}.M{written}P{thread}.demo"
            seen = mine or rng.random() < 0.75
            _store(root, ".Sent" if mine else "", key, data, seen)
            chain.append(msgid)
            when += timedelta(minutes=rng.randint(5, 60 * 30))
            written += 1
    return written


def generate(root: Path, rng: random.Random) -> None:
    write_mailbox(root, rng, messages=300)


STEPS: list[tuple[str, str, dict[str, Any]]] = [
    ("Unread mail, newest first (Gmail query syntax on the local Maildir)", "list_emails", {"query": "is:unread"}),
    (
        "Search: words, from:, has:attachment, dates and OR work on every backend",
        "list_emails",
        {"query": "budget OR invoice has:attachment newer_than:1y", "max_results": 5},
    ),
    (
        "Read the first hit: decoded body, attachments and threading ids",
        "get_email",
        {"message_id": "$last.emails.0.id"},
    ),
    (
        "Reply in its thread (In-Reply-To, References, one 'Re:'); audited in vault/Logs first; a retry with"
        " the same idempotency_key returns this result instead of sending again",
        "send_email",
        {
            "to": "$last.sender",
            "subject": "$last.subject",
            "body": "Thanks, noted.",
            "reply_to_message_id": "$last.id",
            "idempotency_key": "demo-reply-1",
        },
    ),
    ("The conversation, oldest first, with the reply at the end", "get_thread", {"thread_id": "$last.thread_id"}),
]
