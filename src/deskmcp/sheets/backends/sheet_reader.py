"""The read path of local workbooks: python-calamine for whole sheets (cached while the file is
unchanged), the sheet XML of an .xlsx for windows, extents and stored errors.

A sheet loads whole when it is dense enough; a sparse one, and a first read near the top of a big
one, is streamed from its XML window by window (the big one then loads in the background).
"""

from __future__ import annotations

import json
import logging
import re
import threading
import zipfile
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from deskmcp.core.errors import BadRequest, ParseError
from deskmcp.sheets.a1 import MAX_COLUMNS, MAX_ROWS, A1Range, cell_name, quote_sheet
from deskmcp.sheets.backends.cell_values import as_json, blank, trim, value_at, within_range
from deskmcp.sheets.backends.csv_files import csv_rows, csv_value
from deskmcp.sheets.backends.workbook_files import no_sheet, stat_key
from deskmcp.sheets.formulas.dependencies import InputReader, depends_on
from deskmcp.sheets.formulas.engine import CellError
from deskmcp.sheets.formulas.prefixes import without_prefixes
from deskmcp.sheets.models import Grid, Render
from deskmcp.sheets.xlsx.cellxml import errors_in
from deskmcp.sheets.xlsx.parts import (
    UNCOMPUTED_PROPERTY,
    PackageMap,
    check_sizes,
    custom_property,
    package_map,
    package_names,
    verify_parts,
)
from deskmcp.sheets.xlsx.sheetdata import Extent, Styles, extent, scan_formulas, styles, window

log = logging.getLogger("deskmcp.sheets")

NEAR_ROWS = 20_000
"""A range ending above this row has its uncomputed and volatile formulas found from the rows it
depends on (`SheetReader._near`), as long as those stay above it too; else the workbook is scanned."""
STREAM_ROWS = 2_000
"""A first read ending above this row of a big, not yet loaded xlsx sheet is streamed."""
STREAM_BYTES = 2_000_000
"""Workbooks smaller than this load whole at once: streaming would not be quicker."""
DENSE_SLACK = 1_000_000
"""A sheet loads whole (python-calamine) when the grid from A1 to its farthest cell holds at most
this many cells more than four times those it stores; sparser sheets are read window by window."""

_Key = tuple[Any, ...]


NEWER_ERROR = re.compile(r"[Uu]nsupported cell error value")
"""python-calamine's refusal of an error value Excel 365 stores (`#SPILL!`, `#CALC!`, `#FIELD!`...)."""


def dense(size: Extent) -> bool:
    return size.area <= 4 * size.cells + DENSE_SLACK


def _from_calamine(exc: BaseException) -> bool:
    """One of python-calamine's own errors (ZipError, XmlError...) or a Rust panic inside it
    (pyo3's PanicException derives from BaseException)."""
    return type(exc).__module__.startswith("python_calamine") or type(exc).__name__ == "PanicException"


def _within(cells: list[tuple[int, int]], rng: A1Range) -> list[str]:
    """The cells of a sorted (row, column) list inside `rng`, as A1."""
    r0, c0 = rng.start_row or 1, rng.start_col or 1
    r1 = rng.end_row if rng.end_row is not None else MAX_ROWS
    c1 = rng.end_col if rng.end_col is not None else MAX_COLUMNS
    first, last = bisect_left(cells, (r0, 0)), bisect_right(cells, (r1, MAX_COLUMNS + 1))
    return [cell_name(r, c) for r, c in cells[first:last] if c0 <= c <= c1]


def _remember_in(cache: OrderedDict[_Key, Any], key: _Key, value: Any, size: int) -> None:
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > size:
        cache.popitem(last=False)


