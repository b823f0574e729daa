"""A .csv file as a one-sheet workbook: reading it (encoding and delimiter sniffed) and saving it
with only the cells written changed, escaped when a spreadsheet app would run them as a formula
(CSV injection).

The file is kept as read (`CsvText`: each field's text as it stands in the file, quotes included,
each line's end, the encoding, the delimiter), so a save writes every cell the change did not touch
back byte for byte.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from deskmcp.core.errors import BadRequest, IOFailure
from deskmcp.sheets.a1 import cell_name
from deskmcp.sheets.backends.cell_values import NUMBER, as_json, user_entered
from deskmcp.sheets.backends.file_guard import write_bytes_atomically
from deskmcp.sheets.xlsx.cellxml import from_xstring, xstring

if TYPE_CHECKING:
    from openpyxl import Workbook

CSV_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
"""First characters that make Excel or LibreOffice run a CSV cell as a formula (OWASP, CSV injection)."""
_LINE_END = re.compile(r"\r\n|\n|\r")
_UNDECODED = re.compile("[\udc80-\udcff]")
"""A byte cp1252 has no character for, held as its surrogate escape so a save writes it back."""
JSON_SAFE_INTEGER = 2**53
"""Whole numbers past this lose digits as a JSON number in many clients (JavaScript's doubles)."""


def csv_escaped(value: Any) -> Any:
    """`value` as a CSV cell no spreadsheet app runs: text starting with a formula trigger gets a
    leading `'` (shown as text, as a typed `'` is); numbers, even negative, stay numbers."""
    if isinstance(value, str) and value.startswith(CSV_TRIGGERS) and not NUMBER.match(value.strip()):
        return "'" + value
    return value


def csv_value(text: str) -> Any:
    """A CSV cell as read: a plain number becomes one when a JSON number carries it exactly (whole
    numbers up to 2**53, decimals a double holds digit for digit); anything else, long digit
    strings such as card numbers and ids included, stays the text it is."""
    if not (NUMBER.match(text) and text == text.strip()):
        return text
    number = user_entered(text)
    if isinstance(number, int) and abs(number) > JSON_SAFE_INTEGER:
        return text
    if isinstance(number, float) and Decimal(repr(number)) != Decimal(text):
        return text
    return number


@dataclass
class CsvText:
    """A CSV file as it stands: each row's fields as written in the file (quotes included) and each
    row's line end ("" for a last line without one), with the encoding and delimiter they use."""

    rows: list[list[str]] = field(default_factory=list)
    ends: list[str] = field(default_factory=list)
    delimiter: str = ","
    encoding: str = "utf-8"
    bom: bool = False
    quoted: bool = False
    """Whether any field is quoted (else each field's text is the cell's)."""

    @property
    def newline(self) -> str:
        """The line end of rows added: the one the file uses most ("\n" in an empty file)."""
        counts = {end: self.ends.count(end) for end in set(self.ends) if end}
        return max(counts, key=lambda end: counts[end]) if counts else "\n"

    @property
    def quote_all(self) -> bool:
        """Whether the file quotes every field it holds (then written cells are quoted too)."""
        fields = [f for row in self.rows for f in row if f]
        return bool(fields) and all(f.startswith('"') for f in fields)

    def values(self) -> list[list[str]]:
        """The text of every cell, as a spreadsheet app reads it (a byte cp1252 has no character
        for as U+FFFD); not to be changed (it may be `rows` itself)."""
        rows = self.rows
        if self.quoted:
            rows = [[_unquoted(f) if f[:1] == '"' else f for f in row] for row in rows]
        if self.encoding == "utf-8":  # decoded strictly: nothing undecoded
            return rows
        return [[_UNDECODED.sub("\ufffd", f) for f in row] for row in rows]


def _unquoted(raw: str) -> str:
    """A quoted field's text: without its quotes, `""` as `"` (text after the closing quote kept)."""
    m = re.match(r'"((?:[^"]|"")*)"?(.*)', raw, re.S)
    assert m is not None
    return m.group(1).replace('""', '"') + m.group(2)


def _field_pattern(delimiter: str) -> re.Pattern[str]:
    d = re.escape(delimiter)
    return re.compile(rf'(?P<f>"(?:[^"]|"")*(?:"|\Z)[^{d}\r\n]*|[^{d}\r\n]*)(?P<sep>{d}|\r\n|\n|\r|\Z)')


def parse_csv(data: bytes) -> CsvText:
    """The rows of CSV bytes: UTF-8 (BOM or not) else cp1252; `,`, `;` or tab as its first line uses.
    A quoted field may hold the delimiter, quotes doubled and line ends, as RFC 4180 has it."""
    text = CsvText(bom=data.startswith(codecs.BOM_UTF8))
    try:
        body = data[len(codecs.BOM_UTF8) if text.bom else 0 :].decode("utf-8")
    except UnicodeDecodeError:
        text.encoding, text.bom = "cp1252", False
        body = data.decode("cp1252", errors="surrogateescape")
    first_line = body[:8192].split("\n", 1)[0]
    counts = {d: first_line.count(d) for d in (",", ";", "\t")}
    text.delimiter = max(counts, key=lambda d: counts[d]) if max(counts.values()) else ","
    if '"' not in body:  # no quoted field anywhere: every line is a row
        lines, ends = _LINE_END.split(body), _LINE_END.findall(body)
        if lines[-1] == "":  # the file ends with a line end
            lines.pop()
        else:
            ends.append("")
        text.rows = [line.split(text.delimiter) if line else [] for line in lines]
        text.ends = ends
        return text
    text.quoted = True
    pattern = _field_pattern(text.delimiter)
    pos = 0
    while pos < len(body):
        end = _LINE_END.search(body, pos)
        line = body[pos : end.start() if end else len(body)]
        if '"' not in line:  # most lines: no quoted field, so no delimiter or line end inside one
            text.rows.append(line.split(text.delimiter) if line else [])
            text.ends.append(end.group() if end else "")
            pos = end.end() if end else len(body)
            continue
        row, sep = [], text.delimiter
        while sep == text.delimiter:
            m = pattern.match(body, pos)
            assert m is not None  # every position starts a field, maybe empty
            row.append(m.group("f"))
            pos, sep = m.end(), m.group("sep")
        text.rows.append(row)
        text.ends.append(sep)
    return text


def read_csv(path: Path) -> CsvText:
    """The CSV file at `path` as it stands (`parse_csv`)."""
    try:
        return parse_csv(path.read_bytes())
    except OSError as exc:
        raise IOFailure(f"{path.name} could not be read: {exc.strerror}.", {"file": path.name}) from exc


def csv_rows(path: Path) -> list[list[str]]:
    """The text of every cell of a CSV file, row by row."""
    return read_csv(path).values()


def csv_workbook(path: Path, text: CsvText) -> Workbook:
    """A CSV file read as `text`, as an openpyxl workbook of one sheet named after the file, to
    edit it as one."""
    from openpyxl import Workbook

    wb = Workbook()
    ws: Any = wb.active
    ws.title = path.stem[:31] if path.stem else "Sheet1"
    for r, row in enumerate(text.values(), start=1):
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
    csv: CsvText | None
    escape_csv: bool
    touched: set[tuple[str, int, int]]

    def is_formula(self, sheet: str, row: int, column: int) -> bool: ...


def save_csv(
    path: Path, book: EditedCsv, values: dict[str, dict[str, Any]], expect: tuple[Any, ...] | None = None
) -> None:
    """Write the cells the change touched into the file as it was read (formulas as their computed
    `values`), every other byte kept, atomically (over the version `expect` only)."""
    ws: Any = book.wb.worksheets[0]
    text = book.csv if book.csv is not None else CsvText()
    rows, ends = [list(row) for row in text.rows], list(text.ends)
    quote_all = text.quote_all
    for _sheet, r, c in sorted(k for k in book.touched if k[0] == ws.title):
        shown = _written(book, ws, values, r, c)
        if shown == "" and (r > len(rows) or c > len(rows[r - 1])):
            continue  # a cleared cell past the row's end: nothing to write
        while len(rows) < r:
            rows.append([])
            ends.append(text.newline)
        row = rows[r - 1]
        row.extend([""] * (c - len(row)))
        row[c - 1] = _field(shown, text.delimiter, quote_all)
    if len(ends) > len(text.ends) and text.ends:
        # rows added: the old last row ends its line, the new last one ends as the old one did
        ends[len(text.ends) - 1], ends[-1] = text.ends[-1] or text.newline, text.ends[-1]
    out = "".join(text.delimiter.join(row) + end for row, end in zip(rows, ends, strict=True))
    write_bytes_atomically(path, _encoded(path, text, out), expect)


def _written(book: EditedCsv, ws: Any, values: dict[str, dict[str, Any]], r: int, c: int) -> Any:
    """The value a written cell shows in the file: a formula's computed value, text escaped when a
    spreadsheet app would run it (unless the escaping is off)."""
    cell = ws._cells.get((r, c))
    v = None if cell is None else cell.value
    v = from_xstring(v) if isinstance(v, str) else v
    if isinstance(v, str) and v.startswith("=") and book.is_formula(ws.title, r, c):
        v = values.get(ws.title, {}).get(cell_name(r, c), v)
    shown = as_json(v, "shown")
    return csv_escaped(shown) if book.escape_csv else shown


def _encoded(path: Path, text: CsvText, out: str) -> bytes:
    """`out` in the file's encoding (with its BOM); `bad_request` for a character it cannot hold."""
    try:
        data = out.encode(text.encoding, errors="surrogateescape")  # undecoded bytes go back as they were
    except UnicodeEncodeError as exc:
        bad = exc.object[exc.start : exc.end]
        raise BadRequest(
            f"{path.name} is {text.encoding} text, which cannot hold {bad!r}. Nothing was written; "
            "write text without it, or copy the values to an .xlsx (create_spreadsheet).",
            {"file": path.name, "encoding": text.encoding, "character": f"U+{ord(bad[0]):04X}"},
        ) from None
    return (codecs.BOM_UTF8 if text.bom else b"") + data


def _field(value: Any, delimiter: str, quote_all: bool) -> str:
    """A cell value as a field of the file: quoted when it holds the delimiter, a quote or a line
    end (or when the file quotes every field)."""
    text = str(value).upper() if isinstance(value, bool) else str(value)  # TRUE, as the apps write it
    if quote_all or any(ch in text for ch in (delimiter, '"', "\r", "\n")):
        return '"' + text.replace('"', '""') + '"'
    return text
