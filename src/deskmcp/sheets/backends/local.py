"""Local workbooks: .xlsx, .ods, .xls and .csv files in folders on this machine.

Reading goes through python-calamine (fast, one sheet at a time, cached while the file is
unchanged); writing goes through openpyxl for .xlsx, and the csv module for .csv (a one-sheet
workbook). A spreadsheet's id is its path relative to its folder (`budget.xlsx`,
`reports/q3.xlsx`), prefixed by `NAME:` for the extra folders of `SHEETS_FOLDERS`.

Saving never silently loses content: a workbook holding what openpyxl cannot carry through a
save (charts, images, pivot tables, macros, external links) is refused, and formulas are
computed and stored as the cell's cached value so any reader sees numbers, not blanks.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import logging
import re
import threading
import zipfile
from collections import OrderedDict
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from xml.etree import ElementTree

from deskmcp.core.errors import BadRequest, Conflict, IOFailure, NotFound, ParseError, PermissionDenied
from deskmcp.core.files import atomic_write_bytes
from deskmcp.core.paths import relative_posix, safe_join
from deskmcp.sheets.a1 import MAX_COLUMNS, MAX_ROWS, A1Range, cell_name, column_letters, quote_sheet
from deskmcp.sheets.cellxml import errors_in, formula_results, plain
from deskmcp.sheets.formulas import (
    CellError,
    DateSerial,
    Uncomputable,
    WorkbookCalculator,
    shift_rows,
    workbook_names,
)
from deskmcp.sheets.models import (
    Grid,
    InputMode,
    NamedRange,
    Render,
    SheetInfo,
    SpreadsheetInfo,
    SpreadsheetRef,
    UpdatedRange,
)
from deskmcp.sheets.ooxml import (
    MAX_CELLS_PART_BYTES,
    PackageMap,
    check_sizes,
    custom_property,
    defined_names,
    dropped_content,
    package_map,
    read_part,
    sheet_head,
    sheet_parts,
    verify_parts,
    write_cached_values,
)
from deskmcp.sheets.recalc import Key, depends_on, excel_prefixes, without_prefixes
from deskmcp.sheets.sheetdata import Extent, Styles, extent, styles, window

if TYPE_CHECKING:
    from openpyxl import Workbook
    from openpyxl.worksheet.worksheet import Worksheet

    from deskmcp.sheets.package_edit import FormulaIndex

log = logging.getLogger("deskmcp.sheets")

FORMATS = {".xlsx": "xlsx", ".xlsm": "xlsm", ".ods": "ods", ".xls": "xls", ".xlsb": "xlsb", ".csv": "csv"}
WRITABLE = ("xlsx", "csv")
UNCOMPUTED_PROPERTY = "deskmcp.uncomputed"
_EPOCH = dt.datetime(1899, 12, 30)
_T = TypeVar("_T")
STREAM_ROWS = 2_000
"""A first read ending above this row of a big, not yet loaded xlsx sheet is streamed."""
STREAM_BYTES = 2_000_000
"""Workbooks smaller than this load whole at once: streaming would not be quicker."""
DENSE_SLACK = 1_000_000
"""A sheet loads whole (python-calamine) when the grid from A1 to its farthest cell holds at most
this many cells more than four times those it stores; sparser sheets are read window by window."""


def _dense(size: Extent) -> bool:
    return size.area <= 4 * size.cells + DENSE_SLACK


def _panic(exc: BaseException) -> bool:
    """A Rust panic inside python-calamine (pyo3's PanicException derives from BaseException)."""
    return type(exc).__name__ == "PanicException"


def _blank(value: Any) -> bool:
    return value is None or value == ""


def trim(rows: list[list[Any]]) -> list[list[Any]]:
    """Drop trailing blank cells of each row and trailing blank rows, as Google's API does."""
    out = []
    for row in rows:
        end = len(row)
        while end and _blank(row[end - 1]):
            end -= 1
        out.append(row[:end])
    while out and not out[-1]:
        out.pop()
    return out


def as_json(value: Any, mode: Render) -> Any:
    """A cell value as JSON: numbers, text, booleans; dates as ISO text (serial numbers when raw)."""
    if value is None:
        return ""
    if isinstance(value, bool | str):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() and abs(value) < 2**53 else value
    if isinstance(value, int):
        return value
    if isinstance(value, CellError):
        return value.code
    if isinstance(value, dt.datetime) and value.time() == dt.time() and mode != "raw":
        value = value.date()  # readers differ on whether a date cell is a date or midnight
    if isinstance(value, dt.datetime | dt.date):
        if mode == "raw":
            moment = value if isinstance(value, dt.datetime) else dt.datetime.combine(value, dt.time())
            serial = (moment - _EPOCH).total_seconds() / 86400
            return int(serial) if serial.is_integer() else serial
        return value.isoformat()
    if isinstance(value, dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds() / 86400 if mode == "raw" else str(value)
    return str(value)


_NUMBER = re.compile(r"^[-+]?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?$")
_PERCENT = re.compile(r"^[-+]?\d+(?:\.\d+)?%$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def user_entered(value: Any) -> Any:
    """What a cell holds after a user types `value`: formulas, numbers, booleans, percentages, dates."""
    if not isinstance(value, str):
        return value
    if value.startswith("'"):
        return value[1:]
    if value.startswith("=") and len(value) > 1:
        return value
    text = value.strip()
    if _NUMBER.match(text):
        number = float(text)
        return int(number) if number.is_integer() and "." not in text and "e" not in text.lower() else number
    if text.upper() in ("TRUE", "FALSE"):
        return text.upper() == "TRUE"
    if _PERCENT.match(text):
        return float(text[:-1]) / 100
    if _DATE.match(text):
        try:
            return dt.date.fromisoformat(text)
        except ValueError:
            return value
    return value


CSV_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
"""First characters that make Excel or LibreOffice run a CSV cell as a formula (OWASP, CSV injection)."""


def csv_escaped(value: Any) -> Any:
    """`value` as a CSV cell no spreadsheet app runs: text starting with a formula trigger gets a
    leading `'` (shown as text, as a typed `'` is); numbers, even negative, stay numbers."""
    if isinstance(value, str) and value.startswith(CSV_TRIGGERS) and not _NUMBER.match(value.strip()):
        return "'" + value
    return value


def _csv_value(text: str) -> Any:
    return user_entered(text) if _NUMBER.match(text.strip()) and text == text.strip() else text


class LocalBackend:
    """Workbook files under one main folder and any number of extra folders."""

    name = "local"
    scan_rows = 10_000

    def __init__(
        self, root: Path, folders: list[Path] | None = None, *, cache_sheets: int = 4, create_root: bool = True
    ) -> None:
        if create_root:  # the default folder only: a configured one that is missing is a typo to report
            root.mkdir(parents=True, exist_ok=True)
        self.roots: dict[str, Path] = {"": root.resolve()}
        for folder in folders or []:
            label = re.sub(r"[^\w.-]", "_", folder.name) or "folder"
            base, n = label, 2
            while label in self.roots:
                label, n = f"{base}{n}", n + 1
            self.roots[label] = folder.resolve()
        self._cache: OrderedDict[tuple[Any, ...], list[list[Any]]] = OrderedDict()
        self._cache_size = cache_sheets
        self._lock = threading.RLock()  # the sheet cache
        self._write_lock = threading.Lock()  # one save at a time; reads go on meanwhile
        self._pending: dict[tuple[Any, ...], Future[list[list[Any]]]] = {}
        self._packages: OrderedDict[tuple[Any, ...], tuple[PackageMap, Styles]] = OrderedDict()
        self._extents: OrderedDict[tuple[Any, ...], Extent] = OrderedDict()
        self._verified: OrderedDict[tuple[Any, ...], bool] = OrderedDict()
        self._executor: ThreadPoolExecutor | None = None
        # the formula index of the version each patch wrote, so the next write of it scans nothing
        self._formula_indexes: OrderedDict[str, tuple[tuple[Any, ...], FormulaIndex]] = OrderedDict()

    fast_writes = True
    _formula_index_count = 2  # workbooks whose formula index is kept (a few MB per 100,000 formulas)
    """Cell writes of an .xlsx patch its package in place when they can (False: always openpyxl)."""

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None
        self._cache.clear()
        self._formula_indexes.clear()

    # -- locating files ---------------------------------------------------------------------------

    def _id(self, label: str, root: Path, path: Path) -> str:
        rel = relative_posix(root, path)
        return f"{label}:{rel}" if label else rel

    def check_root(self) -> None:
        """not_found when the main folder is missing (SHEETS_PATH names a folder that does not exist)."""
        root = self.roots[""]
        if not root.is_dir():
            raise NotFound(
                f"The sheets folder {root} does not exist. Create it or set SHEETS_PATH to your workbooks folder.",
                {"root": str(root), "variable": "SHEETS_PATH"},
            )

    def locate(self, spreadsheet_id: str, *, must_exist: bool = True) -> tuple[Path, str]:
        self.check_root()
        label, sep, rel = spreadsheet_id.partition(":")
        if sep and label in self.roots and label:
            root = self.roots[label]
        else:
            root, rel = self.roots[""], spreadsheet_id
        path = safe_join(root, rel)
        fmt = FORMATS.get(path.suffix.lower())
        if fmt is None:
            raise BadRequest(
                f"{spreadsheet_id!r} is not a workbook ({', '.join(FORMATS)}). Call list_spreadsheets for valid ids.",
                {"spreadsheet_id": spreadsheet_id},
            )
        if must_exist and not path.is_file():
            raise NotFound(
                f"No spreadsheet {spreadsheet_id!r}. Call list_spreadsheets for valid ids.",
                {"spreadsheet_id": spreadsheet_id},
            )
        return path, fmt

    def _files(self) -> Iterator[tuple[str, Path, Path]]:
        for label, root in self.roots.items():
            if not root.is_dir():
                continue
            for path in root.rglob("*"):
                rel = path.relative_to(root).parts
                if any(p.startswith((".", "~$")) for p in rel) or path.suffix.lower() not in FORMATS:
                    continue
                if path.is_file() and (path.resolve() == path or path.resolve().is_relative_to(root)):
                    yield label, root, path

    def list_spreadsheets(self, query: str | None, offset: int, limit: int) -> tuple[list[SpreadsheetRef], bool]:
        self.check_root()
        found = []
        needle = (query or "").lower()
        for label, root, path in self._files():
            sid = self._id(label, root, path)
            if needle and needle not in sid.lower():
                continue
            mtime = dt.datetime.fromtimestamp(path.stat().st_mtime, dt.UTC).isoformat(timespec="seconds")
            found.append(SpreadsheetRef(id=sid, name=path.stem, modified=mtime))
        found.sort(key=lambda r: r.id.lower())
        return found[offset : offset + limit], len(found) > offset + limit

    # -- reading -----------------------------------------------------------------------------------

    def _stat_key(self, path: Path) -> tuple[Any, ...]:
        st = path.stat()
        return (str(path), st.st_mtime_ns, st.st_size, st.st_ino)

    def sheet_names(self, path: Path, fmt: str) -> list[str]:
        if fmt == "csv":
            return [path.stem]
        with self._calamine(path) as wb:
            return [m.name for m in wb.sheets_metadata if str(m.typ).endswith("WorkSheet")]

    def _verify(self, path: Path) -> None:
        """Refuse an xlsx whose parts inflate past their limits, before a reader that trusts the zip
        opens it (checked once per version of the file)."""
        if path.suffix.lower() not in (".xlsx", ".xlsm"):
            return
        key = self._stat_key(path)
        with self._lock:
            if key in self._verified:
                return
        try:
            with zipfile.ZipFile(path) as zf:
                verify_parts(zf)
        except (OSError, zipfile.BadZipFile, EOFError) as exc:
            raise ParseError(
                f"{path.name} is not a readable xlsx package: {exc}.", {"file": path.name, "reason": str(exc)[:300]}
            ) from exc
        with self._lock:
            self._verified[key] = True
            while len(self._verified) > 64:
                self._verified.popitem(last=False)

    def _calamine(self, path: Path) -> Any:
        from python_calamine import CalamineError, CalamineWorkbook

        self._verify(path)
        try:
            return CalamineWorkbook.from_path(str(path))
        except (CalamineError, OSError, ValueError) as exc:
            raise ParseError(
                f"{path.name} cannot be read as a workbook: {exc}.", {"file": path.name, "reason": str(exc)[:300]}
            ) from exc
        except BaseException as exc:  # its own classes (ZipError, XmlError...) and Rust panics
            if type(exc).__module__.startswith("python_calamine") or _panic(exc):
                raise ParseError(
                    f"{path.name} cannot be read as a workbook: {exc}.", {"file": path.name, "reason": str(exc)[:300]}
                ) from exc
            raise

    def grid(self, path: Path, fmt: str, sheet: str) -> list[list[Any]]:
        """Every cell of one sheet (from A1), cached while the file is unchanged."""
        key = (*self._stat_key(path), sheet)
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
            pending = self._pending.get(key)
        rows = pending.result() if pending is not None else self._load_grid(path, fmt, sheet)
        self._remember(key, rows)
        return rows

    def _remember(self, key: tuple[Any, ...], rows: list[list[Any]]) -> None:
        with self._lock:
            self._pending.pop(key, None)
            self._cache[key] = rows
            self._cache.move_to_end(key)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)

    def _warm(self, key: tuple[Any, ...], path: Path, fmt: str, sheet: str) -> None:
        """Load a sheet in the background, so the reads after a first quick one find it cached."""
        with self._lock:
            if key in self._cache or key in self._pending:
                return
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="deskmcp-sheets")
            future = self._executor.submit(self._load_grid, path, fmt, sheet)
            self._pending[key] = future

        def done(f: Future[list[list[Any]]]) -> None:
            if f.cancelled() or f.exception() is not None:
                with self._lock:
                    self._pending.pop(key, None)
                return
            self._remember(key, f.result())

        future.add_done_callback(done)

    def _load_grid(self, path: Path, fmt: str, sheet: str) -> list[list[Any]]:
        if fmt == "csv":
            if sheet != path.stem:
                raise self._no_sheet(path, sheet, [path.stem])
            return [[_csv_value(v) for v in row] for row in self._csv_rows(path)]
        names = self.sheet_names(path, fmt)
        if sheet not in names:
            raise self._no_sheet(path, sheet, names)
        if fmt in ("xlsx", "xlsm") and not _dense(size := self._extent(path, sheet)):
            # python-calamine would build every cell from A1 to the farthest one, and a failed
            # allocation aborts the process: such a sheet is only ever read window by window.
            raise BadRequest(
                f"Sheet {sheet!r} of {path.name} spans {size.rows} rows x {size.columns} columns but holds "
                f"{size.cells} cells; read it by bounded ranges (e.g. '{sheet}!A1:Z100').",
                {"sheet": sheet, "rows": size.rows, "columns": size.columns, "cells": size.cells},
            )
        with self._calamine(path) as wb:
            try:
                rows = wb.get_sheet_by_name(sheet).to_python(skip_empty_area=False)
                if fmt in ("xlsx", "xlsm"):
                    self._put_errors(path, sheet, rows)
                return rows
            except BaseException as exc:  # its own classes, and Rust panics that would end the process
                if type(exc).__module__.startswith("python_calamine") or _panic(exc):
                    raise ParseError(
                        f"Sheet {sheet!r} of {path.name} cannot be read: {exc}.", {"sheet": sheet}
                    ) from exc
                raise

    def _put_errors(self, path: Path, sheet: str, rows: list[list[Any]]) -> None:
        """python-calamine reads a stored error (`#DIV/0!`) as an empty cell: put the errors back."""
        try:
            part = self._part(path, sheet)
            with zipfile.ZipFile(path) as zf, zf.open(part) as handle:
                found = errors_in(handle)
        except (OSError, KeyError, zipfile.BadZipFile, ParseError) as exc:
            log.info("error cells of %s!%s not read: %s", path.name, sheet, exc)
            return
        for (r, c), error in found.items():
            if r <= len(rows) and c <= len(rows[r - 1]) and _blank(rows[r - 1][c - 1]):
                rows[r - 1][c - 1] = error

    def _package(self, path: Path) -> tuple[PackageMap, Styles]:
        """Where an xlsx keeps each sheet, its shared strings and its date styles (cached)."""
        key = self._stat_key(path)
        with self._lock:
            if key in self._packages:
                return self._packages[key]
        try:
            with zipfile.ZipFile(path) as zf:
                check_sizes(zf)
                where = package_map(zf)
                look = styles(zf, where.styles, where.date1904)
        except (OSError, KeyError, ValueError, zipfile.BadZipFile, ElementTree.ParseError) as exc:
            raise ParseError(f"{path.name} is not a readable xlsx package: {exc}.", {"file": path.name}) from exc
        with self._lock:
            self._packages[key] = (where, look)
            while len(self._packages) > 16:
                self._packages.popitem(last=False)
        return where, look

    def _part(self, path: Path, sheet: str) -> str:
        where, _look = self._package(path)
        part = where.sheets.get(sheet)
        if part is None:
            raise self._no_sheet(path, sheet, list(where.sheets))
        return part

    def _extent(self, path: Path, sheet: str) -> Extent:
        """How far a sheet's cells reach, measured from its XML without loading it (cached)."""
        key = (*self._stat_key(path), sheet)
        with self._lock:
            if key in self._extents:
                return self._extents[key]
        part = self._part(path, sheet)
        try:
            with zipfile.ZipFile(path) as zf, zf.open(part) as handle:
                size = extent(handle)
        except (OSError, KeyError, zipfile.BadZipFile) as exc:
            raise ParseError(f"Sheet {sheet!r} of {path.name} cannot be read: {exc}.", {"sheet": sheet}) from exc
        with self._lock:
            self._extents[key] = size
            while len(self._extents) > 64:
                self._extents.popitem(last=False)
        return size

    def _window(self, path: Path, sheet: str, rng: A1Range, *, formulas: bool = False) -> list[list[Any]]:
        """The rows of a range of an xlsx sheet, streamed from its XML: costs what the range holds."""
        where, look = self._package(path)
        part = self._part(path, sheet)
        r0, c0 = rng.start_row or 1, rng.start_col or 1
        r1 = rng.end_row if rng.end_row is not None else MAX_ROWS
        c1 = rng.end_col if rng.end_col is not None else MAX_COLUMNS
        try:
            with zipfile.ZipFile(path) as zf:
                cells = window(
                    zf, part, r0, c0, r1, c1, shared_strings=where.shared_strings, look=look, formulas=formulas
                )
        except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
            raise ParseError(f"Sheet {sheet!r} of {path.name} cannot be read: {exc}.", {"sheet": sheet}) from exc
        if not cells:
            return []
        widths: dict[int, int] = {}
        for r, c in cells:
            widths[r] = max(widths.get(r, 0), c)
        return [
            [cells.get((r, c)) for c in range(c0, widths[r] + 1)] if r in widths else []
            for r in range(r0, max(widths) + 1)
        ]

    def _no_sheet(self, path: Path, sheet: str, names: list[str]) -> NotFound:
        return NotFound(
            f"No sheet {sheet!r} in {path.name}. Sheets: {', '.join(names)}.", {"sheet": sheet, "sheets": names}
        )

    def _csv_rows(self, path: Path) -> list[list[str]]:
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise IOFailure(f"{path.name} could not be read: {exc.strerror}.", {"file": path.name}) from exc
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError:
            text = raw.decode("cp1252", errors="replace")
        sample = text[:8192]
        delimiter = ","
        if sample:
            counts = {d: sample.split("\n", 1)[0].count(d) for d in (",", ";", "\t")}
            delimiter = max(counts, key=lambda d: counts[d]) if max(counts.values()) else ","
        try:
            return [list(row) for row in csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)]
        except csv.Error as exc:
            raise ParseError(f"{path.name} is not valid CSV: {exc}.", {"file": path.name}) from exc

    def _default_sheet(self, path: Path, fmt: str) -> str:
        names = self.sheet_names(path, fmt)
        if not names:
            raise ParseError(f"{path.name} holds no worksheet.", {"file": path.name})
        return names[0]

    def read(self, spreadsheet_id: str, ranges: list[A1Range], render: Render) -> list[Grid]:
        path, fmt = self.locate(spreadsheet_id)
        uncomputed = self._uncomputed(path, fmt)
        out = []
        for rng in ranges:
            sheet = rng.sheet or self._default_sheet(path, fmt)
            if render == "formula" and fmt in ("xlsx", "xlsm"):
                cells = self._window(path, sheet, rng, formulas=True)
                r0, c0 = rng.start_row or 1, rng.start_col or 1
            elif (streamed := self._quick_window(path, fmt, sheet, rng)) is not None:
                cells = streamed
                r0, c0 = rng.start_row or 1, rng.start_col or 1
            else:
                data = self.grid(path, fmt, sheet)
                width = max((len(r) for r in data[:1000]), default=0)
                r0, c0, r1, c1 = rng.bounds(len(data), width)
                cells = [row[c0 - 1 : c1] for row in data[r0 - 1 : r1]]
            errors: list[str] = []
            values = []
            for i, row in enumerate(cells):
                shown_row = []
                for j, v in enumerate(row):
                    if isinstance(v, CellError):
                        errors.append(f"{quote_sheet(sheet)}!{cell_name(r0 + i, c0 + j)}")
                    if render == "formula" and isinstance(v, str):
                        shown_row.append(without_prefixes(v) if v.startswith("=") else v)
                    else:
                        shown_row.append(as_json(v, "raw" if render == "formula" else render))
                values.append(shown_row)
            values = trim(values)
            flagged = [
                f"{quote_sheet(sheet)}!{cell}"
                for cell in uncomputed.get(sheet, [])
                if _within_range(cell, rng) and _blank(_at(values, cell, r0, c0))
            ]
            if values:
                width = max(len(r) for r in values)
                shown = A1Range(sheet, r0, c0, r0 + len(values) - 1, c0 + max(width, 1) - 1).a1()
            else:
                shown = rng.a1(default_sheet=sheet)
            out.append(Grid(range=shown, values=values, uncomputed=flagged, errors=errors))
        return out

    def _quick_window(self, path: Path, fmt: str, sheet: str, rng: A1Range) -> list[list[Any]] | None:
        """Rows streamed for a read of an xlsx sheet that is not loaded: a sparse sheet (always),
        or a first read near the top of a big one (the whole sheet then loads in the background).
        None to read from the loaded sheet."""
        if fmt not in ("xlsx", "xlsm"):
            return None
        key = (*self._stat_key(path), sheet)
        with self._lock:
            if key in self._cache or (key in self._pending and self._pending[key].done()):
                return None
            measured = self._extents.get(key)
        if measured is not None and not _dense(measured):
            return self._window(path, sheet, rng)
        if rng.end_row is None or rng.end_row > STREAM_ROWS or path.stat().st_size < STREAM_BYTES:
            if not _dense(self._extent(path, sheet)):
                return self._window(path, sheet, rng)
            return None
        rows = self._window(path, sheet, rng)
        self._warm(key, path, fmt, sheet)
        return rows

    def _uncomputed(self, path: Path, fmt: str) -> dict[str, list[str]]:
        if fmt != "xlsx":
            return {}
        try:
            with zipfile.ZipFile(path) as zf:
                text = custom_property(zf, UNCOMPUTED_PROPERTY)
        except (OSError, zipfile.BadZipFile, ParseError):
            return {}
        if not text:
            return {}
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            return {}
        return data if isinstance(data, dict) else {}

    # -- describing ---------------------------------------------------------------------------------

    def get_spreadsheet(self, spreadsheet_id: str) -> SpreadsheetInfo:
        path, fmt = self.locate(spreadsheet_id)
        sheets: list[SheetInfo] = []
        named: list[NamedRange] = []
        note = None
        if fmt == "csv":
            data = self.grid(path, fmt, path.stem)
            sheets.append(
                SheetInfo(
                    sheet_id=0, title=path.stem, index=0, rows=len(data), columns=max((len(r) for r in data), default=0)
                )
            )
        elif fmt in ("xlsx", "xlsm"):
            sheets, named, note = self._describe_xlsx(path, fmt)
        else:
            for i, name in enumerate(self.sheet_names(path, fmt)):
                data = self.grid(path, fmt, name)
                sheets.append(
                    SheetInfo(
                        sheet_id=i, title=name, index=i, rows=len(data), columns=max((len(r) for r in data), default=0)
                    )
                )
        writable, why = self.writability(path, fmt)
        return SpreadsheetInfo(
            id=spreadsheet_id,
            title=path.stem,
            sheets=sheets,
            named_ranges=named,
            writable=writable,
            note=" ".join(n for n in (note, why) if n) or None,
        )

    def _describe_xlsx(self, path: Path, fmt: str) -> tuple[list[SheetInfo], list[NamedRange], str | None]:
        try:
            with zipfile.ZipFile(path) as zf:
                check_sizes(zf)
                parts = sheet_parts(zf)
                named = [NamedRange(name=n, range=r) for n, r in defined_names(zf)]
                heads = {p.name: sheet_head(zf, p.part) for p in parts if p.kind == "worksheet" and p.part}
        except (OSError, KeyError, zipfile.BadZipFile) as exc:
            raise ParseError(f"{path.name} is not a readable xlsx package: {exc}.", {"file": path.name}) from exc
        sheets: list[SheetInfo] = []
        names = self.sheet_names(path, fmt)
        for index, part in enumerate(p for p in parts if p.kind == "worksheet"):
            if part.name not in names:
                continue
            head = heads.get(part.name)
            rows, columns = (head.rows, head.columns) if head else (None, None)
            if rows is None or columns is None:  # no <dimension>: measured from the cells, never loaded
                size = self._extent(path, part.name)
                rows, columns = size.rows, size.columns
            sheets.append(
                SheetInfo(
                    sheet_id=index,
                    title=part.name,
                    index=len(sheets),
                    rows=rows,
                    columns=columns,
                    frozen_rows=head.frozen_rows if head else 0,
                    frozen_columns=head.frozen_columns if head else 0,
                    hidden=part.hidden,
                )
            )
        if not sheets and names:  # Strict OOXML and other packages the regexes do not follow
            for i, name in enumerate(names):
                data = self.grid(path, fmt, name)
                sheets.append(
                    SheetInfo(
                        sheet_id=i, title=name, index=i, rows=len(data), columns=max((len(r) for r in data), default=0)
                    )
                )
        charts = [p.name for p in parts if p.kind == "chartsheet"]
        note = f"Chart sheets (not readable as values): {', '.join(charts)}." if charts else None
        return sheets, named, note

    def writability(self, path: Path, fmt: str) -> tuple[bool, str | None]:
        if fmt == "csv":
            return True, None
        if fmt == "ods":
            return False, (
                "ods workbooks are read-only here: deskmcp has no OpenDocument writer that keeps the file's "
                "styles, formulas and other content. create_spreadsheet an .xlsx and copy the values to edit them, "
                "or edit the file in LibreOffice."
            )
        if fmt != "xlsx":
            return False, (
                f"{fmt} workbooks are read-only here; create_spreadsheet an .xlsx and copy the values to edit them."
            )
        try:
            with zipfile.ZipFile(path) as zf:
                dropped = dropped_content(zf.namelist())
                strict = b"purl.oclc.org/ooxml" in read_part(zf, "xl/workbook.xml")[:4096]
        except (OSError, KeyError, zipfile.BadZipFile):
            return False, "The file is not a valid xlsx package."
        if strict:
            return False, (
                "Read-only: it is Strict OOXML, which cannot be saved here without losing content. "
                "Copy the values to a new workbook to edit them."
            )
        if dropped:
            return False, (
                f"Read-only: it holds {', '.join(dropped)}, which saving here would delete. "
                "Edit it in Excel or LibreOffice, or copy the values to a new workbook."
            )
        return True, None

    # -- writing ---------------------------------------------------------------------------------

    def _openpyxl(self, path: Path, *, read_only: bool = False, data_only: bool = False) -> Workbook:
        import openpyxl
        from openpyxl.utils.exceptions import InvalidFileException

        self._verify(path)
        try:
            wb = openpyxl.load_workbook(path, read_only=read_only, data_only=data_only, keep_links=True)
        except (
            OSError,
            KeyError,
            TypeError,
            ValueError,
            AttributeError,
            zipfile.BadZipFile,
            InvalidFileException,
        ) as exc:
            raise ParseError(
                f"{path.name} cannot be opened for editing ({type(exc).__name__}: {str(exc)[:200]}). "
                "Its values can still be read; copy them to a new workbook to edit.",
                {"file": path.name},
            ) from exc
        if not wb.sheetnames:
            raise ParseError(
                f"{path.name} uses a form of xlsx (e.g. Strict OOXML) that cannot be edited here. "
                "Its values can still be read; copy them to a new workbook to edit.",
                {"file": path.name},
            )
        return wb

    def edit(
        self, spreadsheet_id: str, change: Callable[[Book], _T], *, escape_csv: bool = True, cells_only: bool = False
    ) -> _T:
        """Load the workbook, apply `change`, compute formulas and save atomically; one writer at a time.

        `cells_only`: `change` only writes and clears cells, so an xlsx is patched in place
        (`package_edit`) when it can be, instead of a whole openpyxl load and save."""
        with self._write_lock:
            path, fmt = self.locate(spreadsheet_id)
            writable, why = self.writability(path, fmt)
            if not writable:
                raise PermissionDenied(f"{path.name} cannot be changed. {why}", {"spreadsheet_id": spreadsheet_id})
            if cells_only and fmt == "xlsx" and self.fast_writes:
                done = self._patch(path, change)
                if done is not None:
                    return done[0]
            wb = self._csv_workbook(path) if fmt == "csv" else self._openpyxl(path)
            book = Book(wb, path, fmt, self)
            book.escape_csv = escape_csv
            result = change(book)
            self._save(path, fmt, book)
            return result

    def edit_flagged(
        self, spreadsheet_id: str, change: Callable[[Book], _T], *, escape_csv: bool = True, cells_only: bool = True
    ) -> tuple[_T, list[str]]:
        """`edit`, and the formulas the save left without a value (A1 cells, sheet named)."""
        flagged: list[str] = []

        def run(book: Book) -> _T:
            result = change(book)
            flagged.clear()  # a patch given up is done again through openpyxl
            book.report = flagged
            return result

        return self.edit(spreadsheet_id, run, escape_csv=escape_csv, cells_only=cells_only), flagged

    def _patch(self, path: Path, change: Callable[[Book], _T]) -> tuple[_T] | None:
        """`change` applied by patching the package; None when it needs openpyxl (nothing written)."""
        from deskmcp.sheets.package_edit import Fallback, PackageBook, write_atomically

        self._verify(path)
        where, look = self._package(path)
        # the formula index of this version of the file, if the last write here made it (taken:
        # a failed write leaves none behind)
        version = self._stat_key(path)
        cached = self._formula_indexes.pop(str(path), None)
        known = cached[1] if cached is not None and cached[0] == version else None
        package = PackageBook(path, where, look, "xlsx")
        try:
            try:
                book = PatchedBook(package, self)
                result = change(book)  # type: ignore[arg-type]  # the same operations as Book
                names = _package_names(package.zf)
                uncomputed = package.save(names, known)
            except Fallback as exc:
                log.info("%s edited through openpyxl: %s", path.name, exc)
                return None
            except (OSError, zipfile.BadZipFile, ElementTree.ParseError) as exc:
                raise ParseError(f"{path.name} is not a readable xlsx package: {exc}.", {"file": path.name}) from exc
            try:
                written = write_atomically(path, package.write)
            except zipfile.BadZipFile as exc:
                raise ParseError(f"{path.name} is not a readable xlsx package: {exc}.", {"file": path.name}) from exc
            except OSError as exc:
                raise IOFailure(f"{path.name} could not be saved: {exc}.", {"file": path.name}) from exc
        finally:
            package.close()
        if package.formula_index is not None:
            self._formula_indexes[str(path)] = (
                (str(path), written.st_mtime_ns, written.st_size, written.st_ino),
                package.formula_index,
            )
            while len(self._formula_indexes) > self._formula_index_count:
                self._formula_indexes.popitem(last=False)
        book.report.extend(f"{quote_sheet(sheet)}!{ref}" for sheet, refs in uncomputed.items() for ref in refs)
        return (result,)

    def _csv_workbook(self, path: Path) -> Workbook:
        from openpyxl import Workbook

        wb = Workbook()
        ws: Any = wb.active
        ws.title = path.stem[:31] if path.stem else "Sheet1"
        for r, row in enumerate(self._csv_rows(path), start=1):
            for c, value in enumerate(row, start=1):
                if value != "":
                    cell = ws.cell(row=r, column=c, value=_csv_value(value))
                    if isinstance(cell.value, str):
                        cell.data_type = "s"
        return wb

    def _save(self, path: Path, fmt: str, book: Book) -> None:
        values, uncomputed = book.compute()
        book.report.extend(f"{quote_sheet(sheet)}!{ref}" for sheet, refs in uncomputed.items() for ref in refs)
        if fmt == "csv":
            ws: Any = book.wb.worksheets[0]
            buffer = io.StringIO(newline="")
            writer = csv.writer(buffer, lineterminator="\n")
            # QUOTE_MINIMAL quotes only what holds the line terminator: a lone CR must be quoted too,
            # or every reader splits the row there.
            quoted = csv.writer(buffer, lineterminator="\n", quoting=csv.QUOTE_ALL)
            title = ws.title
            for r in range(1, (ws.max_row or 0) + 1):
                row = []
                for c in range(1, (ws.max_column or 0) + 1):
                    v = ws._cells.get((r, c))
                    v = None if v is None else v.value
                    if isinstance(v, str) and v.startswith("=") and book.is_formula(title, r, c):
                        v = values.get(title, {}).get(cell_name(r, c), v)
                    shown = as_json(v, "shown")
                    if book.escape_csv and (title, r, c) in book.touched:
                        shown = csv_escaped(shown)
                    row.append(shown)
                carriage = any(isinstance(v, str) and "\r" in v for v in row)
                (quoted if carriage else writer).writerow(row)
            data = buffer.getvalue().rstrip("\n") + "\n" if buffer.getvalue() else ""
            atomic_write_bytes(path, data.encode("utf-8"))
            return
        from openpyxl.packaging.custom import StringProperty

        for title, cells in values.items():
            ws = book.wb[title]
            for ref, value in cells.items():
                cell: Any = ws[ref]
                if cell.number_format == "General" and _shows_date(ws, cell.value, value):
                    cell.number_format = date_format(value)
        props: Any = getattr(book.wb, "custom_doc_props")  # noqa: B009 - missing from the stubs
        for prop in list(props):
            if prop.name == UNCOMPUTED_PROPERTY:
                props.props.remove(prop)
        if uncomputed:
            props.append(StringProperty(name=UNCOMPUTED_PROPERTY, value=json.dumps(uncomputed)))
            # Excel and LibreOffice then compute what deskmcp could not when the file is opened.
            book.wb.calculation.fullCalcOnLoad = True
        buffer = io.BytesIO()
        try:
            book.wb.save(buffer)
        except (OSError, ValueError, TypeError) as exc:
            raise IOFailure(f"{path.name} could not be saved: {exc}.", {"file": path.name}) from exc
        atomic_write_bytes(path, write_cached_values(buffer.getvalue(), values))

    def create_spreadsheet(self, title: str, sheets: list[str]) -> SpreadsheetInfo:
        name = title if Path(title).suffix.lower() in (".xlsx", ".csv") else f"{title}.xlsx"
        path, fmt = self.locate(name, must_exist=False)
        if fmt not in WRITABLE:
            raise BadRequest("New spreadsheets are .xlsx (or .csv for one sheet).", {"title": title})
        with self._write_lock:
            if path.exists():
                raise Conflict(
                    f"{name!r} already exists. Pick another title, or use it (get_spreadsheet).",
                    {"spreadsheet_id": name},
                )
            path.parent.mkdir(parents=True, exist_ok=True)
            if fmt == "csv":
                if len(sheets) > 1:
                    raise BadRequest("A .csv spreadsheet holds one sheet; create an .xlsx for several.", {})
                atomic_write_bytes(path, b"")
            else:
                from openpyxl import Workbook

                wb = Workbook()
                first: Any = wb.active
                names = sheets or ["Sheet1"]
                first.title = _check_title(names[0], [])
                for extra in names[1:]:
                    wb.create_sheet(_check_title(extra, wb.sheetnames))
                buffer = io.BytesIO()
                wb.save(buffer)
                atomic_write_bytes(path, buffer.getvalue())
        sid = self._id("", self.roots[""], path)
        return self.get_spreadsheet(sid)

    def write(
        self,
        spreadsheet_id: str,
        updates: list[tuple[A1Range, list[list[Any]]]],
        mode: InputMode,
        *,
        escape_csv: bool = True,
    ) -> tuple[list[UpdatedRange], list[str]]:
        return self.edit_flagged(
            spreadsheet_id, lambda book: [book.put(rng, rows, mode) for rng, rows in updates], escape_csv=escape_csv
        )

    def append(
        self, spreadsheet_id: str, target: A1Range, rows: list[list[Any]], mode: InputMode, *, escape_csv: bool = True
    ) -> tuple[UpdatedRange, list[str]]:
        def change(book: Book) -> UpdatedRange:
            ws = book.sheet(target.sheet)
            c0 = target.start_col or 1
            c1 = target.end_col
            last = book.last_row(ws, c0, c1)
            start = max(last + 1, target.start_row or 1)
            return book.put(A1Range(ws.title, start, c0, None, None), rows, mode)

        return self.edit_flagged(spreadsheet_id, change, escape_csv=escape_csv)

    def clear(self, spreadsheet_id: str, ranges: list[A1Range]) -> tuple[list[str], list[str]]:
        return self.edit_flagged(spreadsheet_id, lambda book: [book.clear(rng) for rng in ranges])

    def add_sheet(self, spreadsheet_id: str, title: str, rows: int, columns: int) -> tuple[SheetInfo, list[str]]:
        def change(book: Book) -> None:
            book.single_sheet_guard("add a sheet to")
            book.wb.create_sheet(_check_title(title, book.wb.sheetnames))

        _, flagged = self.edit_flagged(spreadsheet_id, change, cells_only=False)
        return self._sheet_info(spreadsheet_id, title), flagged

    def rename_sheet(self, spreadsheet_id: str, sheet: str, title: str) -> tuple[SheetInfo, list[str]]:
        def change(book: Book) -> None:
            book.single_sheet_guard("rename the sheet of")
            ws = book.sheet(sheet)
            others = [n for n in book.wb.sheetnames if n != ws.title]
            old = ws.title
            ws.title = _check_title(title, others)
            book.rewrite_formulas(lambda f, _s: _rename_refs(f, old, ws.title))

        _, flagged = self.edit_flagged(spreadsheet_id, change, cells_only=False)
        return self._sheet_info(spreadsheet_id, title), flagged

    def delete_sheet(self, spreadsheet_id: str, sheet: str) -> list[str]:
        def change(book: Book) -> None:
            book.single_sheet_guard("delete the sheet of")
            ws = book.sheet(sheet)
            if len(book.wb.worksheets) == 1:
                raise BadRequest("A workbook keeps at least one sheet; add another first.", {"sheet": sheet})
            book.wb.remove(ws)
            book.moved = True  # formulas that read the sheet now give #REF!

        return self.edit_flagged(spreadsheet_id, change, cells_only=False)[1]

    def duplicate_sheet(self, spreadsheet_id: str, sheet: str, title: str) -> tuple[SheetInfo, list[str]]:
        def change(book: Book) -> None:
            book.single_sheet_guard("duplicate the sheet of")
            ws = book.sheet(sheet)
            copy: Any = book.wb.copy_worksheet(ws)
            copy.title = _check_title(title, book.wb.sheetnames[:-1])

        _, flagged = self.edit_flagged(spreadsheet_id, change, cells_only=False)
        return self._sheet_info(spreadsheet_id, title), flagged

    def insert_rows(self, spreadsheet_id: str, sheet: str, at: int, count: int) -> list[str]:
        def change(book: Book) -> None:
            ws = book.sheet(sheet)
            ws.insert_rows(at, count)
            book.rewrite_formulas(lambda f, s: shift_rows(f, s, ws.title, at, count))

        return self.edit_flagged(spreadsheet_id, change, cells_only=False)[1]

    def delete_rows(self, spreadsheet_id: str, sheet: str, at: int, count: int) -> list[str]:
        def change(book: Book) -> None:
            ws = book.sheet(sheet)
            ws.delete_rows(at, count)
            book.rewrite_formulas(lambda f, s: shift_rows(f, s, ws.title, at, -count))

        return self.edit_flagged(spreadsheet_id, change, cells_only=False)[1]

    def _sheet_info(self, spreadsheet_id: str, title: str) -> SheetInfo:
        info = self.get_spreadsheet(spreadsheet_id)
        return next(s for s in info.sheets if s.title == title)


