"""Sending through a real SMTP server on loopback (aiosmtpd): the bytes that arrive."""

from __future__ import annotations

from email import message_from_bytes, policy
from pathlib import Path

import pytest

from tests.helpers.mail import SmtpSink, audit_lines, deliver, make_mail
from tests.helpers.tool_calls import Connect, call, fail

pytestmark = pytest.mark.anyio


def smtp(sink: SmtpSink) -> dict[str, object]:
    return {"smtp_host": sink.host, "smtp_port": sink.port, "smtp_security": "none", "address": "me@corp.test"}


async def test_reply_over_smtp_carries_threading_headers_on_the_wire(
    connect: Connect, workspace: Path, smtp_sink: SmtpSink
) -> None:
    deliver(workspace, make_mail("Quarterly plan", "v1", msgid="<root@x>"))
    deliver(
        workspace, make_mail("Re: Quarterly plan", "v2", msgid="<mid@x>", in_reply_to="<root@x>", references="<root@x>")
    )
    async with connect(**smtp(smtp_sink)) as c:
        parent = (await call(c, "list_emails", {"query": "v2"}))["emails"][0]
        sent = await call(
            c,
            "send_email",
            {
                "to": "alice@example.org",
                "cc": "carol@example.org",
                "bcc": "dave@example.org",
                "subject": "Quarterly plan",
                "body": "Agreed.",
                "reply_to_message_id": parent["id"],
            },
        )
        in_sent = await call(c, "list_emails", {"query": "in:sent"})
    assert len(smtp_sink.messages) == 1
    received = smtp_sink.messages[0]
    wire = message_from_bytes(received.data, policy=policy.default)
    assert wire["In-Reply-To"] == "<mid@x>"
    assert wire["References"] == "<root@x> <mid@x>"
    assert wire["Subject"] == "Re: Quarterly plan"
    assert wire["Message-ID"] == sent["rfc_message_id"]
    assert wire["Bcc"] is None and b"dave@example.org" not in received.data
    assert sorted(received.rcpt_tos) == ["alice@example.org", "carol@example.org", "dave@example.org"]
    assert received.mail_from == "me@corp.test"
    assert [e["id"] for e in in_sent["emails"]] == [sent["message_id"]]


async def test_smtp_retry_with_the_same_key_delivers_once(connect: Connect, smtp_sink: SmtpSink) -> None:
    args = {"to": "a@example.org", "subject": "Once", "body": "x", "idempotency_key": "smtp-1"}
    async with connect(**smtp(smtp_sink)) as c:
        await call(c, "send_email", args)
        again = await call(c, "send_email", args)
    assert again["duplicate"] is True and len(smtp_sink.messages) == 1


async def test_unreachable_smtp_server_is_send_failed_and_nothing_is_filed(connect: Connect, workspace: Path) -> None:
    from tests.helpers.network import free_port

    settings = {"smtp_host": "127.0.0.1", "smtp_port": free_port(), "smtp_security": "none", "timeout": 5}
    async with connect(**settings) as c:
        error = await fail(c, "send_email", {"to": "a@example.org", "subject": "s", "body": "b"})
        in_sent = await call(c, "list_emails", {"query": "in:sent"})
    assert error["error"] == "send_failed" and "Nothing was sent" in error["message"]
    assert in_sent["emails"] == []
    assert [line.get("outcome") for line in audit_lines(workspace)] == [None, "failed"]
