"""Hostile or odd workbooks: whatever a file holds, reading it costs what the asked range costs and
the server stays up (a reader's failure is a clear error, never the end of the process)."""

from __future__ import annotations

import json
import re
import resource
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.helpers.tool_calls import Connect, call, fail

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]
CHILD_MEMORY = 4 << 30


def _rewrite_sheet(path: Path, edit: Any) -> None:
    """Rewrite the first worksheet part of an xlsx through `edit(bytes) -> bytes`."""
    src = zipfile.ZipFile(path)
    parts = [(info.filename, src.read(info.filename)) for info in src.infolist()]
    src.close()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
        for name, body in parts:
            out.writestr(name, edit(body) if name == "xl/worksheets/sheet1.xml" else body)


def far_cell_workbook(path: Path, *, dimension: bool) -> Path:
    from openpyxl import Workbook

    wb = Workbook()
    ws: Any = wb.active
    ws.title = "S"
    ws["A1"] = 1
    ws["B2"] = "x"
    ws["XFD1048576"] = "far"
    wb.save(path)
    if not dimension:
        _rewrite_sheet(path, lambda body: re.sub(rb"<dimension[^>]*/>", b"", body))
    return path


def run_child(root: Path, body: str) -> dict[str, Any]:
    """Run tool calls in a child Python with its address space capped, so a reader that tries to
    build a huge grid fails there (the child dies) instead of taking this machine's memory."""
    code = f"""
import json, anyio
from pathlib import Path
from mcp import Client
from deskmcp.sheets.server import Settings, create_server
from tests.helpers.tool_calls import call, fail

async def main():
    root = Path({str(root)!r})
    out = {{}}
    async with Client(create_server(Settings(workspace=root.parent / "ws", sheets_path=root))) as c:
{body}
    print(json.dumps(out))

anyio.run(main)
"""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY, CHILD_MEMORY))

    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300, preexec_fn=cap
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.e2e
def test_security_a_cell_at_xfd1048576_without_dimension_reads_at_the_cost_of_the_range(root: Path) -> None:
    far_cell_workbook(root / "far.xlsx", dimension=False)
    out = run_child(
        root,
        """
        out["small"] = await call(c, "read_values", {"spreadsheet_id": "far.xlsx", "ranges": ["S!A1:B2"]})
        out["far"] = await call(c, "read_values", {"spreadsheet_id": "far.xlsx", "ranges": ["S!XFD1048576"]})
        out["sheet"] = await call(c, "read_values", {"spreadsheet_id": "far.xlsx", "ranges": ["S"], "limit": 3})
        out["formula"] = await call(
            c, "read_values", {"spreadsheet_id": "far.xlsx", "ranges": ["S"], "render": "formula", "limit": 3}
        )
        out["info"] = await call(c, "get_spreadsheet", {"spreadsheet_id": "far.xlsx"})
        out["found"] = await call(c, "find_in_spreadsheet", {"spreadsheet_id": "far.xlsx", "query": "far"})
""",
    )
    assert out["small"]["ranges"][0]["values"] == [[1], ["", "x"]]
    assert out["far"]["ranges"][0]["values"] == [["far"]]
    assert out["sheet"]["ranges"][0]["values"] == [[1], ["", "x"]]
    assert out["formula"]["ranges"][0]["values"] == [[1], ["", "x"]]
    sheet = out["info"]["sheets"][0]
    assert (sheet["rows"], sheet["columns"]) == (1_048_576, 16_384)
    assert out["found"]["matches"] == [{"sheet": "S", "cell": "XFD1048576", "value": "far"}]


@pytest.mark.e2e
def test_security_writing_a_cell_at_xfd1048576_then_reading_keeps_the_server_alive(root: Path) -> None:
    far_cell_workbook(root / "w.xlsx", dimension=True)
    out = run_child(
        root,
        """
        await call(c, "update_values", {"spreadsheet_id": "w.xlsx", "range": "S!XFD1048575", "values": [["near"]]})
        out["small"] = await call(c, "read_values", {"spreadsheet_id": "w.xlsx", "ranges": ["S!A1:B2"]})
        out["far"] = await call(c, "read_values", {"spreadsheet_id": "w.xlsx", "ranges": ["S!XFD1048575:XFD1048576"]})
""",
    )
    assert out["small"]["ranges"][0]["values"] == [[1], ["", "x"]]
    assert out["far"]["ranges"][0]["values"] == [["near"], ["far"]]


