"""A1 notation, parsed in one place for every backend.

Accepted forms (as Google Sheets accepts them): `Sheet1!A1:C10`, `'My sheet'!B2` (quotes double
inside: `'Bob''s'!A1`), whole columns `A:C`, open ranges `A2:D` (to the last row), whole rows
`2:5`, single cells `B7`, and a sheet name alone (`Sheet1`) for the whole sheet. Rows and
columns are 1-based here; a missing bound means "to the edge".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from deskmcp.core.errors import BadRequest

MAX_ROWS = 10_000_000
MAX_COLUMNS = 18_278  # ZZZ
GRID_ROWS = 1_048_576
GRID_COLUMNS = 16_384  # XFD
"""The grid of an .xlsx sheet (A1:XFD1048576): no cell lies past it."""

VALID_FORMS = "'Sheet name'!A1:C10, Sheet1!A:C, A2:D, 2:5, B7 or a sheet name alone"

_CELL = re.compile(r"^\$?([A-Za-z]{1,3})?\$?([0-9]{1,8})?$")


def column_index(letters: str) -> int:
    """`A` -> 1, `Z` -> 26, `AA` -> 27."""
    n = 0
    for ch in letters.upper():
        n = n * 26 + (ord(ch) - 64)
    return n


def column_letters(index: int) -> str:
    """1 -> `A`, 27 -> `AA`."""
    if index < 1:
        raise ValueError(index)
    out = ""
    while index:
        index, rem = divmod(index - 1, 26)
        out = chr(65 + rem) + out
    return out


def cell_name(row: int, column: int) -> str:
    return f"{column_letters(column)}{row}"


def quote_sheet(name: str) -> str:
    """The sheet name as A1 notation writes it: quoted unless it is a plain word."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) and not _looks_like_cell(name):
        return name
    return "'" + name.replace("'", "''") + "'"


def _looks_like_cell(text: str) -> bool:
    m = re.fullmatch(r"([A-Za-z]{1,3})([0-9]+)", text)
    return m is not None


@dataclass(frozen=True)
class A1Range:
    """A rectangle on one sheet; None bounds run to the edge of the data."""

    sheet: str | None = None
    start_row: int | None = None
    start_col: int | None = None
    end_row: int | None = None
    end_col: int | None = None

    def a1(self, *, default_sheet: str | None = None) -> str:
        sheet = self.sheet or default_sheet
        cells = self.cells()
        if sheet is None:
            return cells
        return f"{quote_sheet(sheet)}!{cells}" if cells else quote_sheet(sheet)

    def cells(self) -> str:
        if self.start_row is None and self.start_col is None and self.end_row is None and self.end_col is None:
            return ""
        start = (column_letters(self.start_col) if self.start_col else "") + (
            str(self.start_row) if self.start_row else ""
        )
        if not start:
            start = "A1"
        end = (column_letters(self.end_col) if self.end_col else "") + (str(self.end_row) if self.end_row else "")
        if self.is_cell:
            return start
        return f"{start}:{end}" if end else start

    @property
    def is_cell(self) -> bool:
        return (
            self.start_row is not None
            and self.start_row == self.end_row
            and self.start_col is not None
            and self.start_col == self.end_col
        )

    def on(self, sheet: str) -> A1Range:
        return replace(self, sheet=sheet)

    def bounds(self, rows: int, columns: int) -> tuple[int, int, int, int]:
        """(first row, first column, last row, last column), 1-based inclusive, for data of the given size.

        The last row/column may be below the first when the range lies beyond the data.
        """
        r0 = self.start_row or 1
        c0 = self.start_col or 1
        r1 = self.end_row if self.end_row is not None else max(rows, r0 - 1)
        c1 = self.end_col if self.end_col is not None else max(columns, c0 - 1)
        return r0, c0, r1, c1

    def rows_window(self, offset: int, count: int) -> A1Range:
        """The same columns, rows `offset`..`offset+count-1` counted from the range's first row."""
        first = (self.start_row or 1) + offset
        last = first + count - 1
        if self.end_row is not None:
            last = min(last, self.end_row)
        return replace(self, start_row=first, end_row=last)


def bad_range(text: str, why: str) -> BadRequest:
    return BadRequest(
        f"Range {text!r} is not valid A1 notation ({why}). Valid forms: {VALID_FORMS}. "
        "Sheet names come from get_spreadsheet.",
        {"range": text, "valid_forms": VALID_FORMS},
    )


