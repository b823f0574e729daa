"""Fixtures of the mail tests: a Maildir workspace, an MCP client over it, an SMTP sink on loopback."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from deskmcp.mail.server import Settings, create_server
from tests.helpers.mail import SmtpSink, smtp_capture
from tests.helpers.tool_calls import Connect

MAIL_ENV = (
    "MAIL_BACKEND", "MAIL_MAILDIR", "MAIL_ADDRESS", "MAIL_SMTP_HOST", "MAIL_SMTP_PORT", "MAIL_SMTP_USER",
    "MAIL_SMTP_PASSWORD", "MAIL_SMTP_SECURITY", "MAIL_MODE", "MAIL_ALLOWED_RECIPIENTS", "MAIL_MAX_RECIPIENTS",
    "MAIL_IMAP_HOST", "VAULT_PATH", "DOCUMENTS_PATH", "MAIL_MAX_ATTACHMENT_BYTES", "MAIL_CONFIRM_SENDS",
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


@pytest.fixture
def connect(settings_for: Callable[..., Settings]) -> Connect:
    def build(**overrides: Any) -> Client:
        return Client(create_server(settings_for(**overrides)))

    return build


@pytest.fixture(scope="session")
def smtp_server() -> Iterator[SmtpSink]:
    with smtp_capture() as sink:
        yield sink


@pytest.fixture
def smtp_sink(smtp_server: SmtpSink) -> SmtpSink:
    smtp_server.messages.clear()
    return smtp_server
