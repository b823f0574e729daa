"""Benchmark of the sheets server on a large local workbook (not a test: it prints what it measures).

It generates an .xlsx of ROWS x COLS (default 100,000 x 20), starts `deskmcp serve sheets` over
stdio as an MCP client would, and measures at the client:

- open-to-first-read: the first read_values of a workbook nobody has opened yet;
- read_values of 1,000 rows at random offsets, p50 / p95;
- find_in_spreadsheet of a value that occurs once (a scan of every cell), p50 / p95;
- in a second server that has read nothing: update_values of one cell and append_rows of 1,000
  rows (formulas that depend on them recomputed), each with the server's CPU time in the call,
  and that server's peak RSS (VmHWM, Linux);
  with `--chart-and-pivot` the workbook holds a chart and a pivot table the writes must keep;
- `--first-read`: read_values of A1:T100 in a fresh server (with its uncomputed and volatile
  flags) and, with `--peer "excel-mcp-server stdio"`, the same window in a fresh excel-mcp-server.
- in a third server (`sheets.format` enabled): format_range over 10,000 cells (bold, fill,
  number format and borders), the same again on the next 10,000 (the cell formats made by the
  first reused), and that server's peak RSS.

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
import os
import random
import tempfile
import time
from collections.abc import Iterator

import anyio

from bench.common import cpu_seconds, peak_rss_mb, percentile, stdio_params, summary, timed_call


def generate(
    path: Path, rows: int, cols: int, rng: random.Random, *, formulas: bool = True, shared: bool = False
) -> int:
    """A minimal xlsx written directly (inline strings): openpyxl takes minutes at this size.

    With `formulas`, the last three columns of each data row are formulas with their cached values
    (`=B*2`, `=SUM(B:D)` of the row, `=IF(...)` of those two), and a Totals sheet sums every block of
    100 rows of three columns (about 303,000 formulas at 100,000 rows). With `shared`, the three
    columns are stored as Excel stores a formula filled down: its text once, in the first row, and
    shared by the cells below. Returns the formula count."""
    import zipfile
    from xml.sax.saxutils import escape

    from deskmcp.sheets.a1 import column_letters

    letters = [column_letters(c) for c in range(1, cols + 1)]
    plain = cols - 3 if formulas else cols
    count = 0

    def cell(ref: str, value: object) -> str:
        if isinstance(value, int):
            return f'<c r="{ref}"><v>{value}</v></c>'
        return f'<c r="{ref}" t="inlineStr"><is><t>{escape(str(value))}</t></is></c>'

    def sheet_rows() -> Iterator[str]:
        nonlocal count
        header = [f"col{c}" for c in range(1, cols + 1)]
        yield '<row r="1">' + "".join(cell(f"{letters[c]}1", v) for c, v in enumerate(header)) + "</row>"
        for r in range(1, rows + 1):
            n = r + 1
            values = [
                f"row{r}" if c == 0 else (rng.randint(0, 1_000_000) if c % 2 else f"v{r % 977}-{c}")
                for c in range(plain)
            ]
            body = "".join(cell(f"{letters[c]}{n}", v) for c, v in enumerate(values))
            if formulas:
                b, d = (v if isinstance(v, int) else 0 for v in (values[1], values[3]))
                double, total = b * 2, b + d
                big = "big" if total > 1_000_000 else "small"
                x, y, z = letters[plain], letters[plain + 1], letters[plain + 2]
                texts = [f"B{n}*2", f"SUM(B{n}:D{n})", f'IF({y}{n}&gt;1000000,"big","small")']
                if shared:
                    texts = [
                        f'<f t="shared" ref="{c}2:{c}{rows + 1}" si="{i}">{t}</f>'
                        if n == 2
                        else f'<f t="shared" si="{i}"/>'
                        for i, (c, t) in enumerate(zip((x, y, z), texts, strict=True))
                    ]
                else:
                    texts = [f"<f>{t}</f>" for t in texts]
                body += (
                    f'<c r="{x}{n}">{texts[0]}<v>{double}</v></c>'
                    f'<c r="{y}{n}">{texts[1]}<v>{total}</v></c>'
                    f'<c r="{z}{n}" t="str">{texts[2]}<v>{big}</v></c>'
                )
                count += 3
                sums[(r - 1) // 100] = [a + v for a, v in zip(sums[(r - 1) // 100], (b, double, total), strict=True)]
            yield f'<row r="{n}">{body}</row>'

    blocks = (rows + 99) // 100
    sums = [[0, 0, 0] for _ in range(blocks)]
    ns = "http://schemas.openxmlformats.org"
    office = "application/vnd.openxmlformats-officedocument.spreadsheetml"
    rel = f"{ns}/officeDocument/2006/relationships"
    sheets = [("Data", "sheet1.xml")] + ([("Totals", "sheet2.xml")] if formulas else [])
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(
            "[Content_Types].xml",
            f'<?xml version="1.0" encoding="UTF-8"?><Types xmlns="{ns}/package/2006/content-types">'
            '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            '<Default Extension="xml" ContentType="application/xml"/>'
            f'<Override PartName="/xl/workbook.xml" ContentType="{office}.sheet.main+xml"/>'
            + "".join(
                f'<Override PartName="/xl/worksheets/{part}" ContentType="{office}.worksheet+xml"/>'
                for _name, part in sheets
            )
            + "</Types>",
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
            f'xmlns:r="{ns}/officeDocument/2006/relationships"><sheets>'
            + "".join(
                f'<sheet name="{name}" sheetId="{i}" r:id="rId{i}"/>' for i, (name, _part) in enumerate(sheets, 1)
            )
            + "</sheets></workbook>",
        )
        zf.writestr(
            "xl/_rels/workbook.xml.rels",
            f'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="{ns}/package/2006/relationships">'
            + "".join(
                f'<Relationship Id="rId{i}" Type="{rel}/worksheet" Target="worksheets/{part}"/>'
                for i, (_name, part) in enumerate(sheets, 1)
            )
            + "</Relationships>",
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
        if formulas:
            x, y = letters[plain], letters[plain + 1]
            parts = []
            for k in range(blocks):
                first, last = 2 + 100 * k, min(101 + 100 * k, rows + 1)
                a, b, c = sums[k]
                parts.append(
                    f'<row r="{k + 1}"><c r="A{k + 1}"><f>SUM(Data!B{first}:B{last})</f><v>{a}</v></c>'
                    f'<c r="B{k + 1}"><f>SUM(Data!{x}{first}:{x}{last})</f><v>{b}</v></c>'
                    f'<c r="C{k + 1}"><f>SUM(Data!{y}{first}:{y}{last})</f><v>{c}</v></c></row>'
                )
                count += 3
            zf.writestr(
                "xl/worksheets/sheet2.xml",
                f'<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="{ns}/spreadsheetml/2006/main">'
                f"<sheetData>{''.join(parts)}</sheetData></worksheet>",
            )
    return count


CHART_AND_PIVOT = {
    "xl/drawings/drawing1.xml": (
        '<xdr:wsDr xmlns:xdr="http://schemas.openxmlformats.org/drawingml/2006/spreadsheetDrawing" '
        'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
        'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">'
        "<xdr:oneCellAnchor><xdr:from><xdr:col>5</xdr:col><xdr:colOff>0</xdr:colOff><xdr:row>1</xdr:row>"
        '<xdr:rowOff>0</xdr:rowOff></xdr:from><xdr:ext cx="5400000" cy="2700000"/><xdr:graphicFrame macro="">'
        '<xdr:nvGraphicFramePr><xdr:cNvPr id="2" name="Chart 1"/><xdr:cNvGraphicFramePr/></xdr:nvGraphicFramePr>'
        '<xdr:xfrm><a:off x="0" y="0"/><a:ext cx="0" cy="0"/></xdr:xfrm><a:graphic>'
        '<a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/chart">'
        '<c:chart xmlns:c="http://schemas.openxmlformats.org/drawingml/2006/chart" r:id="rId1"/>'
        "</a:graphicData></a:graphic></xdr:graphicFrame><xdr:clientData/></xdr:oneCellAnchor></xdr:wsDr>"
    ),
    "xl/drawings/_rels/drawing1.xml.rels": (
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/chart" '
        'Target="../charts/chart1.xml"/></Relationships>'
    ),
    "xl/charts/chart1.xml": (
        '<c:chartSpace xmlns:c="http://schemas.openxmlformats.org/drawingml/2006/chart"><c:chart><c:plotArea>'
        '<c:lineChart><c:grouping val="standard"/><c:ser><c:idx val="0"/><c:order val="0"/><c:val><c:numRef>'
        "<c:f>Totals!$A$1:$A$1000</c:f></c:numRef></c:val></c:ser>"
        '<c:axId val="1"/><c:axId val="2"/></c:lineChart><c:catAx><c:axId val="1"/><c:crossAx val="2"/></c:catAx>'
        '<c:valAx><c:axId val="2"/><c:crossAx val="1"/></c:valAx></c:plotArea></c:chart></c:chartSpace>'
    ),
    "xl/worksheets/_rels/sheet2.xml.rels": (
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/drawing" '
        'Target="../drawings/drawing1.xml"/><Relationship Id="rId2" '
        'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/pivotTable" '
        'Target="../pivotTables/pivotTable1.xml"/></Relationships>'
    ),
    "xl/pivotCache/pivotCacheDefinition1.xml": (
        '<pivotCacheDefinition xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" '
        'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" r:id="rId1" '
        'refreshOnLoad="1" recordCount="0"><cacheSource type="worksheet"><worksheetSource ref="A1:B100001" '
        'sheet="Data"/></cacheSource><cacheFields count="2"><cacheField name="col1" numFmtId="0"><sharedItems/>'
        '</cacheField><cacheField name="col2" numFmtId="0"><sharedItems containsNumber="1"/></cacheField>'
        "</cacheFields></pivotCacheDefinition>"
    ),
    "xl/pivotCache/_rels/pivotCacheDefinition1.xml.rels": (
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
        'pivotCacheRecords" Target="pivotCacheRecords1.xml"/></Relationships>'
    ),
    "xl/pivotCache/pivotCacheRecords1.xml": (
        '<pivotCacheRecords xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="0"/>'
    ),
    "xl/pivotTables/pivotTable1.xml": (
        '<pivotTableDefinition xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" name="P1" '
        'cacheId="1" dataCaption="Values"><location ref="E40:F42" firstHeaderRow="1" firstDataRow="1" '
        'firstDataCol="1"/><pivotFields count="2"><pivotField showAll="0"/><pivotField dataField="1" showAll="0"/>'
        '</pivotFields><dataFields count="1"><dataField name="Sum of col2" fld="1"/></dataFields>'
        "</pivotTableDefinition>"
    ),
    "xl/pivotTables/_rels/pivotTable1.xml.rels": (
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
        'pivotCacheDefinition" Target="../pivotCache/pivotCacheDefinition1.xml"/></Relationships>'
    ),
}
"""A line chart of the Totals and a pivot table of Data!A1:B100001 placed on Totals, their parts
written by hand in the form Excel writes them (the pivot cache empty, refreshed on open): what a
one-cell write must carry through unchanged."""


def add_chart_and_pivot(path: Path) -> None:
    """`path` (made by `generate`) with `CHART_AND_PIVOT` added to its Totals sheet."""
    import zipfile

    office = "application/vnd.openxmlformats-officedocument"
    types = {
        "drawings/drawing1.xml": f"{office}.drawing+xml",
        "charts/chart1.xml": f"{office}.drawingml.chart+xml",
        "pivotCache/pivotCacheDefinition1.xml": f"{office}.spreadsheetml.pivotCacheDefinition+xml",
        "pivotCache/pivotCacheRecords1.xml": f"{office}.spreadsheetml.pivotCacheRecords+xml",
        "pivotTables/pivotTable1.xml": f"{office}.spreadsheetml.pivotTable+xml",
    }
    rel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    moved = path.with_suffix(".tmp")
    path.rename(moved)
    with zipfile.ZipFile(moved) as src, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            body = src.read(info)
            if info.filename == "[Content_Types].xml":
                overrides = "".join(f'<Override PartName="/xl/{k}" ContentType="{v}"/>' for k, v in types.items())
                body = body.replace(b"</Types>", overrides.encode() + b"</Types>")
            elif info.filename == "xl/_rels/workbook.xml.rels":
                body = body.replace(
                    b"</Relationships>",
                    f'<Relationship Id="rId90" Type="{rel}/pivotCacheDefinition" '
                    'Target="pivotCache/pivotCacheDefinition1.xml"/></Relationships>'.encode(),
                )
            elif info.filename == "xl/workbook.xml":
                body = body.replace(
                    b"</sheets>", b'</sheets><pivotCaches><pivotCache cacheId="1" r:id="rId90"/></pivotCaches>'
                )
            elif info.filename == "xl/worksheets/sheet2.xml":
                body = body.replace(b"<worksheet ", f'<worksheet xmlns:r="{rel}" '.encode(), 1).replace(
                    b"</worksheet>", b'<drawing r:id="rId1"/></worksheet>'
                )
            dst.writestr(info, body)
        for name, text in CHART_AND_PIVOT.items():
            dst.writestr(name, text)
    moved.unlink()


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
        rss = peak_rss_mb(pidfile)
        print(f"server peak RSS (reads)   {rss:9.1f} MiB" if rss is not None else "server peak RSS           n/a")
    await measure_writes(root, rows, cols)
    await measure_format(root)
    path = root / "sheets" / "big.xlsx"
    baseline = [openpyxl_window(path, s, 1000, cols) for s in starts[: max(3, samples // 4)]]
    print(f"openpyxl read_only window {summary(baseline)}")
    ratio = percentile(baseline, 50) / percentile(reads, 50)
    print(f"ratio openpyxl / deskmcp read_values p50: {ratio:.1f}x")


async def measure_first_read(root: Path, cols: int, peer: str | None) -> None:
    """read_values of A1:<last>100 of Data in a server that has read nothing, with its flags; the
    same window in a fresh excel-mcp-server (`peer`: its command) when given, and the ratio."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    from deskmcp.sheets.a1 import column_letters

    window = f"A1:{column_letters(cols)}100"
    env = {"SHEETS_PATH": str(root / "sheets"), "DESKMCP_WORKSPACE": str(root / "ws-first")}
    params = stdio_params(["-m", "deskmcp.cli", "serve", "sheets"], env, root / "first.pid")
    async with Client(params) as client:
        started = time.perf_counter()
        result = await client.call_tool("read_values", {"spreadsheet_id": "big.xlsx", "ranges": [f"Data!{window}"]})
        ours = (time.perf_counter() - started) * 1000
    grid = (result.structured_content or {})["ranges"][0]
    flags = f"uncomputed {len(grid.get('uncomputed') or [])}, volatile {len(grid.get('volatile') or [])}"
    print(f"first read_values {window}  {ours:9.1f} ms ({flags})")
    if peer is None:
        return
    command, *args = peer.split()
    peer_params = StdioServerParameters(
        command=command, args=args, env={**os.environ, "EXCEL_FILES_PATH": str(root / "sheets")}
    )
    async with Client(peer_params) as client:
        started = time.perf_counter()
        await client.call_tool(
            "read_range", {"path": str(root / "sheets" / "big.xlsx"), "sheet": "Data", "range": window}
        )
        theirs = (time.perf_counter() - started) * 1000
    print(f"peer first read_range      {theirs:9.1f} ms  (ratio deskmcp / peer {ours / theirs:.1f}x)")