def _within_range(cell: str, rng: A1Range) -> bool:
    """Whether `cell` lies in the range asked for (trailing blank cells trimmed from the answer included)."""
    from deskmcp.sheets.a1 import parse_cells

    r, c, _r, _c = parse_cells(cell, cell)
    if r is None or c is None:
        return False
    return (rng.start_row or 1) <= r <= (rng.end_row if rng.end_row is not None else MAX_ROWS) and (
        rng.start_col or 1
    ) <= c <= (rng.end_col if rng.end_col is not None else MAX_COLUMNS)


def _at(values: list[list[Any]], cell: str, r0: int, c0: int) -> Any:
    from deskmcp.sheets.a1 import parse_cells

    r, c, _r, _c = parse_cells(cell, cell)
    try:
        return values[(r or 0) - r0][(c or 0) - c0]
    except IndexError:
        return None


def put_block(
    title: str,
    rng: A1Range,
    rows: list[list[Any]],
    mode: InputMode,
    fmt: str,
    store: Callable[[int, int, Any, bool], None],
) -> UpdatedRange:
    """Write `rows` from the range's top-left cell through `store(row, column, value, literal)`."""
    r0, c0 = rng.start_row or 1, rng.start_col or 1
    if rng.is_cell:  # a single cell anchors the block, as in Google Sheets
        rng = A1Range(rng.sheet, r0, c0, None, None)
    height = len(rows)
    width = max((len(r) for r in rows), default=0)
    if rng.end_row is not None and rng.start_row is not None and r0 + height - 1 > rng.end_row:
        raise BadRequest(
            f"{height} rows do not fit in {rng.a1()}; widen the range or send fewer rows.", {"range": rng.a1()}
        )
    if rng.end_col is not None and c0 + width - 1 > rng.end_col:
        raise BadRequest(
            f"{width} columns do not fit in {rng.a1()}; widen the range or send fewer values.", {"range": rng.a1()}
        )
    for i, row in enumerate(rows):
        for j, value in enumerate(row):
            if value is None:
                continue  # null leaves the cell as it is
            if isinstance(value, dict | list):
                raise BadRequest("Cell values are text, numbers, booleans or null.", {"value": str(value)[:80]})
            stored = user_entered(value) if mode == "USER_ENTERED" else value
            if mode == "USER_ENTERED" and fmt != "csv" and isinstance(stored, str) and stored.startswith("="):
                stored = excel_prefixes(stored)  # what Excel stores; a .csv keeps the text as typed
            literal = isinstance(stored, str) and stored != "" and (mode == "RAW" or not stored.startswith("="))
            store(r0 + i, c0 + j, stored, literal)
    end_row = r0 + max(height, 1) - 1
    end_col = c0 + max(width, 1) - 1
    a1 = A1Range(title, r0, c0, end_row, end_col).a1()
    cells = sum(len(r) for r in rows)
    return UpdatedRange(range=a1, rows=height, columns=width, cells=cells)


