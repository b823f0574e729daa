"""The `spreadsheets.batchUpdate` requests of the format tools on Google Sheets (Sheets API v4):
`repeatCell` and `updateBorders` for formats, `updateDimensionProperties`,
`updateSheetProperties` (frozen rows and columns), `mergeCells`/`unmergeCells`, `addChart`, and
`repeatCell` of `note` for notes. Plain data: `google.py` sends them."""

from __future__ import annotations

from typing import Any

from deskmcp.sheets.a1 import A1Range
from deskmcp.sheets.models import CellFormat, ChartSpec, Layout

BORDER_STYLES = {
    "thin": "SOLID",
    "medium": "SOLID_MEDIUM",
    "thick": "SOLID_THICK",
    "dashed": "DASHED",
    "dotted": "DOTTED",
    "double": "DOUBLE",
    "none": "NONE",
}
BORDER_SIDES = {
    "top": ("top",),
    "bottom": ("bottom",),
    "left": ("left",),
    "right": ("right",),
    "inner_horizontal": ("innerHorizontal",),
    "inner_vertical": ("innerVertical",),
    "outer": ("top", "bottom", "left", "right"),
    "all": ("top", "bottom", "left", "right", "innerHorizontal", "innerVertical"),
}


def grid_range(sheet_id: int, rng: A1Range) -> dict[str, Any]:
    """A GridRange: zero-based, end exclusive, open sides left out (to the sheet's edge)."""
    out: dict[str, Any] = {"sheetId": sheet_id}
    if rng.start_row is not None:
        out["startRowIndex"] = rng.start_row - 1
    if rng.end_row is not None:
        out["endRowIndex"] = rng.end_row
    if rng.start_col is not None:
        out["startColumnIndex"] = rng.start_col - 1
    if rng.end_col is not None:
        out["endColumnIndex"] = rng.end_col
    return out


def color(rrggbb: str) -> dict[str, float]:
    """A Color (components from 0 to 1) for `RRGGBB`."""
    return {
        "red": int(rrggbb[0:2], 16) / 255,
        "green": int(rrggbb[2:4], 16) / 255,
        "blue": int(rrggbb[4:6], 16) / 255,
    }


def number_format_type(pattern: str) -> str:
    """The NumberFormatType Google asks beside a pattern, read from the pattern."""
    bare = "".join(part for i, part in enumerate(pattern.split('"')) if i % 2 == 0).lower()
    if pattern == "@":
        return "TEXT"
    has_date = any(ch in bare for ch in "yd") or "mmm" in bare
    has_time = any(ch in bare for ch in "hs")
    if has_date and has_time:
        return "DATE_TIME"
    if has_date:
        return "DATE"
    if has_time:
        return "TIME"
    if "%" in bare:
        return "PERCENT"
    if "e+" in bare or "e-" in bare:
        return "SCIENTIFIC"
    if any(sym in pattern for sym in ("$", "€", "£", "¥")):
        return "CURRENCY"
    return "NUMBER"


def format_requests(sheet_id: int, rng: A1Range, fmt: CellFormat) -> list[dict[str, Any]]:
    """`repeatCell` of the cell format asked (only its fields, so the rest stays) and `updateBorders`."""
    grid = grid_range(sheet_id, rng)
    cell: dict[str, Any] = {}
    fields: list[str] = []
    text: dict[str, Any] = {}
    for name, key in (("bold", "bold"), ("italic", "italic"), ("underline", "underline")):
        value = getattr(fmt, name)
        if value is not None:
            text[key] = value
    if fmt.font_size is not None:
        text["fontSize"] = fmt.font_size
    if fmt.font_color is not None:
        text["foregroundColor"] = color(fmt.font_color)
    for key in text:
        fields.append(f"userEnteredFormat.textFormat.{key}")
    if text:
        cell["textFormat"] = text
    if fmt.fill_color is not None:
        cell["backgroundColor"] = color(fmt.fill_color)
        fields.append("userEnteredFormat.backgroundColor")
    if fmt.number_format is not None:
        cell["numberFormat"] = {"type": number_format_type(fmt.number_format), "pattern": fmt.number_format}
        fields.append("userEnteredFormat.numberFormat")
    if fmt.horizontal is not None:
        cell["horizontalAlignment"] = fmt.horizontal.upper()
        fields.append("userEnteredFormat.horizontalAlignment")
    if fmt.vertical is not None:
        cell["verticalAlignment"] = fmt.vertical.upper()
        fields.append("userEnteredFormat.verticalAlignment")
    if fmt.wrap is not None:
        cell["wrapStrategy"] = "WRAP" if fmt.wrap else "OVERFLOW_CELL"
        fields.append("userEnteredFormat.wrapStrategy")
    requests: list[dict[str, Any]] = []
    if fields:
        requests.append(
            {"repeatCell": {"range": grid, "cell": {"userEnteredFormat": cell}, "fields": ",".join(fields)}}
        )
    if fmt.borders is not None:
        line: dict[str, Any] = {"style": BORDER_STYLES[fmt.borders.style]}
        if fmt.borders.style != "none":
            line["color"] = color(fmt.borders.color)
        borders: dict[str, Any] = {"range": grid}
        for side in fmt.borders.sides:
            for key in BORDER_SIDES[side]:
                borders[key] = line
        requests.append({"updateBorders": borders})
    return requests


def column_pixels(width: float) -> int:
    """Pixels of a column `width` characters wide as Excel counts them (7 pixels a character of the
    default font, and 5 of padding)."""
    return round(width * 7 + 5) if width > 0 else 0


