"""The values a formula computes with, and the spreadsheet rules for converting and comparing them.

A value is blank (`None`), a number (`float`; a `DateSerial` when it is a date), text (`str`),
a boolean, a `CellError`, or an `Area`: a block of cells, from a reference (`ref=True`) or
computed element by element. The rules follow Excel (and LibreOffice, which agrees on them):
numbers compare and round at 15 significant digits, text compares case-insensitively, a blank
is 0, "" or FALSE depending on what it meets, and text converts to a number only when it reads
as one (also a date or a time).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


class Uncomputable(Exception):
    """The formula uses something this evaluator does not implement (or refers in a cycle)."""


class ScalarExpected(Uncomputable):
    """A range met where one value is expected: Excel before dynamic arrays would intersect it with
    the formula's row or column; Excel 365 computes the formula over the whole array."""


@dataclass(frozen=True)
class CellError:
    """A spreadsheet error value such as `#DIV/0!`."""

    code: str

    def __str__(self) -> str:
        return self.code


DIV0 = CellError("#DIV/0!")
VALUE = CellError("#VALUE!")
NA = CellError("#N/A")
NUM = CellError("#NUM!")
REF = CellError("#REF!")
NAME = CellError("#NAME?")
SPILL = CellError("#SPILL!")


class DateSerial(float):
    """A number that is a date (or date and time): the serial Excel stores, days since 1899-12-30.

    It is a `float` for every reader; a writer that knows the type can give the cell a date format.
    """


DATE_SHIFT = re.compile(r"^=\s*\$?([A-Z]{1,3})\$?(\d+)\s*[-+]")
"""A formula moving a cell by some days (`=B4+30`): when that cell is a date, Excel shows the
result as one (column letters, row)."""


class Area:
    """A rectangle of values: cells of a reference (`ref=True`, with where it starts) or an array."""

    __slots__ = ("column", "ref", "row", "rows", "sheet")

    def __init__(
        self, rows: list[list[Any]], *, ref: bool = False, sheet: str = "", row: int = 0, column: int = 0
    ) -> None:
        self.rows = rows
        self.ref = ref
        self.sheet = sheet
        self.row = row
        self.column = column

    @property
    def height(self) -> int:
        return len(self.rows)

    @property
    def width(self) -> int:
        return len(self.rows[0]) if self.rows else 0

    def cells(self) -> Iterator[Any]:
        for row in self.rows:
            yield from row

    def column_values(self, index: int) -> list[Any]:
        return [row[index] for row in self.rows]

    def __repr__(self) -> str:
        return f"Area({self.rows!r}, ref={self.ref})"


MISSING: Any = type("Missing", (), {"__repr__": lambda _self: "MISSING"})()
"""An argument left out, as in `IF(A1,,1)`: 0 or "" to the function that receives it."""


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def scalar(value: Any) -> Any:
    """One value: a one-cell area gives its cell; a larger one cannot be reduced without guessing."""
    if isinstance(value, Area):
        if value.height == 1 and value.width == 1:
            return value.rows[0][0]
        # Excel would take the cell in the formula's own row or column (implicit intersection).
        raise ScalarExpected("a range is used where one value is expected")
    if value is MISSING:
        return None
    return value


# -- numbers ------------------------------------------------------------------------------------

