"""Formatting, layout, charts and notes of local workbooks: each change patched into the .xlsx
package in place (`xlsx/package_edit.py`), never through a load and save of the whole workbook,
so every part the change does not touch (charts, images, pivot tables, macros...) stays
byte for byte as it was. A .csv holds values only and an .ods is not written here: both are
refused before anything is read."""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar
from xml.etree import ElementTree

from deskmcp.core.errors import BadRequest, Conflict, ParseError, PermissionDenied
from deskmcp.sheets.a1 import A1Range, cell_name
from deskmcp.sheets.backends.file_guard import FileChanged, FileLocks, file_version, write_atomically
from deskmcp.sheets.backends.sheet_reader import SheetReader
from deskmcp.sheets.backends.workbook_files import WorkbookFolders
from deskmcp.sheets.models import (
    CellFormat,
    ChartResult,
    ChartSpec,
    FormatResult,
    Layout,
    LayoutResult,
    NotesResult,
)
from deskmcp.sheets.xlsx.cell_format import format_range
from deskmcp.sheets.xlsx.charts import add_chart
from deskmcp.sheets.xlsx.comments import notes_in, read_notes, set_notes
from deskmcp.sheets.xlsx.layout import apply_layout
from deskmcp.sheets.xlsx.package_edit import PackageEdit
from deskmcp.sheets.xlsx.parts import package_map, read_part

_T = TypeVar("_T")


def refuse_format(path: Path, fmt: str, what: str) -> None:
    """`bad_request` for a file whose format cannot hold `what`; `permission_denied` for an xlsx
    variant deskmcp does not write."""
    if fmt == "csv":
        raise BadRequest(
            f"{path.name} is a .csv file, which holds values only: it cannot hold {what}. "
            "create_spreadsheet an .xlsx and copy the values there to format them.",
            {"format": fmt},
        )
    if fmt == "ods":
        raise BadRequest(
            f"{path.name} is an OpenDocument (.ods) workbook, which deskmcp does not write, so it cannot hold "
            f"{what} added here. create_spreadsheet an .xlsx and copy the values there, or edit it in LibreOffice.",
            {"format": fmt},
        )
    if fmt != "xlsx":
        raise PermissionDenied(
            f"{fmt} workbooks are read-only here; create_spreadsheet an .xlsx and copy the values to add {what}.",
            {"format": fmt},
        )


class PackageChanges:
    """Runs one change of an .xlsx's package: one writer at a time (in this process and, through
    the file locks, in every deskmcp process), written atomically over the version read only."""

    attempts = 3

    def __init__(self, files: WorkbookFolders, locks: FileLocks, reader: SheetReader) -> None:
        self.files = files
        self.locks = locks
        self.reader = reader

    def change(self, spreadsheet_id: str, what: str, change: Callable[[PackageEdit], _T]) -> _T:
        """`change` applied to the package of `spreadsheet_id` and written; `what` names the change
        for the refusals (e.g. 'formatting')."""
        path, fmt = self.files.locate(spreadsheet_id)
        refuse_format(path, fmt, what)
        with self.files.write_lock, self.locks.hold(path):
            for _attempt in range(self.attempts):
                version = file_version(path)
                try:
                    return self._apply(path, version, change)
                except FileChanged:
                    continue
        raise Conflict(
            f"{path.name} was changed by another program while this change was being saved, "
            f"{self.attempts} times in a row. Nothing was written: try again when it is no longer being edited.",
            {"spreadsheet_id": spreadsheet_id, "attempts": self.attempts},
        )

    def _apply(self, path: Path, version: tuple[object, ...], change: Callable[[PackageEdit], _T]) -> _T:
        self.reader.verify(path)
        try:
            with zipfile.ZipFile(path) as zf:
                if b"purl.oclc.org/ooxml" in read_part(zf, "xl/workbook.xml")[:4096]:
                    raise PermissionDenied(
                        f"{path.name} is Strict OOXML, which cannot be changed here. Copy the values to a new "
                        "workbook to format them.",
                        {"file": path.name},
                    )
                edit = PackageEdit(zf)
                result = change(edit)
                write_atomically(path, edit.write, version)
                return result
        except (KeyError, zipfile.BadZipFile, ElementTree.ParseError) as exc:
            raise ParseError(f"{path.name} is not a readable xlsx package: {exc}.", {"file": path.name}) from exc

    # -- the changes -------------------------------------------------------------------------------

    def format_range(self, spreadsheet_id: str, rng: A1Range, fmt: CellFormat) -> FormatResult:
        def change(edit: PackageEdit) -> FormatResult:
            applied, cells = format_range(edit, rng, fmt)
            return FormatResult(
                spreadsheet_id=spreadsheet_id, range=applied, cells=cells, styles_added=edit.styles.added
            )

        return self.change(spreadsheet_id, "formatting", change)

    def set_layout(self, spreadsheet_id: str, sheet: str, layout: Layout) -> LayoutResult:
        def change(edit: PackageEdit) -> LayoutResult:
            ws = edit.worksheet(sheet)
            return LayoutResult(spreadsheet_id=spreadsheet_id, sheet=ws.title, changed=apply_layout(ws, layout))

        return self.change(spreadsheet_id, "a layout", change)

    def set_notes(self, spreadsheet_id: str, sheet: str, notes: dict[tuple[int, int], str]) -> NotesResult:
        def change(edit: PackageEdit) -> NotesResult:
            ws = edit.worksheet(sheet)
            written, removed = set_notes(edit, ws, notes)
            return NotesResult(spreadsheet_id=spreadsheet_id, sheet=ws.title, written=written, removed=removed)

        return self.change(spreadsheet_id, "notes", change)

    def read_notes(self, spreadsheet_id: str, ranges: list[A1Range]) -> list[dict[str, str]]:
        """The notes of each range (a .csv has none; an .ods or .xls is refused: its notes are not read)."""
        path, fmt = self.files.locate(spreadsheet_id)
        if fmt == "csv":
            return [{} for _ in ranges]
        if fmt not in ("xlsx", "xlsm"):
            raise BadRequest(
                f"Notes of {fmt} workbooks are not read here; call read_values without notes.", {"format": fmt}
            )
        self.reader.verify(path)
        try:
            with zipfile.ZipFile(path) as zf:
                where = package_map(zf)
                first = next(iter(where.sheets), None)
                by_part: dict[str, dict[str, str]] = {}
                out = []
                for rng in ranges:
                    part = where.sheets.get(rng.sheet or first or "")
                    if part is None:
                        out.append({})
                        continue
                    if part not in by_part:
                        by_part[part] = read_notes(zf, part)
                    out.append(notes_in(by_part[part], rng))
                return out
        except (KeyError, zipfile.BadZipFile, ElementTree.ParseError) as exc:
            raise ParseError(f"{path.name} is not a readable xlsx package: {exc}.", {"file": path.name}) from exc

    def add_chart(self, spreadsheet_id: str, spec: ChartSpec) -> ChartResult:
        def change(edit: PackageEdit) -> ChartResult:
            ws = edit.worksheet(spec.anchor_sheet)
            part = add_chart(edit, ws, spec)
            return ChartResult(
                spreadsheet_id=spreadsheet_id,
                sheet=ws.title,
                chart=part,
                anchor=cell_name(*spec.anchor),
                series=spec.names[:1] if spec.kind == "pie" else spec.names,
            )

        return self.change(spreadsheet_id, "charts", change)
