"""The spreadsheet functions the formula evaluator knows, with Excel's rules for each.

Each function takes the values of its arguments (`formula_values`): an `Area` for a reference
or an array, a scalar otherwise. A function either returns the value Excel would, or raises
`Uncomputable` where Excel's answer depends on something we do not model: never a guess.
"""

from __future__ import annotations

import calendar
import datetime as dt
import inspect
import itertools
import math
import statistics
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import ROUND_DOWN, ROUND_HALF_UP, ROUND_UP, Decimal
from typing import Any

from deskmcp.sheets.formula_format import format_value
from deskmcp.sheets.formula_values import (
    DIV0,
    MISSING,
    NA,
    NUM,
    REF,
    TIME_TEXT,
    VALUE,
    Area,
    CellError,
    DateSerial,
    Uncomputable,
    approx_equal,
    arith,
    compare,
    criterion,
    is_number,
    number,
    scalar,
    serial,
    significant,
    text,
    text_matches,
    to_date,
    truth,
    wildcard_pattern,
)


@dataclass(frozen=True)
class Context:
    """Where the formula is, for the functions that ask (ROW(), TODAY())."""

    sheet: str
    row: int
    column: int
    now: Callable[[], dt.datetime]


class Raised(Exception):
    """An error value met while computing: the function's result is that error."""

    def __init__(self, error: CellError) -> None:
        super().__init__(error.code)
        self.error = error


@dataclass(frozen=True)
class Function:
    run: Callable[..., Any]
    lazy: bool = False  # arguments come as thunks, evaluated only when asked
    arrays: bool = False  # operators inside the arguments work element by element
    context: bool = False  # the first parameter is the formula's Context
    min_args: int = field(default=0)
    max_args: int | None = field(default=None)

    def check_arity(self, name: str, count: int) -> None:
        if count < self.min_args or (self.max_args is not None and count > self.max_args):
            raise Uncomputable(f"{name} does not take {count} arguments")


FUNCTIONS: dict[str, Function] = {}


def register(*names: str, lazy: bool = False, arrays: bool = False, context: bool = False) -> Callable[..., Any]:
    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        params = list(inspect.signature(fn).parameters.values())[1 if context else 0 :]
        variadic = any(p.kind == p.VAR_POSITIONAL for p in params)
        required = sum(1 for p in params if p.default is p.empty and p.kind == p.POSITIONAL_OR_KEYWORD)
        maximum = None if variadic else len(params)

        def run(*args: Any) -> Any:
            try:
                return fn(*args)
            except Raised as raised:
                return raised.error

        for name in names:
            FUNCTIONS[name] = Function(run, lazy, arrays, context, required, maximum)
        return fn

    return wrap


# -- argument helpers ---------------------------------------------------------------------------


def value_of(arg: Any) -> Any:
    """A scalar argument's value; an error raises so the function returns it."""
    v = scalar(arg)
    if isinstance(v, CellError):
        raise Raised(v)
    return v


def num(arg: Any, default: float | None = None) -> float:
    if arg is MISSING and default is not None:
        return default
    n = number(arg)
    if isinstance(n, CellError):
        raise Raised(n)
    return n


def integer(arg: Any, default: int | None = None) -> int:
    if arg is MISSING and default is not None:
        return default
    return math.trunc(num(arg))


def txt(arg: Any, default: str | None = None) -> str:
    if arg is MISSING and default is not None:
        return default
    return text(value_of(arg))


def flag(arg: Any, default: bool) -> bool:
    if arg is MISSING:
        return default
    t = truth(arg)
    if isinstance(t, CellError):
        raise Raised(t)
    return t


def area(arg: Any) -> Area:
    if isinstance(arg, Area):
        return arg
    return Area([[None if arg is MISSING else arg]])


def cells(args: tuple[Any, ...]) -> Iterator[tuple[Any, bool]]:
    """Every value of the arguments, with whether it came from a reference or an array."""
    for arg in args:
        if isinstance(arg, Area):
            for v in arg.cells():
                yield v, True
        elif arg is not MISSING:
            yield arg, False


def numbers(args: tuple[Any, ...]) -> list[float]:
    """The numbers SUM and its kind add up: in references only numbers count; typed arguments convert."""
    out: list[float] = []
    for v, in_area in cells(args):
        if isinstance(v, CellError):
            raise Raised(v)
        if in_area:
            if is_number(v):
                out.append(float(v))
            elif isinstance(v, str) and TIME_TEXT.match(v):
                # A time of day read back as text: Excel would have a number here, not text to skip.
                raise Uncomputable(f"the cell holding {v!r} is a time stored as text")
            continue
        out.append(num(v))
    return out


# -- math -----------------------------------------------------------------------------------------


@register("SUM")
def _sum(*args: Any) -> Any:
    return math.fsum(numbers(args))