class PatchedBook:
    """The cell operations of `Book` over a package patched in place (`package_edit`)."""

    def __init__(self, package: Any, backend: LocalBackend) -> None:
        self.package = package
        self.backend = backend
        self.report: list[str] = []

    def sheet(self, name: str | None) -> Any:
        try:
            return self.package.sheet(name)
        except KeyError:
            raise self.backend._no_sheet(self.package.path, name or "", list(self.package.where.sheets)) from None

    def put(self, rng: A1Range, rows: list[list[Any]], mode: InputMode) -> UpdatedRange:
        title = self.sheet(rng.sheet).title
        return put_block(
            title, rng, rows, mode, "xlsx", lambda r, c, v, lit: self.package.write_cell(title, r, c, v, lit)
        )

    def clear(self, rng: A1Range) -> str:
        self.sheet(rng.sheet)
        return self.package.clear(rng)

    def last_row(self, ws: Any, c0: int, c1: int | None) -> int:
        return self.package.last_row(ws, c0, c1)


def _package_names(zf: zipfile.ZipFile) -> Callable[[str, str], str | None]:
    """The defined names of a package as `WorkbookCalculator` takes them (per-sheet ones first)."""
    root = ElementTree.fromstring(read_part(zf, "xl/workbook.xml"))
    sheets = [e.get("name", "") for e in root.iter() if e.tag.rsplit("}", 1)[-1] == "sheet"]
    found: dict[tuple[str, str], str] = {}
    for e in root.iter():
        if e.tag.rsplit("}", 1)[-1] != "definedName" or not e.text:
            continue
        local = e.get("localSheetId")
        scope = sheets[int(local)] if local is not None and local.isdigit() and int(local) < len(sheets) else ""
        found[(scope, e.get("name", "").upper())] = e.text

    def resolve(sheet: str, name: str) -> str | None:
        return found.get((sheet, name)) or found.get(("", name))

    return resolve


