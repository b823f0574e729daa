"""The sheets service: what the tools do, over whichever backend the settings choose."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from deskmcp.core.dates import resolve_zone
from deskmcp.core.errors import BadRequest, NotFound, PermissionDenied
from deskmcp.core.pagination import decode_cursor, page, query_key
from deskmcp.sheets.a1 import GRID_COLUMNS, GRID_ROWS, A1Range, cell_name, check_in_grid, parse_a1, parse_cells
from deskmcp.sheets.backends.base import SheetsBackend
from deskmcp.sheets.colors import parse_color
from deskmcp.sheets.models import (
    CellFormat,
    ChartKind,
    ChartResult,
    ChartSpec,
    ClearResult,
    FindResult,
    FormatResult,
    InputMode,
    Layout,
    LayoutResult,
    Match,
    NotesResult,
    Render,
    RowsResult,
    SheetResult,
    SpreadsheetInfo,
    SpreadsheetList,
    UpdateResult,
    ValueRange,
    ValuesResult,
)
from deskmcp.sheets.settings import SheetsSettings

MAX_RANGES = 50
MAX_ROWS_PER_CALL = 5_000


def create_backend(settings: SheetsSettings) -> SheetsBackend:
    if settings.backend == "google":
        from deskmcp.sheets.backends.google import GoogleBackend

        return GoogleBackend(settings)
    from deskmcp.sheets.backends.local import LocalBackend

    backend = LocalBackend(
        settings.root,
        settings.folders,
        create_root=settings.sheets_path is None,
        lock_folder=settings.workspace / ".deskmcp" / "locks",
    )
    backend.fast_writes = settings.fast_writes
    backend.writer.formula_budget = settings.formula_budget_cells
    backend.writer.zone = resolve_zone(settings.timezone)
    return backend


def _rows(values: Any, what: str = "values") -> list[list[Any]]:
    if not isinstance(values, list) or not all(isinstance(r, list) for r in values):
        raise BadRequest(f"{what} must be a list of rows, each a list of cell values: [[1, 'a'], [2, 'b']].", {})
    return values


class SheetsService:
    def __init__(self, settings: SheetsSettings, backend: SheetsBackend | None = None) -> None:
        self.settings = settings
        self._backend = backend

    @property
    def backend(self) -> SheetsBackend:
        if self._backend is None:
            self._backend = create_backend(self.settings)
        return self._backend

    def close(self) -> None:
        if self._backend is not None:
            self._backend.close()

    def _writer(self) -> SheetsBackend:
        """The backend, for a change; refused when the sheets are read-only (SHEETS_READ_ONLY), so a
        service used without the server (which then offers no writing tool) cannot write either."""
        if self.settings.read_only:
            raise PermissionDenied(
                "The sheets are read-only (SHEETS_READ_ONLY=1): spreadsheets cannot be created or changed. "
                "Unset SHEETS_READ_ONLY to allow changes; the reading tools still work.",
                {"read_only": True, "variable": "SHEETS_READ_ONLY"},
            )
        return self.backend

    def _ranges(self, spreadsheet_id: str, texts: list[str]) -> list[A1Range]:
        """Parse A1 ranges; a bare word like 'a' or 'Data' that names a sheet means that sheet. A range
        past the last row or column of the backend's sheets is `bad_request`."""
        ambiguous = [t for t in texts if re.fullmatch(r"\s*[A-Za-z]{1,3}\s*", t or "")]
        sheets = [s.title for s in self.backend.get_spreadsheet(spreadsheet_id).sheets] if ambiguous else None
        parsed = [parse_a1(t, sheets=sheets) for t in texts]
        if self.backend.grid is not None:  # before a read is cut into pages, which would hide the overrun
            for rng in parsed:
                check_in_grid(rng, *self.backend.grid)
        return parsed

    # -- reading ---------------------------------------------------------------------------------

    def list_spreadsheets(self, query: str | None, limit: int, cursor: str | None) -> SpreadsheetList:
        key = query_key("list", query, limit)
        offset = decode_cursor(cursor, key)
        items, more = self.backend.list_spreadsheets(query, offset, limit)
        return SpreadsheetList(spreadsheets=items, next_cursor=page(offset, limit, limit + 1 if more else 0, key))

    def get_spreadsheet(self, spreadsheet_id: str) -> SpreadsheetInfo:
        return self.backend.get_spreadsheet(spreadsheet_id)

    def read_values(
        self,
        spreadsheet_id: str,
        ranges: list[str],
        render: Render = "shown",
        header: bool = False,
        limit: int = 500,
        cursor: str | None = None,
        notes: bool = False,
    ) -> ValuesResult:
        if not ranges:
            raise BadRequest("Give at least one range, e.g. 'Sheet1!A1:D20' (sheet names: get_spreadsheet).", {})
        if len(ranges) > MAX_RANGES:
            raise BadRequest(f"At most {MAX_RANGES} ranges per call.", {"ranges": len(ranges)})
        if cursor and len(ranges) > 1:
            raise BadRequest("A cursor continues one range: pass that range alone with its next_cursor.", {})
        parsed = self._ranges(spreadsheet_id, ranges)
        key = query_key("read", spreadsheet_id, ranges, render, header, limit)
        offset = decode_cursor(cursor, key)
        windows: list[A1Range] = []
        for rng in parsed:
            body = rng
            if header:
                windows.append(rng.rows_window(0, 1))
                body = A1Range(rng.sheet, (rng.start_row or 1) + 1, rng.start_col, rng.end_row, rng.end_col)
            windows.append(body.rows_window(offset, limit + 1))
        grids = self.backend.read(spreadsheet_id, windows, render)
        if notes:  # the notes of the rows this page holds (the header row's too)
            for grid, found in zip(grids, self.backend.read_notes(spreadsheet_id, windows), strict=True):
                grid.notes = found
        out: list[ValueRange] = []
        i = 0
        for rng in parsed:
            keys: list[str] | None = None
            if header:
                head = grids[i].values[0] if grids[i].values else []
                keys = _header_keys(head)
                i += 1
            grid = grids[i]
            i += 1
            values = grid.values
            more = len(values) > limit
            values = values[:limit]
            item = ValueRange(
                range=grid.range,
                next_cursor=page(offset, limit, limit + 1 if more else 0, key),
                uncomputed=grid.uncomputed or None,
                errors=grid.errors or None,
                volatile=grid.volatile or None,
            )
            if notes:
                item.notes = {**(grids[i - 2].notes or {} if header else {}), **(grid.notes or {})}
                if more:  # the row read past the page is the next page's
                    last = (rng.start_row or 1) + (1 if header else 0) + offset + limit - 1
                    item.notes = {k: v for k, v in item.notes.items() if _row_of(k) <= last}
            if keys is not None:
                item.rows = [_keyed(keys, row) for row in values]
            else:
                item.values = values
            out.append(item)
        return ValuesResult(spreadsheet_id=spreadsheet_id, ranges=out)

    def find(
        self,
        spreadsheet_id: str,
        query: str,
        *,
        regex: bool = False,
        sheet: str | None = None,
        match_case: bool = False,
        whole_cell: bool = False,
        limit: int = 50,
        cursor: str | None = None,
    ) -> FindResult:
        if not query:
            raise BadRequest("query is empty.", {})
        flags = 0 if match_case else re.IGNORECASE
        try:
            pattern = re.compile(query if regex else re.escape(query), flags)
        except re.error as exc:
            raise BadRequest(f"query is not a valid regular expression: {exc}.", {"query": query}) from exc
        key = query_key("find", spreadsheet_id, query, regex, sheet, match_case, whole_cell, limit)
        offset = decode_cursor(cursor, key)
        info = self.backend.get_spreadsheet(spreadsheet_id)
        sizes = {s.title: s.rows for s in info.sheets}
        if sheet is not None and sheet not in sizes:
            raise NotFound(f"No sheet {sheet!r}. Sheets: {', '.join(sizes)}.", {"sheet": sheet, "sheets": list(sizes)})
        sheets = [sheet] if sheet else list(sizes)
        matches: list[Match] = []
        truncated = False
        wanted = offset + limit + 1
        for title, first_row, values in self._scan(spreadsheet_id, sheets, sizes):
            for r, row in enumerate(values, start=first_row):
                for c, value in enumerate(row, start=1):
                    if value == "" or value is None:
                        continue
                    text = value if isinstance(value, str) else _text(value)
                    hit = pattern.fullmatch(text) if whole_cell else pattern.search(text)
                    if hit:
                        matches.append(Match(sheet=title, cell=cell_name(r, c), value=value))
            if len(matches) >= wanted:
                break
            if title == _TRUNCATED:
                truncated = True
        matches = [m for m in matches if m.sheet != _TRUNCATED]
        return FindResult(
            spreadsheet_id=spreadsheet_id,
            matches=matches[offset : offset + limit],
            next_cursor=page(offset, limit, len(matches) - offset, key),
            truncated=truncated,
        )

    def _scan(
        self, spreadsheet_id: str, sheets: list[str], sizes: dict[str, int]
    ) -> Iterator[tuple[str, int, list[list[Any]]]]:
        """(sheet, first row, rows) in chunks, within the cell budget; a final _TRUNCATED marks a cut."""
        budget = self.settings.max_cells
        chunk = self.backend.scan_rows
        if not chunk:  # one request for every sheet (Google: one batchGet)
            grids = self.backend.read(spreadsheet_id, [A1Range(s) for s in sheets], "shown")
            for title, grid in zip(sheets, grids, strict=True):
                values, cut = _within(grid.values, budget)
                budget -= sum(len(r) for r in values)
                yield title, 1, values
                if cut:
                    yield _TRUNCATED, 1, []
                    return
            return
        for title in sheets:
            start = 0
            while start < max(sizes.get(title, 0), 1):
                window = A1Range(title, start + 1, None, start + chunk, None)
                values, cut = _within(self.backend.read(spreadsheet_id, [window], "shown")[0].values, budget)
                budget -= sum(len(r) for r in values)
                yield title, start + 1, values
                if cut:
                    yield _TRUNCATED, 1, []
                    return
                start += chunk

    # -- writing ---------------------------------------------------------------------------------

    def update_values(self, spreadsheet_id: str, range: str, values: Any, mode: InputMode) -> UpdateResult:
        return self.batch_update(spreadsheet_id, [{"range": range, "values": values}], mode)

    def batch_update(self, spreadsheet_id: str, data: list[dict[str, Any]], mode: InputMode) -> UpdateResult:
        backend = self._writer()
        if not data:
            raise BadRequest("Give at least one {range, values} edit.", {})
        if len(data) > MAX_RANGES:
            raise BadRequest(f"At most {MAX_RANGES} edits per call.", {"edits": len(data)})
        updates = []
        for edit in data:
            if not isinstance(edit, dict) or set(edit) - {"range", "values"} or "range" not in edit:
                raise BadRequest('Each edit is {"range": "Sheet1!A1", "values": [[...]]}.', {"edit": str(edit)})
            rows = _rows(edit.get("values"))
            if len(rows) > MAX_ROWS_PER_CALL:
                raise BadRequest(f"At most {MAX_ROWS_PER_CALL} rows per call.", {"rows": len(rows)})
            updates.append((self._ranges(spreadsheet_id, [str(edit["range"])])[0], rows))
        done, flagged = backend.write(spreadsheet_id, updates, mode, escape_csv=self.settings.csv_escape_formulas)
        return UpdateResult(
            spreadsheet_id=spreadsheet_id,
            updated=done,
            total_cells=sum(u.cells for u in done),
            uncomputed=flagged or None,
            uncomputed_reason=_reason(flagged),
        )

    def append_rows(self, spreadsheet_id: str, range: str, values: Any, mode: InputMode) -> UpdateResult:
        backend = self._writer()
        rows = _rows(values)
        if not rows:
            raise BadRequest("values holds no rows to append.", {})
        if len(rows) > MAX_ROWS_PER_CALL:
            raise BadRequest(f"At most {MAX_ROWS_PER_CALL} rows per call.", {"rows": len(rows)})
        done, flagged = backend.append(
            spreadsheet_id,
            self._ranges(spreadsheet_id, [range])[0],
            rows,
            mode,
            escape_csv=self.settings.csv_escape_formulas,
        )
        return UpdateResult(
            spreadsheet_id=spreadsheet_id,
            updated=[done],
            total_cells=done.cells,
            uncomputed=flagged or None,
            uncomputed_reason=_reason(flagged),
        )

    def clear_values(self, spreadsheet_id: str, ranges: list[str]) -> ClearResult:
        backend = self._writer()
        if not ranges:
            raise BadRequest("Give at least one range to clear.", {})
        cleared, flagged = backend.clear(spreadsheet_id, self._ranges(spreadsheet_id, ranges[:MAX_RANGES]))
        return ClearResult(
            spreadsheet_id=spreadsheet_id,
            cleared=cleared,
            uncomputed=flagged or None,
            uncomputed_reason=_reason(flagged),
        )

    def create_spreadsheet(self, title: str, sheets: list[str] | None) -> SpreadsheetInfo:
        backend = self._writer()
        if not title.strip():
            raise BadRequest("title is empty.", {})
        return backend.create_spreadsheet(title.strip(), sheets or [])

    def add_sheet(self, spreadsheet_id: str, title: str, rows: int, columns: int) -> SheetResult:
        backend = self._writer()
        info, flagged = backend.add_sheet(spreadsheet_id, title, rows, columns)
        return SheetResult(
            spreadsheet_id=spreadsheet_id, sheet=info, uncomputed=flagged or None, uncomputed_reason=_reason(flagged)
        )

    def rename_sheet(self, spreadsheet_id: str, sheet: str, title: str) -> SheetResult:
        backend = self._writer()
        info, flagged = backend.rename_sheet(spreadsheet_id, sheet, title)
        return SheetResult(
            spreadsheet_id=spreadsheet_id, sheet=info, uncomputed=flagged or None, uncomputed_reason=_reason(flagged)
        )

    def delete_sheet(self, spreadsheet_id: str, sheet: str) -> SheetResult:
        backend = self._writer()
        flagged = backend.delete_sheet(spreadsheet_id, sheet)
        return SheetResult(
            spreadsheet_id=spreadsheet_id, deleted=sheet, uncomputed=flagged or None, uncomputed_reason=_reason(flagged)
        )

    def duplicate_sheet(self, spreadsheet_id: str, sheet: str, title: str) -> SheetResult:
        backend = self._writer()
        info, flagged = backend.duplicate_sheet(spreadsheet_id, sheet, title)
        return SheetResult(
            spreadsheet_id=spreadsheet_id, sheet=info, uncomputed=flagged or None, uncomputed_reason=_reason(flagged)
        )

    def insert_rows(self, spreadsheet_id: str, sheet: str, at: int, count: int) -> RowsResult:
        backend = self._writer()
        flagged = backend.insert_rows(spreadsheet_id, sheet, at, count)
        return RowsResult(
            spreadsheet_id=spreadsheet_id,
            sheet=sheet,
            inserted=count,
            first_row=at,
            uncomputed=flagged or None,
            uncomputed_reason=_reason(flagged),
        )

    def delete_rows(self, spreadsheet_id: str, sheet: str, at: int, count: int) -> RowsResult:
        backend = self._writer()
        flagged = backend.delete_rows(spreadsheet_id, sheet, at, count)
        return RowsResult(
            spreadsheet_id=spreadsheet_id,
            sheet=sheet,
            deleted=count,
            first_row=at,
            uncomputed=flagged or None,
            uncomputed_reason=_reason(flagged),
        )

    # -- formatting, layout, charts and notes ----------------------------------------------------

    def format_range(self, spreadsheet_id: str, range: str, fmt: CellFormat) -> FormatResult:
        backend = self._writer()
        if fmt.is_empty():
            raise BadRequest(
                "Give at least one thing to change: bold, italic, underline, font_size, font_color, fill_color, "
                "number_format, horizontal, vertical, wrap or borders.",
                {},
            )
        rng = self._ranges(spreadsheet_id, [range])[0]
        return backend.format_range(spreadsheet_id, rng, _colours(fmt))

    def set_layout(
        self,
        spreadsheet_id: str,
        sheet: str,
        column_widths: dict[str, float] | None = None,
        row_heights: dict[str, float] | None = None,
        freeze_rows: int | None = None,
        freeze_columns: int | None = None,
        merge: list[str] | None = None,
        unmerge: list[str] | None = None,
    ) -> LayoutResult:
        backend = self._writer()
        layout = Layout(freeze_rows=freeze_rows, freeze_columns=freeze_columns)
        for key, width in (column_widths or {}).items():
            first, last = _span(key, "column_widths", columns=True)
            if not 0 <= width <= 255:
                raise BadRequest(f"column_widths[{key!r}]: a width is 0 to 255 characters.", {"width": width})
            layout.columns.append((first, last, float(width)))
        for key, height in (row_heights or {}).items():
            first, last = _span(key, "row_heights", columns=False)
            if not 0 <= height <= 409:
                raise BadRequest(f"row_heights[{key!r}]: a height is 0 to 409 points.", {"height": height})
            layout.rows.append((first, last, float(height)))
        if sum(last - first + 1 for first, last, _h in layout.rows) > MAX_LAYOUT_ROWS:
            raise BadRequest(f"row_heights covers more than {MAX_LAYOUT_ROWS:,} rows; give fewer.", {})
        for name, count, limit in (("freeze_rows", freeze_rows, GRID_ROWS), ("freeze_columns", freeze_columns, 1000)):
            if count is not None and not 0 <= count <= limit:
                raise BadRequest(f"{name} is 0 (none) to {limit:,}.", {name: count})
        layout.merge = [_box(text, sheet, "merge") for text in merge or []]
        layout.unmerge = [_box(text, sheet, "unmerge") for text in unmerge or []]
        for i, box in enumerate(layout.merge):
            if box[0] == box[2] and box[1] == box[3]:
                raise BadRequest(f"merge: {merge and merge[i]!r} is one cell; merge two or more.", {})
            for other in layout.merge[i + 1 :]:
                if not (box[2] < other[0] or other[2] < box[0] or box[3] < other[1] or other[3] < box[1]):
                    raise BadRequest("merge: two of the ranges given overlap; merge each cell once.", {})
        if not (layout.columns or layout.rows or layout.merge or layout.unmerge) and (
            freeze_rows is None and freeze_columns is None
        ):
            raise BadRequest(
                "Give at least one of column_widths, row_heights, freeze_rows, freeze_columns, merge, unmerge.", {}
            )
        if layout.merge:  # a merged range shows its top-left cell only: refuse to hide values
            grids = backend.read(spreadsheet_id, [A1Range(sheet, *box) for box in layout.merge], "shown")
            for box, grid in zip(layout.merge, grids, strict=True):
                hidden = [
                    cell_name(box[0] + r, box[1] + c)
                    for r, row in enumerate(grid.values)
                    for c, value in enumerate(row)
                    if (r, c) != (0, 0) and value not in (None, "")
                ]
                if hidden:
                    raise BadRequest(
                        f"Merging {A1Range(None, *box).cells()} would hide the values of {', '.join(hidden[:10])}: "
                        "a merged range shows its top-left cell only. Move or clear them first.",
                        {"range": A1Range(sheet, *box).a1(), "cells": hidden[:50]},
                    )
        return backend.set_layout(spreadsheet_id, sheet, layout)

    def set_notes(self, spreadsheet_id: str, sheet: str, notes: dict[str, str]) -> NotesResult:
        backend = self._writer()
        if not notes:
            raise BadRequest("Give notes as {cell: text}, e.g. {'B2': 'Checked'}; empty text removes a note.", {})
        cells: dict[tuple[int, int], str] = {}
        for ref, text in notes.items():
            rng = parse_a1(ref)
            if not rng.is_cell or (rng.sheet is not None and rng.sheet != sheet):
                raise BadRequest(f"notes: {ref!r} is not one cell of {sheet!r}, e.g. 'B2'.", {"cell": ref})
            check_in_grid(rng)
            if len(text) > MAX_NOTE_CHARS:
                raise BadRequest(f"The note of {ref} is over {MAX_NOTE_CHARS:,} characters.", {"cell": ref})
            if any(
                (ord(ch) < 32 and ch not in "\n\t") or 0xD800 <= ord(ch) <= 0xDFFF or ch in "\ufffe\uffff"
                for ch in text
            ):
                raise BadRequest(
                    f"The note of {ref} holds a character a note cannot store (a control character).", {"cell": ref}
                )
            cells[(rng.start_row, rng.start_col)] = text  # type: ignore[index]
        return backend.set_notes(spreadsheet_id, sheet, cells)

    def add_chart(
        self, spreadsheet_id: str, data: str, kind: ChartKind, anchor: str, title: str | None = None
    ) -> ChartResult:
        backend = self._writer()
        rng = self._ranges(spreadsheet_id, [data])[0]
        if None in (rng.start_row, rng.start_col, rng.end_row, rng.end_col):
            raise BadRequest(f"{data!r}: give the data's corner cells, e.g. 'Sheet1!A1:C13'.", {"range": data})
        sheet = rng.sheet or self.backend.get_spreadsheet(spreadsheet_id).sheets[0].title
        at = parse_a1(anchor)
        if not at.is_cell:
            raise BadRequest(f"anchor {anchor!r} is not one cell, e.g. 'E2'.", {"anchor": anchor})
        check_in_grid(at)
        r0, c0, r1, c1 = rng.start_row, rng.start_col, rng.end_row, rng.end_col
        assert r0 is not None and c0 is not None and r1 is not None and c1 is not None
        if r1 - r0 > 10_000 or c1 - c0 > 50:
            raise BadRequest("A chart takes at most 10,000 rows and 50 series.", {"range": data})
        values = backend.read(spreadsheet_id, [rng.on(sheet)], "raw")[0].values
        width = c1 - c0 + 1
        rows = [[*row, *[None] * (width - len(row))][:width] for row in values]
        rows += [[None] * width for _ in range(r1 - r0 + 1 - len(rows))]
        header, body = rows[0], rows[1:]
        first = 1 if width > 1 else 0
        series = [[_number(row[c]) for row in body] for c in range(first, width)]
        if not body or not any(v is not None for s in series for v in s):
            raise BadRequest(
                f"{rng.a1(default_sheet=sheet)} holds no numbers to chart below its first row (the series names). "
                "Give the range of a table: names in the first row, categories in the first column, numbers below.",
                {"range": rng.a1(default_sheet=sheet)},
            )
        names = [
            _text(header[c]).strip() if header[c] not in (None, "") else f"Series {i + 1}"
            for i, c in enumerate(range(first, width))
        ]
        spec = ChartSpec(
            kind=kind,
            sheet=sheet,
            box=(r0, c0, r1, c1),
            anchor_sheet=at.sheet or sheet,
            anchor=(at.start_row, at.start_col),  # type: ignore[arg-type]
            title=title.strip() if title and title.strip() else None,
            names=names,
            categories=[row[0] for row in body] if first else [],
            series=series,
        )
        return backend.add_chart(spreadsheet_id, spec)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


