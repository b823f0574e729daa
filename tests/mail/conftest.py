"""Fixtures of the mail tests: a Maildir workspace, an MCP client over it, an SMTP sink on loopback."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email import policy
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from deskmcp.mail.server import Settings, create_server
from tests.tool_calls import call as call
from tests.tool_calls import fail as fail

MAIL_ENV = (
    "MAIL_BACKEND", "MAIL_MAILDIR", "MAIL_ADDRESS", "MAIL_SMTP_HOST", "MAIL_SMTP_PORT", "MAIL_SMTP_USER",
    "MAIL_SMTP_PASSWORD", "MAIL_SMTP_SECURITY", "MAIL_MODE", "MAIL_ALLOWED_RECIPIENTS", "MAIL_MAX_RECIPIENTS",
    "MAIL_IMAP_HOST", "VAULT_PATH",
)  # fmt: skip


@pytest.fixture(autouse=True)
def _no_mail_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in MAIL_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return tmp_path / "ws"


@pytest.fixture
def settings_for(workspace: Path) -> Callable[..., Settings]:
    def build(**overrides: Any) -> Settings:
        return Settings(workspace=workspace, **overrides)

    return build


Connect = Callable[..., Client]


@pytest.fixture
def connect(settings_for: Callable[..., Settings]) -> Connect:
    def build(**overrides: Any) -> Client:
        return Client(create_server(settings_for(**overrides)))

    return build


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


def deliver(workspace: Path, raw: bytes, folder: str = "", name: str | None = None, flags: str | None = None) -> Path:
    """Drop a message into the Maildir as another mail program would."""
    base = workspace / "mail" / folder if folder else workspace / "mail"
    for sub in ("cur", "new", "tmp"):
        (base / sub).mkdir(parents=True, exist_ok=True)
    deliver.counter += 1  # type: ignore[attr-defined]
    key = name or f"1700000000.M{deliver.counter}P1.test"  # type: ignore[attr-defined]
    path = base / "cur" / f"{key}:2,{flags}" if flags is not None else base / "new" / key
    path.write_bytes(raw)
    return path


deliver.counter = 0  # type: ignore[attr-defined]


def audit_lines(workspace: Path) -> list[dict[str, Any]]:
    logs = sorted((workspace / "vault" / "Logs").glob("gmail_mcp_*.jsonl"))
    return [json.loads(line) for path in logs for line in path.read_text(encoding="utf-8").splitlines()]


# -- SMTP sink -------------------------------------------------------------------------------


@dataclass
class Received:
    mail_from: str
    rcpt_tos: list[str]
    data: bytes


@dataclass
class SmtpSink:
    host: str
    port: int
    messages: list[Received] = field(default_factory=list)


class _Handler:
    def __init__(self, sink: SmtpSink) -> None:
        self.sink = sink

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.sink.messages.append(
            Received(envelope.mail_from, list(envelope.rcpt_tos), bytes(envelope.original_content))
        )
        return "250 OK"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def smtp_server() -> Iterator[SmtpSink]:
    from aiosmtpd.controller import Controller

    sink = SmtpSink("127.0.0.1", free_port())
    controller = Controller(_Handler(sink), hostname=sink.host, port=sink.port)
    controller.start()
    try:
        yield sink
    finally:
        controller.stop()


@pytest.fixture
def smtp_sink(smtp_server: SmtpSink) -> SmtpSink:
    smtp_server.messages.clear()
    return smtp_server
