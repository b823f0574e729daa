"""A first read of a few rows of a big xlsx sheet, anywhere in it, is streamed from the rows it asks
(the rows above passed over unparsed) and answers exactly what the loaded sheet answers."""

from __future__ import annotations

import datetime as dt
import re
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from deskmcp.sheets.a1 import parse_a1
from deskmcp.sheets.backends import sheet_reader
from deskmcp.sheets.backends.sheet_reader import SheetReader
from deskmcp.sheets.models import Grid
from deskmcp.sheets.xlsx import sheetdata
from deskmcp.sheets.xlsx.sheetdata import RowSeek, Unordered
from tests.helpers.workbooks import make_xlsx

PART = "xl/worksheets/sheet1.xml"
WINDOWS = ["S!A1:G3", "S!B1500:F1503", "S!A2998:G3001", "S!C2999:D3010", "S!A1000:G1000"]


def _rows() -> list[list[Any]]:
    rows: list[list[Any]] = [["n", "when", "ok", "ratio", "twice", "today", "bad"]]
    for i in range(2, 3001):
        rows.append(
            [
                i,
                dt.datetime(2026, 1, 1 + i % 28),
                i % 2 == 0,
                i / 4,
                f"=A{i}*2",  # stored without a value: uncomputed
                "=TODAY()" if i % 500 == 0 else None,  # volatile
                "#DIV/0!" if i % 7 == 0 else f"t{i}",  # a stored error
            ]
        )
    return rows


def _rewritten(source: Path, target: Path, change: Callable[[str], str]) -> Path:
    """A copy of the workbook at `source` whose sheet XML went through `change`."""
    with zipfile.ZipFile(source) as zin, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename == PART:
                data = change(data.decode("utf-8")).encode("utf-8")
            zout.writestr(info, data)
    return target


def _swap_rows(text: str) -> str:
    """Rows 10 and 11 written in the other order."""
    ten = re.search(r'<row r="10".*?</row>', text)
    eleven = re.search(r'<row r="11".*?</row>', text)
    assert ten is not None and eleven is not None
    return text[: ten.start()] + eleven.group(0) + ten.group(0) + text[eleven.end() :]


def _unnumbered(text: str) -> str:
    """Rows 5 to 20 without their `r` (each follows the one before it)."""
    return re.sub(r'<row r="([0-9]+)"', lambda m: "<row" if 5 <= int(m.group(1)) <= 20 else m.group(0), text)


