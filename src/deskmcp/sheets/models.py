"""The tools' results."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


def _untitled(schema: dict[str, Any]) -> None:
    # Property titles repeat the field names; every client pays for them on every turn.
    for prop in schema.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)


class Result(BaseModel):
    model_config = ConfigDict(json_schema_extra=_untitled)


Render = Literal["shown", "raw", "formula"]
"""shown: values as displayed (dates as ISO text); raw: unformatted (dates as serial numbers);
formula: a cell's formula where it has one."""

InputMode = Literal["USER_ENTERED", "RAW"]
"""USER_ENTERED parses text as a user typing it ('=SUM(A1:A3)', '12', 'TRUE'); RAW stores it as is."""


class SpreadsheetRef(Result):
    id: str
    name: str
    modified: str | None = None
    url: str | None = None


class SpreadsheetList(Result):
    spreadsheets: list[SpreadsheetRef]
    next_cursor: str | None = None


class SheetInfo(Result):
    sheet_id: int
    title: str
    index: int
    rows: int
    columns: int
    frozen_rows: int = 0
    frozen_columns: int = 0
    hidden: bool = False


class NamedRange(Result):
    name: str
    range: str


class SpreadsheetInfo(Result):
    id: str
    title: str
    sheets: list[SheetInfo]
    named_ranges: list[NamedRange] = Field(default_factory=list)
    url: str | None = None
    writable: bool = True
    note: str | None = None


class Grid(Result):
    """Values of one range as a backend returns them (rows of cells, trailing blanks trimmed)."""

    range: str
    values: list[list[Any]]
    uncomputed: list[str] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    volatile: list[str] = Field(default_factory=list)
    notes: dict[str, str] | None = None
    """Notes of the range's cells by A1 cell, when asked for (None: not asked)."""


class ValueRange(Result):
    range: str
    values: list[list[Any]] | None = None
    rows: list[dict[str, Any]] | None = None
    next_cursor: str | None = None
    uncomputed: list[str] | None = Field(
        default=None, description="Cells holding a formula whose value could not be computed."
    )
    errors: list[str] | None = Field(
        default=None, description="Cells whose value is an error such as #DIV/0! (shown as its text)."
    )
    volatile: list[str] | None = Field(
        default=None,
        description="Cells whose formula calls TODAY, NOW, RAND, OFFSET, INDIRECT... or is computed from "
        "such a cell: the value shown is the one computed at the file's last save, not now.",
    )
    notes: dict[str, str] | None = Field(default=None, description="Cell notes by A1 cell, when asked for.")


class ValuesResult(Result):
    spreadsheet_id: str
    ranges: list[ValueRange]


class UpdatedRange(Result):
    range: str
    rows: int
    columns: int
    cells: int


FLAGGED = (
    "Formula cells left without a value: deskmcp cannot compute them as Excel would and their inputs "
    "changed. Excel and LibreOffice compute them when the file is opened."
)


REASON = "Set when computing stopped at the formula budget of one call; the cells it did not reach are in uncomputed."


class Uncomputed(list[str]):
    """Formula cells a change left without a value (sheet named: `'Sheet 1'!C2`), and `reason`
    when computing stopped at the formula budget before reaching some of them."""

    reason: str | None = None


class UpdateResult(Result):
    spreadsheet_id: str
    updated: list[UpdatedRange]
    total_cells: int
    uncomputed: list[str] | None = Field(default=None, description=FLAGGED)
    uncomputed_reason: str | None = Field(default=None, description=REASON)


class ClearResult(Result):
    spreadsheet_id: str
    cleared: list[str]
    uncomputed: list[str] | None = Field(default=None, description=FLAGGED)
    uncomputed_reason: str | None = Field(default=None, description=REASON)


class SheetResult(Result):
    spreadsheet_id: str
    sheet: SheetInfo | None = None
    deleted: str | None = None
    note: str | None = None
    uncomputed: list[str] | None = Field(default=None, description=FLAGGED)
    uncomputed_reason: str | None = Field(default=None, description=REASON)


