"""Real workbooks saved by Excel and LibreOffice: every one reads, or says clearly why not."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers.corpora import shared_corpus
from tests.helpers.tool_calls import Connect, call, fail

pytestmark = pytest.mark.anyio


@pytest.fixture
def corpus(root: Path) -> Path:
    source = shared_corpus("spreadsheets")
    for path in source.rglob("*"):
        if path.suffix.lower() in (".xlsx", ".ods", ".xls", ".csv"):
            shutil.copy(path, root / path.name)
    return root


async def test_every_corpus_workbook_describes_and_reads_every_sheet(corpus: Path, connect: Connect) -> None:
    async with connect() as c:
        listed = (await call(c, "list_spreadsheets", {"limit": 200}))["spreadsheets"]
        assert len(listed) >= 15
        for item in listed:
            info = await call(c, "get_spreadsheet", {"spreadsheet_id": item["id"]})
            for sheet in info["sheets"]:
                result = await c.call_tool(
                    "read_values", {"spreadsheet_id": item["id"], "ranges": [f"'{sheet['title']}'!A1:Z50"]}
                )
                if result.is_error:
                    assert '"parse_error"' in result.content[0].text  # type: ignore[union-attr]


async def test_special_characters_and_types_read_as_excel_shows_them(corpus: Path, connect: Connect) -> None:
    async with connect() as c:
        xlsx = await call(c, "read_values", {"spreadsheet_id": "issues.xlsx", "ranges": ["spc_chrs", "datatypes"]})
        ods = await call(c, "read_values", {"spreadsheet_id": "issues.ods", "ranges": ["spc_chrs"]})
    chars = [row[0] for row in xlsx["ranges"][0]["values"]]
    assert "☺" in chars and "àâéêèçöïî«»" in chars
    assert [row[0] for row in ods["ranges"][0]["values"]] == chars
    types = [row[0] for row in xlsx["ranges"][1]["values"]]
    assert types[:4] == [1, 1.5, "ab", False]
    assert types[5] == "2016-10-20"


async def test_strict_ooxml_reads_all_rows_and_refuses_edits(corpus: Path, connect: Connect) -> None:
    async with connect() as c:
        info = await call(c, "get_spreadsheet", {"spreadsheet_id": "strict_iso_paths.xlsx"})
        assert info["sheets"][0]["rows"] == 76
        assert info["writable"] is False
        err = await fail(
            c, "append_rows", {"spreadsheet_id": "strict_iso_paths.xlsx", "range": "ml_out", "values": [[1]]}
        )
    assert err["error"] == "permission_denied"


async def test_ods_reads_dates_and_is_read_only(corpus: Path, connect: Connect) -> None:
    async with connect() as c:
        out = await call(c, "read_values", {"spreadsheet_id": "date.ods", "ranges": ["Sheet1!A1:A1"]})
        err = await fail(c, "clear_values", {"spreadsheet_id": "date.ods", "ranges": ["Sheet1!A1"]})
    assert out["ranges"][0]["values"] == [["2021-01-01"]]
    assert err["error"] == "permission_denied"
    assert ".xlsx" in err["message"]


async def test_csv_with_quoted_commas_reads_as_cells(corpus: Path, connect: Connect) -> None:
    async with connect() as c:
        hits = await call(
            c, "find_in_spreadsheet", {"spreadsheet_id": "gapminder-health-income.csv", "query": "Congo, Dem. Rep."}
        )
    assert hits["matches"][0]["cell"].startswith("A")


async def test_not_a_workbook_is_a_parse_error(root: Path, connect: Connect) -> None:
    (root / "broken.xlsx").write_bytes(b"this is not a zip file")
    async with connect() as c:
        err = await fail(c, "read_values", {"spreadsheet_id": "broken.xlsx", "ranges": ["A1"]})
    assert err["error"] == "parse_error"
