"""HTML-only mail read as text through get_email (the reader is core/html_text.py)."""

from __future__ import annotations

from email import policy
from email.message import EmailMessage
from pathlib import Path

import pytest

from tests.helpers.mail import deliver
from tests.helpers.tool_calls import Connect, call

pytestmark = pytest.mark.anyio


def _html_mail(subject: str, html: str) -> bytes:
    msg = EmailMessage(policy=policy.SMTP)
    msg["From"] = "Alice <alice@example.org>"
    msg["To"] = "me@localhost"
    msg["Subject"] = subject
    msg["Date"] = "Fri, 20 Nov 2026 12:00:00 +0000"
    msg["Message-ID"] = "<html-1@example.org>"
    msg.set_content(html, subtype="html")
    return bytes(msg)


async def test_get_email_of_html_only_mail_keeps_lines_cells_bullets_and_links(
    connect: Connect, workspace: Path
) -> None:
    deliver(
        workspace,
        _html_mail(
            "Order",
            "<div>Hi Bob,</div><div>your order:</div>"
            "<table><tr><td>pen</td><td>3</td></tr><tr><td>ink</td><td>1</td></tr></table>"
            '<ul><li>ships Monday</li><li>track it <a href="https://shop.test/t/9">here</a></li></ul>',
        ),
    )
    async with connect() as c:
        listed = await call(c, "list_emails", {"query": "subject:order"})
        full = await call(c, "get_email", {"message_id": listed["emails"][0]["id"]})
    assert full["body"] == (
        "Hi Bob,\nyour order:\n\npen | 3\nink | 1\n\n- ships Monday\n- track it here (https://shop.test/t/9)"
    )
