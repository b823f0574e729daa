"""A value written to a local .xlsx is stored the same way whether the package is patched in place or
the workbook is saved whole through openpyxl: the same cell type, a number's text that reads back
as exactly the number written (the shortest such text, as Python's repr gives it), and a date as
the same serial number with the same number format. Numbers already in the file keep their text
through a later save either way."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest

from deskmcp.sheets.a1 import parse_a1
from deskmcp.sheets.backends.local import LocalBackend
from tests.helpers.workbooks import libreoffice_csv, make_xlsx, stored_cells

ROW = [
    0.1 + 0.2,  # A: needs 17 significant digits
    123456789.12345679,  # B: 17 digits as well
    12345678901234567,  # C: an integer past 2**53, stored as the double it becomes
    3,  # D
    3.0,  # E
    2.5,  # F
    1e20,  # G
    1e-07,  # H
    "2024-01-15",  # I: a date as typed
    "1900-01-15",  # J: a date before 1 March 1900
    "=10^20",  # K: a computed whole number past 2**53
    "=A1*3",  # L
    "=DATE(2024,2,1)",  # M: a computed date
    "=I1+0.25",  # N: a computed date and time
]
CELLS = "S!A1:N1"


def _write_both(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> dict[str, Path]:
    """The row written, then an unrelated cell written, through each path; the files by path name."""
    caplog.set_level(logging.INFO, logger="deskmcp.sheets")
    files = {}
    for name in ("patched", "openpyxl"):
        folder = tmp_path / name
        make_xlsx(folder / "book.xlsx", {"S": [["x"]]})
        backend = LocalBackend(folder)
        backend.fast_writes = name == "patched"
        try:
            caplog.clear()
            backend.write("book.xlsx", [(parse_a1("S!A1"), [ROW])], "USER_ENTERED")
            fell_back = any("edited through openpyxl" in r.getMessage() for r in caplog.records)
            assert not fell_back, f"the {name} write was to patch the package in place"
            files[name] = folder / "book.xlsx"
        finally:
            backend.close()
    return files


def _row(path: Path) -> dict[str, tuple[str, str | None, str]]:
    return {ref: cell for ref, cell in stored_cells(path).items() if ref.endswith("1") and len(ref) == 2}


def test_both_write_paths_store_numbers_and_dates_as_the_same_cells(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    files = _write_both(tmp_path, caplog)
    patched, whole = _row(files["patched"]), _row(files["openpyxl"])
    assert patched == whole
    assert whole["A1"] == ("n", "0.30000000000000004", "General")
    assert whole["B1"] == ("n", "123456789.12345679", "General")
    assert whole["C1"] == ("n", "1.2345678901234568e+16", "General")
    assert whole["D1"] == whole["E1"] == ("n", "3", "General")
    assert whole["G1"] == ("n", "1e+20", "General")
    assert whole["H1"] == ("n", "1e-07", "General")
    assert whole["I1"] == ("n", "45306", "yyyy-mm-dd")
    assert whole["J1"] == ("n", "15", "yyyy-mm-dd")  # Excel's serial: day 1 is 1 January 1900
    assert whole["K1"] == ("n", "1e+20", "General")
    assert whole["L1"] == ("n", "0.9000000000000001", "General")
    assert whole["M1"] == ("n", "45323", "yyyy-mm-dd")
    assert whole["N1"] == ("n", "45306.25", "yyyy-mm-dd hh:mm")
    # every number's text reads back as exactly the number written
    for ref, number in zip("ABCDEFGH", ROW[:8], strict=True):
        text = whole[f"{ref}1"][1]
        assert text is not None and float(text) == float(number), ref


def test_both_write_paths_read_back_the_numbers_and_dates_written(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    for name, path in _write_both(tmp_path, caplog).items():
        backend = LocalBackend(path.parent)
        try:
            shown = backend.read("book.xlsx", [parse_a1(CELLS)], "shown")[0].values[0]
        finally:
            backend.close()
        assert shown[:8] == [0.1 + 0.2, 123456789.12345679, 12345678901234568, 3, 3, 2.5, 10**20, 1e-07], name
        assert shown[8:10] == ["2024-01-15", "1900-01-15"], name
        assert shown[12:14] == ["2024-02-01", "2024-01-15T06:00:00"], name


def test_numbers_and_dates_in_the_file_keep_their_text_through_a_later_save_on_both_write_paths(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    written = _write_both(tmp_path, caplog)["patched"]
    before = _row(written)
    for name in ("patched", "openpyxl"):
        folder = tmp_path / f"later-{name}"
        folder.mkdir()
        shutil.copy(written, folder / "book.xlsx")
        backend = LocalBackend(folder)
        backend.fast_writes = name == "patched"
        try:
            backend.write("book.xlsx", [(parse_a1("S!A3"), [["later"]])], "USER_ENTERED")
        finally:
            backend.close()
        assert _row(folder / "book.xlsx") == before, name


@pytest.mark.e2e
@pytest.mark.anyio
async def test_libreoffice_reads_the_same_numbers_and_dates_from_both_write_paths(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    files = _write_both(tmp_path, caplog)
    patched = await libreoffice_csv(files["patched"], tmp_path / "lo-patched")
    whole = await libreoffice_csv(files["openpyxl"], tmp_path / "lo-openpyxl")
    assert patched == whole
    shown = whole[0].split(",")
    # (LibreOffice shows 1900-01-15, Excel's serial 15, as 1900-01-14: it has no 29 February 1900)
    assert shown[8] == "2024-01-15"
    assert shown[12] == "2024-02-01"
    assert shown[13].startswith("2024-01-15 06:00")
