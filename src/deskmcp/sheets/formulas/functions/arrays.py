"""Dynamic array functions (FILTER, UNIQUE, SORT, SORTBY, SEQUENCE, TAKE, VSTACK, TEXTSPLIT...),
with Excel's rules. Each gives an `Area` of values: inside another function (`SUM(FILTER(...))`,
`INDEX(SORT(...),1)`) it is used whole; a cell whose formula gives more than one value spills
(`engine.WorkbookCalculator.spill`). LET is evaluated by the engine itself (it binds names).
"""

from __future__ import annotations

import math
import random
from functools import cmp_to_key
from typing import Any

from deskmcp.sheets.formulas.functions.registry import (
    Raised,
    area,
    flag,
    integer,
    num,
    register,
    txt,
    value_of,
)
from deskmcp.sheets.formulas.values import (
    MISSING,
    NA,
    VALUE,
    Area,
    CellError,
    Uncomputable,
    compare,
    is_number,
    significant,
    text,
    truth,
)

MAX_CELLS = 1_048_576
"""The most values one array may hold (a column of a sheet)."""


def _block(arg: Any) -> list[list[Any]]:
    rows = area(arg).rows
    return [list(row) for row in rows]


def _array(rows: list[list[Any]]) -> Area:
    if not rows or not rows[0]:
        raise Uncomputable("an empty array: #CALC! in Excel")
    return Area(rows)


def _transposed(rows: list[list[Any]]) -> list[list[Any]]:
    return [list(column) for column in zip(*rows, strict=True)]


def _size(arg: Any, default: int | None = None) -> int:
    n = integer(arg, default)
    if n < 1:
        raise Raised(VALUE)
    return n


# -- FILTER, UNIQUE, SORT, SORTBY -----------------------------------------------------------------


@register("FILTER", arrays=True)
def _filter(values: Any, include: Any, if_empty: Any = MISSING) -> Any:
    rows = _block(values)
    keep = _block(include)
    height, width = len(rows), len(rows[0])
    if len(keep[0]) == 1 and len(keep) == height:
        flags, by_row = [row[0] for row in keep], True
    elif len(keep) == 1 and len(keep[0]) == width:
        flags, by_row = keep[0], False
    else:
        return VALUE
    chosen: list[int] = []
    for i, f in enumerate(flags):
        if isinstance(f, CellError):
            return f
        if isinstance(f, str):
            return VALUE
        t = truth(f)
        if isinstance(t, CellError):
            return t
        if t:
            chosen.append(i)
    if not chosen:
        if if_empty is MISSING:
            raise Uncomputable("FILTER keeping nothing: #CALC! in Excel")
        return value_of(if_empty) if not isinstance(if_empty, Area) else if_empty
    if by_row:
        return _array([rows[i] for i in chosen])
    return _array([[row[i] for i in chosen] for row in rows])


def _key(value: Any) -> Any:
    """A value as UNIQUE compares it: numbers at 15 digits, text without case."""
    if isinstance(value, bool):
        return ("b", value)
    if is_number(value):
        return ("n", significant(float(value)))
    if value is None:
        return ("n", 0.0)
    if isinstance(value, CellError):
        return ("e", value.code)
    return ("t", str(value).lower())


@register("UNIQUE", arrays=True)
def _unique(values: Any, by_col: Any = MISSING, exactly_once: Any = MISSING) -> Any:
    rows = _block(values)
    columns = flag(by_col, False)
    once = flag(exactly_once, False)
    lines = _transposed(rows) if columns else rows
    counts: dict[tuple[Any, ...], int] = {}
    first: dict[tuple[Any, ...], list[Any]] = {}
    for line in lines:
        key = tuple(_key(v) for v in line)
        counts[key] = counts.get(key, 0) + 1
        first.setdefault(key, [0.0 if v is None else v for v in line])
    kept = [first[k] for k in first if not once or counts[k] == 1]
    if not kept:
        raise Uncomputable("UNIQUE keeping nothing: #CALC! in Excel")
    return _array(_transposed(kept) if columns else kept)


def _ordering(a: Any, b: Any) -> int:
    for v in (a, b):
        if v is None or isinstance(v, CellError):
            raise Uncomputable("sorting blanks or errors")
    if compare("=", a, b) is True:
        return 0
    return -1 if compare("<", a, b) is True else 1


