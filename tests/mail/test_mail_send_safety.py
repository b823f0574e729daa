"""What leaves the machine: drafts written by other mail programs, header values, keys reused
across send_email and send_draft. Checked at a real SMTP server on loopback (aiosmtpd)."""

from __future__ import annotations

import os
from email import message_from_bytes, policy
from pathlib import Path

import orjson
import pytest

from tests.helpers.mail import SmtpSink, audit_lines, deliver, make_mail
from tests.helpers.tool_calls import Connect, call, fail

pytestmark = pytest.mark.anyio


def smtp(sink: SmtpSink, **extra: object) -> dict[str, object]:
    return {
        "smtp_host": sink.host,
        "smtp_port": sink.port,
        "smtp_security": "none",
        "address": "me@corp.test",
        **extra,
    }


def saved_draft(workspace: Path, extra_headers: str, to: str = "friend@example.org") -> None:
    """A draft another mail program left in the Drafts folder."""
    raw = (
        f"From: me@corp.test\r\nTo: {to}\r\nSubject: Plan\r\nMessage-ID: <draft-1@corp.test>\r\n"
        f"{extra_headers}MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nThe plan.\r\n"
    ).encode()
    deliver(workspace, raw, folder=".Drafts", flags="DS")


async def only_draft_id(c: object) -> str:
    drafts = await call(c, "list_drafts")  # type: ignore[arg-type]
    assert len(drafts["drafts"]) == 1
    return drafts["drafts"][0]["id"]


async def test_security_send_draft_ignores_resent_to_outside_the_allowlist(
    connect: Connect, workspace: Path, smtp_sink: SmtpSink
) -> None:
    saved_draft(workspace, "Resent-To: leak@evil.test\r\nResent-Bcc: leak2@evil.test\r\n")
    async with connect(**smtp(smtp_sink, allowed_recipients="@example.org")) as c:
        sent = await call(c, "send_draft", {"draft_id": await only_draft_id(c)})
    assert len(smtp_sink.messages) == 1
    received = smtp_sink.messages[0]
    assert received.rcpt_tos == ["friend@example.org"]
    assert received.mail_from == "me@corp.test"
    assert b"evil.test" not in received.data
    wire = message_from_bytes(received.data, policy=policy.default)
    assert wire["Message-ID"] == sent["rfc_message_id"] == "<draft-1@corp.test>"
    assert wire.get_content().strip() == "The plan."


async def test_security_send_draft_refuses_a_second_to_header(
    connect: Connect, workspace: Path, smtp_sink: SmtpSink
) -> None:
    saved_draft(workspace, "To: leak@evil.test\r\n")
    async with connect(**smtp(smtp_sink, allowed_recipients="@example.org")) as c:
        error = await fail(c, "send_draft", {"draft_id": await only_draft_id(c)})
        drafts = await call(c, "list_drafts")
    assert error["error"] == "bad_request" and error["details"]["field"] == "to"
    assert smtp_sink.messages == [] and audit_lines(workspace) == []
    assert len(drafts["drafts"]) == 1  # kept, to be fixed or recreated


async def test_security_send_draft_sends_from_the_configured_address_not_the_drafts_from(
    connect: Connect, workspace: Path, smtp_sink: SmtpSink
) -> None:
    raw = make_mail("Wire money", "now", sender="The CEO <ceo@bank.test>", to="friend@example.org")
    deliver(workspace, raw, folder=".Drafts", flags="DS")
    async with connect(**smtp(smtp_sink, display_name="Me Myself")) as c:
        await call(c, "send_draft", {"draft_id": await only_draft_id(c)})
    received = smtp_sink.messages[0]
    wire = message_from_bytes(received.data, policy=policy.default)
    assert received.mail_from == "me@corp.test" and received.rcpt_tos == ["friend@example.org"]
    assert wire["From"] == "Me Myself <me@corp.test>" and b"ceo@bank.test" not in received.data