@register("AVERAGE")
def _average(*args: Any) -> Any:
    values = numbers(args)
    return math.fsum(values) / len(values) if values else DIV0


@register("MIN")
def _min(*args: Any) -> Any:
    return min(numbers(args), default=0.0)


@register("MAX")
def _max(*args: Any) -> Any:
    return max(numbers(args), default=0.0)


@register("MEDIAN")
def _median(*args: Any) -> Any:
    values = numbers(args)
    return float(statistics.median(values)) if values else NUM


@register("PRODUCT")
def _product(*args: Any) -> Any:
    values = numbers(args)
    return float(math.prod(values)) if values else 0.0


def _kth(values: Any, k: Any, largest: bool) -> Any:
    data = sorted(numbers((area(values),)), reverse=largest)
    i = integer(k)
    if not 1 <= i <= len(data):
        raise Uncomputable("LARGE or SMALL with k out of the data: #NUM! in Excel, #VALUE! in LibreOffice")
    return data[i - 1]


@register("LARGE")
def _large(values: Any, k: Any) -> Any:
    return _kth(values, k, largest=True)


@register("SMALL")
def _small(values: Any, k: Any) -> Any:
    return _kth(values, k, largest=False)


@register("COUNT")
def _count(*args: Any) -> Any:
    total = 0
    for v, in_area in cells(args):
        typed = not in_area and (isinstance(v, bool) or (isinstance(v, str) and is_number(number(v))))
        if is_number(v) or typed:
            total += 1
    return float(total)


@register("COUNTA")
def _counta(*args: Any) -> Any:
    return float(sum(1 for v, in_area in cells(args) if not (in_area and v is None)))


@register("COUNTBLANK")
def _countblank(rng: Any) -> Any:
    return float(sum(1 for v in area(rng).cells() if v is None or v == ""))


def _decimal_round(n: float, digits: int, mode: str) -> float:
    if not math.isfinite(n):
        raise Raised(NUM)
    if digits >= 15 or (abs(n) >= 1e15 and digits >= 0):
        return n
    # At the 15 significant digits Excel keeps, 1.005 is 1.005 and rounds to 1.01.
    exact = Decimal(repr(significant(n)))
    return float(exact.quantize(Decimal(1).scaleb(-digits), rounding=mode))


@register("ROUND")
def _round(value: Any, digits: Any) -> Any:
    return _decimal_round(num(value), integer(digits), ROUND_HALF_UP)


@register("ROUNDUP")
def _roundup(value: Any, digits: Any) -> Any:
    return _decimal_round(num(value), integer(digits), ROUND_UP)


@register("ROUNDDOWN")
def _rounddown(value: Any, digits: Any = MISSING) -> Any:
    return _decimal_round(num(value), integer(digits, 0), ROUND_DOWN)


@register("TRUNC")
def _trunc(value: Any, digits: Any = MISSING) -> Any:
    return _decimal_round(num(value), integer(digits, 0), ROUND_DOWN)


@register("INT")
def _int(value: Any) -> Any:
    return float(math.floor(significant(num(value))))


@register("ABS")
def _abs(value: Any) -> Any:
    return abs(num(value))


@register("SIGN")
def _sign(value: Any) -> Any:
    n = num(value)
    return float((n > 0) - (n < 0))


@register("MOD")
def _mod(a: Any, b: Any) -> Any:
    x, y = num(a), num(b)
    if y == 0:
        return DIV0
    result = x - y * math.floor(significant(x / y))
    return 0.0 if approx_equal(result, y) or abs(result) < abs(y) * 1e-15 else result


@register("POWER")
def _power(a: Any, b: Any) -> Any:
    return arith("^", value_of(a), value_of(b))


@register("SQRT")
def _sqrt(a: Any) -> Any:
    x = num(a)
    if x < 0:
        raise Uncomputable("SQRT of a negative number: #NUM! in Excel, #VALUE! in LibreOffice")
    return math.sqrt(x)


@register("PI")
def _pi() -> Any:
    return math.pi


_SIGNS = "a positive number and a negative significance: #NUM! in Excel, #VALUE! in LibreOffice"


@register("CEILING")
def _ceiling(value: Any, step: Any = MISSING) -> Any:
    n, s = num(value), num(step, 1.0)
    if s == 0:
        return 0.0
    if n > 0 and s < 0:
        raise Uncomputable(f"CEILING of {_SIGNS}")
    return math.ceil(significant(n / s)) * s


@register("FLOOR")
def _floor(value: Any, step: Any = MISSING) -> Any:
    n, s = num(value), num(step, 1.0)
    if s == 0:
        raise Uncomputable("FLOOR with significance 0: #DIV/0! in Excel, #VALUE! in LibreOffice")
    if n > 0 and s < 0:
        raise Uncomputable(f"FLOOR of {_SIGNS}")
    return math.floor(significant(n / s)) * s