def _sorted_lines(lines: list[list[Any]], keys: list[tuple[list[Any], int]]) -> list[list[Any]]:
    """`lines` in the order of `keys` (each: its value per line, 1 ascending or -1 descending)."""

    def order(i: int, j: int) -> int:
        for values, direction in keys:
            c = _ordering(values[i], values[j])
            if c:
                return c * direction
        return 0

    indexes = sorted(range(len(lines)), key=cmp_to_key(order))
    return [lines[i] for i in indexes]


def _direction(arg: Any) -> int:
    d = integer(arg, 1)
    if d not in (1, -1):
        raise Raised(VALUE)
    return d


@register("SORT", arrays=True)
def _sort(values: Any, index: Any = MISSING, order: Any = MISSING, by_col: Any = MISSING) -> Any:
    rows = _block(values)
    columns = flag(by_col, False)
    lines = _transposed(rows) if columns else rows
    i = integer(index, 1)
    if not 1 <= i <= len(lines[0]):
        return VALUE
    ordered = _sorted_lines(lines, [([line[i - 1] for line in lines], _direction(order))])
    return _array(_transposed(ordered) if columns else ordered)


@register("SORTBY", arrays=True)
def _sortby(values: Any, *keys: Any) -> Any:
    rows = _block(values)
    if not keys:
        return VALUE
    by_col: bool | None = None
    found: list[tuple[list[Any], int]] = []
    for k in range(0, len(keys), 2):
        key = _block(keys[k])
        direction = _direction(keys[k + 1] if k + 1 < len(keys) else MISSING)
        if len(key[0]) == 1 and len(key) == len(rows):
            columns = False
            line = [r[0] for r in key]
        elif len(key) == 1 and len(key[0]) == len(rows[0]):
            columns = True
            line = key[0]
        else:
            return VALUE
        if by_col is not None and by_col != columns:
            return VALUE
        if len(rows) == 1 and len(rows[0]) == 1:
            columns = False
        by_col = columns
        found.append((line, direction))
    lines = _transposed(rows) if by_col else rows
    ordered = _sorted_lines(lines, found)
    return _array(_transposed(ordered) if by_col else ordered)


# -- arrays made from numbers ---------------------------------------------------------------------


@register("SEQUENCE")
def _sequence(rows: Any, columns: Any = MISSING, start: Any = MISSING, step: Any = MISSING) -> Any:
    height, width = _size(rows), _size(columns, 1)
    first, by = num(start, 1.0), num(step, 1.0)
    if height * width > MAX_CELLS:
        raise Uncomputable("an array larger than a sheet's column")
    return Area([[first + (r * width + c) * by for c in range(width)] for r in range(height)])


@register("RANDARRAY")
def _randarray(
    rows: Any = MISSING, columns: Any = MISSING, low: Any = MISSING, high: Any = MISSING, whole: Any = MISSING
) -> Any:
    height, width = _size(rows, 1), _size(columns, 1)
    a, b, integers = num(low, 0.0), num(high, 1.0), flag(whole, False)
    if a > b:
        return VALUE
    if height * width > MAX_CELLS:
        raise Uncomputable("an array larger than a sheet's column")
    if integers:
        if not (a.is_integer() and b.is_integer()):
            return VALUE
        return Area([[float(random.randint(int(a), int(b))) for _ in range(width)] for _ in range(height)])
    return Area([[a + random.random() * (b - a) for _ in range(width)] for _ in range(height)])


# -- reshaping ------------------------------------------------------------------------------------


def _skip(value: Any, ignore: int) -> bool:
    return (ignore in (1, 3) and value is None) or (ignore in (2, 3) and isinstance(value, CellError))


def _flat(values: Any, ignore: Any, by_column: Any) -> list[Any]:
    rows = _block(values)
    how = integer(ignore, 0)
    if how not in (0, 1, 2, 3):
        raise Raised(VALUE)
    lines = _transposed(rows) if flag(by_column, False) else rows
    out = [0.0 if v is None else v for line in lines for v in line if not _skip(v, how)]
    if not out:
        raise Uncomputable("an empty array: #CALC! in Excel")
    return out


@register("TOCOL", arrays=True)
def _tocol(values: Any, ignore: Any = MISSING, by_column: Any = MISSING) -> Any:
    return Area([[v] for v in _flat(values, ignore, by_column)])


@register("TOROW", arrays=True)
def _torow(values: Any, ignore: Any = MISSING, by_column: Any = MISSING) -> Any:
    return Area([_flat(values, ignore, by_column)])


