"""A .csv file as a one-sheet workbook: reading it (encoding and delimiter sniffed) and saving it,
with the text a spreadsheet app would run as a formula escaped (CSV injection)."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from deskmcp.core.errors import IOFailure, ParseError
from deskmcp.core.files import atomic_write_bytes
from deskmcp.sheets.a1 import cell_name
from deskmcp.sheets.backends.cell_values import NUMBER, as_json, user_entered
from deskmcp.sheets.xlsx.cellxml import from_xstring, xstring

if TYPE_CHECKING:
    from openpyxl import Workbook

CSV_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
"""First characters that make Excel or LibreOffice run a CSV cell as a formula (OWASP, CSV injection)."""


def csv_escaped(value: Any) -> Any:
    """`value` as a CSV cell no spreadsheet app runs: text starting with a formula trigger gets a
    leading `'` (shown as text, as a typed `'` is); numbers, even negative, stay numbers."""
    if isinstance(value, str) and value.startswith(CSV_TRIGGERS) and not NUMBER.match(value.strip()):
        return "'" + value
    return value


def csv_value(text: str) -> Any:
    """A CSV cell as read: a plain number becomes one, anything else stays the text it is."""
    return user_entered(text) if NUMBER.match(text.strip()) and text == text.strip() else text


def csv_rows(path: Path) -> list[list[str]]:
    """The rows of a CSV file: UTF-8 (BOM or not) else cp1252; `,`, `;` or tab as its first line uses."""
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


def csv_workbook(path: Path) -> Workbook:
    """A CSV file as an openpyxl workbook of one sheet named after the file, to edit it as one."""
    from openpyxl import Workbook

    wb = Workbook()
    ws: Any = wb.active
    ws.title = path.stem[:31] if path.stem else "Sheet1"
    for r, row in enumerate(csv_rows(path), start=1):
        for c, value in enumerate(row, start=1):
            if value != "":
                typed = csv_value(value)
                # text held as an .xlsx stores it (`Book` holds every text so); `save_csv` reads it back
                cell = ws.cell(row=r, column=c, value=xstring(typed) if isinstance(typed, str) else typed)
                if isinstance(cell.value, str):
                    cell.data_type = "s"
    return wb


class EditedCsv(Protocol):
    """What `save_csv` reads of a workbook being edited (a `Book` holding a CSV file)."""

    wb: Any
    escape_csv: bool
    touched: set[tuple[str, int, int]]

    def is_formula(self, sheet: str, row: int, column: int) -> bool: ...


def save_csv(path: Path, book: EditedCsv, values: dict[str, dict[str, Any]]) -> None:
    """Write the edited sheet back as UTF-8 CSV (formulas as their computed `values`), atomically."""
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
            v = from_xstring(v) if isinstance(v, str) else v
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