def split_sheet(text: str) -> tuple[str | None, str]:
    """(`sheet` or None, the cell part) of `text`; a quoted sheet name may hold `!` and `''`."""
    if text.startswith("'"):
        i = 1
        name = []
        while i < len(text):
            ch = text[i]
            if ch == "'":
                if i + 1 < len(text) and text[i + 1] == "'":
                    name.append("'")
                    i += 2
                    continue
                break
            name.append(ch)
            i += 1
        else:
            raise bad_range(text, "the quoted sheet name is not closed")
        rest = text[i + 1 :]
        if rest and not rest.startswith("!"):
            raise bad_range(text, "expected '!' after the quoted sheet name")
        return "".join(name), rest[1:]
    if "!" in text:
        sheet, _, cells = text.rpartition("!")
        return sheet, cells
    return None, text


def _parse_cell(part: str, text: str) -> tuple[int | None, int | None]:
    m = _CELL.match(part)
    if not m or not (m.group(1) or m.group(2)):
        raise bad_range(text, f"{part!r} is not a cell like B7, a column like C or a row like 5")
    col = column_index(m.group(1)) if m.group(1) else None
    row = int(m.group(2)) if m.group(2) else None
    if row is not None and not 1 <= row <= MAX_ROWS:
        raise bad_range(text, f"row {row} is out of range")
    if col is not None and col > MAX_COLUMNS:
        raise bad_range(text, f"column {m.group(1)} is out of range")
    return row, col


def parse_cells(
    cells: str, text: str, *, ordered: bool = False
) -> tuple[int | None, int | None, int | None, int | None]:
    """(first row, first column, last row, last column) of `cells`, None where a bound is open. A
    range written from its bottom or right end (`C3:A1`) is turned round, or with `ordered` refused."""
    first, sep, second = cells.partition(":")
    r0, c0 = _parse_cell(first, text)
    if not sep:
        if r0 is None or c0 is None:  # "C" alone or "5" alone: a whole column or row
            return r0, c0, r0, c0
        return r0, c0, r0, c0
    r1, c1 = _parse_cell(second, text)
    # A2:D is an open range (rows to the end); A:C whole columns; 2:5 whole rows.
    if (c0 is None) != (c1 is None) and not (c1 is not None and r1 is None):
        raise bad_range(text, "mixes a whole-row bound with a column")
    backwards = (r0 is not None and r1 is not None and r1 < r0) or (c0 is not None and c1 is not None and c1 < c0)
    if r0 is not None and r1 is not None and r1 < r0:
        r0, r1 = r1, r0
    if c0 is not None and c1 is not None and c1 < c0:
        c0, c1 = c1, c0
    if backwards and ordered:
        turned = A1Range(None, r0, c0, r1, c1).cells()
        raise bad_range(text, f"it runs backwards; write it from its top-left cell: {turned}")
    return r0, c0, r1, c1


def check_in_grid(rng: A1Range, rows: int = GRID_ROWS, columns: int = GRID_COLUMNS) -> None:
    """Refuse a range reaching past the last row or column a sheet has (an .xlsx's grid, A1:XFD1048576,
    by default): no cell lies there, so its answer could only be an empty or cut range shown as whole."""
    shown = rng.a1()
    last_row = max((r for r in (rng.start_row, rng.end_row) if r is not None), default=0)
    last_column = max((c for c in (rng.start_col, rng.end_col) if c is not None), default=0)
    if last_row > rows:
        raise BadRequest(
            f"Range {shown!r} reaches row {last_row:,}, past row {rows:,}, the last a sheet has "
            f"({cell_name(rows, columns)} is the last cell).",
            {"range": shown, "last_row": rows},
        )
    if last_column > columns:
        raise BadRequest(
            f"Range {shown!r} reaches column {column_letters(last_column)}, past column {column_letters(columns)} "
            f"({columns:,} columns), the last a sheet has ({cell_name(rows, columns)} is the last cell).",
            {"range": shown, "last_column": column_letters(columns)},
        )


def parse_a1(text: str, *, sheets: list[str] | None = None) -> A1Range:
    """Parse `text`; with `sheets`, a bare word that names a sheet means that whole sheet."""
    if not isinstance(text, str) or not text.strip():
        raise bad_range(str(text), "it is empty")
    text = text.strip()
    sheet, cells = split_sheet(text)
    if sheet is not None:
        if sheet == "":
            raise bad_range(text, "the sheet name is empty")
        if not cells:
            return A1Range(sheet=sheet)
        return A1Range(sheet, *parse_cells(cells, text, ordered=True))
    if sheets is not None and text in sheets:
        return A1Range(sheet=text)
    try:
        return A1Range(None, *parse_cells(text, text, ordered=True))
    except BadRequest:
        looks_like_cell = re.fullmatch(r"\$?[A-Za-z]{1,3}\$?[0-9]+", text) is not None
        if not looks_like_cell and re.fullmatch(r"[^\[\]:*?/\\!']+", text):
            return A1Range(sheet=text)  # a sheet name alone; the backend says if it exists
        raise