def _picks(count: int, indexes: tuple[Any, ...]) -> list[int]:
    out: list[int] = []
    for arg in indexes:
        for v in area(arg).cells():
            if isinstance(v, CellError):
                raise Raised(v)
            i = math.trunc(num(v))
            if i == 0 or abs(i) > count:
                raise Raised(VALUE)
            out.append(i - 1 if i > 0 else count + i)
    return out


@register("CHOOSEROWS", arrays=True)
def _chooserows(values: Any, *indexes: Any) -> Any:
    rows = _block(values)
    return _array([rows[i] for i in _picks(len(rows), indexes)])


@register("CHOOSECOLS", arrays=True)
def _choosecols(values: Any, *indexes: Any) -> Any:
    rows = _block(values)
    chosen = _picks(len(rows[0]), indexes)
    return _array([[row[i] for i in chosen] for row in rows])


def _padded(rows: list[list[Any]], height: int, width: int, pad: Any) -> list[list[Any]]:
    out = [[0.0 if v is None else v for v in row] + [pad] * (width - len(row)) for row in rows]
    return out + [[pad] * width for _ in range(height - len(out))]


@register("VSTACK", arrays=True)
def _vstack(*arrays: Any) -> Any:
    blocks = [_block(a) for a in arrays]
    width = max(len(b[0]) for b in blocks)
    return _array([row for b in blocks for row in _padded(b, len(b), width, NA)])


@register("HSTACK", arrays=True)
def _hstack(*arrays: Any) -> Any:
    blocks = [_block(a) for a in arrays]
    height = max(len(b) for b in blocks)
    filled = [_padded(b, height, len(b[0]), NA) for b in blocks]
    return _array([[v for b in filled for v in b[r]] for r in range(height)])


def _cut(count: int, arg: Any, take: bool) -> range:
    """The indexes TAKE keeps (or DROP leaves) of `count` lines for a count from the start or end."""
    if arg is MISSING:
        return range(count)
    n = integer(arg)
    if take:
        if n == 0:
            raise Uncomputable("TAKE of no rows or columns: #CALC! in Excel")
        return range(min(n, count)) if n > 0 else range(max(count + n, 0), count)
    return range(min(n, count), count) if n >= 0 else range(max(count + n, 0))


def _take_or_drop(values: Any, rows_arg: Any, columns_arg: Any, take: bool) -> Any:
    rows = _block(values)
    keep_rows = _cut(len(rows), rows_arg, take)
    keep_cols = _cut(len(rows[0]), columns_arg, take)
    if not keep_rows or not keep_cols:
        raise Uncomputable("an empty array: #CALC! in Excel")
    return _array([[rows[r][c] for c in keep_cols] for r in keep_rows])


@register("TAKE", arrays=True)
def _take(values: Any, rows: Any = MISSING, columns: Any = MISSING) -> Any:
    return _take_or_drop(values, rows, columns, take=True)


@register("DROP", arrays=True)
def _drop(values: Any, rows: Any = MISSING, columns: Any = MISSING) -> Any:
    return _take_or_drop(values, rows, columns, take=False)


@register("EXPAND", arrays=True)
def _expand(values: Any, rows: Any, columns: Any = MISSING, pad: Any = MISSING) -> Any:
    block = _block(values)
    height = integer(rows, len(block)) if rows is not MISSING else len(block)
    width = integer(columns, len(block[0]))
    if height < len(block) or width < len(block[0]):
        return VALUE
    filler = NA if pad is MISSING else value_of(pad)
    return _array(_padded(block, height, width, filler))


def _wrap(values: Any, count: Any, pad: Any) -> list[list[Any]]:
    block = _block(values)
    if len(block) != 1 and len(block[0]) != 1:
        raise Raised(VALUE)
    items = [0.0 if v is None else v for row in block for v in row]
    n = integer(count)
    if n < 1:
        raise Raised(NUM_ERROR)
    filler = NA if pad is MISSING else value_of(pad)
    lines = [items[i : i + n] for i in range(0, len(items), n)]
    return [line + [filler] * (n - len(line)) for line in lines]


NUM_ERROR = CellError("#NUM!")


@register("WRAPROWS", arrays=True)
def _wraprows(values: Any, count: Any, pad: Any = MISSING) -> Any:
    return _array(_wrap(values, count, pad))


