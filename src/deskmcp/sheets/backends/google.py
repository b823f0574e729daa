"""Google Sheets through the Sheets API v4 (and Drive v3 to list spreadsheets).

Every request goes through one `Throttle` (a client-side limit, 60 requests a minute by
default, Google's per-user quota) and one `RetryPolicy` (backoff with full jitter on 429,
rate-limit reasons and 5xx, honouring `Retry-After`); failures are mapped by
`deskmcp.google.errors`. Several ranges are read with one `values:batchGet` and
written with one `values:batchUpdate`. Requests that add something (append, add or
duplicate a sheet, insert rows) are retried only when Google refused them outright (429),
never after an answer that leaves it unclear whether they were applied.
"""

from __future__ import annotations

import logging
from typing import Any

from deskmcp.core.clock import SYSTEM_CLOCK, Clock
from deskmcp.core.errors import DeskError, ExternalServiceError, NotFound
from deskmcp.core.retry import Retry, RetryPolicy
from deskmcp.core.throttle import Throttle
from deskmcp.core.ttlcache import TTLCache
from deskmcp.google.auth import SCOPES, TokenStore, build_service, credentials
from deskmcp.google.errors import GoogleApi, map_error, may_have_applied
from deskmcp.sheets.a1 import A1Range, cell_name, column_letters, quote_sheet
from deskmcp.sheets.backends.google_requests import (
    NOTES_FIELDS,
    chart_request,
    format_requests,
    layout_requests,
    note_requests,
    notes_found,
)
from deskmcp.sheets.models import (
    CellFormat,
    ChartResult,
    ChartSpec,
    FormatResult,
    Grid,
    InputMode,
    Layout,
    LayoutResult,
    NamedRange,
    NotesResult,
    Render,
    SheetInfo,
    SpreadsheetInfo,
    SpreadsheetRef,
    UpdatedRange,
)
from deskmcp.sheets.settings import SheetsSettings

log = logging.getLogger("deskmcp.sheets.google")

SPREADSHEET_MIME = "application/vnd.google-apps.spreadsheet"
RENDER = {"shown": "FORMATTED_VALUE", "raw": "UNFORMATTED_VALUE", "formula": "FORMULA"}
SHEETS_API = GoogleApi(
    name="Google Sheets",
    key="google_sheets",
    listing="Call list_spreadsheets for valid ids.",
    forbidden="Check the spreadsheet is shared with this account and that `deskmcp auth google --scopes sheets` "
    "was granted.",
)


