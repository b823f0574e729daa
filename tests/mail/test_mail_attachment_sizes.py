"""An attachment's `size` is one thing on every backend: its decoded bytes, line breaks of text sent
as 7bit, 8bit or quoted-printable counted as CRLF (MIME's canonical form, which IMAP servers and
Gmail hand out), the same bytes get_attachment saves; checked on one message stored with bare LF
line ends, over Dovecot, in a Maildir and through Gmail."""

from __future__ import annotations

import base64
from email import policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.mail import deliver
from tests.helpers.tool_calls import Connect, call
from tests.mail.dovecot import (
    BASE_DAY,
    Dovecot,
    Loaded,
    append_all,
    dovecot_fixture,  # noqa: F401  (fixture)
    mailbox_fixture,  # noqa: F401  (fixture)
)
from tests.mail.test_mail_gmail import LABELS, Gmail, ok

pytestmark = pytest.mark.anyio

BINARY = b"\x00\x01binary\n\r\n" * 10
# name -> decoded size: 3 lines of text with CRLF; 6 lines; the bytes as they are
EXPECTED = {"notes.txt": 27, "accents.txt": 3 * len("ligne é\r\nçà\r\n".encode()), "data.bin": len(BINARY)}


def with_attachments() -> bytes:
    """A message with text attachments in 7bit and quoted-printable, a binary one, and an enclosed
    message, written with bare LF line ends, as a Maildir often stores mail."""
    m = EmailMessage(policy=policy.SMTP)
    m["From"], m["To"], m["Subject"] = "ann@corp.test", "me@corp.test", "Sizes"
    m["Date"], m["Message-ID"] = "Thu, 19 Nov 2026 12:00:00 +0000", "<sizes@corp.test>"
    m.set_content("See attached.\n")
    m.add_attachment("line one\nline two\nthree\n", subtype="plain", filename="notes.txt", cte="7bit")
    m.add_attachment("ligne é\nçà\n" * 3, subtype="plain", filename="accents.txt", cte="quoted-printable")
    m.add_attachment(BINARY, maintype="application", subtype="octet-stream", filename="data.bin")
    inner = EmailMessage(policy=policy.SMTP)
    inner["Subject"] = "Inner"
    inner.set_content("inner body\nmore\n")
    m.add_attachment(inner, filename="inner.eml")
    return bytes(m).replace(b"\r\n", b"\n")


async def sizes(c: Any, workspace: Path) -> tuple[dict[str, int], dict[str, int]]:
    """Each attachment's size as get_email shows it, and the size of the file get_attachment saves."""
    [listed] = (await call(c, "list_emails", {"query": "", "max_results": 5}))["emails"]
    full = await call(c, "get_email", {"message_id": listed["id"]})
    shown = {a["filename"]: a["size"] for a in full["attachments"]}
    saved = {}
    for a in full["attachments"]:
        got = await call(c, "get_attachment", {"message_id": listed["id"], "index": a["index"], "save": True})
        saved[a["filename"]] = (workspace / got["saved_path"]).stat().st_size
    return shown, saved


@pytest.mark.e2e
async def test_attachment_size_is_the_decoded_bytes_alike_over_imap_maildir_and_gmail(
    connect: Connect, dovecot: Dovecot, mailbox: str, workspace: Path, tmp_path: Path
) -> None:
    raw = with_attachments()
    append_all(dovecot, mailbox, [Loaded("INBOX", raw, BASE_DAY)])
    async with connect(**dovecot.settings(mailbox)) as c:
        imap_shown, imap_saved = await sizes(c, workspace)
    deliver(workspace, raw)
    async with connect() as c:
        local_shown, local_saved = await sizes(c, workspace)
    item = {"id": "m1", "threadId": "m1", "labelIds": ["INBOX"], "snippet": "", "internalDate": "1795000000000"}
    item |= {"payload": {"mimeType": "multipart/mixed", "headers": []}, "raw": base64.urlsafe_b64encode(raw).decode()}
    gmail_ws = tmp_path / "gmail"
    gmail = Gmail(gmail_ws, [ok({"messages": [{"id": "m1", "threadId": "m1"}]}), ok(item), LABELS] + [ok(item)] * 9)
    async with gmail.client() as c:
        gmail_shown, gmail_saved = await sizes(c, gmail_ws)
    assert {k: v for k, v in local_shown.items() if k in EXPECTED} == EXPECTED
    assert imap_shown == local_shown == gmail_shown
    assert imap_saved == local_saved == gmail_saved
    assert {k: local_saved[k] for k in EXPECTED} == EXPECTED
