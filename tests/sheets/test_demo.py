"""The sheets demo: generated budget, every step succeeds, and the total follows an update."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from deskmcp.demo import sheets as demo
from deskmcp.demo.tour import resolve
from deskmcp.sheets.server import Settings, create_server

pytestmark = pytest.mark.anyio


async def test_demo_steps_all_succeed_and_the_total_is_recomputed(tmp_path: Path) -> None:
    root = tmp_path / "sheets"
    root.mkdir()
    demo.generate(root, random.Random(2026))
    last: Any = None
    results: list[dict[str, Any]] = []
    async with Client(create_server(Settings(workspace=tmp_path, sheets_path=root))) as client:
        before = await client.call_tool("read_values", {"spreadsheet_id": "budget.xlsx", "ranges": ["Budget!D10"]})
        assert before.structured_content is not None
        march_before = before.structured_content["ranges"][0]["values"][0][0]
        rent_before = (
            await client.call_tool("read_values", {"spreadsheet_id": "budget.xlsx", "ranges": ["Budget!D2"]})
        ).structured_content["ranges"][0]["values"][0][0]  # type: ignore[index]
        for _caption, tool, arguments in demo.STEPS:
            result = await client.call_tool(tool, resolve(arguments, last))
            assert not result.is_error, (tool, result.content)
            last = result.structured_content
            results.append(last or {})
    totals = results[4]["ranges"][0]["values"][0]
    assert totals[0] == "Total"
    assert totals[3] == march_before - rent_before + 1550
    assert all(isinstance(v, int | float) for v in totals[1:])
