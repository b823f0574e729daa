"""A workbook being changed: the cell and sheet operations the writing tools need, over an
openpyxl workbook (`Book`) or over an .xlsx package patched in place (`PatchedBook`), and the
computation of every formula's value before the save."""

from __future__ import annotations

import datetime as dt
import logging
import math
import re
import zipfile
from collections.abc import Callable, Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deskmcp.core.errors import BadRequest, Conflict, ParseError
from deskmcp.sheets.a1 import (
    GRID_COLUMNS,
    GRID_ROWS,
    MAX_COLUMNS,
    MAX_ROWS,
    A1Range,
    cell_name,
    column_letters,
    quote_sheet,
)
from deskmcp.sheets.backends.cell_values import EPOCH, blank, evaluator_value, user_entered
from deskmcp.sheets.backends.workbook_files import no_sheet
from deskmcp.sheets.formulas.budget import CellBudget
from deskmcp.sheets.formulas.dependencies import Key, calls_volatile, depends_on
from deskmcp.sheets.formulas.engine import Uncomputable, WorkbookCalculator, workbook_names
from deskmcp.sheets.formulas.prefixes import excel_prefixes
from deskmcp.sheets.models import InputMode, Uncomputed, UpdatedRange
from deskmcp.sheets.xlsx.cellxml import (
    SURROGATE,
    UNSTORABLE,
    date_cell,
    formula_results,
    from_xstring,
    number_text,
    plain,
    string_count,
    strings_unreadable,
    unreadable,
    xstring,
)
from deskmcp.sheets.xlsx.parts import MAX_CELLS_PART_BYTES, read_part
from deskmcp.sheets.xlsx.sheetdata import Styles, window
from deskmcp.sheets.xlsx.structure import RowShift

if TYPE_CHECKING:
    from openpyxl import Workbook
    from openpyxl.worksheet.worksheet import Worksheet

    from deskmcp.sheets.backends.csv_files import CsvText
    from deskmcp.sheets.backends.sheet_reader import SheetReader

log = logging.getLogger("deskmcp.sheets")


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
    check_grid(r0, c0, height, width)
    check_storable(rows, fmt)
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
            formula = mode == "USER_ENTERED" and typed_formula(value)
            if formula and fmt != "csv":
                stored = excel_prefixes(stored)  # what Excel stores; a .csv keeps the text as typed
            literal = isinstance(stored, str) and stored != "" and not formula
            store(r0 + i, c0 + j, stored, literal)
    end_row = r0 + max(height, 1) - 1
    end_col = c0 + max(width, 1) - 1
    a1 = A1Range(title, r0, c0, end_row, end_col).a1()
    cells = sum(len(r) for r in rows)
    return UpdatedRange(range=a1, rows=height, columns=width, cells=cells)


def typed_formula(value: Any) -> bool:
    """Whether `value`, typed into a cell, is a formula: text starting with `=`, but not `=` alone
    (openpyxl and the apps keep that as text) nor text typed after a `'` (`'=A1*2` is the text
    `=A1*2`)."""
    return isinstance(value, str) and value.startswith("=") and value != "="


def check_grid(r0: int, c0: int, height: int, width: int) -> None:
    """Refuse a block from (r0, c0) that would reach past the last row or column a sheet has
    (Excel's grid, 1,048,576 rows by 16,384 columns, A1:XFD1048576), before anything is stored."""
    if height and r0 + height - 1 > GRID_ROWS:
        raise BadRequest(
            f"{height} rows from row {r0} would pass row {GRID_ROWS:,}, the last a sheet can have "
            "(XFD1048576 is the last cell). Send fewer rows or start higher.",
            {"first_row": r0, "rows": height, "limit": GRID_ROWS},
        )
    if width and c0 + width - 1 > GRID_COLUMNS:
        raise BadRequest(
            f"{width} columns from column {column_letters(c0)} would pass column XFD ({GRID_COLUMNS:,} columns), "
            "the last a sheet can have. Send fewer values or start further left.",
            {"first_column": column_letters(c0), "columns": width, "limit": GRID_COLUMNS},
        )