def _to_multiple(value: Any, step: Any, mode: Any, up: bool) -> float:
    """CEILING.MATH (`up`) and FLOOR.MATH: the sign of the significance does not count; a negative
    number goes the other way (toward zero for CEILING.MATH, away from it for FLOOR.MATH) unless
    `mode` is not 0. Significance 0 gives 0."""
    n, s, m = num(value), abs(num(step, 1.0)), num(mode, 0.0)
    if s == 0 or n == 0:
        return 0.0
    ratio = significant(abs(n) / s)
    # for a positive number `up` rounds away from zero; a negative one the other way unless mode
    away = up if n > 0 else (not up) != (m != 0)
    return math.copysign((math.ceil(ratio) if away else math.floor(ratio)) * s, n) + 0.0


@register("CEILING.MATH")
def _ceiling_math(value: Any, step: Any = MISSING, mode: Any = MISSING) -> Any:
    return _to_multiple(value, step, mode, up=True)


@register("FLOOR.MATH")
def _floor_math(value: Any, step: Any = MISSING, mode: Any = MISSING) -> Any:
    return _to_multiple(value, step, mode, up=False)


@register("SUMPRODUCT", arrays=True)
def _sumproduct(*args: Any) -> Any:
    blocks = [area(a) for a in args]
    height, width = blocks[0].height, blocks[0].width
    if any(b.height != height or b.width != width for b in blocks):
        return VALUE
    total: list[float] = []
    for r in range(height):
        for c in range(width):
            product = 1.0
            for b in blocks:
                v = b.rows[r][c]
                if isinstance(v, CellError):
                    return v
                # Text and booleans count as 0 here (which is why sheets write --(A1:A9="x")).
                product *= float(v) if is_number(v) else 0.0
            total.append(product)
    return math.fsum(total)


@register("RANK", "RANK.EQ")
def _rank(value: Any, ref: Any, order: Any = MISSING) -> Any:
    n = num(value)
    block = list(area(ref).cells())
    if any(isinstance(v, CellError) for v in block):
        raise Uncomputable("RANK over a range holding an error: LibreOffice gives the error")
    data = [float(v) for v in block if is_number(v)]
    if not any(approx_equal(n, v) for v in data):
        raise Uncomputable("RANK of a number not in the list: #N/A in Excel, #VALUE! in LibreOffice")
    if flag(order, False):
        return float(1 + sum(1 for v in data if v < n and not approx_equal(v, n)))
    return float(1 + sum(1 for v in data if v > n and not approx_equal(v, n)))


# -- conditional aggregates ---------------------------------------------------------------------


def _matching(pairs: list[tuple[Any, Any]], shape: Area | None) -> list[tuple[int, int]]:
    """(row, column) offsets where every (range, criterion) pair matches."""
    ranges = [area(rng) for rng, _crit in pairs]
    base = shape or ranges[0]
    for rng in ranges:
        if rng.height != base.height or rng.width != base.width:
            if shape is not None and len(pairs) == 1:
                # Excel would stretch the sum range from its first cell; we do not read beyond it.
                raise Uncomputable("the sum range and the criteria range differ in size")
            raise Raised(VALUE)
    for _rng, crit in pairs:
        if isinstance(scalar(crit), CellError):
            # Excel counts the cells holding that error; LibreOffice gives the error
            raise Uncomputable("a criterion that is an error")
    tests = [criterion(crit) for _rng, crit in pairs]
    out = []
    for r in range(base.height):
        for c in range(base.width):
            if all(test(rng.rows[r][c]) for rng, test in zip(ranges, tests, strict=True)):
                out.append((r, c))
    return out


def _picked(target: Any, spots: list[tuple[int, int]]) -> list[float]:
    block = area(target)
    out: list[float] = []
    for r, c in spots:
        v = block.rows[r][c]
        if isinstance(v, CellError):
            raise Raised(v)
        if is_number(v):
            out.append(float(v))
    return out


def _pairs(args: tuple[Any, ...]) -> list[tuple[Any, Any]]:
    if len(args) % 2:
        raise Uncomputable("criteria come in (range, criterion) pairs")
    return [(args[i], args[i + 1]) for i in range(0, len(args), 2)]


@register("COUNTIF")
def _countif(rng: Any, crit: Any) -> Any:
    return float(len(_matching([(rng, crit)], None)))


@register("COUNTIFS")
def _countifs(*args: Any) -> Any:
    return float(len(_matching(_pairs(args), None)))


@register("SUMIF")
def _sumif(rng: Any, crit: Any, sum_range: Any = MISSING) -> Any:
    target = rng if sum_range is MISSING else sum_range
    return math.fsum(_picked(target, _matching([(rng, crit)], area(target))))


