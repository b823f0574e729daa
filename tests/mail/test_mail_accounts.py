"""Several mail accounts in one mail server (MAIL_ACCOUNTS): each tool's `account` argument, ids,
cursors, idempotency keys and audit lines per account, and the single-account variables unchanged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from deskmcp.mail.server import Settings, create_server, unavailable
from tests.helpers.mail import SmtpSink, audit_lines, deliver, fake_keyring, make_mail
from tests.helpers.tool_calls import call, fail
from tests.mail.dovecot import (
    PASSWORD,
    Dovecot,
    dovecot_fixture,  # noqa: F401  (fixture)
    mailbox_fixture,  # noqa: F401  (fixture)
)

pytestmark = pytest.mark.anyio


def two_maildirs(tmp_path: Path, workspace: Path, **home: Any) -> str:
    """MAIL_ACCOUNTS for "work" (the Maildir `deliver(workspace, ...)` fills) and "home" (the one
    `deliver(tmp_path / "home", ...)` fills), work first. Both folders exist, as a configured
    Maildir must."""
    for folder in (workspace / "mail", tmp_path / "home" / "mail"):
        folder.mkdir(parents=True, exist_ok=True)
    return json.dumps(
        [
            {"name": "work", "maildir": str(workspace / "mail"), "address": "me@work.example"},
            {"name": "home", "maildir": str(tmp_path / "home" / "mail"), "address": "me@home.example", **home},
        ]
    )


def connect_accounts(workspace: Path, accounts: str, **overrides: Any) -> Client:
    return Client(create_server(Settings(workspace=workspace, accounts=accounts, **overrides)))


async def subjects(client: Client, **args: Any) -> list[str]:
    return [m["subject"] for m in (await call(client, "list_emails", {"query": "", **args}))["emails"]]


async def test_each_account_lists_and_reads_its_own_maildir(tmp_path: Path, workspace: Path) -> None:
    deliver(workspace, make_mail("Budget review", "work body"))
    deliver(tmp_path / "home", make_mail("Dinner on Friday", "home body"))

    async with connect_accounts(workspace, two_maildirs(tmp_path, workspace)) as c:
        work = await subjects(c, account="work")
        home = await subjects(c, account="home")
        home_id = (await call(c, "list_emails", {"query": "", "account": "home"}))["emails"][0]["id"]
        email = await call(c, "get_email", {"message_id": home_id, "account": "home"})

    assert work == ["Budget review"]
    assert home == ["Dinner on Friday"]
    assert email["body"].strip() == "home body"


async def test_a_tool_without_account_uses_the_first_account(tmp_path: Path, workspace: Path) -> None:
    deliver(workspace, make_mail("Budget review"))
    deliver(tmp_path / "home", make_mail("Dinner on Friday"))

    async with connect_accounts(workspace, two_maildirs(tmp_path, workspace)) as c:
        listed = await subjects(c)
        accounts = await call(c, "list_accounts")

    assert listed == ["Budget review"]
    assert accounts["accounts"] == [
        {"name": "work", "address": "me@work.example", "backend": "maildir", "mode": "send", "default": True},
        {"name": "home", "address": "me@home.example", "backend": "maildir", "mode": "send", "default": False},
    ]


async def test_an_unknown_account_is_not_found_naming_the_accounts(tmp_path: Path, workspace: Path) -> None:
    async with connect_accounts(workspace, two_maildirs(tmp_path, workspace)) as c:
        error = await fail(c, "list_emails", {"account": "school"})

    assert error["error"] == "not_found"
    assert "No mail account 'school'. The accounts are: work, home" in error["message"]


async def test_a_message_id_from_one_account_is_not_found_in_another_naming_it(tmp_path: Path, workspace: Path) -> None:
    deliver(workspace, make_mail("Budget review"))
    deliver(tmp_path / "home", make_mail("Dinner on Friday"))

    async with connect_accounts(workspace, two_maildirs(tmp_path, workspace)) as c:
        work_id = (await call(c, "list_emails", {"query": ""}))["emails"][0]["id"]
        error = await fail(c, "get_email", {"message_id": work_id, "account": "home"})
        moved = await fail(c, "move_email", {"message_id": work_id, "destination_label": "Done", "account": "home"})
        still = await call(c, "get_email", {"message_id": work_id, "account": "work"})

    assert error["error"] == "not_found"
    assert "in mail account 'home'" in error["message"]
    assert error["details"]["account"] == "home"
    assert moved["error"] == "not_found"
    assert still["subject"] == "Budget review"


async def test_a_cursor_from_one_account_is_refused_by_another(tmp_path: Path, workspace: Path) -> None:
    for n in range(3):
        deliver(workspace, make_mail(f"Work {n}", days_ago=n + 1))
        deliver(tmp_path / "home", make_mail(f"Home {n}", days_ago=n + 1))

    async with connect_accounts(workspace, two_maildirs(tmp_path, workspace)) as c:
        page = await call(c, "list_emails", {"query": "", "max_results": 1, "account": "work"})
        args = {"query": "", "max_results": 1, "cursor": page["next_cursor"]}
        error = await fail(c, "list_emails", {**args, "account": "home"})
        second = await call(c, "list_emails", {**args, "account": "work"})

    assert error["error"] == "bad_request"
    assert "in mail account 'home'" in error["message"]
    assert [m["subject"] for m in second["emails"]] == ["Work 1"]


async def test_send_goes_from_the_chosen_account_with_its_own_keys_and_audit_lines(
    tmp_path: Path, workspace: Path
) -> None:
    mail = {"to": "bob@example.org", "subject": "Hello", "body": "b", "idempotency_key": "k1"}

    async with connect_accounts(workspace, two_maildirs(tmp_path, workspace)) as c:
        home = await call(c, "send_email", {**mail, "account": "home"})
        again = await call(c, "send_email", {**mail, "account": "home"})
        work = await call(c, "send_email", mail)  # the same key in another account is another send
        home_sent = (await call(c, "list_emails", {"query": "in:sent", "account": "home"}))["emails"]
        work_sent = (await call(c, "list_emails", {"query": "in:sent", "account": "work"}))["emails"]

    assert again["duplicate"] is True and again["message_id"] == home["message_id"]
    assert work["duplicate"] is False
    assert [m["sender"] for m in home_sent] == ["me@home.example"]
    assert [m["sender"] for m in work_sent] == ["me@work.example"]
    lines = audit_lines(workspace)
    assert [(line["event"], line["account"]) for line in lines] == [
        ("pre_send_audit", "home"),
        ("send_result", "home"),
        ("pre_send_audit", "work"),
        ("send_result", "work"),
    ]
    assert (workspace / ".deskmcp" / "mail-sends-home.sqlite3").is_file()
    assert (workspace / ".deskmcp" / "mail-sends-work.sqlite3").is_file()


async def test_a_read_only_account_refuses_to_send_while_another_sends(tmp_path: Path, workspace: Path) -> None:
    accounts = two_maildirs(tmp_path, workspace, mode="read_only")
    mail = {"to": "bob@example.org", "subject": "Hello", "body": "b"}

    async with connect_accounts(workspace, accounts) as c:
        refused = await fail(c, "send_email", {**mail, "account": "home"})
        sent = await call(c, "send_email", mail)

    assert refused["error"] == "permission_denied"
    assert sent["message_id"]


async def test_every_account_read_only_offers_only_the_reading_tools(tmp_path: Path, workspace: Path) -> None:
    async with connect_accounts(workspace, two_maildirs(tmp_path, workspace), mode="read_only") as c:
        names = {t.name for t in (await c.list_tools()).tools}

    assert "send_email" not in names and "list_emails" in names


async def test_single_account_variables_still_make_one_account_named_default(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MAIL_MAILDIR", str(workspace / "mail"))
    monkeypatch.setenv("MAIL_ADDRESS", "solo@example.org")
    deliver(workspace, make_mail("Budget review"))

    async with Client(create_server(Settings(workspace=workspace))) as c:
        accounts = await call(c, "list_accounts")
        listed = await subjects(c)
        named = await subjects(c, account="default")
        await call(c, "send_email", {"to": "bob@example.org", "subject": "s", "body": "b", "idempotency_key": "k"})

    assert accounts["accounts"] == [
        {"name": "default", "address": "solo@example.org", "backend": "maildir", "mode": "send", "default": True}
    ]
    assert listed == named == ["Budget review"]
    assert (workspace / ".deskmcp" / "mail-sends.sqlite3").is_file()
    assert (workspace / ".deskmcp" / "index" / "mail.sqlite3").is_file()


async def test_mail_accounts_can_be_a_toml_file(tmp_path: Path, workspace: Path) -> None:
    deliver(tmp_path / "home", make_mail("Dinner on Friday"))
    path = tmp_path / "accounts.toml"
    path.write_text(
        f'[work]\nmaildir = "{workspace / "mail"}"\n\n[home]\nmaildir = "{tmp_path / "home" / "mail"}"\n',
        encoding="utf-8",
    )

    async with connect_accounts(workspace, str(path)) as c:
        names = [a["name"] for a in (await call(c, "list_accounts"))["accounts"]]
        home = await subjects(c, account="home")

    assert names == ["work", "home"]
    assert home == ["Dinner on Friday"]


def test_account_password_comes_from_the_environment_variable_it_names(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORK_IMAP_PASSWORD", "s3cret")
    accounts = json.dumps(
        {"work": {"backend": "imap", "imap_host": "imap.example", "imap_password_env": "WORK_IMAP_PASSWORD"}}
    )

    work = Settings(workspace=workspace, accounts=accounts).account_settings()["work"]

    assert work.imap_password is not None and work.imap_password.get_secret_value() == "s3cret"
    assert work.imap_host == "imap.example" and work.backend == "imap"


@pytest.mark.parametrize(
    ("accounts", "expected"),
    [
        ("[{not json", "MAIL_ACCOUNTS is not valid JSON or TOML"),
        ("[]", "MAIL_ACCOUNTS must hold at least one account"),
        ('[{"name": "a"}, {"name": "a"}]', "names the account 'a' twice"),
        ('{"work": {"imap_hots": "x"}}', "account 'work' is not valid (imap_hots: Extra inputs are not permitted"),
        ('{"work": {"imap_password": "x"}}', "account 'work' is not valid (imap_password"),
        ('{"../up": {}}', "account '../up' is not valid"),
        ('{"work": {"imap_password_env": "NO_SUCH_VARIABLE_SET"}}', "names NO_SUCH_VARIABLE_SET, which is not set"),
        ("/no/such/accounts.json", "names the file /no/such/accounts.json, which cannot be read"),
    ],
)
def test_mail_accounts_that_cannot_be_used_keep_the_server_from_running_saying_why(
    workspace: Path, accounts: str, expected: str
) -> None:
    reason = unavailable(Settings(workspace=workspace, accounts=accounts))

    assert reason is not None and expected in reason


def test_an_account_missing_what_its_backend_needs_is_named(tmp_path: Path, workspace: Path) -> None:
    accounts = json.dumps([{"name": "work", "maildir": str(tmp_path)}, {"name": "imap", "backend": "imap"}])

    assert unavailable(Settings(workspace=workspace, accounts=accounts)) == (
        "mail account 'imap': MAIL_BACKEND=imap needs MAIL_IMAP_HOST (and MAIL_IMAP_USER, MAIL_IMAP_PASSWORD)"
    )


async def test_an_imap_account_and_a_maildir_account_serve_side_by_side(
    workspace: Path, dovecot: Dovecot, mailbox: str, smtp_sink: SmtpSink, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = dovecot.client(mailbox)
    try:
        client.append("INBOX", make_mail("Over IMAP", to=mailbox))
    finally:
        client.logout()
    deliver(workspace, make_mail("In the Maildir"))
    monkeypatch.setenv("CORP_IMAP_PASSWORD", PASSWORD)
    imap = {
        **dovecot.settings(mailbox, smtp_host=smtp_sink.host, smtp_port=smtp_sink.port, smtp_security="none"),
        "imap_password_env": "CORP_IMAP_PASSWORD",
    }
    del imap["imap_password"]
    accounts = json.dumps({"local": {"maildir": str(workspace / "mail")}, "corp": imap})

    async with connect_accounts(workspace, accounts) as c:
        local = await subjects(c)
        corp = await subjects(c, account="corp")
        corp_id = (await call(c, "list_emails", {"query": "", "account": "corp"}))["emails"][0]["id"]
        in_local = await fail(c, "get_email", {"message_id": corp_id})
        sent = await call(
            c, "send_email", {"to": "bob@example.org", "subject": "From corp", "body": "b", "account": "corp"}
        )

    assert local == ["In the Maildir"]
    assert corp == ["Over IMAP"]
    assert in_local["error"] == "not_found" and "in mail account 'local'" in in_local["message"]
    assert sent["message_id"]
    assert [m.mail_from for m in smtp_sink.messages] == [mailbox]


def test_security_a_password_from_the_os_keyring_is_looked_up_for_its_host_and_user(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two accounts with the same user on different hosts never share a keyring password: the entry
    names the host it was stored for."""
    from deskmcp.mail.service import secret

    asked = fake_keyring(monkeypatch, {"smtp:smtp.work.test:bob": "work-secret"})

    assert secret(None, "smtp", "bob", "SMTP.work.test") == "work-secret"
    assert secret(None, "smtp", "bob", "smtp.elsewhere.test") is None
    assert secret(None, "smtp", "bob", None) is None
    assert asked == ["deskmcp/smtp:smtp.work.test:bob", "deskmcp/smtp:smtp.elsewhere.test:bob"]