def _check_title(title: str, existing: list[str]) -> str:
    title = title.strip()
    if not title or len(title) > 100 or re.search(r"[\[\]:*?/\\]", title):
        raise BadRequest(
            f"Sheet title {title!r} is not allowed: 1-100 characters, none of [ ] : * ? / \\.", {"title": title}
        )
    if len(title) > 31:
        raise BadRequest("xlsx sheet titles are at most 31 characters.", {"title": title})
    if title.lower() in (n.lower() for n in existing):
        raise Conflict(f"A sheet named {title!r} already exists.", {"title": title})
    return title


def _rename_refs(formula: str, old: str, new: str) -> str:
    olds = {quote_sheet(old) + "!", "'" + old.replace("'", "''") + "'!"}
    for form in olds:
        formula = formula.replace(form, quote_sheet(new) + "!")
    return formula


class Book:
    """An openpyxl workbook being edited, with the operations the tools need."""

    def __init__(self, wb: Workbook, path: Path, fmt: str, backend: LocalBackend) -> None:
        self.wb = wb
        self.path = path
        self.fmt = fmt
        self.backend = backend
        self.literal: set[tuple[str, int, int]] = set()
        self.touched: set[tuple[str, int, int]] = set()
        self.moved = False
        self.escape_csv = True
        self.report: list[str] = []  # filled with the formulas left uncomputed when saved

    def single_sheet_guard(self, what: str) -> None:
        if self.fmt == "csv":
            raise BadRequest(
                f"Cannot {what} a .csv spreadsheet: it is one sheet named after the file. "
                "Create an .xlsx (create_spreadsheet) for several sheets.",
                {"file": self.path.name},
            )

    def sheet(self, name: str | None) -> Worksheet:
        if name is None:
            return self.wb.worksheets[0]
        if name not in self.wb.sheetnames:
            raise self.backend._no_sheet(self.path, name, self.wb.sheetnames)
        ws: Any = self.wb[name]
        if not hasattr(ws, "insert_rows"):
            raise BadRequest(f"{name!r} is a chart sheet, not a sheet of cells.", {"sheet": name})
        return ws

    def is_formula(self, sheet: str, row: int, column: int) -> bool:
        return (sheet, row, column) not in self.literal

    def put(self, rng: A1Range, rows: list[list[Any]], mode: InputMode) -> UpdatedRange:
        ws = self.sheet(rng.sheet)

        def store(r: int, c: int, stored: Any, literal: bool) -> None:
            cell: Any = ws.cell(row=r, column=c)
            cell.value = None if stored == "" else stored
            key = (ws.title, r, c)
            self.touched.add(key)
            if literal:
                cell.data_type = "s"  # text that merely starts with '=' stays text
                self.literal.add(key)
            else:
                self.literal.discard(key)

        return put_block(ws.title, rng, rows, mode, self.fmt, store)

    def clear(self, rng: A1Range) -> str:
        ws = self.sheet(rng.sheet)
        r0, c0, r1, c1 = rng.bounds(ws.max_row or 0, ws.max_column or 0)
        cells: dict[tuple[int, int], Any] = ws._cells  # type: ignore[attr-defined]
        for r, c in [k for k in cells if r0 <= k[0] <= r1 and c0 <= k[1] <= c1]:
            cells[(r, c)].value = None
            self.touched.add((ws.title, r, c))
        return A1Range(ws.title, r0, c0, r1, c1).a1() if r1 >= r0 and c1 >= c0 else rng.a1(default_sheet=ws.title)

    def last_row(self, ws: Worksheet, c0: int, c1: int | None) -> int:
        cells: dict[tuple[int, int], Any] = ws._cells  # type: ignore[attr-defined]
        last = 0
        for (r, c), cell in cells.items():
            if r > last and c >= c0 and (c1 is None or c <= c1) and not _blank(cell.value):
                last = r
        return last

    def rewrite_formulas(self, fn: Callable[[str, str], str]) -> None:
        self.moved = True
        for ws in self.wb.worksheets:
            cells: dict[tuple[int, int], Any] = ws._cells  # type: ignore[attr-defined]
            for (r, c), cell in cells.items():
                if cell.data_type == "f" and isinstance(cell.value, str) and (ws.title, r, c) not in self.literal:
                    cell.value = fn(cell.value, ws.title)

    def compute(self) -> tuple[dict[str, dict[str, Any]], dict[str, list[str]]]:
        """The value to store for every formula (sheet -> cell -> value) and the cells left without one.

        Formulas the change may affect (written ones, those reading a changed cell, directly or
        through other formulas) and those the file holds no value for are computed; every other
        formula keeps the value the file had cached (dates and errors included). One that cannot
        be computed is stored without a value and listed, never left showing a stale value.
        """
        worksheets = {ws.title: ws for ws in self.wb.worksheets if hasattr(ws, "_cells")}
        names = workbook_names(self.wb)
        formulas: dict[Key, str] = {}
        for title, ws in worksheets.items():
            for (r, c), cell in ws._cells.items():  # type: ignore[attr-defined]
                if cell.data_type == "f" and isinstance(cell.value, str) and (title, r, c) not in self.literal:
                    formulas[(title, r, c)] = cell.value
        previous = self._previous_results(formulas)
        if previous is None:  # rows moved, sheets renamed or removed: nothing cached can be trusted
            needed = set(formulas)
            previous = {}
        else:
            needed = {k for k in formulas if k in self.touched or k not in previous}
            if self.touched:
                needed |= depends_on(formulas, names).stale(self.touched)
        kept = {k: v for k, v in previous.items() if k in formulas and k not in needed}

        def raw(sheet: str, row: int, column: int) -> Any:
            ws = worksheets.get(sheet)
            if ws is None:
                raise Uncomputable(f"no sheet {sheet}")
            key = (sheet, row, column)
            if key in kept:
                return kept[key]
            cell = ws._cells.get((row, column))  # type: ignore[attr-defined]
            return None if cell is None else evaluator_value(cell.value)

        def extent(sheet: str) -> tuple[int, int]:
            ws = worksheets.get(sheet)
            return (ws.max_row or 0, ws.max_column or 0) if ws is not None else (0, 0)

        def is_text(sheet: str, row: int, column: int) -> bool:
            key = (sheet, row, column)
            if key in self.literal or key in kept:
                return True
            cell = worksheets[sheet]._cells.get((row, column))  # type: ignore[attr-defined]
            return cell is not None and cell.data_type != "f"

        calc = WorkbookCalculator(raw, extent, is_text, names=names)
        values: dict[str, dict[str, Any]] = {}
        uncomputed: dict[str, list[str]] = {}
        for key in sorted(formulas, key=lambda k: (k[0], k[1], k[2])):
            title, r, c = key
            name = cell_name(r, c)
            if key in kept:
                values.setdefault(title, {})[name] = kept[key]
                continue
            try:
                values.setdefault(title, {})[name] = calc.value(title, r, c)
            except (Uncomputable, RecursionError) as exc:
                log.info("formula %s!%s not computed: %s", title, name, exc)
                uncomputed.setdefault(title, []).append(name)
        return values, uncomputed

    def _previous_results(self, formulas: dict[Key, str]) -> dict[Key, Any] | None:
        """The results the file had cached for its formulas, by cell; None when the cells moved."""
        if self.moved:
            return None
        if self.fmt != "xlsx" or not formulas:
            return {}
        found: dict[Key, Any] = {}
        try:
            where, _look = self.backend._package(self.path)
            with zipfile.ZipFile(self.path) as zf:
                for sheet in {k[0] for k in formulas}:
                    part = where.sheets.get(sheet)
                    if part is None:
                        continue
                    data = read_part(zf, part, MAX_CELLS_PART_BYTES)
                    if plain(data):
                        cells = formula_results(data)
                    else:
                        plain_numbers = Styles(frozenset(), frozenset(), _EPOCH)
                        cells = window(zf, part, 1, 1, MAX_ROWS, MAX_COLUMNS, shared_strings=None, look=plain_numbers)
                    for (r, c), value in cells.items():
                        if (sheet, r, c) in formulas and not _blank(value):
                            found[(sheet, r, c)] = value
        except (OSError, KeyError, ValueError, zipfile.BadZipFile, ParseError) as exc:
            log.info("cached results of %s not read (%s): every formula is computed", self.path.name, exc)
            return {}
        return found