@register("SUMIFS")
def _sumifs(sum_range: Any, *args: Any) -> Any:
    return math.fsum(_picked(sum_range, _matching(_pairs(args), area(sum_range))))


@register("AVERAGEIF")
def _averageif(rng: Any, crit: Any, avg_range: Any = MISSING) -> Any:
    target = rng if avg_range is MISSING else avg_range
    values = _picked(target, _matching([(rng, crit)], area(target)))
    return math.fsum(values) / len(values) if values else DIV0


@register("AVERAGEIFS")
def _averageifs(avg_range: Any, *args: Any) -> Any:
    values = _picked(avg_range, _matching(_pairs(args), area(avg_range)))
    return math.fsum(values) / len(values) if values else DIV0


@register("MAXIFS")
def _maxifs(max_range: Any, *args: Any) -> Any:
    return max(_picked(max_range, _matching(_pairs(args), area(max_range))), default=0.0)


@register("MINIFS")
def _minifs(min_range: Any, *args: Any) -> Any:
    return min(_picked(min_range, _matching(_pairs(args), area(min_range))), default=0.0)


# -- lookup -------------------------------------------------------------------------------------


def _same_kind(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool)
    return (is_number(a) and is_number(b)) or (isinstance(a, str) and isinstance(b, str))


def _exact(wanted: Any, values: list[Any], wildcards: bool, last: bool = False) -> int | None:
    order = range(len(values) - 1, -1, -1) if last else range(len(values))
    for i in order:
        v = values[i]
        if not _same_kind(wanted, v):
            continue
        if isinstance(wanted, str):
            if text_matches(v, wanted, wildcards):
                return i
        elif compare("=", v, wanted) is True:
            return i
    return None


def _sorted_position(wanted: Any, values: list[Any], descending: bool) -> int | None:
    """The position a binary search finds in sorted data: the last value <= wanted (>= if descending)."""
    kind = [(i, v) for i, v in enumerate(values) if _same_kind(wanted, v)]
    for (_i, a), (_j, b) in itertools.pairwise(kind):
        if compare(">" if not descending else "<", a, b) is True:
            # Excel's binary search over unsorted data finds a row we cannot predict honestly.
            raise Uncomputable("an approximate lookup needs its first column (or row) sorted")
    found = None
    for i, v in kind:
        if compare("<=" if not descending else ">=", v, wanted) is True:
            found = i
        else:
            break
    return found


def _lookup_value(arg: Any) -> Any:
    v = value_of(arg)
    if v is None:
        raise Uncomputable("looking up an empty cell")
    return v


@register("VLOOKUP")
def _vlookup(wanted: Any, table: Any, col: Any, approximate: Any = MISSING) -> Any:
    return _table_lookup(wanted, area(table), integer(col), flag(approximate, True), by_row=True)


@register("HLOOKUP")
def _hlookup(wanted: Any, table: Any, row: Any, approximate: Any = MISSING) -> Any:
    return _table_lookup(wanted, area(table), integer(row), flag(approximate, True), by_row=False)


def _table_lookup(wanted: Any, table: Area, index: int, approximate: bool, by_row: bool) -> Any:
    key = _lookup_value(wanted)
    if index < 1:
        return VALUE
    if index > (table.width if by_row else table.height):
        return REF
    keys = table.column_values(0) if by_row else list(table.rows[0])
    pos = _sorted_position(key, keys, descending=False) if approximate else _exact(key, keys, wildcards=True)
    if pos is None:
        return NA
    return table.rows[pos][index - 1] if by_row else table.rows[index - 1][pos]


def _vector(arg: Any) -> tuple[Area, list[Any], bool]:
    """A one-row or one-column area, its values, and whether it runs down a column."""
    block = area(arg)
    if block.width == 1:
        return block, block.column_values(0), True
    if block.height == 1:
        return block, list(block.rows[0]), False
    raise Raised(NA)


@register("MATCH")
def _match(wanted: Any, lookup: Any, kind: Any = MISSING) -> Any:
    key = _lookup_value(wanted)
    _block, values, _down = _vector(lookup)
    mode = integer(kind, 1)
    pos = _exact(key, values, wildcards=True) if mode == 0 else _sorted_position(key, values, descending=mode < 0)
    return NA if pos is None else float(pos + 1)


@register("INDEX")
def _index(ref: Any, row: Any, col: Any = MISSING, which: Any = MISSING) -> Any:
    block = area(ref)
    if which is not MISSING and integer(which) != 1:
        raise Uncomputable("INDEX over several areas")
    r = integer(row, 0)
    c = integer(col, 0)
    if col is MISSING and block.height == 1 and block.width > 1:
        r, c = 0, r  # one row: the single index picks a column
    if r < 0 or c < 0:
        return VALUE
    if r > block.height or c > block.width:
        return REF
    if col is MISSING and block.width > 1 and block.height > 1:
        c = 0
    rows = block.rows if r == 0 else [block.rows[r - 1]]
    picked = [list(row) if c == 0 else [row[c - 1]] for row in rows]
    return Area(
        picked,
        ref=block.ref,
        sheet=block.sheet,
        row=block.row + (r - 1 if r else 0),
        column=block.column + (c - 1 if c else 0),
    )


