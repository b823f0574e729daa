"""Volatile formulas (TODAY, NOW, RAND...): computed again at every write with the server's clock
and time zone, and named in `volatile` when read, since their stored value is that of the last save."""

from __future__ import annotations

import datetime as dt
import logging
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from deskmcp.sheets.a1 import parse_a1
from deskmcp.sheets.backends.local import LocalBackend
from deskmcp.sheets.server import Settings
from deskmcp.sheets.service import create_backend
from deskmcp.sheets.xlsx.parts import write_cached_values
from tests.helpers.tool_calls import Connect, call

# 05:00 UTC on 27 November 2026 is still the 26th in Pago Pago (UTC-11), already evening in Kiritimati (UTC+14)
UTC_NOW = dt.datetime(2026, 11, 27, 5, 0, tzinfo=dt.UTC)


def saved_on_an_old_day(path: Path) -> Path:
    """A1 TODAY(), B1 a day after it, C1 NOW(), D1 RAND(), E1 RANDBETWEEN, G1 an ordinary formula:
    with the values Excel cached when the file was saved on 15 March 2023."""
    from openpyxl import Workbook

    wb = Workbook()
    ws: Any = wb.active
    ws.title = "S"
    ws.append(["=TODAY()", "=A1+1", "=NOW()", "=RAND()", "=RANDBETWEEN(1,6)", 5, "=F1*2"])
    for ref in ("A1", "B1"):
        ws[ref].number_format = "yyyy-mm-dd"
    ws["C1"].number_format = "yyyy-mm-dd hh:mm"
    wb.save(path)
    cached = {"A1": 45000, "B1": 45001, "C1": 45000.5, "D1": 0.25, "E1": 3, "G1": 10}
    path.write_bytes(write_cached_values(path.read_bytes(), {"S": cached}))
    return path


def _backend(root: Path, fast_writes: bool, zone: str) -> LocalBackend:
    backend = LocalBackend(root)
    backend.fast_writes = fast_writes
    backend.writer.clock = lambda: UTC_NOW
    backend.writer.zone = ZoneInfo(zone)
    return backend


@pytest.mark.parametrize("fast_writes", [True, False], ids=["patched", "openpyxl"])
@pytest.mark.parametrize(
    ("zone", "today", "now"),
    [
        ("Pacific/Kiritimati", "2026-11-27", "2026-11-27T19:00:00"),
        ("Pacific/Pago_Pago", "2026-11-26", "2026-11-26T18:00:00"),
    ],
)
def test_a_write_computes_today_and_now_again_in_the_servers_time_zone(
    root: Path, fast_writes: bool, zone: str, today: str, now: str, caplog: pytest.LogCaptureFixture
) -> None:
    saved_on_an_old_day(root / "book.xlsx")
    caplog.set_level(logging.INFO, logger="deskmcp.sheets")
    backend = _backend(root, fast_writes, zone)
    try:
        _done, flagged = backend.write("book.xlsx", [(parse_a1("S!H5"), [["note"]])], "USER_ENTERED")
        grid = backend.read("book.xlsx", [parse_a1("S!A1:G1")], "shown")[0]
    finally:
        backend.close()
    assert ("edited through openpyxl" in caplog.text) is False
    day_after = (dt.date.fromisoformat(today) + dt.timedelta(days=1)).isoformat()
    # RAND and RANDBETWEEN draw again at the write, as Excel draws again at every change
    row = grid.values[0]
    assert [row[0], row[1], row[2], row[5], row[6]] == [today, day_after, now, 5, 10]
    assert isinstance(row[3], float) and 0 <= row[3] < 1 and row[3] != 0.25
    assert row[4] in (1, 2, 3, 4, 5, 6)
    assert flagged == []
    assert not grid.uncomputed


def test_the_time_zone_setting_is_the_one_today_uses_at_a_write(tmp_path: Path, root: Path) -> None:
    settings = Settings(workspace=tmp_path / "ws", sheets_path=root, timezone="Pacific/Kiritimati")
    backend = create_backend(settings)
    assert isinstance(backend, LocalBackend)
    assert backend.writer.zone == ZoneInfo("Pacific/Kiritimati")