class RowsResult(Result):
    spreadsheet_id: str
    sheet: str
    inserted: int = 0
    deleted: int = 0
    first_row: int
    note: str | None = None
    uncomputed: list[str] | None = Field(default=None, description=FLAGGED)
    uncomputed_reason: str | None = Field(default=None, description=REASON)


class Match(Result):
    sheet: str
    cell: str
    value: Any


class FindResult(Result):
    spreadsheet_id: str
    matches: list[Match]
    next_cursor: str | None = None
    truncated: bool = Field(default=False, description="True when a sheet was too large to search whole.")


# -- formatting, layout, charts and notes (the `format` toolset) ------------------------------------

BorderSide = Literal["top", "bottom", "left", "right", "inner_horizontal", "inner_vertical", "outer", "all"]
BorderStyle = Literal["thin", "medium", "thick", "dashed", "dotted", "double", "none"]
Horizontal = Literal["left", "center", "right"]
Vertical = Literal["top", "middle", "bottom"]
ChartKind = Literal["line", "bar", "column", "pie", "scatter", "area"]


class Borders(BaseModel):
    """Lines drawn around or inside a range; `none` removes them."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_untitled)
    sides: list[BorderSide] = Field(default_factory=lambda: ["all"], min_length=1)
    style: BorderStyle = "thin"
    color: str = "000000"


class CellFormat(BaseModel):
    """What a format changes; a field left out keeps the cells' own. Colours are `#RRGGBB` or a
    name (black, white, red, green, blue, yellow, orange, purple, gray, light_gray...)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_untitled)
    bold: bool | None = None
    italic: bool | None = None
    underline: bool | None = None
    font_size: float | None = Field(default=None, ge=1, le=409)
    font_color: str | None = None
    fill_color: str | None = None
    number_format: str | None = Field(default=None, min_length=1, max_length=255)
    horizontal: Horizontal | None = None
    vertical: Vertical | None = None
    wrap: bool | None = None
    borders: Borders | None = None

    def is_empty(self) -> bool:
        return all(getattr(self, name) is None for name in type(self).model_fields)


class FormatResult(Result):
    spreadsheet_id: str
    range: str
    cells: int
    styles_added: int | None = Field(
        default=None, description="Cell formats the workbook's style sheet gained (local files)."
    )


class LayoutResult(Result):
    spreadsheet_id: str
    sheet: str
    changed: list[str]


class ChartResult(Result):
    spreadsheet_id: str
    sheet: str
    chart: str
    anchor: str
    series: list[str]
    chart_id: int | None = None


class NotesResult(Result):
    spreadsheet_id: str
    sheet: str
    written: list[str]
    removed: list[str] = Field(default_factory=list)


class Layout(BaseModel):
    """A layout change of one sheet, parsed: spans are 1-based and inclusive."""

    columns: list[tuple[int, int, float]] = Field(default_factory=list)  # first, last, width in characters
    rows: list[tuple[int, int, float]] = Field(default_factory=list)  # first, last, height in points
    freeze_rows: int | None = None
    freeze_columns: int | None = None
    merge: list[tuple[int, int, int, int]] = Field(default_factory=list)  # r0, c0, r1, c1
    unmerge: list[tuple[int, int, int, int]] = Field(default_factory=list)


class ChartSpec(BaseModel):
    """A chart to add, as the service has read and checked it: the data range (its first row the
    series names, its first column the categories, or the x values of a scatter chart)."""

    kind: ChartKind
    sheet: str
    box: tuple[int, int, int, int]  # r0, c0, r1, c1 of the data, header row included
    anchor_sheet: str
    anchor: tuple[int, int]  # row, column of the chart's top-left corner
    title: str | None = None
    names: list[str]
    categories: list[Any] = Field(default_factory=list)
    series: list[list[float | None]]
    columns: int = 8  # the chart's size in cells
    rows: int = 15