@register("XLOOKUP")
def _xlookup(
    wanted: Any,
    lookup: Any,
    result: Any,
    missing: Any = MISSING,
    match_mode: Any = MISSING,
    search_mode: Any = MISSING,
) -> Any:
    key = _lookup_value(wanted)
    _block, values, down = _vector(lookup)
    out = area(result)
    if (out.height if down else out.width) != len(values):
        return VALUE
    mode, search = integer(match_mode, 0), integer(search_mode, 1)
    if search not in (1, -1):
        raise Uncomputable("XLOOKUP's binary search modes")
    last = search == -1
    if mode in (0, 2):
        pos = _exact(key, values, wildcards=mode == 2, last=last)
    elif mode in (-1, 1):
        pos = _exact(key, values, wildcards=False, last=last)
        if pos is None:
            best: tuple[int, Any] | None = None
            for i, v in enumerate(values):
                if not _same_kind(key, v) or compare("<" if mode == -1 else ">", v, key) is not True:
                    continue
                better = best is None or compare(">" if mode == -1 else "<", v, best[1]) is True
                if better or (last and best is not None and compare("=", v, best[1]) is True):
                    best = (i, v)
            pos = None if best is None else best[0]
    else:
        return VALUE
    if pos is None:
        return NA if missing is MISSING else missing
    rows = [out.rows[pos]] if down else [[row[pos]] for row in out.rows]
    return Area(
        rows, ref=out.ref, sheet=out.sheet, row=out.row + (pos if down else 0), column=out.column + (0 if down else pos)
    )


@register("CHOOSE", lazy=True)
def _choose(index: Callable[[], Any], *options: Callable[[], Any]) -> Any:
    i = integer(index())
    if not 1 <= i <= len(options):
        return VALUE
    return options[i - 1]()


@register("ROW", context=True)
def _row(ctx: Context, ref: Any = MISSING) -> Any:
    return float(ctx.row if ref is MISSING else area(ref).row)


@register("COLUMN", context=True)
def _column(ctx: Context, ref: Any = MISSING) -> Any:
    return float(ctx.column if ref is MISSING else area(ref).column)


@register("ROWS")
def _rows(ref: Any) -> Any:
    return float(area(ref).height)


@register("COLUMNS")
def _columns(ref: Any) -> Any:
    return float(area(ref).width)


# -- logic --------------------------------------------------------------------------------------


@register("IF", lazy=True)
def _if(condition: Callable[[], Any], then: Callable[[], Any] | None = None, otherwise: Any = None) -> Any:
    t = truth(condition())
    if isinstance(t, CellError):
        return t
    branch = then if t else otherwise
    if branch is None:
        return t  # IF(cond) without a branch gives TRUE or FALSE
    value = branch()
    return 0.0 if value is MISSING else value


@register("IFS", lazy=True)
def _ifs(*args: Callable[[], Any]) -> Any:
    if len(args) % 2:
        raise Uncomputable("IFS takes (condition, value) pairs")
    for i in range(0, len(args), 2):
        t = truth(args[i]())
        if isinstance(t, CellError):
            return t
        if t:
            return args[i + 1]()
    return NA


@register("SWITCH", lazy=True)
def _switch(expression: Callable[[], Any], *args: Callable[[], Any]) -> Any:
    subject = value_of(expression())
    if subject is None:
        raise Uncomputable("SWITCH of a blank cell: Excel and LibreOffice compare it differently")
    for i in range(0, len(args) - 1, 2):
        case = value_of(args[i]())
        if compare("=", subject, case) is True and _same_kind_or_blank(subject, case):
            return args[i + 1]()
    return args[-1]() if len(args) % 2 else NA


def _same_kind_or_blank(a: Any, b: Any) -> bool:
    return a is None or b is None or _same_kind(a, b)


@register("IFERROR", lazy=True)
def _iferror(value: Callable[[], Any], fallback: Callable[[], Any]) -> Any:
    v = value()
    return fallback() if isinstance(_peek(v), CellError) else v


@register("IFNA", lazy=True)
def _ifna(value: Callable[[], Any], fallback: Callable[[], Any]) -> Any:
    v = value()
    return fallback() if _peek(v) == NA else v


def _peek(v: Any) -> Any:
    if isinstance(v, Area):
        return v.rows[0][0] if v.height == 1 and v.width == 1 else None
    return v