async def measure_writes(root: Path, rows: int, cols: int) -> None:
    """One-cell update_values and append_rows of 1,000 rows in a server that has read nothing,
    so its peak RSS is what the writes cost."""
    from mcp import Client

    pidfile = root / "writer.pid"
    env = {"SHEETS_PATH": str(root / "sheets"), "DESKMCP_WORKSPACE": str(root / "ws")}
    params = stdio_params(["-m", "deskmcp.cli", "serve", "sheets"], env, pidfile)
    async with Client(params) as client:

        def cpu() -> str:
            """The server's CPU time in the call just made (`started`: its CPU time before)."""
            now = cpu_seconds(pidfile)
            return f"  (server CPU {(now - started) * 1000:7.1f} ms)" if now is not None and started is not None else ""

        started = cpu_seconds(pidfile)
        update = await timed_call(
            client,
            "update_values",
            {"spreadsheet_id": "big.xlsx", "range": f"Data!B{rows // 2}", "values": [[123]]},
            validate=False,
        )
        print(f"update_values 1 cell      {update:9.1f} ms{cpu()}")
        new_rows = [[f"new{i}", *range(cols - 4)] for i in range(1000)]
        started = cpu_seconds(pidfile)
        append = await timed_call(
            client, "append_rows", {"spreadsheet_id": "big.xlsx", "range": "Data", "values": new_rows}, validate=False
        )
        print(f"append_rows 1,000 rows    {append:9.1f} ms{cpu()}")
        after = await timed_call(
            client,
            "read_values",
            {"spreadsheet_id": "big.xlsx", "ranges": [f"Data!A{rows + 2}:B{rows + 2}"]},
            validate=False,
        )
        print(f"first read after append   {after:9.1f} ms")
        rss = peak_rss_mb(pidfile)
        print(f"server peak RSS (writes)  {rss:9.1f} MiB" if rss is not None else "server peak RSS           n/a")