class GoogleBackend:
    name = "google"
    scan_rows = 0
    grid: tuple[int, int] | None = None  # Google's limits depend on the spreadsheet: Google says

    def __init__(
        self,
        settings: SheetsSettings,
        *,
        http: Any = None,
        store: TokenStore | None = None,
        clock: Clock = SYSTEM_CLOCK,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.settings = settings
        self._http = http
        self._store = store
        self.throttle = Throttle(concurrency=4, per_minute=settings.requests_per_minute, clock=clock)
        self.retry = retry or RetryPolicy(attempts=5, base=1.0, cap=32.0, max_wait=60.0, clock=clock)
        self._sheets: Any = None
        self._drive: Any = None
        self._meta: TTLCache[str, dict[str, Any]] = TTLCache(ttl=30.0, max_entries=64, clock=clock)
        self._page_tokens: dict[tuple[str | None, int, int], str] = {}

    def close(self) -> None:
        self._sheets = self._drive = None

    # -- plumbing ------------------------------------------------------------------------------

    def _services(self) -> tuple[Any, Any]:
        if self._sheets is None:
            creds = credentials(self.settings, SCOPES["sheets"], store=self._store)
            self._sheets = build_service("sheets", "v4", creds, http=self._http)
            self._drive = build_service("drive", "v3", creds, http=self._http)
        return self._sheets, self._drive

    @property
    def sheets(self) -> Any:
        return self._services()[0]

    @property
    def drive(self) -> Any:
        return self._services()[1]

    def execute(self, request: Any, *, idempotent: bool = True) -> dict[str, Any]:
        """Run one API request under the throttle and the retry policy; errors mapped to the taxonomy."""

        def attempt() -> dict[str, Any]:
            with self.throttle:
                try:
                    return request.execute(num_retries=0) or {}
                except DeskError:
                    raise
                except Exception as exc:  # googleapiclient/httplib2/google.auth raise a wide family
                    raise self._signal(exc, idempotent) from exc

        return self.retry.call(attempt)

    def _signal(self, exc: Exception, idempotent: bool) -> DeskError | Retry:
        signal = map_error(exc, SHEETS_API, clock=self.retry.clock)
        if not idempotent and may_have_applied(signal):
            # Repeating an append or an added sheet after a 5xx or timeout could apply it twice.
            error = signal.error if isinstance(signal, Retry) else signal
            error.message += " The change may or may not have been applied: read the sheet before trying again."
            return error
        return signal

    def _spreadsheet(self, spreadsheet_id: str, *, fresh: bool = False) -> dict[str, Any]:
        if fresh:
            self._meta.invalidate(spreadsheet_id)
        cached = self._meta.get(spreadsheet_id)
        if cached is not None:
            return cached
        data = self.execute(
            self.sheets.spreadsheets().get(
                spreadsheetId=spreadsheet_id,
                fields="spreadsheetId,spreadsheetUrl,properties.title,sheets.properties,namedRanges",
            )
        )
        self._meta.set(spreadsheet_id, data)
        return data

    def _sheet_id(self, spreadsheet_id: str, title: str) -> int:
        for attempt in (False, True):
            for sheet in self._spreadsheet(spreadsheet_id, fresh=attempt).get("sheets", []):
                props = sheet.get("properties", {})
                if props.get("title") == title:
                    return int(props.get("sheetId", 0))
        titles = [s.get("properties", {}).get("title") for s in self._spreadsheet(spreadsheet_id).get("sheets", [])]
        raise NotFound(
            f"No sheet {title!r}. Sheets: {', '.join(str(t) for t in titles)}.", {"sheet": title, "sheets": titles}
        )

    def _batch(self, spreadsheet_id: str, requests: list[dict[str, Any]], *, idempotent: bool) -> dict[str, Any]:
        out = self.execute(
            self.sheets.spreadsheets().batchUpdate(spreadsheetId=spreadsheet_id, body={"requests": requests}),
            idempotent=idempotent,
        )
        self._meta.invalidate(spreadsheet_id)
        return out

    # -- reading ---------------------------------------------------------------------------------

    def list_spreadsheets(self, query: str | None, offset: int, limit: int) -> tuple[list[SpreadsheetRef], bool]:
        q = f"mimeType='{SPREADSHEET_MIME}' and trashed=false"
        if query:
            q += " and name contains '" + query.replace("\\", "\\\\").replace("'", "\\'") + "'"
        token = self._page_tokens.get((query, offset, limit)) if offset else None
        skip = 0
        if offset and token is None:
            skip = offset  # a cursor from before a restart: walk from the start
        files: list[dict[str, Any]] = []
        next_token: str | None = token
        while True:
            page = self.execute(
                self.drive.files().list(
                    q=q,
                    pageSize=min(1000, skip + limit) if skip else limit,
                    pageToken=next_token,
                    orderBy="modifiedTime desc",
                    fields="nextPageToken,files(id,name,modifiedTime,webViewLink)",
                    supportsAllDrives=True,
                    includeItemsFromAllDrives=True,
                )
            )
            batch = page.get("files", [])
            next_token = page.get("nextPageToken")
            if skip:
                take = min(skip, len(batch))
                batch, skip = batch[take:], skip - take
            files.extend(batch)
            if len(files) >= limit or not next_token:
                break
        files = files[:limit]
        if next_token:
            self._page_tokens[(query, offset + limit, limit)] = next_token
        items = [
            SpreadsheetRef(id=f["id"], name=f.get("name", ""), modified=f.get("modifiedTime"), url=f.get("webViewLink"))
            for f in files
        ]
        return items, bool(next_token)

    def get_spreadsheet(self, spreadsheet_id: str) -> SpreadsheetInfo:
        data = self._spreadsheet(spreadsheet_id, fresh=True)
        titles: dict[int, str] = {}
        sheets = []
        for sheet in data.get("sheets", []):
            info = _sheet_info(sheet.get("properties", {}))
            titles[info.sheet_id] = info.title
            sheets.append(info)
        named = [
            NamedRange(name=n.get("name", ""), range=_grid_range_a1(n.get("range", {}), titles))
            for n in data.get("namedRanges", [])
        ]
        return SpreadsheetInfo(
            id=data.get("spreadsheetId", spreadsheet_id),
            title=data.get("properties", {}).get("title", ""),
            sheets=sheets,
            named_ranges=named,
            url=data.get("spreadsheetUrl"),
        )

    def read(self, spreadsheet_id: str, ranges: list[A1Range], render: Render) -> list[Grid]:
        data = self.execute(
            self.sheets.spreadsheets()
            .values()
            .batchGet(
                spreadsheetId=spreadsheet_id,
                ranges=[r.a1() for r in ranges],
                valueRenderOption=RENDER[render],
                dateTimeRenderOption="SERIAL_NUMBER" if render == "raw" else "FORMATTED_STRING",
                majorDimension="ROWS",
            )
        )
        value_ranges = data.get("valueRanges", [])
        out = []
        for i, rng in enumerate(ranges):
            vr = value_ranges[i] if i < len(value_ranges) else {}
            out.append(Grid(range=vr.get("range", rng.a1()), values=vr.get("values", [])))
        return out

    # -- writing ---------------------------------------------------------------------------------

    def create_spreadsheet(self, title: str, sheets: list[str]) -> SpreadsheetInfo:
        body: dict[str, Any] = {"properties": {"title": title}}
        if sheets:
            body["sheets"] = [{"properties": {"title": t}} for t in sheets]
        made = self.execute(self.sheets.spreadsheets().create(body=body, fields="spreadsheetId"), idempotent=False)
        return self.get_spreadsheet(made["spreadsheetId"])

    def write(
        self,
        spreadsheet_id: str,
        updates: list[tuple[A1Range, list[list[Any]]]],
        mode: InputMode,
        *,
        escape_csv: bool = True,  # no CSV files here: Google keeps RAW text as text
    ) -> tuple[list[UpdatedRange], list[str]]:
        body = {
            "valueInputOption": mode,
            "data": [{"range": rng.a1(), "majorDimension": "ROWS", "values": rows} for rng, rows in updates],
        }
        out = self.execute(self.sheets.spreadsheets().values().batchUpdate(spreadsheetId=spreadsheet_id, body=body))
        return [_updated(r) for r in out.get("responses", [])], []  # Google computes every formula

    def append(
        self, spreadsheet_id: str, target: A1Range, rows: list[list[Any]], mode: InputMode, *, escape_csv: bool = True
    ) -> tuple[UpdatedRange, list[str]]:
        out = self.execute(
            self.sheets.spreadsheets()
            .values()
            .append(
                spreadsheetId=spreadsheet_id,
                range=target.a1(),
                valueInputOption=mode,
                insertDataOption="INSERT_ROWS",
                body={"majorDimension": "ROWS", "values": rows},
            ),
            idempotent=False,
        )
        return _updated(out.get("updates", {})), []

    def clear(self, spreadsheet_id: str, ranges: list[A1Range]) -> tuple[list[str], list[str]]:
        out = self.execute(
            self.sheets.spreadsheets()
            .values()
            .batchClear(spreadsheetId=spreadsheet_id, body={"ranges": [r.a1() for r in ranges]})
        )
        return list(out.get("clearedRanges", [])), []

    def add_sheet(self, spreadsheet_id: str, title: str, rows: int, columns: int) -> tuple[SheetInfo, list[str]]:
        props = {"title": title, "gridProperties": {"rowCount": rows, "columnCount": columns}}
        out = self._batch(spreadsheet_id, [{"addSheet": {"properties": props}}], idempotent=False)
        return _sheet_info(_reply(out, "addSheet")), []  # Google computes every formula

    def rename_sheet(self, spreadsheet_id: str, sheet: str, title: str) -> tuple[SheetInfo, list[str]]:
        sheet_id = self._sheet_id(spreadsheet_id, sheet)
        request = {"updateSheetProperties": {"properties": {"sheetId": sheet_id, "title": title}, "fields": "title"}}
        self._batch(spreadsheet_id, [request], idempotent=True)
        for item in self._spreadsheet(spreadsheet_id).get("sheets", []):
            if item.get("properties", {}).get("sheetId") == sheet_id:
                return _sheet_info(item["properties"]), []
        raise NotFound(f"Sheet {title!r} disappeared after renaming.", {"sheet": title})

    def delete_sheet(self, spreadsheet_id: str, sheet: str) -> list[str]:
        sheet_id = self._sheet_id(spreadsheet_id, sheet)
        self._batch(spreadsheet_id, [{"deleteSheet": {"sheetId": sheet_id}}], idempotent=True)
        return []

    def duplicate_sheet(self, spreadsheet_id: str, sheet: str, title: str) -> tuple[SheetInfo, list[str]]:
        sheet_id = self._sheet_id(spreadsheet_id, sheet)
        request = {"duplicateSheet": {"sourceSheetId": sheet_id, "newSheetName": title}}
        out = self._batch(spreadsheet_id, [request], idempotent=False)
        return _sheet_info(_reply(out, "duplicateSheet")), []

    def insert_rows(self, spreadsheet_id: str, sheet: str, at: int, count: int) -> list[str]:
        sheet_id = self._sheet_id(spreadsheet_id, sheet)
        dims = {"sheetId": sheet_id, "dimension": "ROWS", "startIndex": at - 1, "endIndex": at - 1 + count}
        request = {"insertDimension": {"range": dims, "inheritFromBefore": at > 1}}
        self._batch(spreadsheet_id, [request], idempotent=False)
        return []

    def delete_rows(self, spreadsheet_id: str, sheet: str, at: int, count: int) -> list[str]:
        sheet_id = self._sheet_id(spreadsheet_id, sheet)
        dims = {"sheetId": sheet_id, "dimension": "ROWS", "startIndex": at - 1, "endIndex": at - 1 + count}
        self._batch(spreadsheet_id, [{"deleteDimension": {"range": dims}}], idempotent=False)
        return []

    # -- formatting, layout, charts and notes (`google_requests`) ---------------------------------

    def _sheet_of(self, spreadsheet_id: str, rng: A1Range) -> dict[str, Any]:
        """The properties of the sheet a range is on (the first sheet when it names none)."""
        sheet_id = self._sheet_id(spreadsheet_id, rng.sheet) if rng.sheet is not None else None
        for sheet in self._spreadsheet(spreadsheet_id).get("sheets", []):
            props = sheet.get("properties", {})
            if sheet_id is None or int(props.get("sheetId", 0)) == sheet_id:
                return props
        return {"sheetId": sheet_id or 0, "title": rng.sheet or ""}

    def format_range(self, spreadsheet_id: str, rng: A1Range, fmt: CellFormat) -> FormatResult:
        props = self._sheet_of(spreadsheet_id, rng)
        sheet_id, title = int(props.get("sheetId", 0)), str(props.get("title", ""))
        grid = props.get("gridProperties", {})
        r0, c0, r1, c1 = rng.bounds(int(grid.get("rowCount", 0)), int(grid.get("columnCount", 0)))
        self._batch(spreadsheet_id, format_requests(sheet_id, rng, fmt), idempotent=True)
        return FormatResult(
            spreadsheet_id=spreadsheet_id,
            range=rng.a1(default_sheet=title),
            cells=max(r1 - r0 + 1, 0) * max(c1 - c0 + 1, 0),
        )

    def set_layout(self, spreadsheet_id: str, sheet: str, layout: Layout) -> LayoutResult:
        requests, said = layout_requests(self._sheet_id(spreadsheet_id, sheet), layout)
        self._batch(spreadsheet_id, requests, idempotent=True)
        return LayoutResult(spreadsheet_id=spreadsheet_id, sheet=sheet, changed=said)

    def set_notes(self, spreadsheet_id: str, sheet: str, notes: dict[tuple[int, int], str]) -> NotesResult:
        self._batch(spreadsheet_id, note_requests(self._sheet_id(spreadsheet_id, sheet), notes), idempotent=True)
        ordered = sorted(notes.items())
        return NotesResult(
            spreadsheet_id=spreadsheet_id,
            sheet=sheet,
            written=[cell_name(r, c) for (r, c), text in ordered if text],
            removed=[cell_name(r, c) for (r, c), text in ordered if not text],
        )

    def read_notes(self, spreadsheet_id: str, ranges: list[A1Range]) -> list[dict[str, str]]:
        data = self.execute(
            self.sheets.spreadsheets().get(
                spreadsheetId=spreadsheet_id, ranges=[r.a1() for r in ranges], fields=NOTES_FIELDS
            )
        )
        found = notes_found(data)
        first = next(iter(found), "")
        out = []
        for rng in ranges:
            notes = found.get(rng.sheet or first, {})
            r0, c0 = rng.start_row or 1, rng.start_col or 1
            r1, c1 = rng.end_row or 1 << 30, rng.end_col or 1 << 30
            out.append(
                {cell_name(r, c): text for (r, c), text in sorted(notes.items()) if r0 <= r <= r1 and c0 <= c <= c1}
            )
        return out

    def add_chart(self, spreadsheet_id: str, spec: ChartSpec) -> ChartResult:
        sheet_id = self._sheet_id(spreadsheet_id, spec.sheet)
        anchor_id = self._sheet_id(spreadsheet_id, spec.anchor_sheet)
        # not repeated after an unclear failure: a second chart would be added
        out = self._batch(spreadsheet_id, [chart_request(sheet_id, anchor_id, spec)], idempotent=False)
        chart = ((out.get("replies") or [{}])[0] or {}).get("addChart", {}).get("chart", {})
        return ChartResult(
            spreadsheet_id=spreadsheet_id,
            sheet=spec.anchor_sheet,
            chart=str(chart.get("chartId", "")),
            chart_id=chart.get("chartId"),
            anchor=cell_name(*spec.anchor),
            series=spec.names[:1] if spec.kind == "pie" else spec.names,
        )


def _reply(out: dict[str, Any], kind: str) -> dict[str, Any]:
    """The sheet properties in the first reply of a batchUpdate."""
    replies = out.get("replies") or [{}]
    props = (replies[0] or {}).get(kind, {}).get("properties")
    if not isinstance(props, dict):
        raise ExternalServiceError(
            f"Google Sheets answered {kind} without the new sheet.", {"service": "google_sheets"}
        )
    return props


def _sheet_info(props: dict[str, Any]) -> SheetInfo:
    grid = props.get("gridProperties", {})
    return SheetInfo(
        sheet_id=int(props.get("sheetId", 0)),
        title=str(props.get("title", "")),
        index=int(props.get("index", 0)),
        rows=int(grid.get("rowCount", 0)),
        columns=int(grid.get("columnCount", 0)),
        frozen_rows=int(grid.get("frozenRowCount", 0)),
        frozen_columns=int(grid.get("frozenColumnCount", 0)),
        hidden=bool(props.get("hidden", False)),
    )


def _grid_range_a1(grid: dict[str, Any], titles: dict[int, str]) -> str:
    sheet = titles.get(int(grid.get("sheetId", 0)), "")
    r0, r1 = grid.get("startRowIndex"), grid.get("endRowIndex")
    c0, c1 = grid.get("startColumnIndex"), grid.get("endColumnIndex")
    start = (column_letters(c0 + 1) if c0 is not None else "A") + (str(r0 + 1) if r0 is not None else "")
    end = (column_letters(c1) if c1 is not None else "") + (str(r1) if r1 is not None else "")
    cells = f"{start}:{end}" if end else start
    return f"{quote_sheet(sheet)}!{cells}" if sheet else cells


def _updated(data: dict[str, Any]) -> UpdatedRange:
    return UpdatedRange(
        range=str(data.get("updatedRange", "")),
        rows=int(data.get("updatedRows", 0) or 0),
        columns=int(data.get("updatedColumns", 0) or 0),
        cells=int(data.get("updatedCells", 0) or 0),
    )
