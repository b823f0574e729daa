"""The evaluator against LibreOffice on realistic workbooks: every value right or flagged, none wrong.

The workbooks are built by tests/sheets/formula_workbooks.py. LibreOffice's values (with Excel's
where the two disagree) are stored in tests/sheets/data/formulas_expected.json, so the comparison
runs without LibreOffice too; when `soffice` is on PATH, LibreOffice recomputes the workbooks once
per test run and the evaluator is compared with what it says now.

Refresh the stored values with `uv run python bench/formulas_vs_libreoffice.py --write-expected`.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from deskmcp.sheets.formulas.functions import FUNCTIONS
from tests.sheets import formula_workbooks as fw

# Cells deskmcp flags as uncomputed: one where Excel and LibreOffice disagree. (Defined names and
# time-of-day cells, once flagged, are handed to the evaluator by the local backend.)
KNOWN_FLAGGED = {
    "edges.xlsx": {"Edges!H41"},  # COUNTIF(text "42", 42): Excel and LibreOffice disagree
    # SUBTOTAL 1-11 over a sheet with hidden rows: rows a filter hides would not count, and which
    # rows a filter hid is not told apart from rows hidden by hand
    "totals.xlsx": {"Sales!D13", "Sales!D14"},
}
# functions.xlsx calls every function with edge inputs; where Excel and LibreOffice differ there
# (negative dates, #NUM! against #VALUE!, an error as criterion...) deskmcp flags the cell, and at
# least this many cells of it must come out right.
EDGE_RIGHT_AT_LEAST = 2410


@pytest.fixture(scope="session")
def workbooks(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    folder = tmp_path_factory.mktemp("formula-books")
    return folder, fw.build(folder)


@pytest.fixture(scope="session")
def libreoffice_values(
    workbooks: tuple[Path, list[Path]], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, dict[str, Any]]:
    """LibreOffice's values for every formula cell, from one soffice run for the whole test run."""
    if shutil.which("soffice") is None:
        pytest.skip("LibreOffice (soffice) is not on PATH; the stored expectations are checked instead")
    _folder, paths = workbooks
    work = tmp_path_factory.mktemp("libreoffice")
    return fw.recompute_with_libreoffice(paths, work / "out", work / "profile")


def _wrong(rows: list[tuple[str, str, str, str, Any, Any]]) -> list[str]:
    return [
        f"{book} {ref} {formula}: expected {want!r}, got {got!r}"
        for book, ref, formula, status, want, got in rows
        if status == "wrong"
    ]


def _flagged(rows: list[tuple[str, str, str, str, Any, Any]]) -> dict[str, set[str]]:
    """The flagged cells of the realistic workbooks (the edge cases of functions.xlsx aside)."""
    out: dict[str, set[str]] = {}
    for book, ref, _formula, status, _want, _got in rows:
        if status == "flagged" and book != "functions.xlsx":
            out.setdefault(book, set()).add(ref)
    return out


def _edge_right(rows: list[tuple[str, str, str, str, Any, Any]]) -> int:
    return sum(1 for book, *_cell, status, _want, _got in rows if book == "functions.xlsx" and status == "right")


@pytest.mark.slow
def test_evaluator_matches_libreoffice_on_every_formula_it_computes(
    workbooks: tuple[Path, list[Path]], libreoffice_values: dict[str, dict[str, Any]]
) -> None:
    folder, _paths = workbooks
    rows = list(fw.compare(fw.expected_from(libreoffice_values), folder))
    assert len(rows) > 350
    assert _wrong(rows) == []
    assert _flagged(rows) == KNOWN_FLAGGED
    assert _edge_right(rows) >= EDGE_RIGHT_AT_LEAST


@pytest.mark.slow
def test_libreoffice_still_computes_the_stored_expectations(libreoffice_values: dict[str, dict[str, Any]]) -> None:
    stored = fw.load_expected()
    now = fw.expected_from(libreoffice_values)
    changed = [
        f"{book} {ref}: stored {want!r}, LibreOffice {now[book].get(ref)!r}"
        for book, cells in stored.items()
        for ref, want in cells.items()
        if not fw.same(want, now[book].get(ref))
    ]
    assert changed == []


def test_stored_expectations_cover_every_formula_of_the_workbooks(workbooks: tuple[Path, list[Path]]) -> None:
    _folder, paths = workbooks
    stored = fw.load_expected()
    assert {p.name: set(fw.formulas(p)) for p in paths} == {name: set(cells) for name, cells in stored.items()}


def test_evaluator_matches_the_stored_expectations_without_a_wrong_value(workbooks: tuple[Path, list[Path]]) -> None:
    folder, _paths = workbooks
    rows = list(fw.compare(fw.load_expected(), folder))
    assert _wrong(rows) == []
    assert _flagged(rows) == KNOWN_FLAGGED
    assert _edge_right(rows) >= EDGE_RIGHT_AT_LEAST


def test_every_registered_function_has_libreoffice_edge_cases() -> None:
    used: set[str] = set()
    for make in fw.WORKBOOKS.values():
        for cells in make().values():
            for value in cells.values():
                if isinstance(value, str) and value.startswith("="):
                    used.update(fw.functions_of(value))
    assert sorted(set(FUNCTIONS) - used) == []
    # each one with a negative number, zero, text, a blank and an error in one of its arguments
    without_edges = sorted(
        name
        for name, fn in FUNCTIONS.items()
        if name not in fw.EDGE_EXEMPT
        and not any(
            name in fw.functions_of(t) and ("{x}" in t or fn.max_args == 0) for t in fw.EDGE_CALLS.get(name, [])
        )
    )
    assert without_edges == []
