"""Dynamic arrays and LET: computed whole inside other functions, stored as Excel stores them
(`_xlfn.`, `_xlfn._xlws.`, `_xlpm.`), and a cell whose formula gives several values is flagged,
never shown as one of them. (Their values against Excel's are in arrays.xlsx of
formula_workbooks.py, checked by test_formulas_libreoffice.py.)"""

from __future__ import annotations

from typing import Any

import pytest

from deskmcp.sheets.formulas.dependencies import inputs
from deskmcp.sheets.formulas.engine import CellError, Uncomputable, WorkbookCalculator, evaluate
from deskmcp.sheets.formulas.prefixes import excel_prefixes, without_prefixes

CELLS: dict[tuple[str, int, int], Any] = {
    **{("S", r, 1): v for r, v in enumerate([3.0, 1.0, 2.0, 3.0, 5.0], start=1)},
    **{("S", r, 2): v for r, v in enumerate(["a", "b", "c", "d", "e"], start=1)},
}


def calc(formula: str) -> Any:
    calculator = WorkbookCalculator(lambda s, r, c: CELLS.get((s, r, c)), lambda s: (5, 2))
    return evaluate(formula, "S", calculator.value, calculator.extent)


@pytest.mark.parametrize(
    ("formula", "expected"),
    [
        ("=LET(x,A1*2,total,SUM(x,A5),total/x)", 11 / 6),
        ("=LET(x,2,LET(x,3,x)+x)", 5.0),  # an inner LET's name hides the outer one
        ("=LET(big,FILTER(A1:A5,A1:A5>2),SUM(big)*COUNT(big))", 33.0),
        ("=_xlfn.LET(_xlpm.n,4,_xlpm.n^2)", 16.0),
        ('=SUM(FILTER(A1:A5,B1:B5<>"c"))', 12.0),
        ("=INDEX(UNIQUE(A1:A5),3)", 2.0),
        ("=INDEX(SORTBY(B1:B5,A1:A5,-1),1)", "e"),
    ],
)
def test_let_and_dynamic_arrays_compute_inside_a_formula(formula: str, expected: Any) -> None:
    assert calc(formula) == pytest.approx(expected)


def test_a_formula_giving_several_values_is_flagged_not_shown_as_one() -> None:
    with pytest.raises(Uncomputable, match="several values"):
        calc("=SORT(A1:A5)")


def test_filter_keeping_nothing_without_a_fallback_is_flagged() -> None:
    with pytest.raises(Uncomputable, match="CALC"):
        calc("=FILTER(A1:A5,A1:A5>9)")


def test_filter_with_an_include_of_another_size_is_a_value_error() -> None:
    assert calc("=SUM(FILTER(A1:A5,A1:A2>0))") == CellError("#VALUE!")


def test_let_names_are_stored_with_xlpm_and_read_back_as_typed() -> None:
    typed = '=LET(rate,B1,total,SUM(A1:A5)*rate,IF(total>0,total,"none"))'
    stored = excel_prefixes(typed)
    assert stored == (
        '=_xlfn.LET(_xlpm.rate,B1,_xlpm.total,SUM(A1:A5)*_xlpm.rate,IF(_xlpm.total>0,_xlpm.total,"none"))'
    )
    assert without_prefixes(stored) == typed
    assert excel_prefixes("=SORT(FILTER(A1:A5,A1:A5>1))") == "=_xlfn._xlws.SORT(_xlfn._xlws.FILTER(A1:A5,A1:A5>1))"
    assert excel_prefixes("=SUM(UNIQUE(A1:A5))") == "=SUM(_xlfn.UNIQUE(A1:A5))"
    assert excel_prefixes('="LET(x,1,x)"&LETTER') == '="LET(x,1,x)"&LETTER'  # text and other names left alone


def test_a_let_formula_reads_its_references_not_every_cell() -> None:
    found = inputs(excel_prefixes("=LET(x,A1:A3,SUM(x)+C7)"), "S")
    assert found is not None
    assert {(a.row0, a.col0, a.row1, a.col1) for a in found} == {(1, 1, 3, 1), (7, 3, 7, 3)}


def test_offset_and_indirect_reads_are_known_only_by_computing_them() -> None:
    assert inputs("=SUM(OFFSET(A1,1,0,2,1))", "S") is None
    assert inputs('=INDIRECT("A"&B1)', "S") is None
    assert calc("=SUM(OFFSET(A1,1,0,2,1))") == 3.0
    assert calc('=INDIRECT("B"&A1)') == "c"


@pytest.mark.parametrize(
    ("formula", "expected"),
    [
        ("=SUM({1,2;3,4})", 10.0),
        ('=INDEX({"a","b";"c","d"},2,2)', "d"),
        ('=SUM({1,"2",TRUE})', 1.0),  # text and booleans in an array are skipped, as in a range
        ('=LOOKUP(7,{0,5,10},{"low","mid","high"})', "mid"),
        ("=ROWS({1;2;3})", 3.0),
        ("=INDEX({-1.5,2E2,#N/A},3)", CellError("#N/A")),
    ],
)
def test_array_constants_written_in_formulas_compute(formula: str, expected: Any) -> None:
    assert calc(formula) == expected


@pytest.mark.parametrize("formula", ["=SUM({1,2;3})", "=SUM({1,,2})", "=SUM({A1,2})"])
def test_array_constants_that_are_not_well_formed_are_flagged(formula: str) -> None:
    with pytest.raises(Uncomputable):
        calc(formula)