EPOCH = dt.date(1899, 12, 30)
_EPOCH_MOMENT = dt.datetime(1899, 12, 30)
_MONTHS = {
    name: i
    for i, names in enumerate(
        [
            ("jan", "january"),
            ("feb", "february"),
            ("mar", "march"),
            ("apr", "april"),
            ("may",),
            ("jun", "june"),
            ("jul", "july"),
            ("aug", "august"),
            ("sep", "sept", "september"),
            ("oct", "october"),
            ("nov", "november"),
            ("dec", "december"),
        ],
        start=1,
    )
    for name in names
}
_NUMERIC = re.compile(r"^([-+]?)\$?((?:\d{1,3}(?:,\d{3})+|\d*)(?:\.\d*)?(?:[eE][-+]?\d+)?)(%?)$")
_ISO_DATE = re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{2})(?::(\d{2}(?:\.\d+)?))?)?$")
_TIME = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2}(?:\.\d+)?))?(?:\s*([AaPp][Mm]))?$")
_DAY_MONTH_YEAR = re.compile(r"^(\d{1,2})[ -]([A-Za-z]+)[ -](\d{4})$")
_MONTH_DAY_YEAR = re.compile(r"^([A-Za-z]+) (\d{1,2}),? (\d{4})$")
_LOCALE_DATE = re.compile(r"^\d{1,4}[/.]\d{1,2}(?:[/.]\d{1,4})?$")
TIME_TEXT = re.compile(r"^\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?$")


def serial(day: dt.date) -> float:
    return float((day - EPOCH).days)


def moment_serial(value: dt.date) -> float:
    """The serial of a stored date or date and time (the time of day as its fraction)."""
    moment = value if isinstance(value, dt.datetime) else dt.datetime.combine(value, dt.time())
    return (moment - _EPOCH_MOMENT).total_seconds() / 86400


def to_date(value: float) -> dt.date:
    """The calendar day of a serial (its fraction, the time of day, is dropped)."""
    if value < 0:
        raise ValueError("negative date")
    if value < 61:
        # Excel counts a 29 February 1900 that never was; LibreOffice does not: they disagree here.
        raise Uncomputable("dates before 1 March 1900 are counted differently by Excel and LibreOffice")
    return EPOCH + dt.timedelta(days=math.floor(value))


def _time_fraction(hours: int, minutes: int, seconds: float) -> float | None:
    if minutes >= 60 or seconds >= 60:
        return None
    return (hours * 3600 + minutes * 60 + seconds) / 86400


def parse_number(text: str) -> float | None:
    """The number a text reads as in arithmetic (en-US conventions), or None if it is not one.

    Dates are read in unambiguous forms (2024-01-31, 31 Jan 2024, Jan 31, 2024); a form whose
    meaning depends on the locale (01/02/2024) is not guessed.
    """
    s = text.strip()
    if not s:
        return None
    m = _NUMERIC.match(s)
    if m and any(ch.isdigit() for ch in m.group(2)):
        try:
            n = float(m.group(2).replace(",", ""))
        except ValueError:
            return None
        if m.group(1) == "-":
            n = -n
        return n / 100 if m.group(3) else n
    m = _ISO_DATE.match(s)
    if m:
        try:
            day = dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        except ValueError:
            return None
        fraction = 0.0
        if m.group(4):
            part = _time_fraction(int(m.group(4)), int(m.group(5)), float(m.group(6) or 0))
            if part is None or int(m.group(4)) >= 24:
                return None
            fraction = part
        return serial(day) + fraction
    m = _TIME.match(s)
    if m:
        hours = int(m.group(1))
        if m.group(4):
            if not 1 <= hours <= 12:
                return None
            hours = hours % 12 + (12 if m.group(4).lower() == "pm" else 0)
        return _time_fraction(hours, int(m.group(2)), float(m.group(3) or 0))
    m = _DAY_MONTH_YEAR.match(s)
    named: tuple[str, str, str] | None = None
    if m:
        named = (m.group(2), m.group(1), m.group(3))
    elif m := _MONTH_DAY_YEAR.match(s):
        named = (m.group(1), m.group(2), m.group(3))
    if named and named[0].lower() in _MONTHS:
        try:
            return serial(dt.date(int(named[2]), _MONTHS[named[0].lower()], int(named[1])))
        except ValueError:
            return None
    if _LOCALE_DATE.match(s):
        raise Uncomputable(f"the text {s!r} reads as a date only in some locales")
    return None


def number(value: Any) -> float | CellError:
    """A value as a number, as arithmetic takes it: blank is 0, TRUE is 1, text must read as one."""
    value = scalar(value)
    if isinstance(value, CellError):
        return value
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        n = parse_number(value)
        return VALUE if n is None else n
    return VALUE


