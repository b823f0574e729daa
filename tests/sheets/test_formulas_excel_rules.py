"""Excel's rules the evaluator follows where a simpler one gives a wrong value without saying so."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from deskmcp.sheets.formulas.engine import CellError, DateSerial, Uncomputable, WorkbookCalculator, evaluate

# A: a header, numbers, a blank; B: text "42", TRUE, a formula's ""; C: names; D: unsorted numbers.
CELLS: dict[tuple[str, int, int], Any] = {
    ("S", 1, 1): "Amount",
    ("S", 2, 1): 10.0,
    ("S", 3, 1): 20.0,
    ("S", 5, 1): 30.0,
    ("S", 1, 2): "42",
    ("S", 2, 2): True,
    ("S", 3, 2): '=""',
    ("S", 1, 3): "Fiona",
    ("S", 2, 3): "Frank",
    ("S", 3, 3): "bob",
    ("S", 4, 3): "F*",
    ("S", 5, 3): "10",
    ("S", 1, 4): 5.0,
    ("S", 2, 4): 1.0,
    ("S", 3, 4): 9.0,
}
NAMES = {"RATE": "S!$A$2", "AMOUNTS": "S!$A$2:$A$5"}


def calc(formula: str, names: dict[str, str] | None = None) -> Any:
    calculator = WorkbookCalculator(
        lambda s, r, c: CELLS.get((s, r, c)),
        lambda s: (5, 3),
        names=(lambda _sheet, name: (names or {}).get(name)) if names is not None else None,
        now=lambda: dt.datetime(2024, 5, 6, 18, 0),
    )
    return evaluate(formula, "S", calculator.value, calculator.extent, calculator.names, now=calculator.now)


@pytest.mark.parametrize(
    ("formula", "expected"),
    [
        ('=COUNTIF(C1:C5,"F*")', 3.0),
        ('=COUNTIF(C1:C5,"F~*")', 1.0),
        ('=COUNTIF(C1:C5,"???")', 1.0),
        ('=SUMIF(C1:C3,"f*",A1:A3)', 10.0),
        ('=COUNTIFS(C1:C5,"F*",C1:C5,"<>Fiona")', 2.0),
    ],
)
def test_criteria_wildcards_match_as_in_excel(formula: str, expected: float) -> None:
    assert calc(formula) == expected


@pytest.mark.parametrize(
    ("formula", "expected"),
    [
        ("=AVERAGE(A2:A5)", 20.0),
        ("=MIN(A4:A5)", 30.0),
        ("=MAX(A4)", 0.0),
        ('=A4=""', True),
        ("=A4=0", True),
        ('=B3=""', True),
        ("=A4+1", 1.0),
        ('=A4&"x"', "x"),
        ("=A4", 0.0),
    ],
)
def test_blank_cells_are_skipped_by_aggregates_and_equal_empty_text(formula: str, expected: Any) -> None:
    assert calc(formula) == expected


@pytest.mark.parametrize(
    ("formula", "expected"),
    [
        ("=SUM(B1)", 0.0),
        ("=SUM(B2)", 0.0),
        ("=SUM(A2,B1,B2)", 10.0),
        ("=COUNT(B1:B2)", 0.0),
        ('=SUM("42",TRUE)', 43.0),
        ('=COUNT("1",TRUE,"x")', 2.0),
        ("=B1+B2", 43.0),
    ],
)
def test_text_and_booleans_in_references_are_not_summed_but_typed_arguments_are(formula: str, expected: Any) -> None:
    assert calc(formula) == expected


@pytest.mark.parametrize(
    ("formula", "expected"),
    [
        ('=COUNTIF(A:A,">15")', 2.0),
        ('=COUNTIF(A:A,">100")', 0.0),
        ('=COUNTIF(A1:A5,"")', 1.0),
        ('=COUNTIF(B1:B3,"")', 1.0),
        ('=COUNTIF(B1:B3,"<>")', 3.0),
        ('=COUNTIF(A1:A5,"<>10")', 4.0),
        ('=SUMIF(A1:A5,"<>10")', 50.0),
        ('=COUNTIF(C1:C5,"10")', 1.0),
    ],
)
def test_criteria_count_only_what_excel_counts(formula: str, expected: float) -> None:
    assert calc(formula) == expected


@pytest.mark.parametrize(
    ("formula", "expected"),
    [
        ('="x"&1/3', "x0.333333333333333"),
        ('="x"&(0.1+0.2)', "x0.3"),
        ('="x"&2^60', "x1.15292150460685E+18"),
        ("=0.1+0.2=0.3", True),
        ("=0.3-0.1-0.2", 0.0),
        ("=ROUND(1.005,2)", 1.01),
        ("=ROUND(2.675,2)", 2.68),
        ("=ROUND(-2.5,0)", -3.0),
        ("=INT((0.1+0.7)*10)", 8.0),
    ],
)
def test_numbers_compare_round_and_join_at_fifteen_digits(formula: str, expected: Any) -> None:
    assert calc(formula) == expected


def test_trim_removes_spaces_only_not_line_breaks() -> None:
    assert calc('=TRIM("  a"&CHAR(10)&"  b  ")') == "a\n b"


@pytest.mark.parametrize(
    ("formula", "expected"),
    [
        ('="2024-01-15"+1', 45307.0),
        ('="15 Jan 2024"-"2024-01-01"', 14.0),
        ('="12:00"*24', 12.0),
        ('="1,234.5"*2', 2469.0),
        ('="abc"+1', CellError("#VALUE!")),
        ('=""+1', CellError("#VALUE!")),
    ],
)
def test_text_dates_and_numbers_convert_in_arithmetic(formula: str, expected: Any) -> None:
    assert calc(formula) == expected


def test_a_date_in_a_locale_dependent_form_is_not_guessed() -> None:
    with pytest.raises(Uncomputable, match="locale"):
        calc('="01/02/2024"+1')


def test_date_functions_return_date_serials_the_writer_can_format() -> None:
    result = calc("=EDATE(DATE(2024,1,31),1)")
    assert isinstance(result, DateSerial) and result == 45351.0  # 29 February 2024
    assert calc("=TODAY()") == 45418.0
    assert calc("=WORKDAY(DATE(2024,5,10),1)") == 45425.0  # Friday -> Monday


@pytest.mark.parametrize(
    ("formula", "expected"),
    [
        ('=VLOOKUP("frank",C1:C5,1,FALSE)', "Frank"),
        ('=INDEX(A1:A5,MATCH("bob",C1:C5,0))', 20.0),
        ('=XLOOKUP("Frank",C1:C5,A1:A5)', 10.0),
        ('=_xlfn.XLOOKUP("nobody",C1:C5,A1:A5,"none")', "none"),
        ('=IFS(A2>15,"big",TRUE,"small")', "small"),
        ('=SWITCH(A3,10,"ten",20,"twenty")', "twenty"),
        ('=IFERROR(1/0,"x")', "x"),
        ("=IF(TRUE,1,NOTAFUNCTION())", 1.0),
        ('=TEXT(1234.5,"$#,##0.00")', "$1,234.50"),
        ('=TEXT(DATE(2024,3,15),"dddd d mmm yyyy")', "Friday 15 Mar 2024"),
        ('=TEXTJOIN("-",TRUE,C1:C3)', "Fiona-Frank-bob"),
        ('=SUMPRODUCT((C2:C3="Frank")*A2:A3)', 10.0),
        ("=RANK(A3,A1:A5)", 2.0),
        ("=SUM(Amounts)*Rate", 600.0),
    ],
)
def test_lookup_logic_text_and_math_functions_compute(formula: str, expected: Any) -> None:
    assert calc(formula, NAMES) == expected


@pytest.mark.parametrize(
    "formula",
    [
        '=CONVERT(1,"m","ft")',  # not implemented
        "=A1:A3*2",  # would spill or intersect with the formula's row
        "=UPPER(C1:C3)",
        "=VLOOKUP(4,D1:D3,1)",  # approximate match over unsorted data
        "=DATE(1900,1,1)",  # Excel and LibreOffice count early 1900 differently
        "=COUNTIF(C5,10)",  # Excel matches text "10" to 10, LibreOffice does not
        "=Amounts",  # a name, with no names known
    ],
)
def test_what_excel_would_answer_differently_or_we_do_not_model_is_uncomputable(formula: str) -> None:
    with pytest.raises(Uncomputable):
        calc(formula)


@pytest.mark.parametrize(
    ("formula", "expected"),
    [
        ("=CEILING.MATH(-5.5,-2)", -4.0),  # negatives round toward zero, the sign of significance ignored
        ("=CEILING.MATH(-5.5,2,1)", -6.0),  # a mode other than 0 rounds them away from zero
        ("=CEILING.MATH(5.5,-2.5)", 7.5),
        ("=CEILING.MATH(6.7,0)", 0.0),
        ("=CEILING.MATH(-6.3)", -6.0),
        ("=CEILING.MATH(24.3,5)", 25.0),
        ("=_xlfn.CEILING.MATH(4.2)", 5.0),
        ("=FLOOR.MATH(7,0)", 0.0),
        ("=FLOOR.MATH(-5.5,-2)", -6.0),  # negatives round away from zero
        ("=FLOOR.MATH(-5.5,2,1)", -4.0),  # ... or toward it with a mode other than 0
        ("=FLOOR.MATH(5.5,-2.5)", 5.0),
        ("=FLOOR.MATH(24.3,5)", 20.0),
        ('=FLOOR.MATH("x")', CellError("#VALUE!")),
    ],
)
def test_ceiling_math_and_floor_math_have_their_own_rules_for_negatives_and_zero(formula: str, expected: Any) -> None:
    assert calc(formula) == expected


DYNAMIC_ERRORS: dict[tuple[str, int, int], Any] = {
    ("S", 1, 1): CellError("#SPILL!"),
    ("S", 2, 1): CellError("#CALC!"),
    ("S", 3, 1): CellError("#N/A"),
    ("S", 4, 1): 4.0,
}


@pytest.mark.parametrize(
    ("formula", "expected"),
    [
        ("=ERROR.TYPE(A1)", 9.0),
        ("=ERROR.TYPE(A2)", 14.0),
        ("=ERROR.TYPE(#SPILL!)", 9.0),
        ("=ERROR.TYPE(#calc!)", 14.0),
        ("=ISERROR(#SPILL!)", True),
        ("=ISERR(A2)", True),
        ('=IFERROR(#CALC!,"none")', "none"),
        ("=#SPILL!", CellError("#SPILL!")),
        ("=INDEX({1,#CALC!},1,2)", CellError("#CALC!")),
        ('=COUNTIF(A1:A4,"#SPILL!")', 1.0),
        ('=COUNTIF(A1:A4,"<>#CALC!")', 3.0),
        ('=COUNTIF(A1:A4,"=#calc!")', 1.0),
    ],
)
def test_the_dynamic_array_errors_are_error_values_as_excel_365_has_them(formula: str, expected: Any) -> None:
    calculator = WorkbookCalculator(lambda s, r, c: DYNAMIC_ERRORS.get((s, r, c)), lambda s: (4, 1))
    assert evaluate(formula, "S", calculator.value, calculator.extent) == expected
