"""Local workbooks: .xlsx, .ods, .xls and .csv files in folders on this machine.

`LocalBackend` implements the backend contract by putting together the parts beside it:
`workbook_files` (folders, ids, formats, what can be saved), `sheet_reader` (python-calamine and
the sheet XML: fast reads, one sheet at a time, cached while the file is unchanged), `describe`
(get_spreadsheet), `book` (the changes), `xlsx_save` (patching an .xlsx in place or saving it
through openpyxl with computed formula values) and `csv_files` (a .csv as a one-sheet workbook).

Saving never silently loses content: a workbook holding what openpyxl cannot carry through a
save (charts, images, pivot tables, macros, external links) is only changed by patching its
package in place, every such part copied unchanged; a change the patch cannot make is refused.
Formulas are computed and stored as the cell's cached value so any reader sees numbers, not blanks.
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from deskmcp.core.errors import BadRequest, Conflict, DeskError, PermissionDenied
from deskmcp.sheets.a1 import GRID_COLUMNS, GRID_ROWS, A1Range
from deskmcp.sheets.backends.book import Book, check_title
from deskmcp.sheets.backends.describe import describe
from deskmcp.sheets.backends.file_guard import FileChanged, FileLocks, file_version
from deskmcp.sheets.backends.sheet_reader import SheetReader
from deskmcp.sheets.backends.workbook_files import WRITABLE, WorkbookFolders, kept_content, writability
from deskmcp.sheets.backends.workbook_format import PackageChanges
from deskmcp.sheets.backends.xlsx_save import WorkbookWriter
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
    Uncomputed,
    UpdatedRange,
)
from deskmcp.sheets.xlsx.sheet_edit import renamed
from deskmcp.sheets.xlsx.structure import RowShift, StructureEdit

_T = TypeVar("_T")


class LocalBackend:
    """Workbook files under one main folder and any number of extra folders."""

    name = "local"
    scan_rows = 10_000
    grid: tuple[int, int] | None = (GRID_ROWS, GRID_COLUMNS)
    """An .xlsx sheet's last row and column (a .csv keeps them too, so it opens in Excel whole)."""
    fast_writes = True
    """Cell writes of an .xlsx patch its package in place when they can (False: always openpyxl)."""

    save_attempts = 3
    """Times a change is read and applied again when another program saved the file meanwhile."""

    def __init__(
        self,
        root: Path,
        folders: list[Path] | None = None,
        *,
        cache_sheets: int = 4,
        create_root: bool = True,
        lock_folder: Path | None = None,
    ) -> None:
        self.files = WorkbookFolders(root, folders, create_root=create_root)
        self.reader = SheetReader(cache_sheets=cache_sheets)
        self.writer = WorkbookWriter(self.reader)
        # every deskmcp process given the same folder takes the same locks (the server's is in
        # the workspace); made at the first save
        self.locks = FileLocks(lock_folder or self.files.roots[""] / ".deskmcp" / "locks")
        self.package_changes = PackageChanges(self.files, self.locks, self.reader)

    @property
    def roots(self) -> dict[str, Path]:
        return self.files.roots

    def close(self) -> None:
        self.reader.close()
        self.writer.close()

    # -- finding and reading ------------------------------------------------------------------------

    def check_root(self) -> None:
        self.files.check_root()

    def locate(self, spreadsheet_id: str, *, must_exist: bool = True) -> tuple[Path, str]:
        return self.files.locate(spreadsheet_id, must_exist=must_exist)

    def list_spreadsheets(self, query: str | None, offset: int, limit: int) -> tuple[list[SpreadsheetRef], bool]:
        return self.files.list_spreadsheets(query, offset, limit)

    def read(self, spreadsheet_id: str, ranges: list[A1Range], render: Render) -> list[Grid]:
        path, fmt = self.locate(spreadsheet_id)
        return self.reader.read(path, fmt, ranges, render)

    def get_spreadsheet(self, spreadsheet_id: str) -> SpreadsheetInfo:
        path, fmt = self.locate(spreadsheet_id)
        return describe(self.reader, spreadsheet_id, path, fmt)

    def _sheet_info(self, spreadsheet_id: str, title: str) -> SheetInfo:
        info = self.get_spreadsheet(spreadsheet_id)
        return next(s for s in info.sheets if s.title == title)

    # -- changing ------------------------------------------------------------------------------------

    def edit(
        self,
        spreadsheet_id: str,
        change: Callable[[Book], _T],
        *,
        escape_csv: bool = True,
        cells_only: bool = False,
        structure: StructureEdit | None = None,
    ) -> _T:
        """Load the workbook, apply `change`, compute formulas and save atomically; one writer at a
        time, in this process and (through `locks`) in every other deskmcp process. A file another
        program saved between the read and the save is read again and the change applied to it; after
        `save_attempts` such reads, `conflict` (nothing written).

        `cells_only`: `change` only writes and clears cells, so an xlsx is patched in place
        (`xlsx/patch.py`) when it can be, instead of a whole openpyxl load and save. `structure`:
        the same change made on the package in place (`xlsx/structure.py`), tried first on an xlsx.
        A workbook holding parts openpyxl would drop (charts, pivot tables...) is only ever patched:
        a change the patch cannot make is refused (`bad_request`), never saved without them."""
        with self.files.write_lock:
            path, fmt = self.locate(spreadsheet_id)
            with self.locks.hold(path):
                for _attempt in range(self.save_attempts):
                    version = file_version(path)  # before anything is read
                    try:
                        writable, why = writability(path, fmt)
                        if not writable:
                            raise PermissionDenied(
                                f"{path.name} cannot be changed. {why}", {"spreadsheet_id": spreadsheet_id}
                            )
                        return self._save_change(path, fmt, version, change, escape_csv, cells_only, structure)
                    except FileChanged:
                        continue
                    except (DeskError, OSError, ValueError, zipfile.BadZipFile):
                        if file_version(path) == version:
                            raise
                        # the read failed because another program was writing the file: read it again
        raise Conflict(
            f"{path.name} was changed by another program while this change was being saved, "
            f"{self.save_attempts} times in a row. Nothing was written: read it again and retry when it is "
            "no longer being edited.",
            {"spreadsheet_id": spreadsheet_id, "attempts": self.save_attempts},
        )

    def _save_change(
        self,
        path: Path,
        fmt: str,
        version: tuple[Any, ...],
        change: Callable[[Book], _T],
        escape_csv: bool,
        cells_only: bool,
        structure: StructureEdit | None = None,
    ) -> _T:
        """`change` applied to the file and saved over `version` only (`FileChanged` otherwise)."""
        if fmt == "xlsx" and structure is not None:
            done = self.writer.restructure(path, structure, version)
            if done is not None:
                return done[0]  # type: ignore[return-value]  # a structure edit answers what `change` does
        if cells_only and fmt == "xlsx" and (self.fast_writes or kept_content(path, sheets=True)):
            done = self.writer.patch(path, change, version)
            if done is not None:
                return done[0]
        if fmt == "xlsx" and (kept := kept_content(path, sheets=True)):
            raise BadRequest(
                f"{path.name} holds {', '.join(kept)}; this change cannot be made by patching the file in place "
                "(the log says why), and saving the whole workbook would delete them. Nothing was written. "
                "Make this change in Excel or LibreOffice (or, for a cell write, write around a shared or array "
                "formula's first cell).",
                {"file": path.name, "kept": kept},
            )
        book = self.writer.open(path, fmt)
        book.escape_csv = escape_csv
        result = change(book)
        self.writer.save(path, fmt, book, version)
        return result

    def edit_flagged(
        self,
        spreadsheet_id: str,
        change: Callable[[Book], _T],
        *,
        escape_csv: bool = True,
        cells_only: bool = True,
        structure: StructureEdit | None = None,
    ) -> tuple[_T, list[str]]:
        """`edit`, and the formulas the save left without a value (A1 cells, sheet named; with the
        reason when the formula budget stopped the computation)."""
        flagged = Uncomputed()
        if structure is not None:
            structure.report = flagged

        def run(book: Book) -> _T:
            result = change(book)
            flagged.clear()  # a patch given up is done again through openpyxl
            flagged.reason = None
            book.report = flagged
            return result

        done = self.edit(spreadsheet_id, run, escape_csv=escape_csv, cells_only=cells_only, structure=structure)
        return done, flagged

    def create_spreadsheet(self, title: str, sheets: list[str]) -> SpreadsheetInfo:
        name = title if Path(title).suffix.lower() in (".xlsx", ".csv") else f"{title}.xlsx"
        path, fmt = self.locate(name, must_exist=False)
        if fmt not in WRITABLE:
            raise BadRequest("New spreadsheets are .xlsx (or .csv for one sheet).", {"title": title})
        with self.files.write_lock, self.locks.hold(path):
            if path.exists():
                raise Conflict(
                    f"{name!r} already exists. Pick another title, or use it (get_spreadsheet).",
                    {"spreadsheet_id": name},
                )
            if fmt == "csv" and len(sheets) > 1:
                raise BadRequest("A .csv spreadsheet holds one sheet; create an .xlsx for several.", {})
            self.writer.create(path, fmt, sheets)
        return self.get_spreadsheet(self.files.file_id("", self.roots[""], path))

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
            book.wb.create_sheet(check_title(title, book.wb.sheetnames))

        structure = StructureEdit("add_sheet", title)
        _, flagged = self.edit_flagged(spreadsheet_id, change, cells_only=False, structure=structure)
        return self._sheet_info(spreadsheet_id, structure.sheet), flagged

    def rename_sheet(self, spreadsheet_id: str, sheet: str, title: str) -> tuple[SheetInfo, list[str]]:
        def change(book: Book) -> None:
            book.single_sheet_guard("rename the sheet of")
            ws = book.sheet(sheet)
            others = [n for n in book.wb.sheetnames if n != ws.title]
            old = ws.title
            ws.title = check_title(title, others)
            book.rewrite_formulas(lambda f, _s: renamed(f, old, ws.title))

        structure = StructureEdit("rename_sheet", sheet, title=title)
        _, flagged = self.edit_flagged(spreadsheet_id, change, cells_only=False, structure=structure)
        return self._sheet_info(spreadsheet_id, structure.title.strip() or title), flagged

    def delete_sheet(self, spreadsheet_id: str, sheet: str) -> list[str]:
        def change(book: Book) -> None:
            book.single_sheet_guard("delete the sheet of")
            ws = book.sheet(sheet)
            if len(book.wb.worksheets) == 1:
                raise BadRequest("A workbook keeps at least one sheet; add another first.", {"sheet": sheet})
            book.wb.remove(ws)
            book.moved = True  # formulas that read the sheet now give #REF!

        structure = StructureEdit("delete_sheet", sheet)
        return self.edit_flagged(spreadsheet_id, change, cells_only=False, structure=structure)[1]

    def duplicate_sheet(self, spreadsheet_id: str, sheet: str, title: str) -> tuple[SheetInfo, list[str]]:
        def change(book: Book) -> None:
            book.single_sheet_guard("duplicate the sheet of")
            ws = book.sheet(sheet)
            copy: Any = book.wb.copy_worksheet(ws)
            copy.title = check_title(title, book.wb.sheetnames[:-1])
            # the copy's formulas naming their own sheet name the copy, as in Excel
            book.rewrite_formulas(lambda f, s: renamed(f, ws.title, copy.title) if s == copy.title else f)

        structure = StructureEdit("duplicate_sheet", sheet, title=title)
        _, flagged = self.edit_flagged(spreadsheet_id, change, cells_only=False, structure=structure)
        return self._sheet_info(spreadsheet_id, structure.title.strip() or title), flagged

    def insert_rows(self, spreadsheet_id: str, sheet: str, at: int, count: int) -> list[str]:
        def change(book: Book) -> None:
            ws = book.sheet(sheet)
            ws.insert_rows(at, count)
            book.rewrite_formulas(RowShift(ws.title, at, count).cell_formula)
            book.move_references(ws.title, at, count)

        structure = StructureEdit("insert_rows", sheet, at, count)
        return self.edit_flagged(spreadsheet_id, change, cells_only=False, structure=structure)[1]

    def delete_rows(self, spreadsheet_id: str, sheet: str, at: int, count: int) -> list[str]:
        def change(book: Book) -> None:
            ws = book.sheet(sheet)
            ws.delete_rows(at, count)
            book.rewrite_formulas(RowShift(ws.title, at, -count).cell_formula)
            book.move_references(ws.title, at, -count)

        structure = StructureEdit("delete_rows", sheet, at, count)
        return self.edit_flagged(spreadsheet_id, change, cells_only=False, structure=structure)[1]

    # -- formatting, layout, charts and notes (patched into the package: `workbook_format`) ----------

    def format_range(self, spreadsheet_id: str, rng: A1Range, fmt: CellFormat) -> FormatResult:
        return self.package_changes.format_range(spreadsheet_id, rng, fmt)

    def set_layout(self, spreadsheet_id: str, sheet: str, layout: Layout) -> LayoutResult:
        return self.package_changes.set_layout(spreadsheet_id, sheet, layout)

    def set_notes(self, spreadsheet_id: str, sheet: str, notes: dict[tuple[int, int], str]) -> NotesResult:
        return self.package_changes.set_notes(spreadsheet_id, sheet, notes)

    def read_notes(self, spreadsheet_id: str, ranges: list[A1Range]) -> list[dict[str, str]]:
        return self.package_changes.read_notes(spreadsheet_id, ranges)

    def add_chart(self, spreadsheet_id: str, spec: ChartSpec) -> ChartResult:
        return self.package_changes.add_chart(spreadsheet_id, spec)