def row_pixels(points: float) -> int:
    return round(points * 4 / 3)


def layout_requests(sheet_id: int, layout: Layout) -> tuple[list[dict[str, Any]], list[str]]:
    """The requests of a layout change and, in order, what each does (for the answer)."""
    requests: list[dict[str, Any]] = []
    said: list[str] = []
    for kind, spans, pixels in (("COLUMNS", layout.columns, column_pixels), ("ROWS", layout.rows, row_pixels)):
        for first, last, size in spans:
            requests.append(
                {
                    "updateDimensionProperties": {
                        "range": {"sheetId": sheet_id, "dimension": kind, "startIndex": first - 1, "endIndex": last},
                        "properties": {"pixelSize": pixels(size)},
                        "fields": "pixelSize",
                    }
                }
            )
            what = "column" if kind == "COLUMNS" else "row"
            said.append(
                f"{what}s {first}:{last} {pixels(size)} pixels"
                if last != first
                else f"{what} {first} {pixels(size)} pixels"
            )
    grid: dict[str, int] = {}
    if layout.freeze_rows is not None:
        grid["frozenRowCount"] = layout.freeze_rows
    if layout.freeze_columns is not None:
        grid["frozenColumnCount"] = layout.freeze_columns
    if grid:
        requests.append(
            {
                "updateSheetProperties": {
                    "properties": {"sheetId": sheet_id, "gridProperties": grid},
                    "fields": ",".join(f"gridProperties.{k}" for k in grid),
                }
            }
        )
        said.append(", ".join(f"{k} {v}" for k, v in grid.items()))
    for box in layout.unmerge:
        requests.append({"unmergeCells": {"range": grid_range(sheet_id, A1Range(None, *box))}})
        said.append(f"unmerged {A1Range(None, *box).cells()}")
    for box in layout.merge:
        requests.append({"mergeCells": {"range": grid_range(sheet_id, A1Range(None, *box)), "mergeType": "MERGE_ALL"}})
        said.append(f"merged {A1Range(None, *box).cells()}")
    return requests, said


def note_requests(sheet_id: int, notes: dict[tuple[int, int], str]) -> list[dict[str, Any]]:
    """One `repeatCell` of `note` per cell (an empty note removes it)."""
    return [
        {
            "repeatCell": {
                "range": grid_range(sheet_id, A1Range(None, row, col, row, col)),
                "cell": {"note": text},
                "fields": "note",
            }
        }
        for (row, col), text in sorted(notes.items())
    ]


NOTES_FIELDS = "sheets(properties(title),data(startRow,startColumn,rowData(values(note))))"
"""The fields of `spreadsheets.get` that hold the notes of the ranges asked."""


def notes_found(data: dict[str, Any]) -> dict[str, dict[tuple[int, int], str]]:
    """sheet title -> (row, column) -> note, from a `spreadsheets.get` of `NOTES_FIELDS`."""
    out: dict[str, dict[tuple[int, int], str]] = {}
    for sheet in data.get("sheets", []):
        title = str(sheet.get("properties", {}).get("title", ""))
        found = out.setdefault(title, {})
        for grid in sheet.get("data", []):
            r0, c0 = int(grid.get("startRow", 0)), int(grid.get("startColumn", 0))
            for r, row in enumerate(grid.get("rowData", [])):
                for c, value in enumerate(row.get("values", [])):
                    note = value.get("note")
                    if note:
                        found[(r0 + r + 1, c0 + c + 1)] = str(note)
    return out


CHART_TYPES = {"line": "LINE", "bar": "BAR", "column": "COLUMN", "area": "AREA", "scatter": "SCATTER"}


def chart_request(sheet_id: int, anchor_sheet_id: int, spec: ChartSpec) -> dict[str, Any]:
    """An `addChart`: a basic chart (or a pie chart) over the columns of the data range, its first
    row as the series names (`headerCount` 1), its first column the domain."""
    r0, c0, r1, c1 = spec.box

    def column(col: int) -> dict[str, Any]:
        return {
            "sourceRange": {
                "sources": [
                    {
                        "sheetId": sheet_id,
                        "startRowIndex": r0 - 1,
                        "endRowIndex": r1,
                        "startColumnIndex": col - 1,
                        "endColumnIndex": col,
                    }
                ]
            }
        }

    first_series = c0 + 1 if c1 > c0 else c0
    chart: dict[str, Any]
    if spec.kind == "pie":
        chart = {"pieChart": {"legendPosition": "RIGHT_LEGEND", "series": column(first_series)}}
        if c1 > c0:
            chart["pieChart"]["domain"] = column(c0)
    else:
        basic: dict[str, Any] = {
            "chartType": CHART_TYPES[spec.kind],
            "legendPosition": "RIGHT_LEGEND",
            "headerCount": 1,
            "series": [
                {"series": column(col), "targetAxis": "BOTTOM_AXIS" if spec.kind == "bar" else "LEFT_AXIS"}
                for col in range(first_series, c1 + 1)
            ],
        }
        if c1 > c0:
            basic["domains"] = [{"domain": column(c0)}]
        chart = {"basicChart": basic}
    if spec.title:
        chart["title"] = spec.title
    row, col = spec.anchor
    position = {
        "overlayPosition": {
            "anchorCell": {"sheetId": anchor_sheet_id, "rowIndex": row - 1, "columnIndex": col - 1},
            "widthPixels": column_pixels(8.43) * spec.columns,
            "heightPixels": row_pixels(15) * spec.rows,
        }
    }
    return {"addChart": {"chart": {"spec": chart, "position": position}}}