def _logicals(args: tuple[Any, ...]) -> list[bool]:
    out: list[bool] = []
    for v, in_area in cells(args):
        if isinstance(v, CellError):
            raise Raised(v)
        if in_area and (v is None or isinstance(v, str)):
            continue
        t = truth(v)
        if isinstance(t, CellError):
            raise Raised(t)
        out.append(t)
    if not out:
        raise Raised(VALUE)
    return out


@register("AND")
def _and(*args: Any) -> Any:
    return all(_logicals(args))


@register("OR")
def _or(*args: Any) -> Any:
    return any(_logicals(args))


@register("XOR")
def _xor(*args: Any) -> Any:
    return sum(_logicals(args)) % 2 == 1


@register("NOT")
def _not(value: Any) -> Any:
    t = truth(value)
    return t if isinstance(t, CellError) else not t


@register("TRUE")
def _true() -> Any:
    return True


@register("FALSE")
def _false() -> Any:
    return False


# -- information ----------------------------------------------------------------------------------


def _first(arg: Any) -> Any:
    return arg.rows[0][0] if isinstance(arg, Area) and arg.height == 1 and arg.width == 1 else scalar(arg)


@register("ISBLANK")
def _isblank(value: Any) -> Any:
    return _first(value) is None


@register("ISNUMBER")
def _isnumber(value: Any) -> Any:
    return is_number(_first(value))


@register("ISTEXT")
def _istext(value: Any) -> Any:
    return isinstance(_first(value), str)


@register("ISLOGICAL")
def _islogical(value: Any) -> Any:
    return isinstance(_first(value), bool)


@register("ISERROR")
def _iserror(value: Any) -> Any:
    return isinstance(_first(value), CellError)


@register("ISERR")
def _iserr(value: Any) -> Any:
    v = _first(value)
    return isinstance(v, CellError) and v != NA


@register("ISNA")
def _isna(value: Any) -> Any:
    return _first(value) == NA


@register("NA")
def _na() -> Any:
    return NA


# -- text -----------------------------------------------------------------------------------------


@register("CONCAT")
def _concat(*args: Any) -> Any:
    parts: list[str] = []
    for v, _in_area in cells(args):
        if isinstance(v, CellError):
            return v
        parts.append(text(v))
    return "".join(parts)


@register("CONCATENATE")
def _concatenate(*args: Any) -> Any:
    return "".join(txt(a, "") for a in args)


@register("TEXTJOIN")
def _textjoin(delimiter: Any, ignore_empty: Any, *args: Any) -> Any:
    sep, skip = txt(delimiter), flag(ignore_empty, True)
    parts: list[str] = []
    for v, _in_area in cells(args):
        if isinstance(v, CellError):
            return v
        s = text(v)
        if s or not skip:
            parts.append(s)
    return sep.join(parts)


@register("LEN")
def _len(value: Any) -> Any:
    return float(len(txt(value)))


@register("UPPER")
def _upper(value: Any) -> Any:
    return txt(value).upper()


@register("LOWER")
def _lower(value: Any) -> Any:
    return txt(value).lower()


@register("PROPER")
def _proper(value: Any) -> Any:
    out: list[str] = []
    previous_letter = False
    for ch in txt(value):
        out.append(ch.lower() if previous_letter else ch.upper())
        previous_letter = ch.isalpha()
    return "".join(out)


@register("TRIM")
def _trim(value: Any) -> Any:
    # Excel's TRIM removes spaces only (not tabs or line breaks), collapsing inner runs to one.
    return " ".join(part for part in txt(value).split(" ") if part)


@register("CLEAN")
def _clean(value: Any) -> Any:
    return "".join(ch for ch in txt(value) if ord(ch) >= 32)


@register("LEFT")
def _left(value: Any, count: Any = MISSING) -> Any:
    n = integer(count, 1)
    return VALUE if n < 0 else txt(value)[:n]


@register("RIGHT")
def _right(value: Any, count: Any = MISSING) -> Any:
    n = integer(count, 1)
    s = txt(value)
    return VALUE if n < 0 else (s[-n:] if n else "")


@register("MID")
def _mid(value: Any, start: Any, count: Any) -> Any:
    s, i, n = txt(value), integer(start), integer(count)
    if i < 1 or n < 0:
        return VALUE
    return s[i - 1 : i - 1 + n]


def _needle(arg: Any) -> str:
    s = txt(arg)
    if not s:
        raise Uncomputable("looking for empty text: Excel finds it at the start, LibreOffice gives #VALUE!")
    return s


@register("FIND")
def _find(needle: Any, haystack: Any, start: Any = MISSING) -> Any:
    s, h, i = _needle(needle), txt(haystack), integer(start, 1)
    if i < 1 or i > len(h) + 1:
        return VALUE
    pos = h.find(s, i - 1)
    return VALUE if pos < 0 else float(pos + 1)


