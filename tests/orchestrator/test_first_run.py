"""A first run on a real mailbox (the Maildir backend over MCP) with the default settings: it
fetches the last week of the inbox, not years of old mail to draft replies to."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid
from pathlib import Path

import pytest
import yaml

from deskmcp.mail.server import create_server as create_mail_server
from deskmcp.mail.settings import MailSettings
from deskmcp.orchestrator.access import MailAccess
from deskmcp.orchestrator.deciders import create_decider
from deskmcp.orchestrator.mcp_client import MCPClient
from deskmcp.orchestrator.mcp_vault import open_vault
from deskmcp.orchestrator.service import Orchestrator
from deskmcp.orchestrator.settings import OrchestratorSettings
from tests.helpers.mail import deliver

pytestmark = pytest.mark.anyio


def mail(subject: str, age: timedelta) -> bytes:
    msg = EmailMessage()
    msg["From"] = "Ana <ana@example.org>"
    msg["To"] = "me@localhost"
    msg["Subject"] = subject
    msg["Date"] = format_datetime(datetime.now(UTC) - age)
    msg["Message-ID"] = make_msgid(domain="example.org")
    msg.set_content("Can we talk?")
    return msg.as_bytes()


async def test_a_first_run_with_default_settings_ingests_the_last_week_not_the_whole_inbox(
    tmp_path: Path, vault: Path
) -> None:
    workspace = tmp_path / "ws"
    deliver(workspace, mail("Yesterday's question", timedelta(days=1)))
    deliver(workspace, mail("A question from last year", timedelta(days=400)))
    deliver(workspace, mail("A question from last month", timedelta(days=30)))
    settings = OrchestratorSettings(workspace=workspace, vault_path=vault, decider="assistant")
    server = create_mail_server(MailSettings(workspace=workspace, vault_path=vault))
    client = MCPClient("mail", ["unused"], vault, server=server)
    async with client:
        orchestrator = Orchestrator(settings, open_vault(vault), MailAccess(client), create_decider(settings))
        summary = await orchestrator.run_pass()
    assert summary.ingested == 1
    [note] = (vault / "Needs_Action").glob("*.md")
    front = yaml.safe_load(note.read_text(encoding="utf-8").split("---\n")[1])
    assert front["subject"] == "Yesterday's question"
