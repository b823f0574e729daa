"""Where references end up when rows of a sheet move (`xlsx.structure.RowShift`), the rule every
structure edit made in place applies to formulas, names, chart series and areas alike."""

from __future__ import annotations

import pytest

from deskmcp.sheets.xlsx.structure import RowShift


@pytest.mark.parametrize(
    ("text", "moved"),
    [
        ("SUM(B2:B5)*TaxRate", "SUM(B5:B8)*TaxRate"),
        ("B1+B2", "B1+B5"),
        ("A1:A3", "A1:A6"),  # an insertion inside a block grows it
        ("Data!$2:$4", "Data!$5:$7"),  # whole rows (print titles)
        ("Other!B2+B2", "Other!B2+B5"),
        ('"B2"&B2', '"B2"&B5'),  # text is text
        ("[1]Data!B2+Data!B2", "[1]Data!B2+Data!B5"),  # another workbook's sheet of the same name
        ("'[2]My data'!$B$2:$B$9*SUM(Data!B2:B9)", "'[2]My data'!$B$2:$B$9*SUM(Data!B5:B12)"),
    ],
)
def test_an_insertion_moves_references_at_and_below_it_on_its_sheet_only(text: str, moved: str) -> None:
    assert RowShift("Data", 2, 3).formula(text, "Data") == moved


@pytest.mark.parametrize(
    ("text", "moved"),
    [
        ("SUM(B2:B9)", "SUM(B2:B7)"),  # a deletion inside a block shrinks it
        ("B4", "#REF!"),
        ("B9+B1", "B7+B1"),
        ("SUM(B3:B4)", "SUM(#REF!)"),
        ("Data!$3:$5", "Data!$3:$3"),
        ("Data!$3:$4", "#REF!"),
    ],
)
def test_a_deletion_shrinks_blocks_and_leaves_ref_errors_where_cells_are_gone(text: str, moved: str) -> None:
    assert RowShift("Data", 3, -2).formula(text, "Data") == moved


def test_area_lists_move_drop_what_a_deletion_takes_and_keep_whole_columns() -> None:
    shift = RowShift("Data", 3, -2)
    assert shift.areas("A1:B2 C3:C4 D5 E:E") == "A1:B2 D3 E:E"
    assert shift.areas("C3:C4") == ""
    assert RowShift("Data", 1048575, 5).areas("A1048570:A1048576") == "A1048570:A1048576"


def test_a_cell_formula_keeps_its_equals_sign_and_text_that_is_no_formula_stays() -> None:
    shift = RowShift("Data", 2, 1)
    assert shift.cell_formula("=[1]Data!B2+B2", "Data") == "=[1]Data!B2+B3"
    assert shift.cell_formula("B2", "Data") == "B2"