@register("SEARCH")
def _search(needle: Any, haystack: Any, start: Any = MISSING) -> Any:
    s, h, i = _needle(needle), txt(haystack), integer(start, 1)
    if i < 1 or i > len(h) + 1:
        return VALUE
    rx = wildcard_pattern(s)
    if rx is None:
        pos = h.lower().find(s.lower(), i - 1)
        return VALUE if pos < 0 else float(pos + 1)
    m = rx.search(h, i - 1)
    return VALUE if m is None else float(m.start() + 1)


@register("SUBSTITUTE")
def _substitute(value: Any, old: Any, new: Any, instance: Any = MISSING) -> Any:
    s, o, n = txt(value), txt(old), txt(new)
    if not o:
        return s
    if instance is MISSING:
        return s.replace(o, n)
    k = integer(instance)
    if k < 1:
        return VALUE
    pos = -1
    for _ in range(k):
        pos = s.find(o, pos + 1)
        if pos < 0:
            return s
    return s[:pos] + n + s[pos + len(o) :]


@register("REPLACE")
def _replace(value: Any, start: Any, count: Any, new: Any) -> Any:
    s, i, n = txt(value), integer(start), integer(count)
    if i < 1 or n < 0:
        return VALUE
    return s[: i - 1] + txt(new) + s[i - 1 + n :]


@register("REPT")
def _rept(value: Any, count: Any) -> Any:
    n = integer(count)
    return VALUE if n < 0 else txt(value) * n


@register("EXACT")
def _exact_fn(a: Any, b: Any) -> Any:
    return txt(a) == txt(b)


@register("VALUE")
def _value(value: Any) -> Any:
    v = value_of(value)
    if v is None:
        raise Uncomputable("VALUE of a blank cell: 0 in LibreOffice")
    if is_number(v):
        return float(v)
    if isinstance(v, str):
        return num(v)
    return VALUE


@register("TEXT")
def _text(value: Any, fmt: Any) -> Any:
    return format_value(value_of(value), txt(fmt))


@register("CHAR")
def _char(code: Any) -> Any:
    n = integer(code)
    if not 1 <= n <= 127:
        # Above 127 the character depends on the system's code page.
        raise Uncomputable("CHAR of a code above 127")
    return chr(n)


@register("CODE")
def _code(value: Any) -> Any:
    if value_of(value) is None:
        raise Uncomputable("CODE of a blank cell: 0 in LibreOffice")
    s = txt(value)
    if not s:
        return VALUE
    if ord(s[0]) > 127:
        raise Uncomputable("CODE of a character above 127")
    return float(ord(s[0]))


# -- dates ----------------------------------------------------------------------------------------


_BEFORE_1900 = "a negative date: #NUM! in Excel, a day of 1899 in LibreOffice"


def day_of(arg: Any) -> dt.date:
    n = num(arg)
    if n < 0:
        raise Uncomputable(_BEFORE_1900)
    return to_date(n)


def _dated(day: dt.date) -> DateSerial:
    result = DateSerial(serial(day))
    if result < 61:
        raise Uncomputable("dates before 1 March 1900 are counted differently by Excel and LibreOffice")
    return result


def _add_months(day: dt.date, months: int) -> dt.date:
    total = day.year * 12 + day.month - 1 + months
    year, month = divmod(total, 12)
    if not 1900 <= year <= 9999:
        raise Raised(NUM)
    last = calendar.monthrange(year, month + 1)[1]
    return dt.date(year, month + 1, min(day.day, last))


@register("DATE")
def _date(year: Any, month: Any, day: Any) -> Any:
    y, m, d = integer(year), integer(month), integer(day)
    if y < 0:
        raise Uncomputable("DATE of a negative year: #NUM! in Excel, #VALUE! in LibreOffice")
    if 0 <= y < 1900:
        y += 1900
    if not 1900 <= y <= 9999:
        return NUM
    first = _add_months(dt.date(y, 1, 1), m - 1)
    try:
        return _dated(first + dt.timedelta(days=d - 1))
    except OverflowError:
        return NUM


@register("TODAY", context=True)
def _today(ctx: Context) -> Any:
    return _dated(ctx.now().date())


@register("NOW", context=True)
def _now(ctx: Context) -> Any:
    moment = ctx.now()
    seconds = moment.hour * 3600 + moment.minute * 60 + moment.second + moment.microsecond / 1e6
    return DateSerial(serial(moment.date()) + seconds / 86400)


@register("YEAR")
def _year(value: Any) -> Any:
    return float(day_of(value).year)


@register("MONTH")
def _month(value: Any) -> Any:
    return float(day_of(value).month)


@register("DAY")
def _day(value: Any) -> Any:
    return float(day_of(value).day)


