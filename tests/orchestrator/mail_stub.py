"""A small mail server speaking the mail tools' contract, over a JSON file, for the orchestrator tests.

Run as a script it serves stdio: `python -m tests.orchestrator.mail_stub` with `STUB_MAIL_STORE`
naming the JSON file (inbox, labels, sent, idempotency keys), so what was sent survives the
processes and can be counted by the test.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import orjson

from deskmcp.core.errors import NotFound, ParseError, SendFailed
from deskmcp.core.files import atomic_write_bytes
from deskmcp.core.server import DeskServer


def load(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {"inbox": [], "sent": [], "keys": {}, "fail_send": False}
    return orjson.loads(path.read_bytes())


def save(path: Path, store: dict[str, Any]) -> None:
    atomic_write_bytes(path, orjson.dumps(store))


def message(mid: str, sender: str, subject: str, body: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": mid,
        "thread_id": f"t-{mid}",
        "rfc_message_id": f"<{mid}@example.org>",
        "subject": subject,
        "sender": sender,
        "to": "me@localhost",
        "cc": "",
        "date": "2026-11-20T09:00:00+00:00",
        "snippet": body[:100],
        "labels": ["INBOX"],
        "unread": True,
        "has_attachments": False,
        "body": body,
        **extra,
    }


def summary(m: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in m.items() if k not in ("body", "broken")}


def create_server(store_path: Path) -> DeskServer:
    server = DeskServer("mail-stub")

    @server.tool("list_emails")
    def list_emails(query: str = "is:unread", max_results: int = 10, cursor: str | None = None) -> dict[str, Any]:
        store = load(store_path)
        if store.get("die"):
            os._exit(1)  # as if the server was killed
        if store.get("hang"):
            threading.Event().wait()  # never answers
        found = []
        for m in store["inbox"]:
            excluded = [w.removeprefix("-label:") for w in query.split() if w.startswith("-label:")]
            if any(label in m["labels"] for label in excluded):
                continue
            found.append(summary(m))
        return {"emails": found[:max_results], "next_cursor": None}

    @server.tool("get_email")
    def get_email(message_id: str) -> dict[str, Any]:
        for m in load(store_path)["inbox"]:
            if m["id"] == message_id:
                if m.get("broken"):
                    raise ParseError("The message cannot be decoded.", {"id": message_id})
                return {
                    **summary(m),
                    "body": m["body"],
                    "body_truncated": False,
                    "attachment_names": [],
                    "in_reply_to": None,
                    "references": [],
                }
        raise NotFound(f"No message {message_id!r}.")

    @server.tool("send_email")
    def send_email(
        to: str,
        subject: str,
        body: str,
        reply_to_message_id: str | None = None,
        cc: str | None = None,
        bcc: str | None = None,
        html_body: str | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        store = load(store_path)
        if idempotency_key and idempotency_key in store["keys"]:
            return {**store["keys"][idempotency_key], "duplicate": True}
        if store.get("fail_send"):
            raise SendFailed("The SMTP server refused the message: 550 mailbox unavailable.")
        if gate := store.get("hold_send"):  # a slow provider: waits until the test opens the gate
            Path(gate + ".waiting").touch()
            deadline = time.monotonic() + 30
            while not Path(gate).exists() and time.monotonic() < deadline:
                time.sleep(0.02)
        if reply_to_message_id and not any(m["id"] == reply_to_message_id for m in store["inbox"]):
            raise NotFound(f"No message {reply_to_message_id!r} to reply to.")
        number = len(store["sent"]) + 1
        result = {
            "message_id": f"sent-{number}",
            "thread_id": f"t-{reply_to_message_id}" if reply_to_message_id else f"t-sent-{number}",
            "sent_at": "2026-11-20T10:00:00+00:00",
            "rfc_message_id": f"<sent-{number}@localhost>",
            "duplicate": False,
        }
        store["sent"].append(
            {"to": to, "subject": subject, "body": body, "cc": cc, "reply_to_message_id": reply_to_message_id}
        )
        if idempotency_key:
            store["keys"][idempotency_key] = result
        save(store_path, store)
        return result

    @server.tool("add_label")
    def add_label(message_id: str, label_name: str) -> dict[str, Any]:
        store = load(store_path)
        for m in store["inbox"]:
            if m["id"] == message_id:
                if label_name not in m["labels"]:
                    m["labels"].append(label_name)
                save(store_path, store)
                return {"id": message_id, "labels": m["labels"]}
        raise NotFound(f"No message {message_id!r}.")

    return server


if __name__ == "__main__":
    create_server(Path(os.environ["STUB_MAIL_STORE"])).run("stdio")