async def test_a_cell_that_makes_the_reader_panic_answers_parse_error_and_the_server_goes_on(
    root: Path, connect: Connect
) -> None:
    import datetime as dt

    from openpyxl import Workbook

    wb = Workbook()
    ws: Any = wb.active
    ws.title = "S"
    ws["A1"] = dt.date(2020, 1, 1)
    path = root / "panic.xlsx"
    wb.save(path)
    # A date cell holding -1e20 days: python-calamine's date conversion panics (a Rust panic).
    _rewrite_sheet(path, lambda body: re.sub(rb'(<c r="A1"[^>]*><v>)[^<]*', rb"\g<1>-1e20", body))
    (root / "ok.csv").write_text("a\n1\n", encoding="utf-8")
    with anyio.fail_after(60):
        async with connect() as c:
            err = await fail(c, "read_values", {"spreadsheet_id": "panic.xlsx", "ranges": ["S!A1:A2"]})
            after = await call(c, "read_values", {"spreadsheet_id": "ok.csv", "ranges": ["ok"]})
    assert err["error"] == "parse_error"
    assert "panic.xlsx" in err["message"]
    assert after["ranges"][0]["values"] == [["a"], [1]]


def _rewrite_part(path: Path, part: str, edit: Any, *, chunks: int = 0) -> None:
    """Rewrite one part of an xlsx through `edit(bytes) -> bytes`, then pad it with `chunks` MiB of
    blanks inside an XML comment (deflate shrinks them ~1000 times: a zip bomb)."""
    src = zipfile.ZipFile(path)
    parts = [(info.filename, src.read(info.filename)) for info in src.infolist()]
    src.close()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
        for name, body in parts:
            if name != part:
                out.writestr(name, body)
                continue
            with out.open(name, "w", force_zip64=True) as handle:
                handle.write(edit(body))
                if chunks:
                    handle.write(b"<!--")
                    blank = b" " * (1 << 20)
                    for _ in range(chunks):
                        handle.write(blank)
                    handle.write(b"-->")


async def test_security_zip_bomb_part_is_refused_unread_naming_the_part(root: Path, connect: Connect) -> None:
    from tests.helpers.workbooks import make_xlsx

    path = make_xlsx(root / "bomb.xlsx", {"S": [[1, 2]]})
    _rewrite_part(path, "xl/workbook.xml", lambda body: body, chunks=80)  # 80 MiB inflated, 80 KiB stored
    assert path.stat().st_size < 1 << 20
    before = path.read_bytes()
    async with connect() as c:
        described = await fail(c, "get_spreadsheet", {"spreadsheet_id": "bomb.xlsx"})
        read = await fail(c, "read_values", {"spreadsheet_id": "bomb.xlsx", "ranges": ["S!A1:B1"]})
        written = await fail(c, "update_values", {"spreadsheet_id": "bomb.xlsx", "range": "S!A1", "values": [[3]]})
    for err in (described, read, written):
        assert err["error"] == "parse_error"
        assert "xl/workbook.xml" in err["message"]
        assert err["details"]["part"] == "xl/workbook.xml"
    assert path.read_bytes() == before


async def test_single_quoted_attributes_in_the_package_are_read(root: Path, connect: Connect) -> None:
    from openpyxl import Workbook
    from openpyxl.workbook.defined_name import DefinedName

    wb = Workbook()
    ws: Any = wb.active
    ws.title = "Data"
    for i in range(6):
        ws.append([i, i * 2])
    ws.freeze_panes = "A2"
    wb.defined_names["Totals"] = DefinedName("Totals", attr_text="Data!$B$1:$B$6")
    path = root / "quotes.xlsx"
    wb.save(path)

    def single(body: bytes) -> bytes:  # XML allows either quote; some writers use single ones
        return re.sub(rb'(\s[\w:]+)="([^"]*)"', rb"\1='\2'", body)

    for part in ("xl/workbook.xml", "xl/_rels/workbook.xml.rels", "xl/worksheets/sheet1.xml"):
        _rewrite_part(path, part, single)
    async with connect() as c:
        info = await call(c, "get_spreadsheet", {"spreadsheet_id": "quotes.xlsx"})
        values = await call(c, "read_values", {"spreadsheet_id": "quotes.xlsx", "ranges": ["Data!A5:B6"]})
    sheet = info["sheets"][0]
    assert (sheet["title"], sheet["rows"], sheet["columns"], sheet["frozen_rows"]) == ("Data", 6, 2, 1)
    assert info["named_ranges"] == [{"name": "Totals", "range": "Data!$B$1:$B$6"}]
    assert values["ranges"][0]["values"] == [[4, 8], [5, 10]]