def text(value: Any) -> str:
    """A value as text, as `&` and text functions take it: numbers with up to 15 significant digits."""
    value = scalar(value)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int | float):
        return number_text(float(value))
    return str(value)


def number_text(n: float) -> str:
    if n == 0:
        return "0"
    if n.is_integer() and abs(n) < 1e15:
        return str(int(n))
    shown = f"{n:.15g}"
    if "e" in shown:
        mantissa, _, exponent = shown.partition("e")
        exp = int(exponent)
        if -10 < exp < 0:
            # Excel writes small numbers out in full while they fit in its general format.
            return f"{n:.{15 - exp - 1}f}".rstrip("0").rstrip(".")
        return f"{mantissa}E{'+' if exp >= 0 else '-'}{abs(exp):02d}"
    return shown


def truth(value: Any) -> bool | CellError:
    value = scalar(value)
    if isinstance(value, CellError):
        return value
    if isinstance(value, str):
        if value.upper() in ("TRUE", "FALSE"):
            return value.upper() == "TRUE"
        return VALUE
    n = number(value)
    return n if isinstance(n, CellError) else n != 0


def significant(n: float) -> float:
    """`n` at the 15 significant digits a spreadsheet keeps when it compares or rounds."""
    if n == 0 or not math.isfinite(n):
        return n
    return float(f"{n:.15g}")


def approx_equal(a: float, b: float) -> bool:
    return a == b or significant(a) == significant(b)


# -- operators ----------------------------------------------------------------------------------


def arith(op: str, left: Any, right: Any) -> Any:
    a, b = number(left), number(right)
    if isinstance(a, CellError):
        return a
    if isinstance(b, CellError):
        return b
    if op == "+":
        result = a + b
    elif op == "-":
        result = a - b
        # A difference that is zero at 15 digits is zero, as in Excel (0.3-0.1-0.2 style sums).
        if result != 0 and approx_equal(a, b):
            result = 0.0
    elif op == "*":
        result = a * b
    elif op == "/":
        if b == 0:
            return DIV0
        result = a / b
    else:
        if a == 0 and b < 0:
            return DIV0
        try:
            result = float(a**b)
        except (OverflowError, ZeroDivisionError):
            return NUM
        if isinstance(result, complex):
            return NUM
    return result if math.isfinite(result) else NUM


def compare(op: str, a: Any, b: Any) -> Any:
    if isinstance(a, CellError):
        return a
    if isinstance(b, CellError):
        return b
    # A blank takes the kind of what it meets: 0, "" or FALSE.
    if a is None:
        a = _blank_like(b)
    if b is None:
        b = _blank_like(a)
    rank_a, rank_b = _rank(a), _rank(b)
    if rank_a != rank_b:
        sign = -1 if rank_a < rank_b else 1
    elif rank_a == 0:
        x, y = float(a), float(b)
        sign = 0 if approx_equal(x, y) else (-1 if x < y else 1)
    elif rank_a == 1:
        x, y = str(a).lower(), str(b).lower()
        sign = 0 if x == y else (-1 if x < y else 1)
    else:
        sign = (a > b) - (a < b)
    return {
        "=": sign == 0,
        "<>": sign != 0,
        "<": sign < 0,
        ">": sign > 0,
        "<=": sign <= 0,
        ">=": sign >= 0,
    }[op]


def _blank_like(other: Any) -> Any:
    if isinstance(other, bool):
        return False
    if isinstance(other, str):
        return ""
    return 0.0


def _rank(value: Any) -> int:
    # Spreadsheets order numbers < text < booleans.
    if isinstance(value, bool):
        return 2
    if isinstance(value, int | float):
        return 0
    return 1


# -- criteria (COUNTIF, SUMIFS, ...) ---------------------------------------------------------------

_CRITERION_OP = re.compile(r"^(<>|<=|>=|=|<|>)?(.*)$", re.DOTALL)