def _seconds(value: Any) -> int:
    n = num(value)
    if n < 0:
        raise Uncomputable(_BEFORE_1900)
    return round((n - math.floor(n)) * 86400) % 86400


@register("HOUR")
def _hour(value: Any) -> Any:
    return float(_seconds(value) // 3600)


@register("MINUTE")
def _minute(value: Any) -> Any:
    return float(_seconds(value) // 60 % 60)


@register("SECOND")
def _second(value: Any) -> Any:
    return float(_seconds(value) % 60)


@register("TIME")
def _time(hours: Any, minutes: Any, seconds: Any) -> Any:
    parts = [num(hours), num(minutes), num(seconds)]
    if any(not p.is_integer() for p in parts):
        raise Uncomputable("TIME of a fraction: Excel drops it, LibreOffice keeps it")
    total = int(parts[0]) * 3600 + int(parts[1]) * 60 + int(parts[2])
    if total < 0:
        raise Uncomputable("TIME before midnight: #NUM! in Excel, #VALUE! in LibreOffice")
    return (total % 86400) / 86400


@register("DATEVALUE")
def _datevalue(value: Any) -> Any:
    v = value_of(value)
    if not isinstance(v, str):
        return VALUE
    return float(math.floor(num(v)))


@register("DAYS")
def _days(end: Any, start: Any) -> Any:
    a, b = num(end), num(start)
    if a < 0 or b < 0:
        raise Uncomputable(_BEFORE_1900)
    return float(math.floor(a) - math.floor(b))


@register("WEEKDAY")
def _weekday(value: Any, kind: Any = MISSING) -> Any:
    iso = day_of(value).isoweekday()  # Monday 1 .. Sunday 7
    k = integer(kind, 1)
    if k == 1:
        return float(iso % 7 + 1)
    if k == 2:
        return float(iso)
    if k == 3:
        return float(iso - 1)
    if 11 <= k <= 17:
        return float((iso - (k - 10)) % 7 + 1)
    raise Uncomputable("WEEKDAY of an unknown type: #NUM! in Excel, #VALUE! in LibreOffice")


@register("EDATE")
def _edate(start: Any, months: Any) -> Any:
    return _dated(_add_months(day_of(start), integer(months)))


@register("EOMONTH")
def _eomonth(start: Any, months: Any) -> Any:
    day = _add_months(day_of(start).replace(day=1), integer(months))
    return _dated(day.replace(day=calendar.monthrange(day.year, day.month)[1]))


@register("DATEDIF")
def _datedif(start: Any, end: Any, unit: Any) -> Any:
    a, b, u = day_of(start), day_of(end), txt(unit).upper()
    if a > b:
        return NUM
    months = (b.year - a.year) * 12 + b.month - a.month - (1 if b.day < a.day else 0)
    if u == "D":
        return float((b - a).days)
    if u == "M":
        return float(months)
    if u == "Y":
        return float(months // 12)
    if u == "YM":
        return float(months % 12)
    if u == "MD":
        # Days past the last whole month; Excel and LibreOffice differ when that month is shorter.
        anchor = _add_months(a, months)
        if anchor.day != a.day:
            raise Uncomputable("DATEDIF 'MD' from a day the month does not have")
        return float((b - anchor).days)
    if u == "YD":
        anchor = _add_months(a, months // 12 * 12)
        if anchor.day != a.day:
            raise Uncomputable("DATEDIF 'YD' from 29 February")
        return float((b - anchor).days)
    raise Uncomputable("DATEDIF with an unknown unit: #NUM! in Excel, #VALUE! in LibreOffice")


def _holidays(arg: Any) -> set[dt.date]:
    if arg is MISSING:
        return set()
    out: set[dt.date] = set()
    for v, _in_area in cells((arg,)):
        if v is None:
            continue
        if isinstance(v, CellError):
            raise Raised(v)
        if isinstance(v, str):
            raise Uncomputable("a holiday given as text: LibreOffice skips it")
        out.add(day_of(v))
    return out


@register("NETWORKDAYS")
def _networkdays(start: Any, end: Any, holidays: Any = MISSING) -> Any:
    a, b, off = day_of(start), day_of(end), _holidays(holidays)
    sign = 1
    if a > b:
        a, b, sign = b, a, -1
    count = 0
    day = a
    while day <= b:
        if day.weekday() < 5 and day not in off:
            count += 1
        day += dt.timedelta(days=1)
    return float(sign * count)


@register("WORKDAY")
def _workday(start: Any, days: Any, holidays: Any = MISSING) -> Any:
    day, n, off = day_of(start), integer(days), _holidays(holidays)
    step = 1 if n >= 0 else -1
    remaining = abs(n)
    if remaining > 100_000:
        return NUM
    while remaining:
        day += dt.timedelta(days=step)
        if day.weekday() < 5 and day not in off:
            remaining -= 1
    return _dated(day)
