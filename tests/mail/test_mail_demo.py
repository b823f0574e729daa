"""The generated demo mailbox and the tour steps that show it off."""

from __future__ import annotations

import mailbox
import random
from pathlib import Path
from typing import Any

import pytest

from deskmcp.demo import mail as demo
from deskmcp.demo.tour import resolve
from tests.helpers.mail import audit_lines
from tests.helpers.tool_calls import Connect, call

pytestmark = pytest.mark.anyio


def test_demo_mailbox_holds_threads_attachments_and_a_sent_folder(tmp_path: Path) -> None:
    demo.generate(tmp_path, random.Random(7))
    box = mailbox.Maildir(tmp_path, create=False)
    inbox = list(box)
    sent = list(box.get_folder("Sent"))
    assert 280 <= len(inbox) + len(sent) <= 300 and sent
    assert sum(m["In-Reply-To"] is not None for m in inbox) > 20
    assert sum(m.is_multipart() for m in inbox) > 5


async def test_every_demo_step_succeeds_on_the_generated_mailbox(connect: Connect, workspace: Path) -> None:
    demo.generate(workspace / "mail", random.Random(2026))
    last: Any = None
    async with connect() as client:
        for _caption, tool, arguments in demo.STEPS:
            last = await call(client, tool, resolve(arguments, last))
            assert any(last.values()), tool
    assert last["messages"][-1]["body"] == "Thanks, noted."
    assert [line["event"] for line in audit_lines(workspace)] == ["pre_send_audit", "send_result"]
