"""Messages built to break a mail reader: one of them must never make the mailbox unusable."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.helpers.mail import deliver, make_mail
from tests.helpers.tool_calls import Connect, call, fail

pytestmark = pytest.mark.anyio


def nested_multiparts(depth: int, subject: str = "Deep") -> bytes:
    head = (
        f"From: Mallory <mallory@evil.test>\r\nTo: me@localhost\r\nSubject: {subject}\r\n"
        "Date: Thu, 19 Nov 2026 10:00:00 +0000\r\nMessage-ID: <deep@evil.test>\r\nMIME-Version: 1.0\r\n"
    ).encode()
    opening = b"".join(b'Content-Type: multipart/mixed; boundary="b%d"\r\n\r\n--b%d\r\n' % (i, i) for i in range(depth))
    closing = b"".join(b"\r\n--b%d--\r\n" % i for i in reversed(range(depth)))
    return head + opening + b"Content-Type: text/plain\r\n\r\nbottom\r\n" + closing


def wide_multiparts(parts: int) -> bytes:
    head = b"From: Digest <digest@lists.test>\r\nSubject: Wide\r\nMIME-Version: 1.0\r\n"
    body = b"".join(
        b'--outer\r\nContent-Type: multipart/alternative; boundary="in%d"\r\n\r\n'
        b"--in%d\r\nContent-Type: text/plain\r\n\r\npart %d\r\n--in%d--\r\n" % (i, i, i, i)
        for i in range(parts)
    )
    return head + b'Content-Type: multipart/mixed; boundary="outer"\r\n\r\n' + body + b"--outer--\r\n"


def test_security_nesting_is_measured_from_the_boundaries_so_a_deep_message_is_not_parsed_but_a_wide_one_is() -> None:
    from deskmcp.mail.mime import PARSE_DEPTH, NestingTooDeep, nesting_depth, parse_bytes

    deep, wide = nested_multiparts(1200), wide_multiparts(PARSE_DEPTH + 200)
    assert nesting_depth(deep) == 1200 and nesting_depth(nested_multiparts(5)) == 5
    assert nesting_depth(wide) == 2
    refused = parse_bytes(deep)
    assert any(isinstance(d, NestingTooDeep) for d in refused.defects) and refused["Subject"] == "Deep"
    parsed = parse_bytes(wide, fast=True)
    assert not parsed.defects and len(parsed.get_payload()) == PARSE_DEPTH + 200


async def test_security_a_message_nested_1200_multiparts_deep_is_listed_and_never_blocks_the_others(
    connect: Connect, workspace: Path
) -> None:
    deliver(workspace, make_mail("Before", "fine", days_ago=2))
    deliver(workspace, nested_multiparts(1200))
    deliver(workspace, make_mail("After", "fine too", days_ago=0))
    async with connect() as c:
        listed = await call(c, "list_emails", {"query": ""})
        searched = await call(c, "list_emails", {"query": "from:mallory"})
        by_subject = {e["subject"]: e for e in listed["emails"]}
        error = await fail(c, "get_email", {"message_id": by_subject["Deep"]["id"]})
        other = await call(c, "get_email", {"message_id": by_subject["After"]["id"]})
        thread = await call(c, "get_thread", {"thread_id": by_subject["Deep"]["thread_id"]})
    assert set(by_subject) == {"Before", "Deep", "After"}
    deep = by_subject["Deep"]
    assert deep["sender"] == "Mallory <mallory@evil.test>" and deep["rfc_message_id"] == "<deep@evil.test>"
    assert deep["date"] == "2026-11-19T10:00:00Z"
    assert [e["id"] for e in searched["emails"]] == [deep["id"]]
    assert error["error"] == "parse_error" and error["details"]["message_id"] == deep["id"]
    assert "list_emails" in error["message"]
    assert other["body"] == "fine too"
    assert [m["subject"] for m in thread["messages"]] == ["Deep"] and thread["messages"][0]["body"] == ""


async def test_security_a_message_nested_500_multiparts_deep_is_read_down_to_the_walkers_limit(
    connect: Connect, workspace: Path
) -> None:
    deliver(workspace, nested_multiparts(500, "Half deep"))
    async with connect() as c:
        listed = await call(c, "list_emails", {"query": ""})
        full = await call(c, "get_email", {"message_id": listed["emails"][0]["id"]})
    assert full["subject"] == "Half deep" and full["body"] == "" and full["attachments"] == []


async def test_security_a_message_with_huge_headers_is_listed_and_read(connect: Connect, workspace: Path) -> None:
    junk = "".join(f"X-Junk-{i}: {'v' * 200}\r\n" for i in range(5000))
    raw = (
        f"From: a@example.org\r\nTo: me@localhost\r\nSubject: {'long ' * 200_000}\r\n{junk}"
        "Message-ID: <huge@x>\r\n\r\nsmall body\r\n"
    ).encode()
    deliver(workspace, raw)
    deliver(workspace, make_mail("Normal", "ok", days_ago=0))
    async with connect() as c:
        listed = await call(c, "list_emails", {"query": ""})
        huge = next(e for e in listed["emails"] if e["rfc_message_id"] == "<huge@x>")
        full = await call(c, "get_email", {"message_id": huge["id"]})
    assert len(listed["emails"]) == 2
    assert full["body"] == "small body" and full["subject"].startswith("long long")


async def test_security_a_binary_blob_in_the_maildir_is_listed_and_read_without_failing(
    connect: Connect, workspace: Path
) -> None:
    blob = random.Random(7).randbytes(300_000)
    deliver(workspace, blob)
    deliver(workspace, make_mail("Normal", "ok", days_ago=0))
    async with connect() as c:
        listed = await call(c, "list_emails", {"query": ""})
        for email in listed["emails"]:
            result = await c.call_tool("get_email", {"message_id": email["id"]})
            assert not result.is_error or '"parse_error"' in result.content[0].text  # type: ignore[union-attr]
    assert "Normal" in [e["subject"] for e in listed["emails"]] and len(listed["emails"]) == 2


def mislabelled(subject: bytes) -> bytes:
    """Latin-1 text everywhere a sender's mail program may put it: a body labelled utf-8, a raw
    8-bit filename, and the given Subject."""
    return (
        b"From: Ren\xe9 <rene@example.org>\r\nTo: me@localhost\r\nSubject: " + subject + b"\r\n"
        b"Date: Thu, 19 Nov 2026 10:00:00 +0000\r\nMessage-ID: <latin@example.org>\r\nMIME-Version: 1.0\r\n"
        b"Content-Type: multipart/mixed; boundary=BB\r\n\r\n"
        b"--BB\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n"
        b"Le caf\xe9 est pr\xeat.\r\n"
        b'--BB\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename="caf\xe9.pdf"\r\n\r\n'
        b"x\r\n--BB--\r\n"
    )


async def test_mislabelled_latin1_mail_reads_the_same_in_listings_get_email_and_search(
    connect: Connect, workspace: Path
) -> None:
    deliver(workspace, mislabelled(b"=?x-unknown?Q?caf=E9_menu?="))
    deliver(workspace, make_mail("caf menu elsewhere", "other", days_ago=2))
    async with connect() as c:
        listed = await call(c, "list_emails", {"query": ""})
        latin = next(e for e in listed["emails"] if e["rfc_message_id"] == "<latin@example.org>")
        full = await call(c, "get_email", {"message_id": latin["id"]})
        grouped = await call(c, "list_emails", {"query": "subject:(menu café)"})
        either = await call(c, "list_emails", {"query": "subject:{elsewhere café}"})
    assert latin["subject"] == full["subject"] == "café menu"
    assert full["body"] == "Le café est prêt."
    assert [a["filename"] for a in full["attachments"]] == ["café.pdf"]
    assert [e["id"] for e in grouped["emails"]] == [latin["id"]]
    assert len(either["emails"]) == 2
