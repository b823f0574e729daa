"""Cell values of local workbooks as the tools show them and as a user types them.

JSON out (`as_json`, `trim`), typed text in (`user_entered`), and the serial numbers the formula
evaluator takes (`evaluator_value`).
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from deskmcp.sheets.a1 import MAX_COLUMNS, MAX_ROWS, A1Range, parse_cells
from deskmcp.sheets.formulas.engine import CellError, Uncomputable
from deskmcp.sheets.formulas.values import moment_serial
from deskmcp.sheets.models import Render

EPOCH = dt.datetime(1899, 12, 30)
"""Day 0 of spreadsheet serial dates (the 1900 system, with Excel's phantom leap day)."""
NUMBER = re.compile(r"^[-+]?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?$")
_PERCENT = re.compile(r"^[-+]?\d+(?:\.\d+)?%$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def blank(value: Any) -> bool:
    return value is None or value == ""


def trim(rows: list[list[Any]]) -> list[list[Any]]:
    """Drop trailing blank cells of each row and trailing blank rows, as Google's API does."""
    out = []
    for row in rows:
        end = len(row)
        while end and blank(row[end - 1]):
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
            serial = moment_serial(value)
            return int(serial) if serial.is_integer() else serial
        return value.isoformat()
    if isinstance(value, dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds() / 86400 if mode == "raw" else str(value)
    return str(value)


def user_entered(value: Any) -> Any:
    """What a cell holds after a user types `value`: formulas, numbers, booleans, percentages, dates."""
    if not isinstance(value, str):
        return value
    if value.startswith("'"):
        return value[1:]
    if value.startswith("=") and len(value) > 1:
        return value
    text = value.strip()
    if NUMBER.match(text):
        if "." not in text and "e" not in text.lower():
            return int(text)  # every digit kept, also past what a double holds
        return float(text)
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


def within_range(cell: str, rng: A1Range) -> bool:
    """Whether an A1 cell lies in the range asked for (trailing blank cells trimmed from the answer included)."""
    r, c, _r, _c = parse_cells(cell, cell)
    if r is None or c is None:
        return False
    return (rng.start_row or 1) <= r <= (rng.end_row if rng.end_row is not None else MAX_ROWS) and (
        rng.start_col or 1
    ) <= c <= (rng.end_col if rng.end_col is not None else MAX_COLUMNS)


def value_at(values: list[list[Any]], cell: str, r0: int, c0: int) -> Any:
    """The value of an A1 cell in rows read from (r0, c0); None past their end."""
    r, c, _r, _c = parse_cells(cell, cell)
    try:
        return values[(r or 0) - r0][(c or 0) - c0]
    except IndexError:
        return None