MAX_LAYOUT_ROWS = 100_000
"""The most rows one set_layout call gives a height (each is a row of the sheet part)."""
MAX_NOTE_CHARS = 32_767
"""The most characters of a note (as of a cell's text in Excel)."""


def _row_of(cell: str) -> int:
    return int(re.sub(r"[^0-9]", "", cell) or 0)


def _span(key: str, field: str, *, columns: bool) -> tuple[int, int]:
    """The first and last column (`A`, `A:C`) or row (`1`, `2:5`) a key of `field` names."""
    what = "columns as 'A' or 'A:C'" if columns else "rows as '1' or '2:5'"
    try:
        r0, c0, r1, c1 = parse_cells(key.strip().upper(), key)
    except BadRequest:
        r0 = c0 = r1 = c1 = None
    first, last = (c0, c1) if columns else (r0, r1)
    other = (r0, r1) if columns else (c0, c1)
    if first is None or last is None or other != (None, None):
        raise BadRequest(f"{field}: {key!r} is not a span of {what}.", {"key": key})
    if last > (GRID_COLUMNS if columns else GRID_ROWS):
        raise BadRequest(f"{field}: {key!r} reaches past the last {'column (XFD)' if columns else 'row'}.", {})
    return first, last


def _box(text: str, sheet: str, field: str) -> tuple[int, int, int, int]:
    """The bounded cells of a range on `sheet` (a sheet named in it must be that one)."""
    rng = parse_a1(text)
    if rng.sheet is not None and rng.sheet != sheet:
        raise BadRequest(f"{field}: {text!r} is on another sheet than {sheet!r}.", {"range": text})
    if None in (rng.start_row, rng.start_col, rng.end_row, rng.end_col):
        raise BadRequest(f"{field}: {text!r} must name its corner cells, e.g. 'A1:C1'.", {"range": text})
    check_in_grid(rng)
    return rng.start_row, rng.start_col, rng.end_row, rng.end_col  # type: ignore[return-value]


