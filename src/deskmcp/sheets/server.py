"""The sheets MCP server: spreadsheet tools over `SheetsService` (local workbooks or Google Sheets)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from deskmcp.core.pagination import CursorArg
from deskmcp.core.server import READ_ONLY, DeskServer, writes
from deskmcp.servers import SERVERS, ServerModule, UserPolicy
from deskmcp.sheets.models import (
    Borders,
    CellFormat,
    ChartKind,
    ChartResult,
    ClearResult,
    FindResult,
    FormatResult,
    Horizontal,
    InputMode,
    LayoutResult,
    NotesResult,
    Render,
    RowsResult,
    SheetResult,
    SpreadsheetInfo,
    SpreadsheetList,
    UpdateResult,
    ValuesResult,
    Vertical,
)
from deskmcp.sheets.service import SheetsService
from deskmcp.sheets.settings import SheetsSettings

INSTRUCTIONS = """Spreadsheets (local .xlsx/.ods/.csv workbooks, or Google Sheets). Find a spreadsheet_id with
list_spreadsheets, see its sheets with get_spreadsheet, then read or edit with A1 ranges:
'Sheet1!A1:C10', "'My sheet'!B2", 'A:C' (whole columns), 'A2:D' (to the last row), 'B7'.
Values are rows of cells: [[1, "a"], [2, "b"]]. Errors are JSON with an `error` code and a
`message` saying how to recover."""

Settings = SheetsSettings

TOOLSETS: dict[str, str] = {
    "read": "list, describe, read and search spreadsheets",
    "write": "create spreadsheets; write, append and clear values",
    "structure": "add, rename, duplicate and delete sheets; insert and delete rows",
    "format": "format cells; column widths, row heights, frozen panes and merges; charts; cell notes",
}
DEFAULT_TOOLSETS: tuple[str, ...] = ("read", "write")

USERS = UserPolicy()

Id = Annotated[str, Field(description="From list_spreadsheets")]
Range = Annotated[str, Field(description="A1 range, e.g. 'Sheet1!A1:C10'")]
Sheet = Annotated[str, Field(description="Sheet title (get_spreadsheet)")]
Rows = Annotated[list[list[Any]], Field(description="Rows of values; null keeps a cell")]
Mode = Annotated[InputMode, Field(description="USER_ENTERED parses '=A1*2', '12'; RAW keeps text")]


class Edit(BaseModel):
    model_config = ConfigDict(extra="forbid")
    range: Range
    values: Rows


def create_service(settings: SheetsSettings) -> SheetsService:
    return SheetsService(settings)


def unavailable(settings: SheetsSettings) -> str | None:
    if settings.backend == "google":
        if not (settings.google_service_account_file or settings.google_use_adc or settings.google_token_path.exists()):
            return "no Google authorisation: run `deskmcp auth google` (or set GOOGLE_SERVICE_ACCOUNT_FILE)"
        return None
    if settings.sheets_path is not None and not settings.sheets_path.is_dir():
        return f"the sheets folder {settings.sheets_path} does not exist; create it or fix SHEETS_PATH"
    missing = [str(f) for f in settings.folders if not f.is_dir()]
    if missing:
        return f"SHEETS_FOLDERS names folders that do not exist: {', '.join(missing)}"
    return None


def create_server(settings: SheetsSettings, service: SheetsService | None = None) -> DeskServer:
    """The sheets tools alone on a server of their own (tests, benchmarks): `servers.create_server`."""
    return SERVERS["sheets"].create_server(settings, service)


def register(server: DeskServer, service: SheetsService) -> None:
    """Add the sheets tools (with SHEETS_READ_ONLY, `servers.keep_read_only` then withholds those that
    change anything); DESKMCP_TOOLSETS picks what is shown."""
    settings = service.settings
    server.close_on_shutdown(service)
    remote = settings.backend == "google"

    def changes(*, destructive: bool, idempotent: bool) -> Any:
        return writes(destructive=destructive, idempotent=idempotent, open_world=remote)

    @server.tool("list_spreadsheets", annotations=READ_ONLY, toolset="read")
    def list_spreadsheets(
        query: Annotated[str | None, Field(description="Text the name contains")] = None,
        limit: Annotated[int, Field(ge=1, le=200)] = 50,
        cursor: CursorArg = None,
    ) -> SpreadsheetList:
        """Spreadsheets with their ids."""
        return service.list_spreadsheets(query, limit, cursor)

    @server.tool("get_spreadsheet", annotations=READ_ONLY, toolset="read")
    def get_spreadsheet(spreadsheet_id: Id) -> SpreadsheetInfo:
        """Sheets (title, size, frozen rows), named ranges, and whether it can be edited."""
        return service.get_spreadsheet(spreadsheet_id)

    @server.tool("read_values", annotations=READ_ONLY, toolset="read")
    def read_values(
        spreadsheet_id: Id,
        ranges: Annotated[list[str], Field(min_length=1, description="A1 ranges")],
        render: Annotated[Render, Field(description="raw: unformatted")] = "shown",
        header: Annotated[bool, Field(description="First row as keys; rows as objects")] = False,
        limit: Annotated[int, Field(ge=1, le=5000, description="Rows per range")] = 500,
        cursor: CursorArg = None,
        notes: Annotated[bool, Field(description="With cell notes")] = False,
    ) -> ValuesResult:
        """Values of A1 ranges, trailing blanks trimmed; next_cursor pages one range. `uncomputed`: formulas
        with no value; `volatile`: cells on TODAY, RAND... (or on those), as last saved."""
        return service.read_values(spreadsheet_id, ranges, render, header, limit, cursor, notes)

    @server.tool("find_in_spreadsheet", annotations=READ_ONLY, toolset="read")
    def find_in_spreadsheet(
        spreadsheet_id: Id,
        query: Annotated[str, Field(min_length=1, max_length=500)],
        regex: bool = False,
        sheet: Annotated[str | None, Field(description="Only this sheet")] = None,
        match_case: bool = False,
        whole_cell: bool = False,
        limit: Annotated[int, Field(ge=1, le=500)] = 50,
        cursor: CursorArg = None,
    ) -> FindResult:
        """Cells whose shown value contains the text (or matches the regex), with A1 addresses."""
        return service.find(
            spreadsheet_id,
            query,
            regex=regex,
            sheet=sheet,
            match_case=match_case,
            whole_cell=whole_cell,
            limit=limit,
            cursor=cursor,
        )

    @server.tool("create_spreadsheet", annotations=changes(destructive=False, idempotent=False), toolset="write")
    def create_spreadsheet(
        title: str,
        sheets: Annotated[list[str] | None, Field(description="Sheet titles (default one 'Sheet1')")] = None,
    ) -> SpreadsheetInfo:
        """Create an empty spreadsheet; returns its id."""
        return service.create_spreadsheet(title, sheets)

    @server.tool("update_values", annotations=changes(destructive=True, idempotent=True), toolset="write")
    def update_values(spreadsheet_id: Id, range: Range, values: Rows, input: Mode = "USER_ENTERED") -> UpdateResult:
        """Overwrite cells starting at the range's top-left cell."""
        return service.update_values(spreadsheet_id, range, values, input)

    @server.tool("batch_update", annotations=changes(destructive=True, idempotent=True), toolset="write")
    def batch_update(spreadsheet_id: Id, data: list[Edit], input: Mode = "USER_ENTERED") -> UpdateResult:
        """Several update_values edits in one call."""
        return service.batch_update(spreadsheet_id, [e.model_dump() for e in data], input)

    @server.tool("append_rows", annotations=changes(destructive=False, idempotent=False), toolset="write")
    def append_rows(
        spreadsheet_id: Id,
        range: Annotated[str, Field(description="Sheet or table columns, e.g. 'Sheet1' or 'Sheet1!A:D'")],
        values: Rows,
        input: Mode = "USER_ENTERED",
    ) -> UpdateResult:
        """Add rows after the last row holding data in the range's columns."""
        return service.append_rows(spreadsheet_id, range, values, input)

    @server.tool("clear_values", annotations=changes(destructive=True, idempotent=True), toolset="write")
    def clear_values(spreadsheet_id: Id, ranges: Annotated[list[str], Field(min_length=1)]) -> ClearResult:
        """Empty the cells of A1 ranges (formatting stays)."""
        return service.clear_values(spreadsheet_id, ranges)

    @server.tool("add_sheet", annotations=changes(destructive=False, idempotent=False), toolset="structure")
    def add_sheet(
        spreadsheet_id: Id,
        title: str,
        rows: Annotated[int, Field(ge=1, le=100_000)] = 1000,
        columns: Annotated[int, Field(ge=1, le=1000)] = 26,
    ) -> SheetResult:
        """Add an empty sheet at the end."""
        return service.add_sheet(spreadsheet_id, title, rows, columns)

    @server.tool("rename_sheet", annotations=changes(destructive=False, idempotent=True), toolset="structure")
    def rename_sheet(spreadsheet_id: Id, sheet: Sheet, title: str) -> SheetResult:
        """Rename a sheet; formulas, names, charts and pivot tables referring to it follow."""
        return service.rename_sheet(spreadsheet_id, sheet, title)

    @server.tool("duplicate_sheet", annotations=changes(destructive=False, idempotent=False), toolset="structure")
    def duplicate_sheet(spreadsheet_id: Id, sheet: Sheet, title: str) -> SheetResult:
        """Copy a sheet to a new one named title."""
        return service.duplicate_sheet(spreadsheet_id, sheet, title)

    @server.tool("delete_sheet", annotations=changes(destructive=True, idempotent=True), toolset="structure")
    def delete_sheet(spreadsheet_id: Id, sheet: Sheet) -> SheetResult:
        """Delete a sheet and everything on it; in a workbook with charts or pivot tables, refused (naming
        them) when something elsewhere reads the sheet."""
        return service.delete_sheet(spreadsheet_id, sheet)

    @server.tool("insert_rows", annotations=changes(destructive=False, idempotent=False), toolset="structure")
    def insert_rows(
        spreadsheet_id: Id,
        sheet: Sheet,
        at: Annotated[int, Field(ge=1, description="New rows start here; rows below move down")],
        count: Annotated[int, Field(ge=1, le=10_000)] = 1,
    ) -> RowsResult:
        """Insert empty rows; formulas, names, charts, tables and formats keep pointing at the same data."""
        return service.insert_rows(spreadsheet_id, sheet, at, count)

    @server.tool("delete_rows", annotations=changes(destructive=True, idempotent=False), toolset="structure")
    def delete_rows(
        spreadsheet_id: Id,
        sheet: Sheet,
        at: Annotated[int, Field(ge=1, description="First row to delete")],
        count: Annotated[int, Field(ge=1, le=10_000)] = 1,
    ) -> RowsResult:
        """Delete rows; rows below move up, notes and comment threads in them go. Refused when it would
        take a table's header or pivot cells."""
        return service.delete_rows(spreadsheet_id, sheet, at, count)

    @server.tool("format_range", annotations=changes(destructive=False, idempotent=True), toolset="format")
    def format_range(
        spreadsheet_id: Id,
        range: Range,
        bold: bool | None = None,
        italic: bool | None = None,
        underline: bool | None = None,
        font_size: Annotated[float | None, Field(ge=1, le=409)] = None,
        font_color: Annotated[str | None, Field(description="'#RRGGBB' or a name: red, light_gray...")] = None,
        fill_color: Annotated[str | None, Field(description="Background, as font_color")] = None,
        number_format: Annotated[str | None, Field(description="e.g. '#,##0.00', '0%', 'yyyy-mm-dd'")] = None,
        horizontal: Horizontal | None = None,
        vertical: Vertical | None = None,
        wrap: bool | None = None,
        borders: Borders | None = None,
    ) -> FormatResult:
        """Format cells; what is left out stays as it is. borders: {sides: [all|outer|top|bottom|left|right|
        inner_horizontal|inner_vertical], style: thin|medium|thick|dashed|dotted|double|none, color}."""
        fmt = CellFormat(
            bold=bold,
            italic=italic,
            underline=underline,
            font_size=font_size,
            font_color=font_color,
            fill_color=fill_color,
            number_format=number_format,
            horizontal=horizontal,
            vertical=vertical,
            wrap=wrap,
            borders=borders,
        )
        return service.format_range(spreadsheet_id, range, fmt)

    @server.tool("set_layout", annotations=changes(destructive=False, idempotent=True), toolset="format")
    def set_layout(
        spreadsheet_id: Id,
        sheet: Sheet,
        column_widths: Annotated[
            dict[str, float] | None, Field(description="{'A': 20, 'C:E': 12}: widths in characters")
        ] = None,
        row_heights: Annotated[dict[str, float] | None, Field(description="{'1': 30, '2:5': 18}: in points")] = None,
        freeze_rows: Annotated[int | None, Field(ge=0, description="Rows kept in view at the top; 0 unfreezes")] = None,
        freeze_columns: Annotated[int | None, Field(ge=0, description="Columns kept in view at the left")] = None,
        merge: Annotated[list[str] | None, Field(description="Ranges to merge, e.g. ['A1:D1']")] = None,
        unmerge: Annotated[list[str] | None, Field(description="Merged cells overlapping these are unmerged")] = None,
    ) -> LayoutResult:
        """Column widths, row heights, frozen rows and columns, merged cells of one sheet."""
        return service.set_layout(
            spreadsheet_id, sheet, column_widths, row_heights, freeze_rows, freeze_columns, merge, unmerge
        )

    @server.tool("set_notes", annotations=changes(destructive=False, idempotent=True), toolset="format")
    def set_notes(
        spreadsheet_id: Id,
        sheet: Sheet,
        notes: Annotated[dict[str, str], Field(description="{'B2': 'Checked by Ann'}; '' removes the note")],
    ) -> NotesResult:
        """Cell notes (comments shown on hover); read them with read_values(notes=true)."""
        return service.set_notes(spreadsheet_id, sheet, notes)

    @server.tool("add_chart", annotations=changes(destructive=False, idempotent=False), toolset="format")
    def add_chart(
        spreadsheet_id: Id,
        range: Annotated[
            str, Field(description="The data: series names in the first row, categories in the first column")
        ],
        kind: ChartKind,
        anchor: Annotated[str, Field(description="Cell of the chart's top-left corner, e.g. 'E2' or 'Charts!A1'")],
        title: str | None = None,
    ) -> ChartResult:
        """Add a chart (line, bar, column, pie, scatter, area) over a range; scatter: first column is x."""
        return service.add_chart(spreadsheet_id, range, kind, anchor, title)


if TYPE_CHECKING:
    # The type checker holds this module to the contract of a server module (`servers.ServerModule`).
    from deskmcp.sheets import server as _this

    _CONTRACT: ServerModule = _this
