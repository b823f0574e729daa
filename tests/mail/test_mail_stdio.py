"""`deskmcp serve mail` as a real process, over stdio, configured by environment variables."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.helpers.mail import audit_lines, deliver, make_mail
from tests.helpers.tool_calls import call, fail

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


async def test_serve_mail_over_stdio_lists_replies_and_honours_the_allowlist(workspace: Path) -> None:
    deliver(workspace, make_mail("Quarterly plan", "Numbers attached.", msgid="<q1@x>"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAIL_", "DESKMCP_", "VAULT_"))}
    env.update(
        {
            "DESKMCP_WORKSPACE": str(workspace),
            "MAIL_ADDRESS": "me@corp.test",
            "MAIL_ALLOWED_RECIPIENTS": "@example.org",
        }
    )
    params = StdioServerParameters(command=sys.executable, args=["-m", "deskmcp.cli", "serve", "mail"], env=env)
    with anyio.fail_after(60):
        async with Client(params) as client:
            [email] = (await call(client, "list_emails"))["emails"]
            sent = await call(
                client,
                "send_email",
                {"to": "alice@example.org", "subject": "x", "body": "Thanks", "reply_to_message_id": email["id"]},
            )
            refused = await fail(client, "send_email", {"to": "eve@evil.test", "subject": "x", "body": "y"})
    assert sent["thread_id"] == email["thread_id"]
    assert refused["error"] == "permission_denied"
    assert [line["event"] for line in audit_lines(workspace)] == ["pre_send_audit", "send_result"]
