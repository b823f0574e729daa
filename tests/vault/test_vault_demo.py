"""The generated demo vault and the tour steps that show it off."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from deskmcp.demo import vault as demo
from deskmcp.demo.tour import resolve
from tests.helpers.tool_calls import Connect, call

pytestmark = pytest.mark.anyio


def test_demo_vault_has_about_150_linked_notes_with_frontmatter(tmp_path: Path) -> None:
    demo.generate(tmp_path, random.Random(7))
    notes = sorted(tmp_path.rglob("*.md"))
    assert 140 <= len(notes) <= 160
    texts = [p.read_text(encoding="utf-8") for p in notes]
    assert sum(t.startswith("---\n") for t in texts) == len(texts)
    assert sum("[[" in t for t in texts) > 100
    assert {p.parent.name for p in notes} >= {"People", "Projects", "Daily", "Meetings", "Inbox"}


async def test_every_demo_step_succeeds_on_the_generated_vault(connect: Connect, vault: Path) -> None:
    demo.generate(vault, random.Random(2026))
    assert 4 <= len(demo.STEPS) <= 6
    last: Any = None
    async with connect() as client:
        for _caption, tool, arguments in demo.STEPS:
            last = await call(client, tool, resolve(arguments, last))
            assert any(last.values()), tool
    assert last["backlinks"]
