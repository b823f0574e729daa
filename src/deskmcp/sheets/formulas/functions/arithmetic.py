"""Math and the conditional aggregates (SUM, ROUND, COUNTIF, SUMIFS...), with Excel's rules."""

from __future__ import annotations

import math
import statistics
from decimal import ROUND_DOWN, ROUND_HALF_UP, ROUND_UP, Decimal
from typing import Any

from deskmcp.sheets.formulas.functions.registry import (
    Raised,
    area,
    cells,
    flag,
    integer,
    num,
    numbers,
    register,
    value_of,
)
from deskmcp.sheets.formulas.values import (
    DIV0,
    MISSING,
    NUM,
    VALUE,
    Area,
    CellError,
    Uncomputable,
    approx_equal,
    arith,
    criterion,
    is_number,
    number,
    scalar,
    significant,
)

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
