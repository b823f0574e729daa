"""The openpyxl write path reads one private attribute: `Worksheet._cells`, the sparse map of the
cells a sheet holds, keyed (row, column). openpyxl has no public sparse view (iter_rows and cell()
create every cell they pass over), so pyproject.toml pins openpyxl below the next minor release and
this test fails on an upgrade that moves or reshapes that map, before a write breaks."""

from __future__ import annotations

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
