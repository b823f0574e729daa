"""Benchmark of the sheets server on a large local workbook (not a test: it prints what it measures).

It generates an .xlsx of ROWS x COLS (default 100,000 x 20), starts `deskmcp serve sheets` over
stdio as an MCP client would, and measures at the client:

- open-to-first-read: the first read_values of a workbook nobody has opened yet;
- read_values of 1,000 rows at random offsets, p50 / p95;
- find_in_spreadsheet of a value that occurs once (a scan of every cell), p50 / p95;
- append_rows of 1,000 rows (a full load and atomic save of the workbook);
- the server's peak RSS (VmHWM, Linux).

Baseline in the same run: openpyxl's streaming reader (read_only=True) reading the same
1,000-row windows, and the ratio.

    uv run python bench/sheets.py --rows 100000 --cols 20
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/http.py would shadow the standard library's `http`: keep this folder off the import path.
_BENCH = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _BENCH]
sys.path.insert(0, str(_BENCH.parent))

import argparse
import random
import tempfile
import time

import anyio

from bench.common import peak_rss_mb, percentile, stdio_params, summary, timed_call


def generate(path: Path, rows: int, cols: int, rng: random.Random) -> None:
    """A minimal xlsx written directly (inline strings): openpyxl takes minutes at this size."""
    import zipfile
    from xml.sax.saxutils import escape

    from deskmcp.sheets.a1 import column_letters

    letters = [column_letters(c) for c in range(1, cols + 1)]

    def cell(ref: str, value: object) -> str:
        if isinstance(value, int):
            return f'<c r="{ref}"><v>{value}</v></c>'
        return f'<c r="{ref}" t="inlineStr"><is><t>{escape(str(value))}</t></is></c>'

    def sheet_rows() -> object:
        header = [f"col{c}" for c in range(1, cols + 1)]
        yield '<row r="1">' + "".join(cell(f"{letters[c]}1", v) for c, v in enumerate(header)) + "</row>"
        for r in range(1, rows + 1):
            values = [
                f"row{r}" if c == 0 else (rng.randint(0, 1_000_000) if c % 2 else f"v{r % 977}-{c}")
                for c in range(cols)
            ]
            yield (
                f'<row r="{r + 1}">' + "".join(cell(f"{letters[c]}{r + 1}", v) for c, v in enumerate(values)) + "</row>"
            )

    ns = "http://schemas.openxmlformats.org"
    office = "application/vnd.openxmlformats-officedocument.spreadsheetml"
    rel = f"{ns}/officeDocument/2006/relationships"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(
            "[Content_Types].xml",
            f'<?xml version="1.0" encoding="UTF-8"?><Types xmlns="{ns}/package/2006/content-types">'
            '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            '<Default Extension="xml" ContentType="application/xml"/>'
            f'<Override PartName="/xl/workbook.xml" ContentType="{office}.sheet.main+xml"/>'
            f'<Override PartName="/xl/worksheets/sheet1.xml" ContentType="{office}.worksheet+xml"/>'
            "</Types>",
        )
        zf.writestr(
            "_rels/.rels",
            f'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="{ns}/package/2006/relationships">'
            f'<Relationship Id="rId1" Type="{rel}/officeDocument" Target="xl/workbook.xml"/>'
            "</Relationships>",
        )
        zf.writestr(
            "xl/workbook.xml",
            f'<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="{ns}/spreadsheetml/2006/main" '
            f'xmlns:r="{ns}/officeDocument/2006/relationships"><sheets><sheet name="Data" sheetId="1" r:id="rId1"/>'
            "</sheets></workbook>",
        )
        zf.writestr(
            "xl/_rels/workbook.xml.rels",
            f'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="{ns}/package/2006/relationships">'
            f'<Relationship Id="rId1" Type="{rel}/worksheet" Target="worksheets/sheet1.xml"/>'
            "</Relationships>",
        )
        with zf.open("xl/worksheets/sheet1.xml", "w") as sheet:
            head = (
                f'<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="{ns}/spreadsheetml/2006/main">'
                f'<dimension ref="A1:{letters[-1]}{rows + 1}"/><sheetData>'
            )
            sheet.write(head.encode())
            for row in sheet_rows():
                sheet.write(str(row).encode())
            sheet.write(b"</sheetData></worksheet>")


def openpyxl_window(path: Path, start: int, count: int, cols: int) -> float:
    from openpyxl import load_workbook

    started = time.perf_counter()
    wb = load_workbook(path, read_only=True)
    ws = wb["Data"]
    rows = list(ws.iter_rows(min_row=start, max_row=start + count - 1, max_col=cols, values_only=True))
    wb.close()
    assert len(rows) == count
    return (time.perf_counter() - started) * 1000


async def measure(root: Path, rows: int, cols: int, samples: int) -> None:
    from mcp import Client

    from deskmcp.sheets.a1 import column_letters

    last_col = column_letters(cols)
    pidfile = root / "server.pid"
    env = {"SHEETS_PATH": str(root / "sheets"), "DESKMCP_WORKSPACE": str(root / "ws")}
    params = stdio_params(["-m", "deskmcp.cli", "serve", "sheets"], env, pidfile)
    rng = random.Random(7)
    async with Client(params) as client:
        first = await timed_call(
            client, "read_values", {"spreadsheet_id": "big.xlsx", "ranges": [f"Data!A1:{last_col}10"]}, validate=False
        )
        print(f"open-to-first-read        {first:9.1f} ms")
        starts = [rng.randint(2, rows - 1000) for _ in range(samples)]
        reads = [
            await timed_call(
                client,
                "read_values",
                {"spreadsheet_id": "big.xlsx", "ranges": [f"Data!A{s}:{last_col}{s + 999}"], "limit": 1000},
                validate=False,
            )
            for s in starts
        ]
        print(f"read_values 1,000 rows    {summary(reads)}")
        finds = [
            await timed_call(
                client,
                "find_in_spreadsheet",
                {"spreadsheet_id": "big.xlsx", "query": f"row{rng.randint(1, rows)}", "whole_cell": True, "limit": 5},
                validate=False,
            )
            for _ in range(max(3, samples // 4))
        ]
        print(f"find_in_spreadsheet       {summary(finds)}")
        new_rows = [[f"new{i}", *range(cols - 1)] for i in range(1000)]
        append = await timed_call(
            client, "append_rows", {"spreadsheet_id": "big.xlsx", "range": "Data", "values": new_rows}, validate=False
        )
        print(f"append_rows 1,000 rows    {append:9.1f} ms")
        after = await timed_call(
            client,
            "read_values",
            {"spreadsheet_id": "big.xlsx", "ranges": [f"Data!A{rows + 2}:B{rows + 2}"]},
            validate=False,
        )
        print(f"first read after append   {after:9.1f} ms")
        rss = peak_rss_mb(pidfile)
        print(f"server peak RSS           {rss:9.1f} MiB" if rss is not None else "server peak RSS           n/a")
    path = root / "sheets" / "big.xlsx"
    baseline = [openpyxl_window(path, s, 1000, cols) for s in starts[: max(3, samples // 4)]]
    print(f"openpyxl read_only window {summary(baseline)}")
    ratio = percentile(baseline, 50) / percentile(reads, 50)
    print(f"ratio openpyxl / deskmcp read_values p50: {ratio:.1f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--cols", type=int, default=20)
    parser.add_argument("--samples", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="deskmcp-bench-sheets-") as tmp:
        root = Path(tmp)
        (root / "sheets").mkdir()
        started = time.perf_counter()
        generate(root / "sheets" / "big.xlsx", args.rows, args.cols, random.Random(2026))
        size = (root / "sheets" / "big.xlsx").stat().st_size / 1e6
        print(
            f"workbook {args.rows:,} x {args.cols}: {size:.1f} MB, generated in {time.perf_counter() - started:.1f} s"
        )
        anyio.run(measure, root, args.rows, args.cols, args.samples)


if __name__ == "__main__":
    main()