@pytest.mark.anyio
async def test_read_values_names_the_cells_whose_formula_is_volatile(root: Path, connect: Connect) -> None:
    saved_on_an_old_day(root / "book.xlsx")
    async with connect() as c:
        out = await call(c, "read_values", {"spreadsheet_id": "book.xlsx", "ranges": ["S!A1:G1", "S!B1:D1"]})
    whole, part = out["ranges"]
    assert whole["values"] == [["2023-03-15", "2023-03-16", "2023-03-15T12:00:00", 0.25, 3, 5, 10]]
    # B1 (=A1+1) only reads a volatile cell: its value is as old as A1's
    assert whole["volatile"] == ["S!A1", "S!B1", "S!C1", "S!D1", "S!E1"]
    assert part["volatile"] == ["S!B1", "S!C1", "S!D1"]


@pytest.mark.anyio
async def test_read_values_names_cells_of_other_sheets_computed_from_a_volatile_one(
    root: Path, connect: Connect
) -> None:
    from openpyxl import Workbook

    wb = Workbook()
    ws: Any = wb.active
    ws.title = "Settings"
    ws.append(["=TODAY()"])
    report = wb.create_sheet("Report")
    report.append([1, "=Settings!A1-30", "=B1+A1", "=A1*2"])
    wb.save(root / "book.xlsx")
    path = root / "book.xlsx"
    path.write_bytes(
        write_cached_values(
            path.read_bytes(), {"Settings": {"A1": 45000}, "Report": {"B1": 44970, "C1": 44971, "D1": 2}}
        )
    )
    async with connect() as c:
        out = await call(c, "read_values", {"spreadsheet_id": "book.xlsx", "ranges": ["Report!A1:D1"]})
    assert out["ranges"][0]["volatile"] == ["Report!B1", "Report!C1"]


