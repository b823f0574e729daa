"""The contract every spreadsheet backend implements. Tools never know which one they talk to."""

from __future__ import annotations

from typing import Any, Protocol

from deskmcp.sheets.a1 import A1Range
from deskmcp.sheets.models import (
    CellFormat,
    ChartResult,
    ChartSpec,
    FormatResult,
    Grid,
    InputMode,
    Layout,
    LayoutResult,
    NotesResult,
    Render,
    SheetInfo,
    SpreadsheetInfo,
    SpreadsheetRef,
    UpdatedRange,
)


class SheetsBackend(Protocol):
    name: str
    scan_rows: int
    """Rows per read when a search scans a sheet (0: every sheet in one request)."""
    grid: tuple[int, int] | None
    """The last row and column a sheet can have; a range reaching past them is refused (None: the
    service behind the backend answers for its own limits)."""

    def list_spreadsheets(self, query: str | None, offset: int, limit: int) -> tuple[list[SpreadsheetRef], bool]:
        """One page of spreadsheets (name contains `query`) and whether more follow."""
        ...

    def create_spreadsheet(self, title: str, sheets: list[str]) -> SpreadsheetInfo: ...

    def get_spreadsheet(self, spreadsheet_id: str) -> SpreadsheetInfo: ...

    def read(self, spreadsheet_id: str, ranges: list[A1Range], render: Render) -> list[Grid]:
        """Values of each range, in order, in one request where the backend can."""
        ...

    def write(
        self,
        spreadsheet_id: str,
        updates: list[tuple[A1Range, list[list[Any]]]],
        mode: InputMode,
        *,
        escape_csv: bool = True,
    ) -> tuple[list[UpdatedRange], list[str]]:
        """Write every update in one request/save; also the formula cells left without a value
        (`'Sheet 1'!C2`; the backend computes none it cannot compute as Excel would). `escape_csv`:
        text written to a .csv that a spreadsheet app would run as a formula gets a leading `'`
        (backends without CSV ignore it)."""
        ...

    def append(
        self, spreadsheet_id: str, target: A1Range, rows: list[list[Any]], mode: InputMode, *, escape_csv: bool = True
    ) -> tuple[UpdatedRange, list[str]]: ...

    def clear(self, spreadsheet_id: str, ranges: list[A1Range]) -> tuple[list[str], list[str]]: ...

    def add_sheet(self, spreadsheet_id: str, title: str, rows: int, columns: int) -> tuple[SheetInfo, list[str]]:
        """The new sheet, and (as for every change of structure here) the formula cells the save
        left without a value."""
        ...

    def rename_sheet(self, spreadsheet_id: str, sheet: str, title: str) -> tuple[SheetInfo, list[str]]: ...

    def delete_sheet(self, spreadsheet_id: str, sheet: str) -> list[str]: ...

    def duplicate_sheet(self, spreadsheet_id: str, sheet: str, title: str) -> tuple[SheetInfo, list[str]]: ...

    def insert_rows(self, spreadsheet_id: str, sheet: str, at: int, count: int) -> list[str]: ...

    def delete_rows(self, spreadsheet_id: str, sheet: str, at: int, count: int) -> list[str]: ...

    def format_range(self, spreadsheet_id: str, rng: A1Range, fmt: CellFormat) -> FormatResult:
        """Apply a format (colours already `RRGGBB`) to the cells of a range, in one request/save."""
        ...

    def set_layout(self, spreadsheet_id: str, sheet: str, layout: Layout) -> LayoutResult:
        """Column widths, row heights, frozen panes and merges of one sheet, in one request/save."""
        ...

    def set_notes(self, spreadsheet_id: str, sheet: str, notes: dict[tuple[int, int], str]) -> NotesResult:
        """Notes of cells of one sheet ((row, column) -> text; empty text removes the note)."""
        ...

    def read_notes(self, spreadsheet_id: str, ranges: list[A1Range]) -> list[dict[str, str]]:
        """The notes of each range's cells, by cell (`B2`), in order."""
        ...

    def add_chart(self, spreadsheet_id: str, spec: ChartSpec) -> ChartResult:
        """A chart over a range whose values the service has read and checked."""
        ...

    def close(self) -> None: ...
