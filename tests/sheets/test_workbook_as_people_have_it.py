"""A workbook as people have it (a chart, a picture, notes, a table, names; or Excel's pivot
tables) takes the whole round of edits a person asks for: a value, a row inserted above the data,
a bold header, a currency format, a frozen first row and a new chart. Afterwards every part the
edits did not need is as it was, the totals are right, and LibreOffice opens the file showing it."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.corpora import shared_corpus
from tests.helpers.tool_calls import call
from tests.helpers.workbooks import LIBREOFFICE_XLSX, assert_well_formed, libreoffice_convert, libreoffice_csv

from .test_kept_parts import changed, part_text, parts, rich_workbook

pytestmark = pytest.mark.anyio


async def person_edits(client: Any, sid: str, sheet: str, header: str, money: str, chart_over: str) -> None:
    """The round of edits: the header row is row 2 once a row is inserted above it."""
    ids = {"spreadsheet_id": sid}
    await call(client, "insert_rows", {**ids, "sheet": sheet, "at": 1, "count": 1})
    await call(client, "update_values", {**ids, "range": f"{sheet}!A1", "values": [["Edited by deskmcp"]]})
    await call(client, "format_range", {**ids, "range": f"{sheet}!{header}", "bold": True})
    await call(client, "format_range", {**ids, "range": f"{sheet}!{money}", "number_format": "#,##0.00 €"})
    await call(client, "set_layout", {**ids, "sheet": sheet, "freeze_rows": 1})
    await call(client, "add_chart", {**ids, "range": f"{sheet}!{chart_over}", "kind": "column", "anchor": "K2"})


@pytest.mark.slow
@pytest.mark.e2e
async def test_a_workbook_with_a_chart_a_picture_and_notes_takes_a_whole_round_of_edits(
    root: Path, client: Any, tmp_path: Path
) -> None:
    from openpyxl import load_workbook

    path = rich_workbook(root / "rich.xlsx")
    await call(client, "update_values", {"spreadsheet_id": "rich.xlsx", "range": "Data!B3", "values": [[25]]})
    before = parts(path)
    await person_edits(client, "rich.xlsx", "Data", "A2:D2", "C3:D8", "A2:B8")
    after = parts(path)
    total = await call(client, "read_values", {"spreadsheet_id": "rich.xlsx", "ranges": ["Summary!B1"]})

    assert total["ranges"][0]["values"] == [[(10 + 25 + 30 + 40 + 50 + 60) * 7]]  # the names moved with the rows
    kept = {n for n in before if n.startswith(("xl/media/", "xl/theme/", "docProps/core"))}
    assert kept and not (changed(before, after) & kept)
    assert "<f>'Data'!$B$3:$B$8</f>" in part_text(path, "xl/charts/chart1.xml")  # the old chart follows its data
    assert sum(n.startswith("xl/charts/chart") for n in after) == 2
    assert_well_formed(path)

    book = load_workbook(path)
    data: Any = book["Data"]
    assert data["A3"].font.b is False and data["A2"].font.b is True
    assert data["C4"].number_format == "#,##0.00 €" and data.freeze_panes == "A2"
    assert data["B4"].comment is not None and data["B4"].comment.text == "check this"

    lines = await libreoffice_csv(path, tmp_path)
    assert lines[0].startswith("Edited by deskmcp")
    assert lines[1].startswith("Item,Amount,Price,Total")
    assert lines[3].startswith("item3,25,")
    converted = await libreoffice_convert(path, tmp_path, LIBREOFFICE_XLSX)
    again: Any = load_workbook(converted)
    shown = again["Data"]
    assert shown["A2"].font.b is True
    assert shown["C4"].number_format.replace('"', "") == "#,##0.00 €"
    assert len(shown._charts) == 2
    with zipfile.ZipFile(converted) as package:  # (openpyxl reads pictures only with Pillow)
        assert any(n.startswith("xl/media/") for n in package.namelist())
    assert shown["B4"].comment is not None
    assert load_workbook(converted, data_only=True)["Summary"]["B1"].value == 1505  # LibreOffice's own total


@pytest.mark.slow
@pytest.mark.e2e
async def test_excels_pivot_table_workbook_takes_a_whole_round_of_edits(
    root: Path, client: Any, tmp_path: Path
) -> None:
    shutil.copy(shared_corpus("spreadsheets") / "calamine" / "pivots.xlsx", root / "pivots.xlsx")
    path = root / "pivots.xlsx"
    before = parts(path)
    await call(
        client, "set_notes", {"spreadsheet_id": "pivots.xlsx", "sheet": "DataSheet", "notes": {"A1": "Source data"}}
    )
    await person_edits(client, "pivots.xlsx", "DataSheet", "A2:J2", "E3:E13", "D2:E7")
    after = parts(path)

    pivots = {n for n in before if n.startswith(("xl/pivotTables/", "xl/pivotCache/pivotCacheRecords"))}
    assert pivots and not (changed(before, after) & pivots)
    assert 'ref="A2:J12" sheet="DataSheet"' in after["xl/pivotCache/pivotCacheDefinition1.xml"].decode("utf-8")
    assert any(n.startswith("xl/charts/") for n in after) and any(n.startswith("xl/comments") for n in after)
    assert_well_formed(path)
    again: Any = await libreoffice_convert(path, tmp_path, LIBREOFFICE_XLSX)
    from openpyxl import load_workbook

    shown = load_workbook(again)["DataSheet"]
    assert shown["A1"].value == "Edited by deskmcp"
    assert shown["A2"].font.b is True
    assert len(shown._charts) == 1