_DATE_SHIFT = re.compile(r"^=\s*\$?([A-Z]{1,3})\$?(\d+)\s*[-+]")


def _shows_date(ws: Any, formula: Any, value: Any) -> bool:
    """Whether Excel would show a computed value as a date: a date function's result, or a date
    cell moved by some days (`=B4+30` takes the format of B4, as Excel gives it)."""
    if isinstance(value, DateSerial):
        return True
    if isinstance(value, bool) or not isinstance(value, float | int) or not isinstance(formula, str):
        return False
    m = _DATE_SHIFT.match(formula)
    return m is not None and bool(getattr(ws[f"{m.group(1)}{m.group(2)}"], "is_date", False))


def date_format(value: float) -> str:
    """The number format a computed date is stored with (with the time when it has one)."""
    return "yyyy-mm-dd" if float(value).is_integer() else "yyyy-mm-dd hh:mm"


def evaluator_value(value: Any) -> Any:
    """A stored cell value as the evaluator takes it: dates and times as serial numbers."""
    if isinstance(value, dt.datetime | dt.date):
        return as_json(value, "raw")
    if isinstance(value, dt.time):
        return (value.hour * 3600 + value.minute * 60 + value.second + value.microsecond / 1e6) / 86400
    if isinstance(value, dt.timedelta):
        return value.total_seconds() / 86400
    if value is not None and not isinstance(value, str | int | float | bool | CellError):
        raise Uncomputable("array or table formula")
    return value


__all__ = ["Book", "LocalBackend", "column_letters"]