async def test_security_send_draft_checks_every_recipient_against_the_allowlist(
    connect: Connect, workspace: Path, smtp_sink: SmtpSink
) -> None:
    saved_draft(workspace, "Bcc: leak@evil.test\r\n")
    async with connect(**smtp(smtp_sink, allowed_recipients="@example.org")) as c:
        error = await fail(c, "send_draft", {"draft_id": await only_draft_id(c)})
    assert error["error"] == "permission_denied" and error["details"]["refused"] == ["leak@evil.test"]
    assert smtp_sink.messages == []


async def test_send_draft_keeps_attachments_and_bcc_reaches_only_the_envelope(
    connect: Connect, workspace: Path, smtp_sink: SmtpSink
) -> None:
    raw = make_mail(
        "Report", "see attached", sender="me@corp.test", to="a@example.org", attachment=("r.csv", b"a,b\n", "text/csv")
    )
    raw = raw.replace(b"To: a@example.org\r\n", b"To: a@example.org\r\nBcc: hidden@example.org\r\n")
    deliver(workspace, raw, folder=".Drafts", flags="DS")
    async with connect(**smtp(smtp_sink)) as c:
        sent = await call(c, "send_draft", {"draft_id": await only_draft_id(c)})
        copy = await call(c, "get_email", {"message_id": sent["message_id"]})
    received = smtp_sink.messages[0]
    assert sorted(received.rcpt_tos) == ["a@example.org", "hidden@example.org"]
    assert b"hidden@example.org" not in received.data
    assert copy["attachment_names"] == ["r.csv"] and copy["body"] == "see attached"
    assert copy["bcc"] == "hidden@example.org"


async def test_send_draft_with_a_key_used_by_send_email_is_a_conflict(
    connect: Connect, workspace: Path, smtp_sink: SmtpSink
) -> None:
    async with connect(**smtp(smtp_sink)) as c:
        await call(c, "send_email", {"to": "a@example.org", "subject": "s", "body": "b", "idempotency_key": "k1"})
        draft = await call(c, "create_draft", {"to": "b@example.org", "subject": "d", "body": "d"})
        error = await fail(c, "send_draft", {"draft_id": draft["draft_id"], "idempotency_key": "k1"})
        drafts = await call(c, "list_drafts")
    assert error["error"] == "conflict" and error["details"]["idempotency_key"] == "k1"
    assert len(smtp_sink.messages) == 1 and len(drafts["drafts"]) == 1


async def test_send_draft_reusing_its_key_for_another_draft_is_a_conflict(
    connect: Connect, smtp_sink: SmtpSink
) -> None:
    async with connect(**smtp(smtp_sink)) as c:
        first = await call(c, "create_draft", {"to": "a@example.org", "subject": "one", "body": "1"})
        second = await call(c, "create_draft", {"to": "b@example.org", "subject": "two", "body": "2"})
        await call(c, "send_draft", {"draft_id": first["draft_id"], "idempotency_key": "d1"})
        error = await fail(c, "send_draft", {"draft_id": second["draft_id"], "idempotency_key": "d1"})
    assert error["error"] == "conflict"
    assert [m.rcpt_tos for m in smtp_sink.messages] == [["a@example.org"]]


async def test_send_draft_retried_with_its_key_after_sending_returns_the_first_result(
    connect: Connect, smtp_sink: SmtpSink
) -> None:
    async with connect(**smtp(smtp_sink)) as c:
        draft = await call(c, "create_draft", {"to": "a@example.org", "subject": "one", "body": "1"})
        first = await call(c, "send_draft", {"draft_id": draft["draft_id"], "idempotency_key": "d2"})
        again = await call(c, "send_draft", {"draft_id": draft["draft_id"], "idempotency_key": "d2"})
    assert first["duplicate"] is False and again["duplicate"] is True
    assert again["message_id"] == first["message_id"] and len(smtp_sink.messages) == 1


@pytest.mark.parametrize("char", ["\u2028", "\u2029", "\x85", "\v", "\f", "\x1c", "\x00", "\x1b"])
@pytest.mark.parametrize(
    ("tool", "field"), [("send_email", "subject"), ("create_draft", "subject"), ("send_email", "to")]
)
async def test_security_header_values_with_unicode_line_breaks_or_controls_are_bad_requests(
    connect: Connect, workspace: Path, char: str, tool: str, field: str
) -> None:
    args = {"to": "a@example.org", "subject": "Plan", "body": "b"}
    args[field] = f'"Bo{char}b" <a@example.org>' if field == "to" else f"Plan{char}Bcc: x@evil.test"
    async with connect() as c:
        error = await fail(c, tool, args)
        everything = await call(c, "list_emails", {"query": "in:anywhere"})
    assert error["error"] == "bad_request" and error["details"]["field"] == field
    assert f"U+{ord(char):04X}" in error["message"]
    assert everything["emails"] == [] and audit_lines(workspace) == []


