"""A password goes only to the host it was configured for: with MAIL_ACCOUNTS, an account on a
server of its own does not inherit MAIL_SMTP_PASSWORD / MAIL_IMAP_PASSWORD (nor the user), and a
server that requires a login then answers auth_required naming the settings to add."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from deskmcp.mail.server import Settings, create_server
from tests.helpers.mail import SinkHandler, SmtpSink
from tests.helpers.network import free_port
from tests.helpers.tool_calls import call, fail
from tests.mail.dovecot import (
    PASSWORD,
    Dovecot,
    dovecot_fixture,  # noqa: F401  (fixture)
    mailbox_fixture,  # noqa: F401  (fixture)
)

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS")]

MAIN_SECRET = "main-account-secret"


@dataclass
class AuthSink(SmtpSink):
    """An SMTP server on loopback that requires AUTH, recording every login offered to it."""

    logins: list[tuple[str, str]] = field(default_factory=list)


@pytest.fixture
def auth_sink() -> Iterator[AuthSink]:
    from aiosmtpd.controller import Controller
    from aiosmtpd.smtp import AuthResult, LoginPassword

    sink = AuthSink("127.0.0.1", free_port())

    def authenticate(server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> AuthResult:
        if isinstance(data, LoginPassword):
            sink.logins.append((data.login.decode(), data.password.decode()))
        return AuthResult(success=True)

    controller = Controller(
        SinkHandler(sink),
        hostname=sink.host,
        port=sink.port,
        authenticator=authenticate,
        auth_required=True,
        auth_require_tls=False,
    )
    controller.start()
    try:
        yield sink
    finally:
        controller.stop()


def main_smtp(**extra: Any) -> dict[str, Any]:
    """The MAIL_SMTP_* of the main account: a server elsewhere, with its user and password."""
    return {
        "smtp_host": "smtp.main.example",
        "smtp_user": "me@main.example",
        "smtp_password": MAIN_SECRET,
        "confirm_sends": False,
        **extra,
    }


def connect_accounts(workspace: Path, accounts: list[dict[str, Any]], **overrides: Any) -> Client:
    return Client(create_server(Settings(workspace=workspace, accounts=json.dumps(accounts), **overrides)))


async def test_security_account_on_its_own_smtp_host_never_receives_the_main_smtp_password(
    workspace: Path, auth_sink: AuthSink
) -> None:
    other = {
        "name": "other",
        "maildir": str(workspace / "other-mail"),
        "address": "me@other.example",
        "smtp_host": auth_sink.host,
        "smtp_port": auth_sink.port,
        "smtp_security": "none",
    }
    (workspace / "other-mail").mkdir(parents=True)
    main = {"name": "main", "maildir": str(workspace / "mail"), "address": "me@main.example"}
    (workspace / "mail").mkdir(parents=True)
    async with connect_accounts(workspace, [main, other], **main_smtp()) as c:
        result = await c.call_tool(
            "send_email", {"to": "bob@corp.test", "subject": "x", "body": "x", "account": "other"}
        )
    assert auth_sink.logins == []
    assert auth_sink.messages == []
    assert result.is_error
    error = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert error["error"] == "auth_required"
    assert "smtp_password_env" in error["message"] and "smtp_user" in error["message"]


async def test_account_on_its_own_smtp_host_sends_with_its_own_password(
    workspace: Path, auth_sink: AuthSink, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTHER_SMTP_PASSWORD", "other-secret")
    other = {
        "name": "other",
        "maildir": str(workspace / "mail"),
        "address": "me@other.example",
        "smtp_host": auth_sink.host,
        "smtp_port": auth_sink.port,
        "smtp_security": "none",
        "smtp_user": "me@other.example",
        "smtp_password_env": "OTHER_SMTP_PASSWORD",
    }
    (workspace / "mail").mkdir(parents=True)
    async with connect_accounts(workspace, [other], **main_smtp()) as c:
        await call(c, "send_email", {"to": "bob@corp.test", "subject": "x", "body": "x"})
    assert auth_sink.logins == [("me@other.example", "other-secret")]
    assert len(auth_sink.messages) == 1


async def test_account_on_the_configured_smtp_host_keeps_its_user_and_password(
    workspace: Path, auth_sink: AuthSink
) -> None:
    same = {"name": "same", "maildir": str(workspace / "mail"), "address": "me@main.example"}
    (workspace / "mail").mkdir(parents=True)
    smtp = main_smtp(smtp_host=auth_sink.host, smtp_port=auth_sink.port, smtp_security="none")
    async with connect_accounts(workspace, [same], **smtp) as c:
        await call(c, "send_email", {"to": "bob@corp.test", "subject": "x", "body": "x"})
    assert auth_sink.logins == [("me@main.example", MAIN_SECRET)]


def test_security_account_settings_keep_each_password_with_its_own_host(workspace: Path) -> None:
    settings = Settings(
        workspace=workspace,
        smtp_host="smtp.main.example",
        smtp_user="me@main.example",
        smtp_password=MAIN_SECRET,
        imap_host="imap.main.example",
        imap_user="me@main.example",
        imap_password=MAIN_SECRET,
        accounts=json.dumps(
            [
                {"name": "same"},
                {"name": "same-host-written", "smtp_host": "SMTP.main.example", "imap_host": "imap.main.example"},
                {"name": "elsewhere", "smtp_host": "smtp.other.example", "imap_host": "imap.other.example"},
                {"name": "own-user", "smtp_host": "smtp.other.example", "smtp_user": "me@other.example"},
            ]
        ),
    )
    accounts = settings.account_settings()

    def secrets(name: str) -> tuple[Any, ...]:
        a = accounts[name]
        return (
            a.smtp_user,
            a.smtp_password and a.smtp_password.get_secret_value(),
            a.imap_user,
            a.imap_password and a.imap_password.get_secret_value(),
        )

    main = ("me@main.example", MAIN_SECRET)
    assert secrets("same") == (*main, *main)
    assert secrets("same-host-written") == (*main, *main)
    assert secrets("elsewhere") == (None, None, None, None)
    assert secrets("own-user") == ("me@other.example", None, *main)


@pytest.mark.e2e
async def test_security_account_on_its_own_imap_host_never_logs_in_with_the_main_imap_password(
    workspace: Path, dovecot: Dovecot, mailbox: str
) -> None:
    other = {
        "name": "other",
        "backend": "imap",
        "imap_host": dovecot.host,
        "imap_port": dovecot.port,
        "imap_user": mailbox,
        "imap_security": "none",
        "address": mailbox,
    }
    main = {"imap_host": "imap.main.example", "imap_user": mailbox, "imap_password": PASSWORD}
    async with connect_accounts(workspace, [other], **main) as c:
        error = await fail(c, "list_emails", {"query": ""})
    assert error["error"] == "auth_required"
    assert "imap_user" in error["message"] and "imap_password_env" in error["message"]
