"""Every timestamp mail writes (send result, audit log, send journal) has the one UTC form."""

from __future__ import annotations

import json
import re
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.anyio

UTC_STAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")


async def test_a_keyed_send_writes_second_precision_utc_stamps_everywhere(
    connect: Any, workspace: Path, smtp_sink: Any
) -> None:
    smtp = {"smtp_host": smtp_sink.host, "smtp_port": smtp_sink.port, "smtp_security": "none", "address": "me@x.test"}
    async with connect(**smtp) as c:
        result = await c.call_tool(
            "send_email", {"to": "a@example.org", "subject": "s", "body": "b", "idempotency_key": "k-stamp"}
        )
    assert not result.is_error, result.content
    sent = result.structured_content
    assert sent is not None and UTC_STAMP.match(sent["sent_at"]), sent
    logs = sorted((workspace / "vault" / "Logs").glob("*.jsonl"))
    audit = [json.loads(line) for path in logs for line in path.read_text(encoding="utf-8").splitlines()]
    assert audit and all(UTC_STAMP.match(line["timestamp"]) for line in audit), audit
    with closing(sqlite3.connect(workspace / ".deskmcp" / "mail-sends.sqlite3")) as db:
        rows = db.execute("SELECT created, updated FROM sends WHERE key = 'k-stamp'").fetchall()
    assert len(rows) == 1 and all(UTC_STAMP.match(stamp) for stamp in rows[0]), rows
