"""Mail for the tests: messages built as a mail program would write them, a Maildir to drop them in,
the audit lines a send leaves, and an SMTP capture (a sink) that records what reached it."""

from __future__ import annotations

import itertools
import json
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email import policy
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.network import free_port


def make_mail(
    subject: str = "Hello",
    body: str = "Body text",
    *,
    sender: str = "Alice <alice@example.org>",
    to: str = "me@localhost",
    days_ago: float = 1,
    msgid: str | None = None,
    in_reply_to: str | None = None,
    references: str | None = None,
    attachment: tuple[str, bytes, str] | None = None,
) -> bytes:
    """An RFC 5322 message dated `days_ago` before 2026-11-20 12:00 UTC, with an optional attachment."""
    msg = EmailMessage(policy=policy.SMTP)
    msg["From"] = sender
    msg["To"] = to
    msg["Subject"] = subject
    msg["Date"] = format_datetime(datetime(2026, 11, 20, 12, tzinfo=UTC) - timedelta(days=days_ago))
    msg["Message-ID"] = msgid or make_msgid(domain="example.org")
    if in_reply_to:
        msg["In-Reply-To"] = in_reply_to
    if references:
        msg["References"] = references
    msg.set_content(body)
    if attachment:
        name, data, ctype = attachment
        maintype, subtype = ctype.split("/")
        msg.add_attachment(data, maintype=maintype, subtype=subtype, filename=name)
    return bytes(msg)


# Maildir file names must differ within a test run, whichever test delivers.
_delivery_numbers = itertools.count(1)


def deliver(workspace: Path, raw: bytes, folder: str = "", name: str | None = None, flags: str | None = None) -> Path:
    """Drop a message into the workspace's Maildir as another mail program would: in new/ without
    `flags`, in cur/ with the `:2,` info suffix when `flags` is given (even empty)."""
    base = workspace / "mail" / folder if folder else workspace / "mail"
    for sub in ("cur", "new", "tmp"):
        (base / sub).mkdir(parents=True, exist_ok=True)
    key = name or f"1700000000.M{next(_delivery_numbers)}P1.test"
    path = base / "cur" / f"{key}:2,{flags}" if flags is not None else base / "new" / key
    path.write_bytes(raw)
    return path


def audit_lines(workspace: Path) -> list[dict[str, Any]]:
    """Every line of the mail audit logs in the workspace's vault, oldest log first."""
    logs = sorted((workspace / "vault" / "Logs").glob("gmail_mcp_*.jsonl"))
    return [json.loads(line) for path in logs for line in path.read_text(encoding="utf-8").splitlines()]


@dataclass
class Received:
    mail_from: str
    rcpt_tos: list[str]
    data: bytes


@dataclass
class SmtpSink:
    """Where an SMTP server on loopback listens, and the messages it accepted."""

    host: str
    port: int
    messages: list[Received] = field(default_factory=list)


class SinkHandler:
    """An aiosmtpd handler that accepts every message into a sink."""

    def __init__(self, sink: SmtpSink) -> None:
        self.sink = sink

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.sink.messages.append(
            Received(envelope.mail_from, list(envelope.rcpt_tos), bytes(envelope.original_content))
        )
        return "250 OK"


@contextmanager
def smtp_capture(sink: SmtpSink | None = None, handler: Any = None) -> Iterator[SmtpSink]:
    """An aiosmtpd server for one test: on `sink`'s address (a new sink on a free loopback port
    when none is given), taking each message into the sink, or handing it to `handler` when one is
    given; yields the sink, and stops the server on leaving."""
    from aiosmtpd.controller import Controller

    sink = sink or SmtpSink("127.0.0.1", free_port())
    controller = Controller(handler or SinkHandler(sink), hostname=sink.host, port=sink.port)
    controller.start()
    try:
        yield sink
    finally:
        controller.stop()


def fake_keyring(monkeypatch: pytest.MonkeyPatch, stored: dict[str, str]) -> list[str]:
    """Stand the optional `keyring` package in for this test with `stored` entries (`kind:host:user`
    names under the service `deskmcp`); returns the list of `service/name` lookups made."""
    asked: list[str] = []

    def get_password(service: str, name: str) -> str | None:
        asked.append(f"{service}/{name}")
        return stored.get(name)

    fake = types.ModuleType("keyring")
    fake.get_password = get_password  # type: ignore[attr-defined]
    errors = types.ModuleType("keyring.errors")
    errors.KeyringError = RuntimeError  # type: ignore[attr-defined]
    fake.errors = errors  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "keyring", fake)
    monkeypatch.setitem(sys.modules, "keyring.errors", errors)
    return asked
