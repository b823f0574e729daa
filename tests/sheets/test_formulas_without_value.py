"""Formulas saved without a value (openpyxl, pandas, scripts): computed, or named in `uncomputed`,
never a silent blank. openpyxl with lxml writes such a formula with an empty `<v></v>`, without
lxml (and other writers) with no `<v>` at all; both spellings are checked."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.tool_calls import Connect, call
from tests.helpers.workbooks import make_xlsx

pytestmark = pytest.mark.anyio

SHEET = "xl/worksheets/sheet1.xml"
# A2, B1 and B3 are formulas; C1 is a formula whose result is the empty text, saved with its value.
ROWS: list[list[Any]] = [[2, "=A1*10", None], ["=A1+1", None, None], ["x", "=LEN(A3)&A2", None]]
FORMULAS = ["S!A2", "S!B1", "S!B3"]


def _rewrite(path: Path, part: str, old: bytes, new: bytes) -> None:
    with zipfile.ZipFile(path) as zf:
        items = [(info, zf.read(info)) for info in zf.infolist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for info, data in items:
            zf.writestr(info, data.replace(old, new) if info.filename == part else data)


def saved_without_values(path: Path, spelling: str) -> Path:
    """The workbook as openpyxl saves it (with lxml: `<v></v>`), or with no `<v>` at all."""
    import openpyxl.xml

    make_xlsx(path, {"S": ROWS})
    with zipfile.ZipFile(path) as zf:
        data = zf.read(SHEET)
    if openpyxl.xml.LXML:
        assert data.count(b"<v></v>") == 3  # what openpyxl with lxml really writes
    else:
        _rewrite(path, SHEET, b"<v />", b"<v></v>")
    if spelling == "absent":
        _rewrite(path, SHEET, b"<v></v>", b"")
        with zipfile.ZipFile(path) as zf:
            assert b"<v></v>" not in zf.read(SHEET)
    return path


def _computed_or_flagged(grid: dict[str, Any]) -> list[str]:
    """The formula cells of the answer that show a blank and are not flagged."""
    values = grid["values"]
    silent = []
    for ref in FORMULAS:
        cell = ref.split("!")[1]
        row, col = int(cell[1:]) - 1, ord(cell[0]) - 65
        value = values[row][col] if row < len(values) and col < len(values[row]) else ""
        if value in ("", None) and ref not in (grid.get("uncomputed") or []):
            silent.append(ref)
    return silent


@pytest.mark.parametrize("spelling", ["empty", "absent"])
async def test_read_values_names_every_formula_saved_without_a_value_in_uncomputed(
    root: Path, connect: Connect, spelling: str
) -> None:
    saved_without_values(root / "book.xlsx", spelling)
    async with connect() as c:
        out = await call(c, "read_values", {"spreadsheet_id": "book.xlsx", "ranges": ["S!A1:C3", "S!B1"]})
    whole, single = out["ranges"]
    assert _computed_or_flagged(whole) == []
    assert sorted(whole["uncomputed"] or []) == FORMULAS
    assert single["uncomputed"] == ["S!B1"]


@pytest.mark.parametrize("spelling", ["empty", "absent"])
async def test_read_values_of_a_sparse_sheet_names_formulas_saved_without_a_value(
    root: Path, connect: Connect, spelling: str
) -> None:
    path = saved_without_values(root / "book.xlsx", spelling)
    # a far cell makes the sheet sparse: it is read window by window from its XML
    _rewrite(path, SHEET, b"</sheetData>", b'<row r="900000"><c r="XF900000"><v>1</v></c></row></sheetData>')
    async with connect() as c:
        out = await call(c, "read_values", {"spreadsheet_id": "book.xlsx", "ranges": ["S!A1:C3"]})
    assert _computed_or_flagged(out["ranges"][0]) == []


@pytest.mark.parametrize("fast_writes", [True, False], ids=["patched", "openpyxl"])
@pytest.mark.parametrize("spelling", ["empty", "absent"])
async def test_a_write_computes_every_formula_the_file_holds_no_value_for(
    root: Path, connect: Connect, spelling: str, fast_writes: bool, caplog: pytest.LogCaptureFixture
) -> None:
    saved_without_values(root / "book.xlsx", spelling)
    caplog.set_level("INFO", logger="deskmcp.sheets")
    async with connect(fast_writes=fast_writes) as c:
        answer = await call(c, "update_values", {"spreadsheet_id": "book.xlsx", "range": "S!D5", "values": [["n"]]})
        out = await call(c, "read_values", {"spreadsheet_id": "book.xlsx", "ranges": ["S!A1:C3"]})
    assert "edited through openpyxl" not in caplog.text  # the patch itself ran when asked for
    assert not answer.get("uncomputed")
    grid = out["ranges"][0]
    assert grid["values"] == [[2, 20], [3], ["x", "13"]]
    assert not grid.get("uncomputed")