class SheetReader:
    """Reads sheets of workbook files, with the caches that make repeated reads cheap."""

    def __init__(self, *, cache_sheets: int = 4) -> None:
        self._cache: OrderedDict[_Key, list[list[Any]]] = OrderedDict()
        self._cache_size = cache_sheets
        self._lock = threading.RLock()  # the caches: reads run in several threads
        self._pending: dict[_Key, Future[list[list[Any]]]] = {}
        self._packages: OrderedDict[_Key, tuple[PackageMap, Styles]] = OrderedDict()
        self._extents: OrderedDict[_Key, Extent] = OrderedDict()
        self._verified: OrderedDict[_Key, bool] = OrderedDict()
        self._formula_scans: OrderedDict[_Key, tuple[list[tuple[int, int]], list[tuple[int, int]]]] = OrderedDict()
        self._volatiles: OrderedDict[_Key, dict[str, list[tuple[int, int]]]] = OrderedDict()
        self._executor: ThreadPoolExecutor | None = None

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None
        self._cache.clear()

    # -- opening ----------------------------------------------------------------------------------

    def verify(self, path: Path) -> None:
        """Refuse an xlsx whose parts inflate past their limits, before a reader that trusts the zip
        opens it (checked once per version of the file)."""
        if path.suffix.lower() not in (".xlsx", ".xlsm"):
            return
        key = stat_key(path)
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
            _remember_in(self._verified, key, True, 64)

    def _calamine(self, path: Path) -> Any:
        from python_calamine import CalamineError, CalamineWorkbook

        self.verify(path)
        try:
            return CalamineWorkbook.from_path(str(path))
        except (CalamineError, OSError, ValueError) as exc:
            raise ParseError(
                f"{path.name} cannot be read as a workbook: {exc}.", {"file": path.name, "reason": str(exc)[:300]}
            ) from exc
        except BaseException as exc:  # its own classes (ZipError, XmlError...) and Rust panics
            if _from_calamine(exc):
                raise ParseError(
                    f"{path.name} cannot be read as a workbook: {exc}.", {"file": path.name, "reason": str(exc)[:300]}
                ) from exc
            raise

    def sheet_names(self, path: Path, fmt: str) -> list[str]:
        if fmt == "csv":
            return [path.stem]
        with self._calamine(path) as wb:
            return [m.name for m in wb.sheets_metadata if str(m.typ).endswith("WorkSheet")]

    def default_sheet(self, path: Path, fmt: str) -> str:
        names = self.sheet_names(path, fmt)
        if not names:
            raise ParseError(f"{path.name} holds no worksheet.", {"file": path.name})
        return names[0]

    # -- whole sheets -----------------------------------------------------------------------------

    def grid(self, path: Path, fmt: str, sheet: str) -> list[list[Any]]:
        """Every cell of one sheet (from A1), cached while the file is unchanged."""
        key = (*stat_key(path), sheet)
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
            pending = self._pending.get(key)
        rows = pending.result() if pending is not None else self._load_grid(path, fmt, sheet)
        self._remember(key, rows)
        return rows

    def _remember(self, key: _Key, rows: list[list[Any]]) -> None:
        with self._lock:
            self._pending.pop(key, None)
            _remember_in(self._cache, key, rows, self._cache_size)

    def _warm(self, key: _Key, path: Path, fmt: str, sheet: str) -> None:
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
                raise no_sheet(path, sheet, [path.stem])
            return [[csv_value(v) for v in row] for row in csv_rows(path)]
        names = self.sheet_names(path, fmt)
        if sheet not in names:
            raise no_sheet(path, sheet, names)
        if fmt in ("xlsx", "xlsm") and not dense(size := self.extent(path, sheet)):
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
                if _from_calamine(exc) and fmt in ("xlsx", "xlsm") and NEWER_ERROR.search(str(exc)):
                    # an error value newer than python-calamine knows (`#SPILL!`, `#CALC!`): the
                    # sheet is read from its XML instead
                    log.info("%s!%s read from its XML: %s", path.name, sheet, exc)
                    return self._xml_grid(path, sheet)
                if _from_calamine(exc):
                    raise ParseError(
                        f"Sheet {sheet!r} of {path.name} cannot be read: {exc}.", {"sheet": sheet}
                    ) from exc
                raise

    def _xml_grid(self, path: Path, sheet: str) -> list[list[Any]]:
        """Every cell of an xlsx sheet from A1, read from its XML, rows as wide as the widest."""
        rows = self.window(path, sheet, A1Range(sheet, 1, 1, None, None))
        width = max((len(row) for row in rows), default=0)
        return [row + [None] * (width - len(row)) for row in rows]

    def _put_errors(self, path: Path, sheet: str, rows: list[list[Any]]) -> None:
        """python-calamine reads a stored error (`#DIV/0!`) as an empty cell: put the errors back."""
        try:
            part = self.part(path, sheet)
            with zipfile.ZipFile(path) as zf, zf.open(part) as handle:
                found = errors_in(handle)
        except (OSError, KeyError, zipfile.BadZipFile, ParseError) as exc:
            log.info("error cells of %s!%s not read: %s", path.name, sheet, exc)
            return
        for (r, c), error in found.items():
            if r <= len(rows) and c <= len(rows[r - 1]) and blank(rows[r - 1][c - 1]):
                rows[r - 1][c - 1] = error

    # -- the sheet XML of an xlsx -----------------------------------------------------------------

    def package(self, path: Path) -> tuple[PackageMap, Styles]:
        """Where an xlsx keeps each sheet, its shared strings and its date styles (cached)."""
        key = stat_key(path)
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
            _remember_in(self._packages, key, (where, look), 16)
        return where, look

    def part(self, path: Path, sheet: str) -> str:
        where, _look = self.package(path)
        part = where.sheets.get(sheet)
        if part is None:
            raise no_sheet(path, sheet, list(where.sheets))
        return part

    def extent(self, path: Path, sheet: str) -> Extent:
        """How far a sheet's cells reach, measured from its XML without loading it (cached)."""
        key = (*stat_key(path), sheet)
        with self._lock:
            if key in self._extents:
                return self._extents[key]
        part = self.part(path, sheet)
        try:
            with zipfile.ZipFile(path) as zf, zf.open(part) as handle:
                size = extent(handle)
        except (OSError, KeyError, zipfile.BadZipFile) as exc:
            raise ParseError(f"Sheet {sheet!r} of {path.name} cannot be read: {exc}.", {"sheet": sheet}) from exc
        with self._lock:
            _remember_in(self._extents, key, size, 64)
        return size

    def window(self, path: Path, sheet: str, rng: A1Range, *, formulas: bool = False) -> list[list[Any]]:
        """The rows of a range of an xlsx sheet, streamed from its XML: costs what the range holds."""
        where, look = self.package(path)
        part = self.part(path, sheet)
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

    def _quick_window(self, path: Path, fmt: str, sheet: str, rng: A1Range) -> list[list[Any]] | None:
        """Rows streamed for a read of an xlsx sheet that is not loaded: a sparse sheet (always),
        or a first read near the top of a big one (the whole sheet then loads in the background).
        None to read from the loaded sheet."""
        if fmt not in ("xlsx", "xlsm"):
            return None
        key = (*stat_key(path), sheet)
        with self._lock:
            if key in self._cache or (key in self._pending and self._pending[key].done()):
                return None
            measured = self._extents.get(key)
        if measured is not None and not dense(measured):
            return self.window(path, sheet, rng)
        if rng.end_row is None or rng.end_row > STREAM_ROWS or path.stat().st_size < STREAM_BYTES:
            if not dense(self.extent(path, sheet)):
                return self.window(path, sheet, rng)
            return None
        rows = self.window(path, sheet, rng)
        self._warm(key, path, fmt, sheet)
        return rows

    # -- answering a read ---------------------------------------------------------------------------

    def read(self, path: Path, fmt: str, ranges: list[A1Range], render: Render) -> list[Grid]:
        """The values of each range as the tools answer them, with the error and uncomputed cells."""
        uncomputed = self._uncomputed(path, fmt)
        out = []
        for rng in ranges:
            sheet = rng.sheet or self.default_sheet(path, fmt)
            if render == "formula" and fmt in ("xlsx", "xlsm"):
                cells = self.window(path, sheet, rng, formulas=True)
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
            unvalued = list(uncomputed.get(sheet, []))
            volatile: list[str] = []
            if fmt in ("xlsx", "xlsm") and render != "formula":
                valueless, volatile = self.formula_cells(path, sheet, rng)
                unvalued += [c for c in valueless if c not in unvalued]
            flagged = [
                f"{quote_sheet(sheet)}!{cell}"
                for cell in unvalued
                if within_range(cell, rng) and blank(value_at(values, cell, r0, c0))
            ]
            if values:
                width = max(len(r) for r in values)
                shown = A1Range(sheet, r0, c0, r0 + len(values) - 1, c0 + max(width, 1) - 1).a1()
            else:
                shown = rng.a1(default_sheet=sheet)
            out.append(
                Grid(
                    range=shown,
                    values=values,
                    uncomputed=flagged,
                    errors=errors,
                    volatile=[f"{quote_sheet(sheet)}!{cell}" for cell in volatile if cell not in unvalued],
                )
            )
        return out

    def formula_cells(self, path: Path, sheet: str, rng: A1Range) -> tuple[list[str], list[str]]:
        """The formula cells of a range of an xlsx sheet (A1, in order) that the file stores without
        a value (saved by a program that did not compute them), and the volatile ones: calling
        `TODAY`, `RAND`... or computed from such a cell, on any sheet (their stored value is that of
        the last save). Each sheet is scanned once per version of the file."""
        key = (*stat_key(path), sheet)
        with self._lock:
            whole = key in self._formula_scans and key[:4] in self._volatiles
        if not whole and (near := self._near(path, sheet, rng)) is not None:
            return near
        valueless, _calls = self._scan(path, sheet)
        return _within(valueless, rng), _within(self._volatile(path).get(sheet, []), rng)

    def _near(self, path: Path, sheet: str, rng: A1Range) -> tuple[list[str], list[str]] | None:
        """`formula_cells` of a bounded range near the top, read from the rows it and what it reads
        (through any chain, across sheets) reach, not from every formula of the workbook: a first
        read of a big workbook costs what the range depends on. None when that reach is not
        bounded (a whole column, an unknown name) or goes past `NEAR_ROWS`."""
        if rng.end_row is None or rng.end_row > NEAR_ROWS:
            return None
        where, look = self.package(path)
        seen: dict[str, tuple[int, dict[int, dict[int, str]], set[tuple[int, int]], set[tuple[int, int]]]] = {}

        try:
            with zipfile.ZipFile(path) as zf:
                reader = InputReader(package_names(zf))

                def rows_of(title: str, upto: int) -> dict[int, dict[int, str]] | None:
                    """The formulas of a sheet's rows 1..upto by row and column (read again when more
                    rows are needed than read so far); None past the bound."""
                    if upto > NEAR_ROWS:
                        return None
                    known = seen.get(title)
                    if known is not None and known[0] >= upto:
                        return known[1]
                    upto = max(upto, 2 * known[0] if known is not None else upto)
                    part = where.sheets[title]
                    cells = window(zf, part, 1, 1, upto, MAX_COLUMNS, shared_strings=None, look=look, formulas=True)
                    by_row: dict[int, dict[int, str]] = {}
                    for (r, c), v in cells.items():
                        if isinstance(v, str) and v[:1] == "=":
                            by_row.setdefault(r, {})[c] = v
                    scan = scan_formulas(zf, part, upto)
                    seen[title] = (upto, by_row, scan.valueless, scan.volatile)
                    return by_row

                r0, c0, r1 = rng.start_row or 1, rng.start_col or 1, rng.end_row
                c1 = rng.end_col if rng.end_col is not None else MAX_COLUMNS
                top = rows_of(sheet, r1)
                if top is None:
                    return None
                start = [(sheet, r, c) for r, row in top.items() if r0 <= r <= r1 for c in row if c0 <= c <= c1]
                reads: dict[tuple[str, int, int], list[tuple[str, int, int]]] = {}
                todo = list(start)
                while todo:
                    cell = todo.pop()
                    if cell in reads:
                        continue
                    title, r, c = cell
                    areas = reader.areas(seen[title][1][r][c], title)
                    if areas is None:
                        if (r, c) in seen[title][3]:
                            reads[cell] = []  # volatile itself (OFFSET, INDIRECT...): what it reads does not matter
                            continue
                        return None
                    found: list[tuple[str, int, int]] = []
                    for area in areas:
                        if area.sheet not in where.sheets:
                            continue
                        by_row = rows_of(area.sheet, area.row1)
                        if by_row is None:
                            return None
                        for row in range(area.row0, area.row1 + 1):
                            for col in by_row.get(row, ()):
                                if area.col0 <= col <= area.col1:
                                    found.append((area.sheet, row, col))
                    reads[cell] = found
                    todo.extend(found)
        except (OSError, KeyError, ValueError, zipfile.BadZipFile, ElementTree.ParseError) as exc:
            log.info("formulas near %s of %s not read (%s): the sheet is scanned whole", rng.a1(), path.name, exc)
            return None
        volatile: dict[tuple[str, int, int], bool] = {}

        def is_volatile(cell: tuple[str, int, int]) -> bool:
            if cell not in volatile:
                volatile[cell] = False  # a cycle reads as not volatile through itself
                title, r, c = cell
                volatile[cell] = (r, c) in seen[title][3] or any(is_volatile(x) for x in reads.get(cell, ()))
            return volatile[cell]

        valueless = sorted(k for k in seen[sheet][2] if r0 <= k[0] <= r1 and c0 <= k[1] <= c1)
        flagged = sorted((r, c) for title, r, c in start if is_volatile((title, r, c)))
        return [cell_name(r, c) for r, c in valueless], [cell_name(r, c) for r, c in flagged]

    def _scan(self, path: Path, sheet: str) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        """(formulas stored without a value, formulas calling a volatile function) of a sheet, sorted."""
        key = (*stat_key(path), sheet)
        with self._lock:
            found = self._formula_scans.get(key)
        if found is None:
            part = self.part(path, sheet)
            try:
                with zipfile.ZipFile(path) as zf:
                    scan = scan_formulas(zf, part)
            except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
                raise ParseError(f"Sheet {sheet!r} of {path.name} cannot be read: {exc}.", {"sheet": sheet}) from exc
            found = (sorted(scan.valueless), sorted(scan.volatile))
            with self._lock:
                _remember_in(self._formula_scans, key, found, 64)
        return found

    def _volatile(self, path: Path) -> dict[str, list[tuple[int, int]]]:
        """By sheet, the formulas calling a volatile function and those computed from one (through
        any chain, across sheets), sorted; read once per version of the file. Only a workbook
        that calls one has its formulas read."""
        key = stat_key(path)
        with self._lock:
            if key in self._volatiles:
                return self._volatiles[key]
        where, look = self.package(path)
        calls = {(title, r, c) for title in where.sheets for r, c in self._scan(path, title)[1]}
        found: dict[str, list[tuple[int, int]]] = {}
        if calls:
            try:
                with zipfile.ZipFile(path) as zf:
                    names = package_names(zf)
                    formulas: dict[tuple[str, int, int], str] = {}
                    for title, part in where.sheets.items():
                        cells = window(
                            zf, part, 1, 1, MAX_ROWS, MAX_COLUMNS, shared_strings=None, look=look, formulas=True
                        )
                        formulas.update(
                            {(title, r, c): v for (r, c), v in cells.items() if isinstance(v, str) and v[:1] == "="}
                        )
                reached = depends_on(formulas, names).stale(calls) | calls
            except (OSError, KeyError, ValueError, zipfile.BadZipFile, ElementTree.ParseError) as exc:
                log.info("formulas reading volatile cells of %s not found (%s)", path.name, exc)
                reached = calls
            for title, r, c in reached:
                found.setdefault(title, []).append((r, c))
            for cells in found.values():
                cells.sort()
        with self._lock:
            _remember_in(self._volatiles, key, found, 16)
        return found

    def _uncomputed(self, path: Path, fmt: str) -> dict[str, list[str]]:
        """The formulas the last save here left without a value, by sheet (read from the file)."""
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