def wildcard_pattern(pattern: str) -> re.Pattern[str] | None:
    """A regex for a pattern with `*`, `?` and `~` escapes, or None when it has no wildcard."""
    if not any(ch in pattern for ch in "*?~"):
        return None
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "~" and i + 1 < len(pattern) and pattern[i + 1] in "*?~":
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        out.append(".*" if ch == "*" else "." if ch == "?" else re.escape(ch))
        i += 1
    return re.compile("".join(out), re.IGNORECASE | re.DOTALL)


def text_matches(cell: str, pattern: str, wildcards: bool = True) -> bool:
    rx = wildcard_pattern(pattern) if wildcards else None
    if rx is not None:
        return rx.fullmatch(cell) is not None
    return cell.lower() == pattern.lower()


def criterion(value: Any) -> Any:
    """A test for one cell, from a criterion as COUNTIF takes it (`">15"`, `"F*"`, `"<>"`, 10...)."""
    value = scalar(value)
    if isinstance(value, CellError):
        code = value.code
        return lambda cell: isinstance(cell, CellError) and cell.code == code
    if value is None:
        value = 0.0  # an empty cell as criterion matches zeros, as in Excel
    if isinstance(value, bool):
        flag = value
        return lambda cell: isinstance(cell, bool) and cell == flag
    if is_number(value):
        target = float(value)
        return lambda cell: (is_number(cell) and approx_equal(float(cell), target)) or _number_as_text(cell, target)
    m = _CRITERION_OP.match(value)
    op, operand = (m.group(1) or "", m.group(2)) if m else ("", value)
    if operand == "":
        if op in ("", "="):
            return lambda cell: cell is None or cell == ""
        if op == "<>":
            return lambda cell: cell is not None  # a formula's "" is not empty here
        return lambda cell: False
    if operand.upper() in ("TRUE", "FALSE"):
        flag = operand.upper() == "TRUE"
        if op in ("", "="):
            return lambda cell: isinstance(cell, bool) and cell == flag
        if op == "<>":
            return lambda cell: not (isinstance(cell, bool) and cell == flag)
        return lambda cell: isinstance(cell, bool) and compare(op, cell, flag) is True
    if operand.startswith("#") and operand.upper() in ERROR_CODES:
        code = operand.upper()
        if op in ("", "="):
            return lambda cell: isinstance(cell, CellError) and cell.code == code
        if op == "<>":
            return lambda cell: not (isinstance(cell, CellError) and cell.code == code)
        return lambda cell: False
    target_number = parse_number(operand)
    if target_number is not None:
        n = target_number
        if op in ("", "="):
            return lambda cell: (v := _numeric_cell(cell)) is not None and approx_equal(v, n)
        if op == "<>":
            return lambda cell: not ((v := _numeric_cell(cell)) is not None and approx_equal(v, n))
        return lambda cell: is_number(cell) and compare(op, float(cell), n) is True
    if op in ("", "="):
        return lambda cell: isinstance(cell, str) and text_matches(cell, operand)
    if op == "<>":
        return lambda cell: not (isinstance(cell, str) and text_matches(cell, operand))
    return lambda cell: isinstance(cell, str) and compare(op, cell, operand) is True


def _number_as_text(cell: Any, target: float) -> bool:
    if isinstance(cell, str) and _numeric_cell(cell) is not None:
        # Excel matches the text "42" to the criterion 42, LibreOffice does not: no honest answer.
        raise Uncomputable("a number criterion meets a number stored as text")
    return False


def _numeric_cell(cell: Any) -> float | None:
    """A cell's number for an equality criterion: numbers, and text that reads as one."""
    if is_number(cell):
        return float(cell)
    if isinstance(cell, str):
        try:
            return parse_number(cell)
        except Uncomputable:
            return None
    return None


ERROR_CODES = ("#DIV/0!", "#VALUE!", "#REF!", "#NAME?", "#NUM!", "#N/A", "#NULL!", "#SPILL!", "#CALC!")
"""The error values a formula may name: the classic seven and the two of Excel 365's dynamic arrays."""