def _colours(fmt: CellFormat) -> CellFormat:
    """`fmt` with its colours as `RRGGBB` (`bad_request` naming an unknown one)."""
    changes: dict[str, Any] = {}
    for field in ("font_color", "fill_color"):
        value = getattr(fmt, field)
        if value is not None:
            changes[field] = parse_color(value, field)
    if fmt.borders is not None:
        changes["borders"] = fmt.borders.model_copy(update={"color": parse_color(fmt.borders.color, "borders.color")})
    if fmt.number_format is not None and any(ord(ch) < 32 for ch in fmt.number_format):
        raise BadRequest("number_format holds a control character.", {"number_format": fmt.number_format})
    return fmt.model_copy(update=changes)


_TRUNCATED = "\x00truncated"


def _reason(flagged: list[str]) -> str | None:
    """Why computing stopped early, when the backend's list of uncomputed cells says (local files)."""
    return getattr(flagged, "reason", None)


def _within(values: list[list[Any]], budget: int) -> tuple[list[list[Any]], bool]:
    """The leading rows of `values` holding at most `budget` cells, and whether rows were cut."""
    used = 0
    for i, row in enumerate(values):
        used += len(row)
        if used > budget:
            return values[:i], True
    return values, False


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    return str(value)


def _header_keys(head: list[Any]) -> list[str]:
    keys: list[str] = []
    for i, value in enumerate(head, start=1):
        name = _text(value).strip() if value not in (None, "") else f"column_{i}"
        base, n = name, 2
        while name in keys:
            name, n = f"{base}_{n}", n + 1
        keys.append(name)
    return keys


def _keyed(keys: list[str], row: list[Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i, value in enumerate(row):
        name = keys[i] if i < len(keys) else f"column_{i + 1}"
        out[name] = value
    return out