def check_storable(rows: list[list[Any]], fmt: str) -> None:
    """Refuse text the file cannot give back as it was sent: a lone surrogate (no character at
    all) anywhere, and in an .xlsx U+FFFE and U+FFFF too (Excel's escape of them is read back as
    the escape). Other control characters are stored escaped (`cellxml.xstring`)."""
    unstorable = SURROGATE if fmt == "csv" else UNSTORABLE
    for row in rows:
        for value in row:
            if isinstance(value, str) and (m := unstorable.search(value)):
                code = f"U+{ord(m.group(0)):04X}"
                raise BadRequest(
                    f"The text {value[:40]!r} holds {code}, which a {'.csv' if fmt == 'csv' else 'workbook'} "
                    "cannot store and give back; remove it or replace it (e.g. with U+FFFD).",
                    {"character": code},
                )


def check_title(title: str, existing: list[str]) -> str:
    """A sheet title xlsx accepts and no other sheet of the workbook has (case-insensitively)."""
    if re.search("[\x00-\x1f\x7f\ud800-\udfff\ufffe\uffff]", title):
        raise BadRequest(
            f"Sheet title {title!r} holds a control character, which a sheet title cannot; remove it.",
            {"title": title},
        )
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


def refuse_unreadable(
    path: Path,
    title: str,
    part: str,
    data: bytes | bytearray,
    strings: Callable[[], int],
    rows: Collection[int] | None = None,
    disorder: int | None = None,
) -> None:
    """Refuse, before anything is written, a change to a sheet the reader refuses (`cellxml.unreadable`):
    the write would answer ok and leave a file whose sheet still cannot be read."""
    problem = unreadable(data, strings, rows, disorder)
    if problem is not None:
        raise ParseError(
            f"Sheet {title!r} of {path.name} cannot be changed: its part {part} {problem}, so the sheet "
            "cannot be read, nor read back after a write. Nothing was written. Open and save the file in "
            "Excel or LibreOffice to repair it, or copy the values you need into another sheet.",
            {"file": path.name, "sheet": title, "part": part},
        )


def refuse_unreadable_strings(path: Path, zf: zipfile.ZipFile, part: str | None, checked: set[str]) -> None:
    """Refuse, before anything is written, a change to a workbook whose shared strings the reader
    refuses (`cellxml.strings_unreadable`: it then reads none of its sheets). `checked` holds the
    parts already found readable (a part's name is never a sheet's title: those hold no `/`)."""
    if not part or part in checked or part not in zf.namelist():
        return
    problem = strings_unreadable(read_part(zf, part, MAX_CELLS_PART_BYTES))
    if problem is not None:
        raise ParseError(
            f"{path.name} cannot be changed: its shared strings part {part} {problem}, so the workbook "
            "cannot be read, nor read back after a write. Nothing was written. Open and save the file in "
            "Excel or LibreOffice to repair it, or copy the values you need into another workbook.",
            {"file": path.name, "part": part},
        )
    checked.add(part)


class PatchedBook:
    """The cell operations of `Book` over a package patched in place (`xlsx/patch.py`)."""

    def __init__(self, package: Any, checked: set[str] | None = None) -> None:
        self.package = package
        self.report: list[str] = Uncomputed()
        self.checked: set[str] = checked if checked is not None else set()  # sheets the reader can read

    def sheet(self, name: str | None) -> Any:
        try:
            return self.package.sheet(name)
        except KeyError:
            raise no_sheet(self.package.path, name or "", list(self.package.where.sheets)) from None

    def readable(self, name: str | None) -> Any:
        """The sheet, refused when the reader cannot read it (`refuse_unreadable`)."""
        sheet = self.sheet(name)
        if sheet.title not in self.checked:
            package = self.package

            def strings() -> int:
                part = package.where.shared_strings
                if not part or part not in package.zf.namelist():
                    return 0
                return string_count(read_part(package.zf, part, MAX_CELLS_PART_BYTES))

            refuse_unreadable_strings(package.path, package.zf, package.where.shared_strings, self.checked)
            refuse_unreadable(package.path, sheet.title, sheet.part, sheet.data, strings, sheet.rows, sheet.disorder)
            self.checked.add(sheet.title)
        return sheet

    def put(self, rng: A1Range, rows: list[list[Any]], mode: InputMode) -> UpdatedRange:
        title = self.readable(rng.sheet).title
        return put_block(
            title, rng, rows, mode, "xlsx", lambda r, c, v, lit: self.package.write_cell(title, r, c, v, lit)
        )

    def clear(self, rng: A1Range) -> str:
        self.readable(rng.sheet)
        return self.package.clear(rng)

    def last_row(self, ws: Any, c0: int, c1: int | None) -> int:
        return self.package.last_row(ws, c0, c1)


