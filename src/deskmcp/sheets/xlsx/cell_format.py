"""A format applied to a range of an .xlsx sheet: each cell given a cell format that is its own
with the change (`styles.StyleSheet.restyle`), borders drawn per cell by its place in the range."""

from __future__ import annotations

import re

from deskmcp.core.errors import BadRequest
from deskmcp.sheets.a1 import A1Range, column_index
from deskmcp.sheets.models import CellFormat
from deskmcp.sheets.xlsx.package_edit import PackageEdit, WorksheetEdit
from deskmcp.sheets.xlsx.styles import Edge

MAX_FORMAT_CELLS = 200_000
"""Most cells one format change may cover (a whole-column range covers the used rows only)."""

SIDES = {
    "outer": ("top", "bottom", "left", "right"),
    "all": ("top", "bottom", "left", "right", "inner_horizontal", "inner_vertical"),
}


def used_extent(ws: WorksheetEdit) -> tuple[int, int]:
    """The last row and column holding a cell (from the dimension when the sheet gives one)."""
    m = re.search(rb'<dimension\b[^>]*?\bref="[A-Z]*[0-9]*:?\$?([A-Z]{1,3})\$?([0-9]+)"', ws.head)
    if m is not None:
        return max(int(m.group(2)), ws.sheet.max_row), column_index(m.group(1).decode("ascii"))
    last = 0
    for row in ws.sheet.rows:
        last = max([last, *ws.sheet.cells(row)])
    return ws.sheet.max_row, last


def target_cells(ws: WorksheetEdit, rng: A1Range) -> tuple[int, int, int, int]:
    """The cells of `rng` on this sheet (open ranges run to the used area), within the limit."""
    rows, columns = used_extent(ws)
    r0, c0, r1, c1 = rng.bounds(rows, columns)
    if r1 < r0 or c1 < c0:
        raise BadRequest(
            f"{rng.a1(default_sheet=ws.title)} covers no cell of the sheet's used area; give explicit cells, "
            "e.g. 'A1:D1'.",
            {"range": rng.a1(default_sheet=ws.title)},
        )
    count = (r1 - r0 + 1) * (c1 - c0 + 1)
    if count > MAX_FORMAT_CELLS:
        raise BadRequest(
            f"{rng.a1(default_sheet=ws.title)} covers {count:,} cells; one call formats at most "
            f"{MAX_FORMAT_CELLS:,}. Split the range.",
            {"cells": count, "limit": MAX_FORMAT_CELLS},
        )
    return r0, c0, r1, c1


def column_styles(ws: WorksheetEdit) -> dict[int, int]:
    """The cell format each column gives its empty cells (`<col style>`)."""
    found: dict[int, int] = {}
    cols = ws.find("cols")
    if cols is None:
        return found
    for m in re.finditer(rb"<col\b([^>]*)/?>", cols):
        attrs = dict(re.findall(rb'(\w+)="([^"]*)"', m.group(1)))
        style = attrs.get(b"style", b"0")
        if not style.isdigit() or style == b"0":
            continue
        low, high = int(attrs.get(b"min", b"0")), int(attrs.get(b"max", b"0"))
        for col in range(low, min(high, low + 16_384) + 1):
            found[col] = int(style)
    return found


def _edges(fmt: CellFormat, r: int, c: int, box: tuple[int, int, int, int]) -> tuple[tuple[str, Edge], ...]:
    borders = fmt.borders
    if borders is None:
        return ()
    sides: set[str] = set()
    for side in borders.sides:
        sides.update(SIDES.get(side, (side,)))
    r0, c0, r1, c1 = box
    line = (borders.style, borders.color)
    out: list[tuple[str, Edge]] = []
    if (r == r0 and "top" in sides) or (r > r0 and "inner_horizontal" in sides):
        out.append(("top", line))
    if (r == r1 and "bottom" in sides) or (r < r1 and "inner_horizontal" in sides):
        out.append(("bottom", line))
    if (c == c0 and "left" in sides) or (c > c0 and "inner_vertical" in sides):
        out.append(("left", line))
    if (c == c1 and "right" in sides) or (c < c1 and "inner_vertical" in sides):
        out.append(("right", line))
    return tuple(out)


def format_range(edit: PackageEdit, rng: A1Range, fmt: CellFormat) -> tuple[str, int]:
    """Apply `fmt` to the cells of `rng`; the range as applied (A1, sheet named) and its cell count."""
    ws = edit.worksheet(rng.sheet)
    r0, c0, r1, c1 = box = target_cells(ws, rng)
    styles = edit.styles
    by_column = column_styles(ws)
    made: dict[tuple[int, tuple[tuple[str, Edge], ...]], int] = {}
    for r in range(r0, r1 + 1):
        for c in range(c0, c1 + 1):
            old = ws.cell_style(r, c, by_column)
            edges = _edges(fmt, r, c, box)
            key = (old, edges)
            xf = made.get(key)
            if xf is None:
                xf = made[key] = styles.restyle(old, fmt, dict(edges))
            ws.restyle(r, c, xf)
    return A1Range(ws.title, r0, c0, r1, c1).a1(), (r1 - r0 + 1) * (c1 - c0 + 1)