async def test_a_tab_in_a_subject_is_kept(connect: Connect) -> None:
    async with connect() as c:
        sent = await call(c, "send_email", {"to": "a@example.org", "subject": "A\tB", "body": "b"})
        copy = await call(c, "get_email", {"message_id": sent["message_id"]})
    assert copy["subject"] == "A B"


async def test_security_mail_files_are_created_0600_and_folders_0700(connect: Connect, workspace: Path) -> None:
    old = os.umask(0o022)  # the usual umask, which would leave files 0644 and folders 0755
    try:
        async with connect() as c:
            deliver(workspace, make_mail("Files", "see", attachment=("n.txt", b"notes", "text/plain")))
            message_id = (await call(c, "list_emails"))["emails"][0]["id"]
            await call(c, "add_label", {"message_id": message_id, "label_name": "Kept"})
            await call(c, "get_attachment", {"message_id": message_id, "index": 0, "save": True})
            await call(c, "send_email", {"to": "a@example.org", "subject": "s", "body": "b", "idempotency_key": "p"})
            await call(c, "create_draft", {"to": "a@example.org", "subject": "d", "body": "d"})
            await call(c, "move_email", {"message_id": message_id, "destination_label": "Projects/New"})
    finally:
        os.umask(old)
    made = [workspace / "mail", workspace / ".deskmcp", workspace / "attachments"]
    wide = [
        f"{path.relative_to(workspace)} {path.stat().st_mode & 0o777:o}"
        for top in made
        for path in [top, *top.rglob("*")]
        if path.stat().st_mode & 0o777 != (0o700 if path.is_dir() else 0o600)
        # messages delivered by the test itself, as another mail program would, keep their mode
        and not (path.is_file() and path.name.startswith("1700000000."))
        # tantivy writes its segment files under the umask; their 0700 folder keeps them private
        and not (path.is_file() and path.parent.name.endswith(".text"))
    ]
    assert (workspace / ".deskmcp" / "mail-sends.sqlite3").is_file()
    assert (workspace / "mail" / "deskmcp-labels.sqlite3").is_file()
    assert wide == [], wide


async def test_send_email_with_a_missing_vault_path_is_not_found_and_creates_nothing(
    connect: Connect, tmp_path: Path, smtp_sink: SmtpSink
) -> None:
    missing = tmp_path / "no-such-vault"
    async with connect(**smtp(smtp_sink, vault_path=missing)) as c:
        error = await fail(c, "send_email", {"to": "a@example.org", "subject": "s", "body": "b"})
        keyed = await fail(
            c, "send_email", {"to": "a@example.org", "subject": "s", "body": "b", "idempotency_key": "v"}
        )
        draft = await call(c, "create_draft", {"to": "a@example.org", "subject": "d", "body": "d"})
        from_draft = await fail(c, "send_draft", {"draft_id": draft["draft_id"]})
        in_sent = await call(c, "list_emails", {"query": "in:sent"})
    for answer in (error, keyed, from_draft):
        assert answer["error"] == "not_found", answer
        assert answer["details"] == {"variable": "VAULT_PATH", "path": str(missing)}
        assert "VAULT_PATH" in answer["message"] and str(missing) in answer["message"]
    assert not missing.exists() and smtp_sink.messages == [] and in_sent["emails"] == []


async def test_send_email_answers_which_audit_log_recorded_it(connect: Connect, tmp_path: Path) -> None:
    vault = tmp_path / "MyVault"
    vault.mkdir()
    async with connect(vault_path=vault) as c:
        sent = await call(c, "send_email", {"to": "a@example.org", "subject": "s", "body": "b"})
    logs = list((vault / "Logs").glob("gmail_mcp_*.jsonl"))
    assert [str(p) for p in logs] == [sent["audit_log"]]
    assert [line["event"] for line in map(orjson.loads, logs[0].read_bytes().splitlines())] == [
        "pre_send_audit",
        "send_result",
    ]