@pytest.mark.anyio
async def test_read_values_names_cells_sharing_a_volatile_formula(root: Path, connect: Connect) -> None:
    import zipfile

    path = saved_on_an_old_day(root / "book.xlsx")
    # A2:A3 share A1's formula (Excel's fill down), each with its own cached value
    with zipfile.ZipFile(path) as zf:
        items = [(i, zf.read(i)) for i in zf.infolist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for info, data in items:
            if info.filename == "xl/worksheets/sheet1.xml":
                data = data.replace(b"<f>TODAY()</f>", b'<f t="shared" ref="A1:A3" si="0">TODAY()</f>').replace(
                    b"</row></sheetData>",
                    b'</row><row r="2"><c r="A2"><f t="shared" si="0"/><v>45000</v></c></row>'
                    b'<row r="3"><c r="A3"><f t="shared" si="0"/><v>45000</v></c><c r="B3"><v>1</v></c></row>'
                    b"</sheetData>",
                )
            zf.writestr(info, data)
    async with connect() as c:
        out = await call(c, "read_values", {"spreadsheet_id": "book.xlsx", "ranges": ["S!A1:B3"]})
    assert out["ranges"][0]["volatile"] == ["S!A1", "S!B1", "S!A2", "S!A3"]  # B1 reads A1


@pytest.mark.anyio
async def test_read_values_answers_no_volatile_list_for_ordinary_formulas(root: Path, connect: Connect) -> None:
    saved_on_an_old_day(root / "book.xlsx")
    async with connect() as c:
        out = await call(c, "read_values", {"spreadsheet_id": "book.xlsx", "ranges": ["S!F1:G1"]})
    assert out["ranges"][0].get("volatile") is None


@pytest.mark.parametrize(
    ("formula", "volatile"),
    [
        ("=TODAY()", True),
        ("=now()+1", True),
        ("=_xlfn.RANDARRAY(2)", True),
        ("=SUM(OFFSET(A1,1,1,2,2))", True),
        ("=RANDBETWEEN (1,6)", True),
        ('=A1&"NOW"', False),
        ("=KNOWN(1)", False),
        ("=MY.TODAY(1)", False),
        ("=SUM(A1:A9)", False),
    ],
)
def test_volatile_calls_are_told_from_names_that_only_contain_them(formula: str, volatile: bool) -> None:
    from deskmcp.sheets.formulas.dependencies import calls_volatile

    assert calls_volatile(formula.encode()) is volatile


def test_a_structure_change_computes_today_again_too(root: Path) -> None:
    saved_on_an_old_day(root / "book.xlsx")
    backend = _backend(root, True, "Pacific/Kiritimati")
    try:
        _info, flagged = backend.add_sheet("book.xlsx", "Notes", 10, 5)
        grid = backend.read("book.xlsx", [parse_a1("S!A1:G1")], "shown")[0]
    finally:
        backend.close()
    row = grid.values[0]
    assert [row[0], row[1], row[2], row[5], row[6]] == ["2026-11-27", "2026-11-28", "2026-11-27T19:00:00", 5, 10]
    assert isinstance(row[3], float) and 0 <= row[3] < 1
    assert row[4] in (1, 2, 3, 4, 5, 6)
    assert flagged == []


def _chain_workbook(path: Path) -> Path:
    """Report!A1 reads B500, which reads Settings!A300 (=NOW()); Report!B1 sums the whole column D,
    where D900 is =RAND(); Report!C1 reads only plain numbers; all with values cached."""
    from openpyxl import Workbook

    wb = Workbook()
    settings: Any = wb.active
    settings.title = "Settings"
    settings["A300"] = "=NOW()"
    report = wb.create_sheet("Report")
    report["A1"] = "=B500+1"
    report["B1"] = "=SUM(D:D)"
    report["C1"] = "=E1+E2"
    report["B500"] = "=Settings!A300*2"
    report["D900"] = "=RAND()"
    report["E1"], report["E2"] = 1, 2
    wb.save(path)
    cached = {"Settings": {"A300": 45000.5}, "Report": {"A1": 90002, "B1": 0.5, "C1": 3, "B500": 90001, "D900": 0.5}}
    path.write_bytes(write_cached_values(path.read_bytes(), cached))
    return path


@pytest.mark.anyio
async def test_a_first_read_of_the_top_rows_follows_what_they_read_down_the_sheet_and_across_sheets(
    root: Path, connect: Connect
) -> None:
    """The first rows are flagged from the rows they reach (A1 through B500 to Settings!A300), and a
    whole-column read (B1 over D:D) is answered from the whole sheet: both ways flag the same cells."""
    _chain_workbook(root / "book.xlsx")
    async with connect() as c:
        near = await call(c, "read_values", {"spreadsheet_id": "book.xlsx", "ranges": ["Report!A1"]})
        whole = await call(c, "read_values", {"spreadsheet_id": "book.xlsx", "ranges": ["Report!A1:C1"]})
    async with connect() as c:
        open_range = await call(c, "read_values", {"spreadsheet_id": "book.xlsx", "ranges": ["Report!A:C"]})
    assert near["ranges"][0]["volatile"] == ["Report!A1"]
    assert whole["ranges"][0]["volatile"] == ["Report!A1", "Report!B1"]
    assert [c for c in open_range["ranges"][0]["volatile"] if c.endswith("1")] == ["Report!A1", "Report!B1"]


def test_the_top_rows_are_flagged_without_scanning_the_whole_workbook(root: Path) -> None:
    from deskmcp.sheets.backends.sheet_reader import SheetReader

    path = _chain_workbook(root / "book.xlsx")
    reader = SheetReader()
    try:
        assert reader.formula_cells(path, "Report", parse_a1("Report!A1")) == ([], ["A1"])
        assert reader.formula_cells(path, "Report", parse_a1("Report!C1")) == ([], [])
        assert not reader._formula_scans and not reader._volatiles  # nothing scanned whole
        assert reader.formula_cells(path, "Report", parse_a1("Report!B1")) == ([], ["B1"])
        assert reader._formula_scans  # D:D is read whole
    finally:
        reader.close()