class Book:
    """An openpyxl workbook being edited, with the operations the tools need."""

    def __init__(self, wb: Workbook, path: Path, fmt: str, reader: SheetReader) -> None:
        self.wb = wb
        self.path = path
        self.fmt = fmt
        self.reader = reader  # the file's package map, for the results it had cached
        self.literal: set[tuple[str, int, int]] = set()
        self.touched: set[tuple[str, int, int]] = set()
        self.moved = False
        self.escape_csv = True
        self.report: list[str] = Uncomputed()  # filled with the formulas left uncomputed when saved
        self.now: Callable[[], dt.datetime] = dt.datetime.now  # the local time TODAY() and NOW() answer
        self.csv: CsvText | None = None  # a .csv file as read, so its save keeps what was not written

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
            raise no_sheet(self.path, name, self.wb.sheetnames)
        ws: Any = self.wb[name]
        if not hasattr(ws, "insert_rows"):
            raise BadRequest(f"{name!r} is a chart sheet, not a sheet of cells.", {"sheet": name})
        return ws

    def is_formula(self, sheet: str, row: int, column: int) -> bool:
        return (sheet, row, column) not in self.literal

    def put(self, rng: A1Range, rows: list[list[Any]], mode: InputMode) -> UpdatedRange:
        from openpyxl.styles.numbers import is_date_format

        ws = self.sheet(rng.sheet)

        def store(r: int, c: int, stored: Any, literal: bool) -> None:
            cell: Any = ws.cell(row=r, column=c)
            if self.fmt == "xlsx" and isinstance(stored, dt.date):
                # the serial and format a patch stores (`cellxml.date_cell`), not openpyxl's own
                stored, fmt = date_cell(stored)
                if not is_date_format(cell.number_format):
                    cell.number_format = fmt
            # text is held as the file stores it (openpyxl refuses control characters, and writes
            # what it holds as it is): escaped here, read back by `from_xstring`
            cell.value = None if stored == "" else xstring(stored) if isinstance(stored, str) else stored
            key = (ws.title, r, c)
            self.touched.add(key)
            if literal:
                cell.data_type = "s"  # text that merely starts with '=' stays text
                self.literal.add(key)
            else:
                self.literal.discard(key)

        return put_block(ws.title, rng, rows, mode, self.fmt, store)

    def hold_number_texts(self) -> None:
        """Every number of the workbook held as the text a patch stores for it (`cellxml.number_text`),
        so that openpyxl writes that text: its own `%.16g` drops the 17th digit (0.1+0.2 became 0.3).
        Done last before a save: the cells then hold text, marked as numbers."""
        for ws in self.wb.worksheets:
            cells: dict[tuple[int, int], Any] = getattr(ws, "_cells", {})
            for cell in cells.values():
                value = cell.value
                if cell.data_type == "n" and isinstance(value, int | float) and math.isfinite(value):
                    cell.value = number_text(value)
                    cell.data_type = "n"

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
            if r > last and c >= c0 and (c1 is None or c <= c1) and not blank(cell.value):
                last = r
        return last

    def rewrite_formulas(self, fn: Callable[[str, str], str]) -> None:
        self.moved = True
        for ws in self.wb.worksheets:
            cells: dict[tuple[int, int], Any] = ws._cells  # type: ignore[attr-defined]
            for (r, c), cell in cells.items():
                if cell.data_type == "f" and isinstance(cell.value, str) and (ws.title, r, c) not in self.literal:
                    cell.value = fn(cell.value, ws.title)

    def move_references(self, title: str, at: int, delta: int) -> None:
        """After openpyxl moved rows `at`.. of sheet `title` by `delta` (it moves cells, notes and
        hyperlinks only): defined names, the print area, the autofilter, tables, conditional
        formats, data validations and merged cells moved along (`xlsx.structure.RowShift`), or
        `BadRequest` naming one a deletion would take whole."""
        from openpyxl.formatting.formatting import ConditionalFormattingList
        from openpyxl.worksheet.cell_range import MultiCellRange

        shift = RowShift(title, at, delta)
        ws: Any = self.sheet(title)

        def kept(cells: str, what: str) -> str:
            moved = shift.areas(cells)
            if not moved:
                raise BadRequest(
                    f"Deleting these rows would remove all the cells of {what} of {title!r} ({cells}). Nothing was "
                    "written. Remove it first, or delete fewer rows.",
                    {"sheet": title, "element": what, "cells": cells},
                )
            return moved

        for definition in self.wb.defined_names.values():
            if definition.value:
                definition.value = shift.formula(definition.value, "")
        for sheet in self.wb.worksheets:
            for definition in getattr(sheet, "defined_names", {}).values():
                if definition.value:
                    definition.value = shift.formula(definition.value, sheet.title)
        if ws.print_area:
            moved = shift.formula(ws.print_area, title)
            ws.print_area = [part.rpartition("!")[2] for part in moved.split(",") if "#REF!" not in part] or None
        if ws.auto_filter.ref:
            ws.auto_filter.ref = kept(ws.auto_filter.ref, "the autofilter")
        for table in ws.tables.values():
            table.ref = kept(table.ref, f"the table {table.displayName!r}")
            if table.autoFilter is not None and table.autoFilter.ref:
                table.autoFilter.ref = shift.areas(table.autoFilter.ref) or table.ref
        formats = ConditionalFormattingList()
        for cf in ws.conditional_formatting:
            cells = kept(str(cf.sqref), "a conditional format")
            for rule in cf.rules:
                rule.formula = [shift.formula(f, title) for f in rule.formula]
                formats.add(cells, rule)
        ws.conditional_formatting = formats
        for validation in ws.data_validations.dataValidation:
            validation.sqref = MultiCellRange(kept(str(validation.sqref), "a data validation"))
            for attr in ("formula1", "formula2"):
                if getattr(validation, attr):
                    setattr(validation, attr, shift.formula(getattr(validation, attr), title))
        merged = [str(r) for r in ws.merged_cells.ranges]
        ws.merged_cells = MultiCellRange()
        for cells in merged:
            moved = shift.areas(cells)
            if ":" in moved and moved.split(":")[0] != moved.split(":")[1]:
                ws.merge_cells(moved)

    def compute(self, budget: CellBudget | None = None) -> tuple[dict[str, dict[str, Any]], dict[str, list[str]]]:
        """The value to store for every formula (sheet -> cell -> value) and the cells left without one.

        Formulas the change may affect (written ones, those reading a changed cell, directly or
        through other formulas) and those the file holds no value for are computed; every other
        formula keeps the value the file had cached (dates and errors included). One that cannot
        be computed is stored without a value and listed, never left showing a stale value; so is
        every one not computed when the `budget` of cells read is spent.
        """
        worksheets = {ws.title: ws for ws in self.wb.worksheets if hasattr(ws, "_cells")}
        names = workbook_names(self.wb)
        formulas: dict[Key, str] = {}
        for title, ws in worksheets.items():
            for (r, c), cell in ws._cells.items():  # type: ignore[attr-defined]
                if cell.data_type == "f" and isinstance(cell.value, str) and (title, r, c) not in self.literal:
                    formulas[(title, r, c)] = from_xstring(cell.value)
        previous = self._previous_results(formulas)
        if previous is None:  # rows moved, sheets renamed or removed: nothing cached can be trusted
            needed = set(formulas)
            previous = {}
        else:
            needed = {k for k in formulas if k in self.touched or k not in previous}
            # volatile formulas (TODAY, RAND...) are stale at every change, a sheet added included
            changed = self.touched | {k for k, text in formulas.items() if calls_volatile(text.encode("utf-8"))}
            if changed:
                needed |= depends_on(formulas, names).stale(changed)
        kept = {k: v for k, v in previous.items() if k in formulas and k not in needed}

        def raw(sheet: str, row: int, column: int) -> Any:
            ws = worksheets.get(sheet)
            if ws is None:
                raise Uncomputable(f"no sheet {sheet}")
            key = (sheet, row, column)
            if key in kept:
                return kept[key]
            cell = ws._cells.get((row, column))  # type: ignore[attr-defined]
            if cell is None:
                return None
            return evaluator_value(from_xstring(cell.value) if isinstance(cell.value, str) else cell.value)

        def extent(sheet: str) -> tuple[int, int]:
            ws = worksheets.get(sheet)
            return (ws.max_row or 0, ws.max_column or 0) if ws is not None else (0, 0)

        def is_text(sheet: str, row: int, column: int) -> bool:
            key = (sheet, row, column)
            if key in self.literal or key in kept:
                return True
            cell = worksheets[sheet]._cells.get((row, column))  # type: ignore[attr-defined]
            return cell is not None and cell.data_type != "f"

        def formula_text(sheet: str, row: int, column: int) -> str | None:
            ws = worksheets.get(sheet)
            cell = ws._cells.get((row, column)) if ws is not None else None  # type: ignore[attr-defined]
            if cell is None or cell.data_type != "f" or not isinstance(cell.value, str):
                return None
            return None if (sheet, row, column) in self.literal else from_xstring(cell.value)

        def hidden_rows(sheet: str) -> frozenset[int]:
            ws = worksheets.get(sheet)
            if ws is None:
                raise Uncomputable(f"no sheet {sheet}")
            return frozenset(r for r, dim in ws.row_dimensions.items() if dim.hidden)

        calc = WorkbookCalculator(
            (budget or CellBudget()).counted(raw),
            extent,
            is_text,
            names=names,
            now=self.now,
            formula_text=formula_text,
            hidden_rows=hidden_rows,
        )
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
        # a formula written here that computes only as Excel 365 computes arrays: does it spill?
        failed = {k for k in formulas if k in self.touched and k in calc.failed} if self.fmt == "xlsx" else set()
        probe = WorkbookCalculator(raw, extent, is_text, names=names, now=self.now, spills=failed)
        for key in sorted(failed):
            try:
                probe.value(*key)
            except (Uncomputable, RecursionError):
                continue
        spilling = sorted(k for k, found in probe.arrays.items() if found.height * found.width > 1)
        if spilling:
            cells = [f"{quote_sheet(t)}!{cell_name(r, c)}" for t, r, c in spilling]
            raise BadRequest(
                f"{', '.join(cells)} give several values (a dynamic array formula, which spills over the cells "
                "below and to the right). This change goes through a whole-workbook save (SHEETS_FAST_WRITES=0, "
                "or a sheet part not in the plain form), which cannot store a formula in the form Excel 365 needs "
                "to spill it (Excel would show one value). Nothing was written. Write it with fast writes on, or "
                "wrap it in a function giving one value (SUM, INDEX...).",
                {"cells": cells},
            )
        return values, uncomputed

    def _previous_results(self, formulas: dict[Key, str]) -> dict[Key, Any] | None:
        """The results the file had cached for its formulas, by cell; None when the cells moved."""
        if self.moved:
            return None
        if self.fmt != "xlsx" or not formulas:
            return {}
        found: dict[Key, Any] = {}
        try:
            where, _look = self.reader.package(self.path)
            with zipfile.ZipFile(self.path) as zf:
                for sheet in {k[0] for k in formulas}:
                    part = where.sheets.get(sheet)
                    if part is None:
                        continue
                    data = read_part(zf, part, MAX_CELLS_PART_BYTES)
                    if plain(data):
                        cells = formula_results(data)
                    else:
                        plain_numbers = Styles(frozenset(), frozenset(), EPOCH)
                        cells = window(zf, part, 1, 1, MAX_ROWS, MAX_COLUMNS, shared_strings=None, look=plain_numbers)
                    for (r, c), value in cells.items():
                        if (sheet, r, c) in formulas and not blank(value):
                            found[(sheet, r, c)] = value
        except (OSError, KeyError, ValueError, zipfile.BadZipFile, ParseError) as exc:
            log.info("cached results of %s not read (%s): every formula is computed", self.path.name, exc)
            return {}
        return found
