"""SUBTOTAL and AGGREGATE through both ways of saving: hidden rows and the cells of other
subtotals are left out as Excel leaves them out; SUBTOTAL 1-11 over a sheet with hidden rows is
flagged (rows a filter hid would not count, and they are not told apart from rows hidden by hand)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from deskmcp.sheets.a1 import parse_a1
from deskmcp.sheets.backends.local import LocalBackend


def _workbook(path: Path, hidden: bool) -> Path:
    from openpyxl import Workbook

    wb = Workbook()
    ws: Any = wb.active
    ws.title = "S"
    for row in (["a", 10], ["b", 20], ["sub", "=SUBTOTAL(109,B1:B2)"], ["c", 5]):
        ws.append(row)
    if hidden:
        ws.row_dimensions[2].hidden = True
    wb.save(path)
    return path


@pytest.mark.parametrize("fast_writes", [True, False], ids=["patched", "openpyxl"])
def test_subtotals_leave_out_hidden_rows_and_other_subtotals(root: Path, fast_writes: bool) -> None:
    _workbook(root / "book.xlsx", hidden=True)
    backend = LocalBackend(root)
    backend.fast_writes = fast_writes
    formulas = [["=SUBTOTAL(109,B1:B4)", "=_xlfn.AGGREGATE(9,5,B1:B4)", "=_xlfn.AGGREGATE(9,7,B1:B4)"]]
    try:
        _done, flagged = backend.write("book.xlsx", [(parse_a1("S!D1"), formulas)], "USER_ENTERED")
        _done, flagged_too = backend.write("book.xlsx", [(parse_a1("S!D2"), [["=SUBTOTAL(9,B1:B4)"]])], "USER_ENTERED")
        grid = backend.read("book.xlsx", [parse_a1("S!B3:F3"), parse_a1("S!D1:F2")], "shown")
    finally:
        backend.close()
    # B3 (the subtotal of the shown row 1) is 10; D1 leaves out hidden row 2 and the subtotal in B3
    assert grid[0].values == [[10]]
    # AGGREGATE options 5 and 7 leave out hidden rows (and 7 errors), not the nested subtotal B3
    assert grid[1].values[0] == [15, 25, 25]
    assert flagged == []
    assert flagged_too == ["S!D2"]


def test_subtotal_1_to_11_counts_every_row_of_a_sheet_without_hidden_rows(root: Path) -> None:
    _workbook(root / "book.xlsx", hidden=False)
    backend = LocalBackend(root)
    try:
        _done, flagged = backend.write("book.xlsx", [(parse_a1("S!D1"), [["=SUBTOTAL(9,B1:B4)"]])], "USER_ENTERED")
        grid = backend.read("book.xlsx", [parse_a1("S!D1")], "shown")
    finally:
        backend.close()
    assert flagged == []
    assert grid[0].values == [[35]]