async def test_send_email_without_vault_path_audits_into_the_default_vault(connect: Connect, workspace: Path) -> None:
    async with connect() as c:
        sent = await call(c, "send_email", {"to": "a@example.org", "subject": "s", "body": "b"})
    assert Path(sent["audit_log"]).parent == workspace / "vault" / "Logs"
    assert len(audit_lines(workspace)) == 2


async def test_forward_email_keeps_attachments_and_quotes_the_original(
    connect: Connect, workspace: Path, smtp_sink: SmtpSink
) -> None:
    deliver(
        workspace,
        make_mail("Q3 figures", "Numbers inside.", msgid="<q3@x>", attachment=("q3.csv", b"q,v\n3,9\n", "text/csv")),
    )
    async with connect(**smtp(smtp_sink)) as c:
        original = (await call(c, "list_emails"))["emails"][0]
        sent = await call(
            c, "forward_email", {"message_id": original["id"], "to": "boss@example.org", "body": "FYI, see below."}
        )
        copy = await call(c, "get_email", {"message_id": sent["message_id"]})
    received = smtp_sink.messages[0]
    assert received.rcpt_tos == ["boss@example.org"] and received.mail_from == "me@corp.test"
    wire = message_from_bytes(received.data, policy=policy.default)
    assert wire["Subject"] == "Fwd: Q3 figures"
    assert copy["attachment_names"] == ["q3.csv"]
    assert copy["body"].startswith("FYI, see below.") and "Numbers inside." in copy["body"]
    assert "From: Alice <alice@example.org>" in copy["body"]
    assert [line["event"] for line in audit_lines(workspace)] == ["pre_send_audit", "send_result"]
    assert sent["audit_log"].startswith(str(workspace / "vault" / "Logs"))


async def test_security_forward_email_is_held_to_the_recipient_allowlist(
    connect: Connect, workspace: Path, smtp_sink: SmtpSink
) -> None:
    deliver(workspace, make_mail("Secret", "s3cret"))
    async with connect(**smtp(smtp_sink, allowed_recipients="@corp.test")) as c:
        original = (await call(c, "list_emails"))["emails"][0]
        error = await fail(c, "forward_email", {"message_id": original["id"], "to": "leak@evil.test"})
    assert error["error"] == "permission_denied" and error["details"]["refused"] == ["leak@evil.test"]
    assert smtp_sink.messages == [] and audit_lines(workspace) == []


async def test_forward_email_with_the_same_key_sends_once_and_another_request_is_a_conflict(
    connect: Connect, workspace: Path, smtp_sink: SmtpSink
) -> None:
    deliver(workspace, make_mail("Fwd: Already forwarded", "x"))
    async with connect(**smtp(smtp_sink)) as c:
        original = (await call(c, "list_emails"))["emails"][0]
        args = {"message_id": original["id"], "to": "a@example.org", "idempotency_key": "f1"}
        first = await call(c, "forward_email", args)
        again = await call(c, "forward_email", args)
        other = await fail(c, "forward_email", {**args, "to": "b@example.org"})
        missing = await fail(c, "forward_email", {"message_id": "nope", "to": "a@example.org"})
    assert first["duplicate"] is False and again["duplicate"] is True and len(smtp_sink.messages) == 1
    assert other["error"] == "conflict" and missing["error"] == "not_found"
    wire = message_from_bytes(smtp_sink.messages[0].data, policy=policy.default)
    assert wire["Subject"] == "Fwd: Already forwarded"


async def test_forward_email_is_permission_denied_in_draft_only_mode(connect: Connect, workspace: Path) -> None:
    deliver(workspace, make_mail("Hello", "x"))
    async with connect(mode="draft_only") as c:
        original = (await call(c, "list_emails"))["emails"][0]
        error = await fail(c, "forward_email", {"message_id": original["id"], "to": "a@example.org"})
    assert error["error"] == "permission_denied" and audit_lines(workspace) == []
