"""The openpyxl write path reads one private attribute: `Worksheet._cells`, the sparse map of the
cells a sheet holds, keyed (row, column). openpyxl has no public sparse view (iter_rows and cell()
create every cell they pass over), so pyproject.toml pins openpyxl below the next minor release and
this test fails on an upgrade that moves or reshapes that map, before a write breaks.

It also relies on how openpyxl writes a cell: a number held as text with the type `n` is written
as that text (`Book.hold_number_texts`, which keeps every digit a number needs)."""

from __future__ import annotations

import io
import zipfile

from openpyxl import Workbook
from openpyxl.cell.cell import Cell


def test_an_openpyxl_worksheet_keeps_its_cells_in_the_private_sparse_map_the_write_path_reads() -> None:
    ws = Workbook().active
    assert ws is not None
    ws["C7"] = 42
    ws["A1"] = "x"
    cells = ws._cells  # pyright: ignore[reportAttributeAccessIssue]
    assert isinstance(cells, dict)
    assert set(cells) == {(7, 3), (1, 1)}
    assert isinstance(cells[(7, 3)], Cell)
    assert cells[(7, 3)].value == 42


def test_openpyxl_writes_a_number_held_as_text_as_that_text_with_the_number_type() -> None:
    wb = Workbook()
    ws = wb.active
    assert ws is not None
    cell = ws["B2"]
    cell.value = "0.30000000000000004"
    cell.data_type = "n"
    buffer = io.BytesIO()
    wb.save(buffer)
    with zipfile.ZipFile(buffer) as zf:
        sheet = zf.read("xl/worksheets/sheet1.xml").decode("utf-8")
    assert '<c r="B2" t="n"><v>0.30000000000000004</v></c>' in sheet
