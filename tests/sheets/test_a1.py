"""A1 notation: every form a user types, and clear refusals."""

from __future__ import annotations

import pytest

from deskmcp.core.errors import BadRequest
from deskmcp.sheets.a1 import A1Range, column_index, column_letters, parse_a1, quote_sheet


def test_columns_convert_both_ways() -> None:
    for n in (1, 26, 27, 52, 702, 703, 16384):
        assert column_index(column_letters(n)) == n
    assert column_letters(28) == "AB"


def test_sheet_names_with_spaces_and_quotes_round_trip() -> None:
    rng = parse_a1("'Bob''s budget'!B2:C9")
    assert rng == A1Range("Bob's budget", 2, 2, 9, 3)
    assert rng.a1() == "'Bob''s budget'!B2:C9"
    assert parse_a1("'Q1!raw'!A1").sheet == "Q1!raw"


def test_whole_columns_open_ranges_rows_and_single_cells() -> None:
    assert parse_a1("Data!A:C") == A1Range("Data", None, 1, None, 3)
    assert parse_a1("A2:D") == A1Range(None, 2, 1, None, 4)
    assert parse_a1("2:5") == A1Range(None, 2, None, 5, None)
    assert parse_a1("B7") == A1Range(None, 7, 2, 7, 2)
    assert parse_a1("$B$7").is_cell
    assert parse_a1("Sheet1") == A1Range("Sheet1")


@pytest.mark.parametrize("text", ["C3:A1", "S!A3:C1", "C1:A3", "5:2", "C:A"])
def test_a_range_written_backwards_is_refused_naming_it_the_right_way_round(text: str) -> None:
    with pytest.raises(BadRequest) as caught:
        parse_a1(text)
    assert "runs backwards" in caught.value.message
    assert "A1:C3" in caught.value.message or text in ("5:2", "C:A")


def test_bare_word_naming_a_sheet_wins_over_a_column() -> None:
    assert parse_a1("a", sheets=["a", "b"]) == A1Range("a")
    assert parse_a1("a") == A1Range(None, None, 1, None, 1)


@pytest.mark.parametrize("text", ["", "Sheet1!A1:", "'open!A1", "A1:B2:C3", "A0", "Sheet1!A1:5", "!A1"])
def test_bad_range_is_bad_request_showing_the_valid_forms(text: str) -> None:
    with pytest.raises(BadRequest) as caught:
        parse_a1(text)
    assert "Valid forms" in caught.value.message


def test_windows_page_rows_of_a_range() -> None:
    rng = parse_a1("Data!A2:D")
    assert rng.rows_window(0, 10).a1() == "Data!A2:D11"
    assert parse_a1("A1:B5").rows_window(3, 10).a1() == "A4:B5"
    assert parse_a1("Data").rows_window(0, 5).a1() == "Data!1:5"


def test_quote_sheet_quotes_only_when_needed() -> None:
    assert quote_sheet("Sheet1") == "Sheet1"
    assert quote_sheet("AB12") == "'AB12'"
    assert quote_sheet("My sheet") == "'My sheet'"
