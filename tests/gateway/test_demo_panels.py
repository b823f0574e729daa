"""The panels `deskmcp demo` prints for each step: readable at 80 columns, spreadsheet rows as tables."""

from __future__ import annotations

import io
import random
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from rich.console import Console
from tests.helpers.tool_calls import call

from deskmcp.demo import sheets as sheets_demo
from deskmcp.demo.tour import result_panel
from deskmcp.sheets.server import create_server
from deskmcp.sheets.settings import SheetsSettings

pytestmark = pytest.mark.anyio


def printed(result: dict[str, Any], title: str) -> str:
    out = io.StringIO()
    Console(file=out, width=80, color_system=None).print(result_panel(result, title))
    return out.getvalue()


async def demo_answers(tmp_path: Path) -> dict[str, dict[str, Any]]:
    """The sheets demo's own answers, from the sheets server over its generated workbook."""
    root = tmp_path / "sheets"
    root.mkdir()
    sheets_demo.generate(root, random.Random(2026))
    server = create_server(SheetsSettings(workspace=tmp_path, sheets_path=root))
    async with Client(server) as client:
        return {
            "list": await call(client, "list_spreadsheets"),
            "get": await call(client, "get_spreadsheet", {"spreadsheet_id": "budget.xlsx"}),
            "header": await call(
                client, "read_values", {"spreadsheet_id": "budget.xlsx", "ranges": ["Budget!A1:E10"], "header": True}
            ),
            "grid": await call(
                client, "read_values", {"spreadsheet_id": "budget.xlsx", "ranges": ["Budget!A10:E10", "Budget!E2"]}
            ),
        }


async def test_demo_panels_keep_words_whole_at_80_columns(tmp_path: Path) -> None:
    answers = await demo_answers(tmp_path)

    listed = printed(answers["list"], "list_spreadsheets")
    described = printed(answers["get"], "get_spreadsheet")

    assert "2 spreadsheets" in listed
    assert "id=budget.xlsx" in described
    assert "title=budget" in described
    assert "writable=True" in described
    for text in (listed, described):
        assert all(len(line) <= 80 for line in text.splitlines())


async def test_demo_shows_spreadsheet_rows_as_tables_not_python_reprs(tmp_path: Path) -> None:
    answers = await demo_answers(tmp_path)

    header = printed(answers["header"], "read_values")
    grid = printed(answers["grid"], "read_values")

    for text in (header, grid):
        assert "{'" not in text
        assert "['" not in text
    header_row = next(line for line in header.splitlines() if "Category" in line)
    assert all(name in header_row for name in ("Jan", "Feb", "Mar", "Quarter"))
    rent_row = next(line for line in header.splitlines() if "Rent" in line)
    assert "1400" in rent_row
    assert "Budget!A2:E10" in header
    total_row = next(line for line in grid.splitlines() if "Total" in line)
    assert len([cell for cell in total_row.split("│") if cell.strip().isdigit()]) == 4
