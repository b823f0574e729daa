"""Mail leaves only with the person's yes when their client can ask (MCP elicitation): send_email,
forward_email and send_draft show the account, every recipient, the subject, the start of the text and
the attachments, and send nothing on decline, cancel or an unticked box. Addresses vouched for by
MAIL_ALLOWED_RECIPIENTS, a retried key already sent, MAIL_CONFIRM_SENDS=false and a client that cannot
ask (the orchestrator's own, a script) send as before. Checked on the wire: an SMTP server on loopback."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client

from deskmcp.mail.server import Settings, create_server
from tests.helpers.mail import SmtpSink
from tests.helpers.person import Person
from tests.helpers.tool_calls import call, fail

pytestmark = pytest.mark.anyio

PROTOCOLS = ["legacy", "2026-07-28"]
MAIL = {"to": "eve@elsewhere.test", "cc": "bob@corp.test", "subject": "Q3 numbers", "body": "Figures attached."}


def smtp(sink: SmtpSink, **extra: Any) -> dict[str, Any]:
    return {"smtp_host": sink.host, "smtp_port": sink.port, "smtp_security": "none", "address": "me@corp.test", **extra}


def client(settings: Settings, mode: str = "legacy", person: Person | None = None) -> Client:
    return Client(create_server(settings), mode=mode, elicitation_callback=person.answer if person else None)


@pytest.mark.parametrize("mode", PROTOCOLS)
async def test_send_email_is_sent_once_the_person_confirms_what_they_were_shown(
    settings_for: Any, smtp_sink: SmtpSink, mode: str
) -> None:
    person = Person("accept")
    async with client(settings_for(**smtp(smtp_sink)), mode, person) as c:
        result = await call(
            c, "send_email", {**MAIL, "attachments": [{"content_base64": "aGk=", "filename": "q3.csv"}]}
        )
    assert result["rfc_message_id"]
    [question] = person.asked
    for shown in ("Send this email?", "From: me@corp.test", "To: eve@elsewhere.test", "Cc: bob@corp.test"):
        assert shown in question
    assert "Subject: Q3 numbers" in question
    assert "Attachments: q3.csv" in question
    assert "Figures attached." in question
    assert [m.rcpt_tos for m in smtp_sink.messages] == [["eve@elsewhere.test", "bob@corp.test"]]


@pytest.mark.parametrize("mode", PROTOCOLS)
@pytest.mark.parametrize("reply", ["decline", "cancel", "unticked"])
async def test_security_send_email_sends_nothing_when_the_person_declines_or_cancels(
    settings_for: Any, smtp_sink: SmtpSink, mode: str, reply: Any
) -> None:
    person = Person(reply)
    async with client(settings_for(**smtp(smtp_sink)), mode, person) as c:
        error = await fail(c, "send_email", MAIL)
    assert error["error"] == "permission_denied"
    assert "nothing was sent" in error["message"]
    assert smtp_sink.messages == []


async def test_security_forward_email_and_send_draft_ask_the_person_too(settings_for: Any, smtp_sink: SmtpSink) -> None:
    person = Person("decline")
    async with client(settings_for(**smtp(smtp_sink)), "legacy", person) as c:
        draft = await call(c, "create_draft", MAIL)
        error = await fail(c, "send_draft", {"draft_id": draft["draft_id"]})
        assert error["error"] == "permission_denied"
        await call(c, "create_draft", {**MAIL, "to": "me@corp.test"})
        [saved] = (await call(c, "list_emails", {"query": "in:drafts"}))["emails"][-1:]
        forwarded = await fail(c, "forward_email", {"message_id": saved["id"], "to": "mallory@evil.test"})
    assert forwarded["error"] == "permission_denied"
    assert smtp_sink.messages == []
    assert person.asked[0].startswith("Send this draft?")
    assert "To: eve@elsewhere.test" in person.asked[0]
    assert person.asked[1].startswith("Forward this email?")
    assert "To: mallory@evil.test" in person.asked[1]
    assert "Subject: Fwd: Q3 numbers" in person.asked[1]


async def test_addresses_on_the_allowlist_are_sent_without_asking(settings_for: Any, smtp_sink: SmtpSink) -> None:
    person = Person("decline")
    settings = settings_for(**smtp(smtp_sink, allowed_recipients="@elsewhere.test,@corp.test"))
    async with client(settings, "legacy", person) as c:
        await call(c, "send_email", MAIL)
    assert person.asked == []
    assert len(smtp_sink.messages) == 1


async def test_mail_confirm_sends_off_sends_without_asking_for_unattended_setups(
    settings_for: Any, smtp_sink: SmtpSink
) -> None:
    person = Person("decline")
    async with client(settings_for(**smtp(smtp_sink, confirm_sends=False)), "legacy", person) as c:
        await call(c, "send_email", MAIL)
    assert person.asked == []
    assert len(smtp_sink.messages) == 1


async def test_a_client_that_cannot_ask_sends_as_before(settings_for: Any, smtp_sink: SmtpSink) -> None:
    async with client(settings_for(**smtp(smtp_sink))) as c:
        await call(c, "send_email", MAIL)
    assert len(smtp_sink.messages) == 1


async def test_a_retry_of_a_key_already_sent_answers_from_the_journal_without_asking_again(
    settings_for: Any, smtp_sink: SmtpSink
) -> None:
    person = Person("accept")
    async with client(settings_for(**smtp(smtp_sink)), "legacy", person) as c:
        first = await call(c, "send_email", {**MAIL, "idempotency_key": "k1"})
        again = await call(c, "send_email", {**MAIL, "idempotency_key": "k1"})
    assert again["duplicate"] is True
    assert again["rfc_message_id"] == first["rfc_message_id"]
    assert len(person.asked) == 1
    assert len(smtp_sink.messages) == 1


async def test_a_send_that_would_be_refused_is_refused_before_the_person_is_asked(
    settings_for: Any, smtp_sink: SmtpSink
) -> None:
    person = Person("accept")
    async with client(settings_for(**smtp(smtp_sink)), "legacy", person) as c:
        error = await fail(c, "send_email", {**MAIL, "to": "not an address"})
    assert error["error"] == "bad_request"
    assert person.asked == []
