"""Saving a changed workbook: an .xlsx patched in place when only cells change (`xlsx/patch.py`),
else loaded and saved whole through openpyxl with every formula's computed value stored as its
cached value; a .csv written back as text. Every save is atomic.

Saving never silently loses content: the caller refuses, before any change, a workbook holding
what openpyxl cannot carry through a save (`workbook_files.writability`).
"""

from __future__ import annotations

import datetime as dt
import io
import json
import logging
import zipfile
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from xml.etree import ElementTree

from deskmcp.core.dates import resolve_zone
from deskmcp.core.errors import BadRequest, Conflict, IOFailure, ParseError
from deskmcp.sheets.a1 import quote_sheet
from deskmcp.sheets.backends.book import (
    Book,
    PatchedBook,
    check_title,
    refuse_unreadable,
    refuse_unreadable_strings,
)
from deskmcp.sheets.backends.csv_files import csv_workbook, read_csv, save_csv
from deskmcp.sheets.backends.file_guard import NO_FILE, FileChanged, write_atomically, write_bytes_atomically
from deskmcp.sheets.backends.sheet_reader import SheetReader
from deskmcp.sheets.backends.workbook_files import kept_content, no_sheet, stat_key
from deskmcp.sheets.formulas.budget import DEFAULT_CELLS, CellBudget
from deskmcp.sheets.formulas.values import DATE_SHIFT, DateSerial
from deskmcp.sheets.models import Uncomputed
from deskmcp.sheets.xlsx.cellxml import date_format, string_count
from deskmcp.sheets.xlsx.parts import (
    MAX_CELLS_PART_BYTES,
    UNCOMPUTED_PROPERTY,
    package_map,
    package_names,
    read_part,
    sheet_parts,
    write_cached_values,
)
from deskmcp.sheets.xlsx.patch_xml import copy_part, zip_entry

if TYPE_CHECKING:
    from openpyxl import Workbook

    from deskmcp.sheets.xlsx.patch_sheets import FormulaIndex
    from deskmcp.sheets.xlsx.structure import StructureEdit

log = logging.getLogger("deskmcp.sheets")

_T = TypeVar("_T")


def _shows_date(ws: Any, formula: Any, value: Any) -> bool:
    """Whether Excel would show a computed value as a date: a date function's result, or a date
    cell moved by some days (`=B4+30` takes the format of B4, as Excel gives it)."""
    if isinstance(value, DateSerial):
        return True
    if isinstance(value, bool) or not isinstance(value, float | int) or not isinstance(formula, str):
        return False
    m = DATE_SHIFT.match(formula)
    return m is not None and bool(getattr(ws[f"{m.group(1)}{m.group(2)}"], "is_date", False))


def _report(report: list[str], uncomputed: dict[str, list[str]], budget: CellBudget) -> None:
    """The cells left without a value into `report` (sheet named), and why, when the budget stopped it."""
    report.extend(f"{quote_sheet(sheet)}!{ref}" for sheet, refs in uncomputed.items() for ref in refs)
    if isinstance(report, Uncomputed):
        report.reason = budget.reason()