async def measure_format(root: Path) -> None:
    """format_range over 10,000 cells (A2:J1001), then over the next 10,000, in a server of its own."""
    from mcp import Client

    pidfile = root / "formatter.pid"
    env = {
        "SHEETS_PATH": str(root / "sheets"),
        "DESKMCP_WORKSPACE": str(root / "ws"),
        "DESKMCP_TOOLSETS": "default,sheets.format",
    }
    params = stdio_params(["-m", "deskmcp.cli", "serve", "sheets"], env, pidfile)
    look = {"bold": True, "fill_color": "light_yellow", "number_format": "#,##0.00", "borders": {"sides": ["all"]}}
    async with Client(params) as client:
        for label, cells in (
            ("format_range 10,000 cells", "Data!A2:J1001"),
            ("again, formats reused   ", "Data!A1002:J2001"),
        ):
            took = await timed_call(
                client, "format_range", {"spreadsheet_id": "big.xlsx", "range": cells, **look}, validate=False
            )
            print(f"{label} {took:9.1f} ms")
        rss = peak_rss_mb(pidfile)
        print(f"server peak RSS (format)  {rss:9.1f} MiB" if rss is not None else "server peak RSS           n/a")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--cols", type=int, default=20)
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--writes-only", action="store_true", help="only the update and append measures")
    parser.add_argument("--shared", action="store_true", help="the formula columns as Excel's shared formulas")
    parser.add_argument("--first-read", action="store_true", help="only the first read of A1:T100 in a fresh server")
    parser.add_argument(
        "--chart-and-pivot",
        action="store_true",
        help="a chart and a pivot table in the workbook (the writes keep them)",
    )
    parser.add_argument(
        "--peer", help="command of excel-mcp-server over stdio, for --first-read (e.g. 'excel-mcp-server stdio')"
    )
    parser.add_argument("--format-only", action="store_true", help="only the format_range measures")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="deskmcp-bench-sheets-") as tmp:
        root = Path(tmp)
        (root / "sheets").mkdir()
        started = time.perf_counter()
        count = generate(root / "sheets" / "big.xlsx", args.rows, args.cols, random.Random(2026), shared=args.shared)
        if args.chart_and_pivot:
            add_chart_and_pivot(root / "sheets" / "big.xlsx")
        size = (root / "sheets" / "big.xlsx").stat().st_size / 1e6
        print(
            f"workbook {args.rows:,} x {args.cols} ({count:,} formulas): {size:.1f} MB, "
            f"generated in {time.perf_counter() - started:.1f} s"
        )
        if args.first_read:
            anyio.run(measure_first_read, root, args.cols, args.peer)
        elif args.writes_only:
            anyio.run(measure_writes, root, args.rows, args.cols)
        elif args.format_only:
            anyio.run(measure_format, root)
        else:
            anyio.run(measure, root, args.rows, args.cols, args.samples)


if __name__ == "__main__":
    main()
