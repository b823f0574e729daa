"""The formula evaluator: common functions compute, the rest is reported, references follow rows."""

from __future__ import annotations

from typing import Any

import pytest

from deskmcp.sheets.formulas.engine import CellError, Uncomputable, WorkbookCalculator, evaluate, shift_rows

CELLS: dict[tuple[str, int, int], Any] = {
    ("S", 1, 1): 10.0,
    ("S", 2, 1): 20.0,
    ("S", 3, 1): "x",
    ("S", 1, 2): "=A1*2",
    ("Other sheet", 1, 1): 5.0,
}


def calc(formula: str) -> Any:
    calculator = WorkbookCalculator(lambda s, r, c: CELLS.get((s, r, c)), lambda s: (3, 2))
    return evaluate(formula, "S", calculator.value, calculator.extent)


@pytest.mark.parametrize(
    ("formula", "expected"),
    [
        ("=1+2*3", 7.0),
        ("=(1+2)*3", 9.0),
        ("=2^3", 8.0),
        ("=-A1+5", -5.0),
        ("=50%", 0.5),
        ("=SUM(A1:A3)", 30.0),
        ("=SUM(A:A)", 30.0),
        ("=AVERAGE(A1:A2)", 15.0),
        ("=MAX(A1:A2,100)", 100.0),
        ("=COUNT(A1:A3)", 2.0),
        ("=COUNTA(A1:A3)", 3.0),
        ("=B1+1", 21.0),
        ("='Other sheet'!A1*2", 10.0),
        ('=A3&"y"', "xy"),
        ('=IF(A1>5,"big","small")', "big"),
        ("=ROUND(2.5,0)", 3.0),
        ('=SUMIF(A1:A2,">15")', 20.0),
        ("=IFERROR(1/0,7)", 7.0),
        ("=AND(TRUE,A1=10)", True),
    ],
)
def test_common_formulas_compute(formula: str, expected: Any) -> None:
    assert calc(formula) == expected


def test_division_by_zero_is_the_spreadsheet_error() -> None:
    assert calc("=A1/0") == CellError("#DIV/0!")


def test_unknown_function_is_uncomputable_not_guessed() -> None:
    with pytest.raises(Uncomputable, match="CUBEVALUE"):
        calc('=CUBEVALUE("conn","[Measures].[Sales]")')


def test_circular_reference_is_uncomputable() -> None:
    cells = {("S", 1, 1): "=A2", ("S", 2, 1): "=A1"}
    calculator = WorkbookCalculator(lambda s, r, c: cells.get((s, r, c)), lambda s: (2, 1))
    with pytest.raises(Uncomputable, match="circular"):
        calculator.value("S", 1, 1)


def test_inserting_rows_moves_references_below_and_keeps_those_above() -> None:
    assert shift_rows("=SUM(B2:B4)+B1", "S", "S", 3, 2) == "=SUM(B2:B6)+B1"
    assert shift_rows("=S!A5", "T", "S", 3, 1) == "=S!A6"
    assert shift_rows("=A5", "T", "S", 3, 1) == "=A5"  # another sheet's A5
    assert shift_rows('="A5"&A5', "S", "S", 1, 1) == '="A5"&A6'


def test_deleting_rows_shrinks_ranges_and_breaks_lost_cells() -> None:
    assert shift_rows("=SUM(B2:B6)", "S", "S", 3, -2) == "=SUM(B2:B4)"
    assert shift_rows("=B3", "S", "S", 3, -1) == "=#REF!"
    assert shift_rows("=SUM(B3:B4)", "S", "S", 3, -2) == "=SUM(#REF!)"