@register("WRAPCOLS", arrays=True)
def _wrapcols(values: Any, count: Any, pad: Any = MISSING) -> Any:
    return _array(_transposed(_wrap(values, count, pad)))


# -- text into arrays and back --------------------------------------------------------------------


def _delimiters(arg: Any) -> list[str]:
    if arg is MISSING:
        return []
    out: list[str] = []
    for v in area(arg).cells():
        if isinstance(v, CellError):
            raise Raised(v)
        out.append(text(v))
    return out


def _split(s: str, delimiters: list[str], case: bool) -> list[str]:
    if not delimiters:
        return [s]
    parts: list[str] = []
    start = i = 0
    haystack = s if case else s.lower()
    needles = [d if case else d.lower() for d in delimiters if d]
    if not needles:
        raise Raised(VALUE)
    while i <= len(s):
        hit = next((d for d in needles if haystack.startswith(d, i)), None)
        if hit is not None:
            parts.append(s[start:i])
            i += len(hit)
            start = i
        else:
            i += 1
    parts.append(s[start:])
    return parts


@register("TEXTSPLIT")
def _textsplit(
    value: Any,
    column_delimiter: Any,
    row_delimiter: Any = MISSING,
    ignore_empty: Any = MISSING,
    match_mode: Any = MISSING,
    pad: Any = MISSING,
) -> Any:
    s = txt(value)
    case = integer(match_mode, 0) == 0
    skip = flag(ignore_empty, False)
    lines = _split(s, _delimiters(row_delimiter), case)
    rows = [_split(line, _delimiters(column_delimiter), case) for line in lines]
    if skip:
        rows = [[p for p in row if p] for row in rows]
        rows = [row for row in rows if row]
    if not rows:
        raise Uncomputable("TEXTSPLIT keeping nothing: #CALC! in Excel")
    width = max(len(row) for row in rows)
    filler = NA if pad is MISSING else value_of(pad)
    return _array([list(row) + [filler] * (width - len(row)) for row in rows])


def _occurrence(s: str, delimiter: str, instance: int, case: bool, end_is_delimiter: bool) -> tuple[int, int] | None:
    """(start, end) of the `instance`-th delimiter (from the end when negative)."""
    haystack, needle = (s, delimiter) if case else (s.lower(), delimiter.lower())
    spots: list[int] = []
    i = haystack.find(needle)
    while i >= 0 and needle:
        spots.append(i)
        i = haystack.find(needle, i + len(needle))
    if not needle:
        spots = list(range(len(s) + 1))
    if end_is_delimiter:
        spots = [*spots, len(s)] if instance > 0 else [-len(needle), *spots]
    if abs(instance) > len(spots):
        return None
    at = spots[instance - 1] if instance > 0 else spots[instance]
    return at, at + len(needle)


def _text_around(value: Any, delimiter: Any, instance: Any, mode: Any, end: Any, missing: Any, before: bool) -> Any:
    s, d = txt(value), txt(delimiter)
    n = integer(instance, 1)
    if n == 0 or abs(n) > len(s) + 1:
        return VALUE
    spot = _occurrence(s, d, n, integer(mode, 0) == 0, flag(end, False))
    if spot is None:
        return NA if missing is MISSING else value_of(missing)
    start, stop = spot
    return s[: max(start, 0)] if before else s[max(stop, 0) :]


@register("TEXTBEFORE")
def _textbefore(
    value: Any,
    delimiter: Any,
    instance: Any = MISSING,
    mode: Any = MISSING,
    end: Any = MISSING,
    missing: Any = MISSING,
) -> Any:
    return _text_around(value, delimiter, instance, mode, end, missing, before=True)


@register("TEXTAFTER")
def _textafter(
    value: Any,
    delimiter: Any,
    instance: Any = MISSING,
    mode: Any = MISSING,
    end: Any = MISSING,
    missing: Any = MISSING,
) -> Any:
    return _text_around(value, delimiter, instance, mode, end, missing, before=False)


@register("VALUETOTEXT")
def _valuetotext(value: Any, strict: Any = MISSING) -> Any:
    if isinstance(value, Area) and (value.height != 1 or value.width != 1):
        raise Uncomputable("VALUETOTEXT of a range")
    v = value.rows[0][0] if isinstance(value, Area) else (None if value is MISSING else value)
    quoted = integer(strict, 0) == 1
    if isinstance(v, str):
        return f'"{v}"' if quoted else v
    return text(v)
