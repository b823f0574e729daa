"""A message whose Date header is missing or unreadable is dated by when the mail server received it
(IMAP INTERNALDATE, the Maildir's delivery, Gmail's internalDate), in ISO 8601 UTC like every other
date, and `date_source` says so; in listings and in get_email, on every backend."""

from __future__ import annotations

import base64
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.mail import deliver, make_mail
from tests.helpers.tool_calls import Connect, call
from tests.mail.dovecot import (
    Dovecot,
    Loaded,
    append_all,
    dovecot_fixture,  # noqa: F401  (fixture)
    mailbox_fixture,  # noqa: F401  (fixture)
)
from tests.mail.test_mail_gmail import LABELS, Gmail, ok

pytestmark = pytest.mark.anyio

ARRIVED = datetime(2026, 11, 18, 9, 30, tzinfo=UTC)
ARRIVED_ISO = "2026-11-18T09:30:00Z"
HEADERS = b"From: Ann <ann@corp.test>\r\nTo: me@corp.test\r\nSubject: %s\r\nMessage-ID: <%s@corp.test>\r\n"
NO_DATE = HEADERS % (b"No date", b"nodate") + b"\r\nHello.\r\n"
GARBLED = HEADERS % (b"Garbled date", b"garbled") + b"Date: <HR>\r\n\r\nHello.\r\n"
DATED = make_mail("Dated", "Hello.", days_ago=1, msgid="<dated@corp.test>")
EXPECTED = {
    "No date": (ARRIVED_ISO, "received"),
    "Garbled date": (ARRIVED_ISO, "received"),
    "Dated": ("2026-11-19T12:00:00Z", "header"),
}


async def dates(c: Any) -> tuple[dict[str, tuple[str, str]], dict[str, tuple[str, str]]]:
    """(date, date_source) by subject, as listed and as get_email shows them."""
    listed = (await call(c, "list_emails", {"query": "", "max_results": 10}))["emails"]
    full = [await call(c, "get_email", {"message_id": e["id"]}) for e in listed]
    return (
        {e["subject"]: (e["date"], e["date_source"]) for e in listed},
        {e["subject"]: (e["date"], e["date_source"]) for e in full},
    )


@pytest.mark.e2e
async def test_imap_message_without_a_readable_date_is_dated_by_its_internaldate(
    connect: Connect, dovecot: Dovecot, mailbox: str
) -> None:
    append_all(dovecot, mailbox, [Loaded("INBOX", raw, ARRIVED) for raw in (NO_DATE, GARBLED, DATED)])
    async with connect(**dovecot.settings(mailbox)) as c:
        listed, full = await dates(c)
    assert listed == full == EXPECTED


async def test_maildir_message_without_a_readable_date_is_dated_by_its_delivery(
    connect: Connect, workspace: Path
) -> None:
    for raw in (NO_DATE, GARBLED, DATED):
        path = deliver(workspace, raw)
        os.utime(path, (ARRIVED.timestamp(), ARRIVED.timestamp()))
    async with connect() as c:
        listed, full = await dates(c)
    assert listed == full == EXPECTED


def gmail_item(mid: str, raw: bytes, date: str | None) -> dict[str, Any]:
    headers = [{"name": "Subject", "value": mid}, {"name": "From", "value": "ann@corp.test"}]
    if date is not None:
        headers.append({"name": "Date", "value": date})
    return {
        "id": mid,
        "threadId": mid,
        "labelIds": ["INBOX"],
        "snippet": "Hello.",
        "internalDate": str(int(ARRIVED.timestamp() * 1000)),
        "payload": {"mimeType": "text/plain", "headers": headers},
        "raw": base64.urlsafe_b64encode(raw).decode(),
    }


async def test_gmail_message_without_a_readable_date_is_dated_by_its_internal_date(workspace: Path) -> None:
    item = gmail_item("m1", GARBLED, "<HR>")
    gmail = Gmail(workspace, [ok({"messages": [{"id": "m1", "threadId": "m1"}]}), ok(item), LABELS, ok(item)])
    async with gmail.client() as c:
        [listed] = (await call(c, "list_emails", {"query": "", "max_results": 10}))["emails"]
        full = await call(c, "get_email", {"message_id": "m1"})
    assert (listed["date"], listed["date_source"]) == (ARRIVED_ISO, "received")
    assert (full["date"], full["date_source"]) == (ARRIVED_ISO, "received")