def _read(reader: SheetReader, path: Path, window: str, render: Any) -> list[Grid]:
    return reader.read(path, "xlsx", [parse_a1(window)], render)


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of 4 KiB and a stream of any file size, so a small sheet is passed over chunk by chunk."""
    monkeypatch.setattr(sheetdata, "CHUNK", 4096)
    monkeypatch.setattr(sheet_reader, "STREAM_BYTES", 0)


@pytest.mark.parametrize("shape", ["plain", "rows out of order", "rows without r"])
@pytest.mark.usefixtures("small_chunks")
def test_a_streamed_window_anywhere_answers_what_the_loaded_sheet_answers(
    root: Path, monkeypatch: pytest.MonkeyPatch, shape: str
) -> None:
    made = make_xlsx(root / "made.xlsx", {"S": _rows()})
    change = {"plain": lambda t: t, "rows out of order": _swap_rows, "rows without r": _unnumbered}[shape]
    path = _rewritten(made, root / "book.xlsx", change)
    streamed: list[str] = []
    real_window = SheetReader.window

    def window(self: SheetReader, path: Path, sheet: str, rng: Any, **kw: Any) -> list[list[Any]]:
        rows = real_window(self, path, sheet, rng, **kw)
        if kw.get("seek"):
            streamed.append(rng.a1())
        return rows

    monkeypatch.setattr(SheetReader, "window", window)
    loaded = SheetReader()
    try:
        loaded.grid(path, "xlsx", "S")
        for render in ("shown", "raw"):
            for a1 in WINDOWS:
                fresh = SheetReader()  # nothing loaded: a first read
                try:
                    quick = _read(fresh, path, a1, render)
                finally:
                    fresh.close()
                assert quick == _read(loaded, path, a1, render), (a1, render)
    finally:
        loaded.close()
    # out of order, every window is read from the loaded sheet; else each was streamed
    assert streamed == ([] if shape == "rows out of order" else [parse_a1(w).a1() for w in WINDOWS] * 2)
    bottom = _read(SheetReader(), path, "S!E2996:G3000", "raw")[0]
    assert bottom.values[0] == ["", "", "#DIV/0!"] and bottom.values[-1] == ["", "", "t3000"]
    assert bottom.errors == ["S!G2996"]
    assert bottom.uncomputed == [*(f"S!E{r}" for r in range(2996, 3001)), "S!F3000"]


def _seek(path: Path, first: int) -> tuple[RowSeek, bytes]:
    with zipfile.ZipFile(path) as zf, zf.open(PART) as handle:
        seeker = RowSeek(handle, first)
        return seeker, b"".join(seeker.chunks())


@pytest.mark.usefixtures("small_chunks")
def test_the_rows_above_a_window_are_passed_over_only_while_numbered_and_in_order(root: Path) -> None:
    made = make_xlsx(root / "made.xlsx", {"S": _rows()})
    seeker, text = _seek(made, 2000)
    assert 1000 < seeker.last < 2000
    assert f'<row r="{seeker.last + 1}"'.encode() in text and b'<row r="10"' not in text
    ElementTree.fromstring(text)  # the root and its namespaces are kept: the rest parses
    assert _seek(made, 1)[0].last == 0

    unnumbered = _rewritten(made, root / "unnumbered.xlsx", _unnumbered)
    seeker, text = _seek(unnumbered, 2000)
    assert seeker.last < 5  # parsed from before the rows without r
    with pytest.raises(Unordered):
        _seek(_rewritten(made, root / "swapped.xlsx", _swap_rows), 2000)


def _shared(text: str) -> str:
    """Column E written as one shared formula (E2's, translated down), as Excel writes a filled column."""
    text = text.replace("<f>A2*2</f>", '<f t="shared" ref="E2:E3000" si="0">A2*2</f>', 1)
    return re.sub(r"<f>A([0-9]+)\*2</f>", '<f t="shared" si="0"/>', text)


@pytest.mark.parametrize("shape", ["plain", "shared formulas", "rows out of order"])
@pytest.mark.usefixtures("small_chunks")
def test_the_flags_of_a_window_anywhere_are_those_of_the_whole_scan(root: Path, shape: str) -> None:
    rows = _rows()
    for row in rows[-8:]:
        row.append(f"=F3000+A{row[0]}")  # computed from a volatile cell below it
    made = make_xlsx(root / "made.xlsx", {"S": rows, "T": [["=S!H2999*2", "=S!A3"]]})
    change = {"plain": lambda t: t, "shared formulas": _shared, "rows out of order": _swap_rows}[shape]
    path = _rewritten(made, root / "book.xlsx", change)
    whole = SheetReader()
    whole._scan(path, "S")
    whole._volatile(path)  # scanned whole: every flag from the whole workbook
    windows = [*WINDOWS, "S!E2990:H3000", "S!H2999"]
    try:
        for a1 in windows:
            fresh = SheetReader()
            try:
                near = fresh.formula_cells(path, "S", parse_a1(a1))
                assert near == whole.formula_cells(path, "S", parse_a1(a1)), a1
                # scanned whole only when rows above the window were needed: a shared formula's
                # first cell (E2), rows 10 and 11 out of order (met in the first chunk passed over)
                if shape == "plain":
                    assert not fresh._formula_scans, a1
                elif (parse_a1(a1).start_row or 1) > 11:
                    assert fresh._formula_scans, a1
            finally:
                fresh.close()
    finally:
        whole.close()
    assert whole.formula_cells(path, "S", parse_a1("S!H2999"))[1] == ["H2999"]
