"""The IMAP + SMTP backend against a real IMAP server (pymap) and SMTP sink, both on loopback."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from email import message_from_bytes, policy
from pathlib import Path
from typing import Any

import pytest
from imapclient import IMAPClient

from tests.helpers.mail import SmtpSink, make_mail
from tests.helpers.network import free_port
from tests.helpers.tool_calls import Connect, call, fail

pytestmark = pytest.mark.anyio


@dataclass
class ImapServer:
    host: str
    port: int
    user: str = "me@corp.test"
    password: str = "secret-pw"

    def client(self) -> IMAPClient:
        client = IMAPClient(self.host, port=self.port, ssl=False, timeout=10)
        client.login(self.user, self.password)
        return client


@pytest.fixture(scope="session")
def imap_server() -> Iterator[ImapServer]:
    server = ImapServer("127.0.0.1", free_port())
    command = [
        sys.executable,
        "-c",
        "from pymap.main import main; main()",
        "--host",
        server.host,
        "--port",
        str(server.port),
        "--no-tls",
    ]
    command += ["dict", "--demo-user", server.user, "--demo-password", server.password]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    try:
        while True:
            try:
                socket.create_connection((server.host, server.port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("the IMAP test server did not start") from None
                try:  # waits a little, and notices a server that exited
                    proc.wait(timeout=0.1)
                    raise RuntimeError(f"the IMAP test server exited: {proc.stderr.read() if proc.stderr else ''}")
                except subprocess.TimeoutExpired:
                    pass
        yield server
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def imap(imap_server: ImapServer) -> Iterator[ImapServer]:
    """The server with an empty INBOX and no other folders."""
    client = imap_server.client()
    for _flags, _delim, name in client.list_folders():
        client.select_folder(name)
        uids = client.search(["ALL"])
        if uids:
            client.delete_messages(uids)
            client.expunge()
        if name != "INBOX":
            client.select_folder("INBOX")
            client.delete_folder(name)
    client.logout()
    yield imap_server


def settings(server: ImapServer, sink: SmtpSink | None = None, **extra: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "backend": "imap",
        "imap_host": server.host,
        "imap_port": server.port,
        "imap_user": server.user,
        "imap_password": server.password,
        "imap_security": "none",
        "address": server.user,
        "mode": "send",
        **extra,
    }
    if sink is not None:
        values.update(smtp_host=sink.host, smtp_port=sink.port, smtp_security="none")
    return values


def fill(server: ImapServer) -> None:
    client = server.client()
    client.append("INBOX", make_mail("Budget review", "The budget is tight.", days_ago=3, msgid="<b1@x>"))
    client.append(
        "INBOX", make_mail("Launch plan", "Slips a week.", sender="Bob <bob@corp.test>", days_ago=2, msgid="<l1@x>")
    )
    client.append("INBOX", make_mail("Old news", "Seen already.", days_ago=30, msgid="<o1@x>"), flags=[b"\\Seen"])
    client.logout()


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("is:unread", ["Launch plan", "Budget review"]),
        ("", ["Launch plan", "Budget review", "Old news"]),
        ("from:bob", ["Launch plan"]),
        ("subject:budget OR subject:launch", ["Launch plan", "Budget review"]),
        ("-is:unread", ["Old news"]),
        ("in:inbox tight", ["Budget review"]),
        ("rfc822msgid:o1@x", ["Old news"]),
    ],
)
async def test_imap_list_emails_translates_queries_into_imap_search(
    connect: Connect, imap: ImapServer, query: str, expected: list[str]
) -> None:
    fill(imap)
    async with connect(**settings(imap)) as c:
        result = await call(c, "list_emails", {"query": query})
    assert [e["subject"] for e in result["emails"]] == expected


async def test_imap_unsupported_operator_and_bad_password_are_reported(connect: Connect, imap: ImapServer) -> None:
    fill(imap)
    async with connect(**settings(imap)) as c:
        error = await fail(c, "list_emails", {"query": "category:promotions"})
    async with connect(**settings(imap, imap_password="wrong")) as c:
        denied = await fail(c, "list_emails", {})
    assert error["error"] == "bad_request" and error["details"]["operator"] == "category"
    assert denied["error"] == "auth_required" and "app password" in denied["message"]


async def test_imap_get_move_label_and_flags(connect: Connect, imap: ImapServer) -> None:
    fill(imap)
    async with connect(**settings(imap)) as c:
        target = (await call(c, "list_emails", {"query": "budget"}))["emails"][0]
        full = await call(c, "get_email", {"message_id": target["id"]})
        read = await call(c, "mark_read", {"message_id": target["id"]})
        labelled = await call(c, "add_label", {"message_id": target["id"], "label_name": "AI_PROCESSED"})
        in_label = await call(c, "list_emails", {"query": "label:AI_PROCESSED"})
        moved = await call(c, "move_email", {"message_id": target["id"], "destination_label": "Done"})
        inbox = await call(c, "list_emails", {"query": "in:inbox budget"})
        done = await call(c, "list_emails", {"query": "in:Done"})
        labels = await call(c, "list_labels")
    assert full["body"] == "The budget is tight." and full["rfc_message_id"] == "<b1@x>"
    assert "UNREAD" not in read["labels"]
    assert "AI_PROCESSED" in labelled["labels"]
    assert [e["rfc_message_id"] for e in in_label["emails"]] == ["<b1@x>"]
    assert moved["id"] != target["id"] and moved["labels"][0] == "Done"
    assert inbox["emails"] == [] and [e["id"] for e in done["emails"]] == [moved["id"]]
    names = {label["name"] for label in labels["labels"]}
    assert {"INBOX", "Done", "SENT"} <= names


async def test_imap_reply_goes_out_by_smtp_threaded_and_is_filed_in_sent(
    connect: Connect, imap: ImapServer, smtp_sink: SmtpSink
) -> None:
    fill(imap)
    async with connect(**settings(imap, smtp_sink)) as c:
        parent = (await call(c, "list_emails", {"query": "launch"}))["emails"][0]
        args = {
            "to": "bob@corp.test",
            "subject": "Launch plan",
            "body": "Noted.",
            "reply_to_message_id": parent["id"],
            "idempotency_key": "imap-1",
        }
        sent = await call(c, "send_email", args)
        again = await call(c, "send_email", args)
        in_sent = await call(c, "list_emails", {"query": "in:sent"})
        thread = await call(c, "get_thread", {"thread_id": parent["thread_id"]})
    assert len(smtp_sink.messages) == 1 and again["duplicate"] is True
    wire = message_from_bytes(smtp_sink.messages[0].data, policy=policy.default)
    assert wire["In-Reply-To"] == "<l1@x>" and wire["References"] == "<l1@x>"
    assert wire["Subject"] == "Re: Launch plan"
    assert [e["rfc_message_id"] for e in in_sent["emails"]] == [sent["rfc_message_id"]]
    assert sent["thread_id"] == parent["thread_id"]
    assert [m["body"] for m in thread["messages"]] == ["Slips a week.", "Noted."]


async def test_imap_drafts_are_saved_in_draft_only_mode(connect: Connect, imap: ImapServer, workspace: Path) -> None:
    async with connect(**settings(imap, mode="draft_only")) as c:
        refused = await fail(c, "send_email", {"to": "a@example.org", "subject": "s", "body": "b"})
        draft = await call(c, "create_draft", {"to": "a@example.org", "subject": "Later", "body": "b"})
        drafts = await call(c, "list_drafts")
    assert refused["error"] == "permission_denied"
    assert [d["id"] for d in drafts["drafts"]] == [draft["draft_id"]]