class WorkbookWriter:
    """Opens workbooks for a change and saves them; keeps the formula index of the last patches."""

    formula_index_count = 2
    """Workbooks whose formula index is kept (a few MB per 100,000 formulas)."""

    def __init__(self, reader: SheetReader, formula_budget: int = DEFAULT_CELLS) -> None:
        self.reader = reader
        self.formula_budget = formula_budget
        self.clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC)
        """The time now (aware); TODAY() and NOW() answer it in `zone`."""
        self.zone: dt.tzinfo = resolve_zone(None)
        """The server's time zone (DESKMCP_TIMEZONE, else the system's)."""
        """Cells the formulas of one change may read when computed (`budget.CellBudget`)."""
        # the formula index of the version each patch wrote, so the next write of it scans nothing
        self._formula_indexes: OrderedDict[str, tuple[tuple[Any, ...], FormulaIndex]] = OrderedDict()
        # the sheets found readable in the version each patch wrote (a patch writes only cells it
        # builds itself), so the next write of that version checks only the sheets not yet seen
        self._readable: OrderedDict[str, tuple[tuple[Any, ...], set[str]]] = OrderedDict()

    def close(self) -> None:
        self._formula_indexes.clear()
        self._readable.clear()

    def open(self, path: Path, fmt: str) -> Book:
        """The workbook as a `Book` to change (a .csv as a one-sheet workbook)."""
        text = read_csv(path) if fmt == "csv" else None
        wb = csv_workbook(path, text) if text is not None else self._openpyxl(path)
        book = Book(wb, path, fmt, self.reader)
        book.csv = text
        book.now = self.local_now
        return book

    def local_now(self) -> dt.datetime:
        """The date and time here (naive, in `zone`): what TODAY() and NOW() compute at a write."""
        return self.clock().astimezone(self.zone).replace(tzinfo=None)

    def _openpyxl(self, path: Path) -> Workbook:
        import openpyxl
        from openpyxl.utils.exceptions import InvalidFileException

        self.reader.verify(path)
        self._refuse_unreadable(path)
        try:
            wb = openpyxl.load_workbook(path, keep_links=True)
        except (
            OSError,
            KeyError,
            IndexError,
            TypeError,
            ValueError,
            AttributeError,
            zipfile.BadZipFile,
            ElementTree.ParseError,
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

    def _refuse_unreadable(self, path: Path) -> None:
        """openpyxl loads and saves every sheet: refuse the workbook when the reader refuses one of
        them (`book.refuse_unreadable`), before anything is written."""
        where, _look = self.reader.package(path)
        try:
            with zipfile.ZipFile(path) as zf:
                names = set(zf.namelist())
                count: list[int] = []

                def strings() -> int:
                    if not count:
                        part = where.shared_strings
                        found = part is not None and part in names
                        count.append(string_count(read_part(zf, part, MAX_CELLS_PART_BYTES)) if part and found else 0)
                    return count[0]

                refuse_unreadable_strings(path, zf, where.shared_strings, set())
                for title, part in where.sheets.items():
                    if part in names:
                        refuse_unreadable(path, title, part, read_part(zf, part, MAX_CELLS_PART_BYTES), strings)
        except (OSError, zipfile.BadZipFile) as exc:
            raise ParseError(f"{path.name} is not a readable xlsx package: {exc}.", {"file": path.name}) from exc

    def patch(
        self, path: Path, change: Callable[[Book], _T], expect: tuple[Any, ...] | None = None
    ) -> tuple[_T] | None:
        """`change` applied by patching the package; None when it needs openpyxl (nothing written).
        `expect`: the version of the file read (`file_guard.file_version`), the only one replaced."""
        from deskmcp.sheets.xlsx.patch import PackageBook
        from deskmcp.sheets.xlsx.patch_sheets import Fallback

        self.reader.verify(path)
        where, look = self.reader.package(path)
        # the formula index of this version of the file, if the last write here made it (taken:
        # a failed write leaves none behind)
        version = stat_key(path)
        cached = self._formula_indexes.pop(str(path), None)
        known = cached[1] if cached is not None and cached[0] == version else None
        seen = self._readable.pop(str(path), None)
        package = PackageBook(path, where, look, "xlsx")
        package.now = self.local_now
        try:
            try:
                book = PatchedBook(package, seen[1] if seen is not None and seen[0] == version else None)
                result = change(book)  # type: ignore[arg-type]  # the same operations as Book
                names = package_names(package.zf)
                budget = CellBudget(self.formula_budget)
                uncomputed = package.save(names, known, budget)
            except Fallback as exc:
                log.info("%s edited through openpyxl: %s", path.name, exc)
                return None
            except (OSError, zipfile.BadZipFile, ElementTree.ParseError) as exc:
                raise ParseError(f"{path.name} is not a readable xlsx package: {exc}.", {"file": path.name}) from exc
            try:
                written = write_atomically(path, package.write, expect)
            except zipfile.BadZipFile as exc:
                raise ParseError(f"{path.name} is not a readable xlsx package: {exc}.", {"file": path.name}) from exc
            except OSError as exc:
                raise IOFailure(f"{path.name} could not be saved: {exc}.", {"file": path.name}) from exc
        finally:
            package.close()
        self._readable[str(path)] = (stat_key(path, written), book.checked)
        while len(self._readable) > 4 * self.formula_index_count:
            self._readable.popitem(last=False)
        if package.formula_index is not None:
            self._formula_indexes[str(path)] = (stat_key(path, written), package.formula_index)
            while len(self._formula_indexes) > self.formula_index_count:
                self._formula_indexes.popitem(last=False)
        _report(book.report, uncomputed, budget)
        return (result,)

    def restructure(self, path: Path, edit: StructureEdit, expect: tuple[Any, ...] | None = None) -> tuple[None] | None:
        """`edit` made on the package in place (`xlsx/structure.py`), every part it does not touch
        copied unchanged, then the formulas computed again when rows moved; None when it needs
        openpyxl (nothing written). `expect`: the version of the file read."""
        from deskmcp.sheets.xlsx.patch import PackageBook
        from deskmcp.sheets.xlsx.patch_sheets import Fallback
        from deskmcp.sheets.xlsx.sheet_edit import delete_sheet, duplicate_sheet, rename_sheet
        from deskmcp.sheets.xlsx.structure import restructure

        self.reader.verify(path)
        self._refuse_unreadable(path)
        where, look = self.reader.package(path)
        staged = io.BytesIO()
        try:
            with zipfile.ZipFile(path) as zf:
                if edit.kind == "add_sheet":
                    edit.sheet = check_title(edit.sheet, [p.name for p in sheet_parts(zf)])
                elif edit.sheet not in where.sheets:
                    raise no_sheet(path, edit.sheet, list(where.sheets))
                if edit.kind == "rename_sheet":
                    edit.title = check_title(edit.title, [p.name for p in sheet_parts(zf) if p.name != edit.sheet])
                    parts = rename_sheet(zf, where, edit.sheet, edit.title)
                elif edit.kind == "duplicate_sheet":
                    edit.title = check_title(edit.title, [p.name for p in sheet_parts(zf)])
                    parts = duplicate_sheet(zf, where, edit.sheet, edit.title)
                elif edit.kind == "delete_sheet":
                    try:
                        parts = delete_sheet(zf, where, edit.sheet)
                    except BadRequest as exc:
                        if "used_by" in exc.details and not kept_content(path, sheets=True):
                            # a workbook openpyxl saves whole: the sheet goes, and what read it is
                            # left without a value (listed in `uncomputed`), as before
                            raise Fallback("formulas elsewhere read the sheet") from exc
                        raise
                else:
                    parts = restructure(zf, where, edit)
                with zipfile.ZipFile(staged, "w", zipfile.ZIP_DEFLATED) as out:
                    for info in zf.infolist():
                        if info.filename in parts:
                            body = parts.pop(info.filename)
                            if body is not None:
                                out.writestr(zip_entry(info, len(body)), body)
                            continue
                        copy_part(zf, info, out)
                    for name, body in parts.items():
                        if body is not None:
                            out.writestr(name, body)
            staged.seek(0)
            with zipfile.ZipFile(staged) as zf:
                where = package_map(zf)
            staged.seek(0)
        except Fallback as exc:
            log.info("%s restructured through openpyxl: %s", path.name, exc)
            return None
        except (OSError, KeyError, zipfile.BadZipFile, ElementTree.ParseError) as exc:
            raise ParseError(f"{path.name} is not a readable xlsx package: {exc}.", {"file": path.name}) from exc
        package = PackageBook(path, where, look, "xlsx", source=staged)
        package.now = self.local_now
        budget = CellBudget(self.formula_budget)
        try:
            try:
                added = edit.kind == "add_sheet"  # a new sheet's cell: volatile formulas and any reading it
                uncomputed = package.save(
                    package_names(package.zf),
                    None,
                    budget,
                    everything=not added,
                    changed=[(edit.sheet, 1, 1)] if added else (),
                )
            except Fallback as exc:
                log.info("%s restructured through openpyxl: %s", path.name, exc)
                return None
            try:
                written = write_atomically(path, package.write, expect)
            except OSError as exc:
                raise IOFailure(f"{path.name} could not be saved: {exc}.", {"file": path.name}) from exc
        finally:
            package.close()
        if package.formula_index is not None:
            self._formula_indexes[str(path)] = (stat_key(path, written), package.formula_index)
            while len(self._formula_indexes) > self.formula_index_count:
                self._formula_indexes.popitem(last=False)
        _report(edit.report, uncomputed, budget)
        return (None,)

    def save(self, path: Path, fmt: str, book: Book, expect: tuple[Any, ...] | None = None) -> None:
        """Compute the formulas, then write the workbook atomically (over the version `expect` only);
        the cells left without a value go to `book.report`, and into the file so the next read and
        Excel know of them."""
        budget = CellBudget(self.formula_budget)
        values, uncomputed = book.compute(budget)
        _report(book.report, uncomputed, budget)
        if fmt == "csv":
            save_csv(path, book, values, expect)
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
        book.hold_number_texts()
        buffer = io.BytesIO()
        try:
            book.wb.save(buffer)
        except (OSError, ValueError, TypeError) as exc:
            raise IOFailure(f"{path.name} could not be saved: {exc}.", {"file": path.name}) from exc
        write_bytes_atomically(path, write_cached_values(buffer.getvalue(), values), expect)

    def create(self, path: Path, fmt: str, sheets: list[str]) -> None:
        """A new empty workbook at `path` (an .xlsx with these sheets, or an empty .csv); `conflict`
        when a file appears there meanwhile (another program made it)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        if fmt == "csv":
            self._create(path, b"")
            return
        from openpyxl import Workbook

        wb = Workbook()
        first: Any = wb.active
        names = sheets or ["Sheet1"]
        first.title = check_title(names[0], [])
        for extra in names[1:]:
            wb.create_sheet(check_title(extra, wb.sheetnames))
        buffer = io.BytesIO()
        wb.save(buffer)
        self._create(path, buffer.getvalue())

    def _create(self, path: Path, data: bytes) -> None:
        """`data` as the new file at `path`, never over a file that appeared there meanwhile."""
        try:
            write_bytes_atomically(path, data, expect=NO_FILE)
        except FileChanged:
            raise Conflict(
                f"{path.name} was made by another program meanwhile; nothing was written. "
                "Use it (get_spreadsheet) or pick another title.",
                {"file": path.name},
            ) from None
