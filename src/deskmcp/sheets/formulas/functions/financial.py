"""Financial functions (PMT, IPMT, PPMT, NPV, XNPV, IRR, XIRR, RATE, NPER, FV, PV, depreciation...),
with Excel's rules: money paid out is negative, money received positive; `type` 1 means payments
at the start of each period. Rates found by iteration (RATE, IRR, XIRR) use Newton's method from
the guess, as Excel does, and give `#NUM!` when it does not settle."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from deskmcp.sheets.formulas.functions.registry import (
    Raised,
    area,
    cells,
    integer,
    num,
    numbers,
    register,
)
from deskmcp.sheets.formulas.values import (
    DIV0,
    MISSING,
    NUM,
    VALUE,
    CellError,
    Uncomputable,
    is_number,
)


def _when(arg: Any) -> int:
    return 0 if num(arg, 0.0) == 0 else 1


def _finite(x: float) -> float:
    if not math.isfinite(x):
        raise Raised(NUM)
    return x


def _growth(rate: float, periods: float) -> float:
    try:
        g = (1 + rate) ** periods
    except (OverflowError, ZeroDivisionError) as exc:
        raise Raised(NUM) from exc
    if isinstance(g, complex):
        raise Raised(NUM)
    return _finite(float(g))


def _fv(rate: float, nper: float, pmt: float, pv: float, when: int) -> float:
    if rate == 0:
        return -(pv + pmt * nper)
    g = _growth(rate, nper)
    return -(pv * g + pmt * (1 + rate * when) * (g - 1) / rate)


def _pmt(rate: float, nper: float, pv: float, fv: float, when: int) -> float:
    if rate <= -1:
        raise Uncomputable("a rate of -100% or below: Excel and LibreOffice answer differently")
    if nper == 0:
        raise Raised(NUM)
    if rate == 0:
        return -(pv + fv) / nper
    g = _growth(rate, nper)
    if g == 1:
        raise Raised(NUM)
    return -(pv * g + fv) * rate / ((1 + rate * when) * (g - 1))


@register("FV", num_disputed=True)
def _fv_fn(rate: Any, nper: Any, pmt: Any, pv: Any = MISSING, kind: Any = MISSING) -> Any:
    return _finite(_fv(num(rate), num(nper), num(pmt), num(pv, 0.0), _when(kind)))


@register("PV", num_disputed=True)
def _pv_fn(rate: Any, nper: Any, pmt: Any, fv: Any = MISSING, kind: Any = MISSING) -> Any:
    r, n, p, f, w = num(rate), num(nper), num(pmt), num(fv, 0.0), _when(kind)
    if r == 0:
        return -(f + p * n)
    g = _growth(r, n)
    return _finite(-(f + p * (1 + r * w) * (g - 1) / r) / g)


@register("PMT")
def _pmt_fn(rate: Any, nper: Any, pv: Any, fv: Any = MISSING, kind: Any = MISSING) -> Any:
    return _finite(_pmt(num(rate), num(nper), num(pv), num(fv, 0.0), _when(kind)))


@register("NPER")
def _nper(rate: Any, pmt: Any, pv: Any, fv: Any = MISSING, kind: Any = MISSING) -> Any:
    r, p, v, f, w = num(rate), num(pmt), num(pv), num(fv, 0.0), _when(kind)
    if r == 0:
        if p == 0:
            return NUM
        return -(v + f) / p
    due = p * (1 + r * w)
    top, bottom = due - f * r, due + v * r
    if bottom == 0 or top / bottom <= 0 or r <= -1:
        return NUM
    return _finite(math.log(top / bottom) / math.log1p(r))


def _ipmt(rate: float, per: float, nper: float, pv: float, fv: float, when: int) -> float:
    if per < 1 or per >= nper + 1:
        raise Raised(NUM)
    pmt = _pmt(rate, nper, pv, fv, when)
    if per == 1:
        interest = 0.0 if when else -pv
    elif when:
        interest = _fv(rate, per - 2, pmt, pv, 1) - pmt
    else:
        interest = _fv(rate, per - 1, pmt, pv, 0)
    return interest * rate


@register("IPMT", num_disputed=True)
def _ipmt_fn(rate: Any, per: Any, nper: Any, pv: Any, fv: Any = MISSING, kind: Any = MISSING) -> Any:
    return _finite(_ipmt(num(rate), num(per), num(nper), num(pv), num(fv, 0.0), _when(kind)))


@register("PPMT", num_disputed=True)
def _ppmt(rate: Any, per: Any, nper: Any, pv: Any, fv: Any = MISSING, kind: Any = MISSING) -> Any:
    r, p, n, v, f, w = num(rate), num(per), num(nper), num(pv), num(fv, 0.0), _when(kind)
    return _finite(_pmt(r, n, v, f, w) - _ipmt(r, p, n, v, f, w))


def _cumulative(rate: Any, nper: Any, pv: Any, start: Any, end: Any, kind: Any, principal: bool) -> float:
    r, n, v = num(rate), num(nper), num(pv)
    first, last, w = integer(start), integer(end), num(kind)
    if r <= 0 or n <= 0 or v <= 0 or first < 1 or last < first or last > n or w not in (0, 1):
        raise Raised(NUM)
    when = int(w)
    pmt = _pmt(r, n, v, 0.0, when)
    total = 0.0
    for per in range(first, last + 1):
        interest = _ipmt(r, per, n, v, 0.0, when)
        total += pmt - interest if principal else interest
    return total


@register("CUMIPMT", num_disputed=True)
def _cumipmt(rate: Any, nper: Any, pv: Any, start: Any, end: Any, kind: Any) -> Any:
    return _cumulative(rate, nper, pv, start, end, kind, principal=False)


@register("CUMPRINC", num_disputed=True)
def _cumprinc(rate: Any, nper: Any, pv: Any, start: Any, end: Any, kind: Any) -> Any:
    return _cumulative(rate, nper, pv, start, end, kind, principal=True)


@register("ISPMT", num_disputed=True)
def _ispmt(rate: Any, per: Any, nper: Any, pv: Any) -> Any:
    r, p, n, v = num(rate), num(per), num(nper), num(pv)
    if n == 0:
        raise Uncomputable("ISPMT over 0 periods: #DIV/0! in Excel, #NUM! in LibreOffice")
    return v * r * (p / n - 1)


# -- rates found by iteration ---------------------------------------------------------------------


def _newton(f: Callable[[float], float], df: Callable[[float], float], guess: float, steps: int = 50) -> float:
    x = guess
    for _ in range(steps):
        try:
            value, slope = f(x), df(x)
        except (OverflowError, ZeroDivisionError, ValueError, TypeError) as exc:
            raise Raised(NUM) from exc  # TypeError: a negative base to a fractional power is complex
        if isinstance(value, complex) or isinstance(slope, complex):
            raise Raised(NUM)
        if not (math.isfinite(value) and math.isfinite(slope)) or slope == 0:
            raise Raised(NUM)
        step = value / slope
        x -= step
        if abs(step) <= 1e-10 * max(1.0, abs(x)):
            # one more step settles the last digits
            try:
                return x - f(x) / df(x)
            except (OverflowError, ZeroDivisionError, ValueError):
                return x
    raise Raised(NUM)


def _settled(f: Callable[[float], float], df: Callable[[float], float], guess: float, steps: int) -> float:
    try:
        return _newton(f, df, guess, steps)
    except Raised as exc:
        raise Uncomputable("the iteration does not settle: #NUM! in Excel, #N/A in LibreOffice") from exc


@register("RATE", num_disputed=True)
def _rate(nper: Any, pmt: Any, pv: Any, fv: Any = MISSING, kind: Any = MISSING, guess: Any = MISSING) -> Any:
    n, p, v, f, w, g = num(nper), num(pmt), num(pv), num(fv, 0.0), _when(kind), num(guess, 0.1)
    if n <= 0:
        return NUM

    def annuity(r: float) -> float:
        """((1+r)^n - 1) / r, also near r = 0."""
        if abs(r) < 1e-8:
            return n + n * (n - 1) / 2 * r
        return math.expm1(n * math.log1p(r)) / r

    def balance(r: float) -> float:
        return v * (1 + r) ** n + p * (1 + r * w) * annuity(r) + f

    def slope(r: float) -> float:
        h = 1e-6
        return (balance(r + h) - balance(r - h)) / (2 * h)

    rate = _settled(balance, slope, g, 50)
    if rate <= -1:
        return NUM
    return rate


@register("NPV", num_disputed=True)
def _npv(rate: Any, *values: Any) -> Any:
    r = num(rate)
    if r == -1:
        raise Uncomputable("NPV at -100%: #DIV/0! in Excel, #NUM! in LibreOffice")
    flows = numbers(values)
    return _finite(math.fsum(v / _growth(r, i + 1) for i, v in enumerate(flows)))


def _cash(values: Any) -> list[float]:
    out: list[float] = []
    for v, _in_area in cells((values,)):
        if isinstance(v, CellError):
            raise Uncomputable("cash flows holding an error: Excel gives the error, LibreOffice #VALUE!")
        if is_number(v):
            out.append(float(v))
    return out


@register("IRR", num_disputed=True)
def _irr(values: Any, guess: Any = MISSING) -> Any:
    flows = _cash(values)
    g = num(guess, 0.1)
    if not any(v > 0 for v in flows) or not any(v < 0 for v in flows):
        raise Uncomputable("IRR without both signs: #NUM! in Excel, #N/A in LibreOffice")

    def npv(r: float) -> float:
        return math.fsum(v / (1 + r) ** i for i, v in enumerate(flows))

    def slope(r: float) -> float:
        return math.fsum(-i * v / (1 + r) ** (i + 1) for i, v in enumerate(flows))

    rate = _settled(npv, slope, g, 50)
    return NUM if rate <= -1 else rate


def _dated_flows(values: Any, dates: Any) -> tuple[list[float], list[float]]:
    amounts, days = area(values), area(dates)
    if amounts.height * amounts.width != days.height * days.width:
        raise Raised(NUM)
    flows: list[float] = []
    when: list[float] = []
    for v, d in zip(amounts.cells(), days.cells(), strict=True):
        for x in (v, d):
            if isinstance(x, CellError):
                raise Raised(x)
        if not is_number(v) or not is_number(d):
            raise Raised(VALUE)
        if d < 0:
            raise Raised(NUM)
        flows.append(float(v))
        when.append(float(math.floor(d)))
    if not flows:
        raise Raised(NUM)
    if any(d < when[0] for d in when):
        raise Raised(NUM)
    return flows, [(d - when[0]) / 365 for d in when]


@register("XNPV", num_disputed=True)
def _xnpv(rate: Any, values: Any, dates: Any) -> Any:
    r = num(rate)
    flows, years = _dated_flows(values, dates)
    if r <= -1:
        raise Uncomputable("XNPV with a rate of -1 or below: Excel and LibreOffice answer differently")
    return _finite(math.fsum(v / _growth(r, t) for v, t in zip(flows, years, strict=True)))


@register("XIRR", num_disputed=True)
def _xirr(values: Any, dates: Any, guess: Any = MISSING) -> Any:
    flows, years = _dated_flows(values, dates)
    g = num(guess, 0.1)
    if not any(v > 0 for v in flows) or not any(v < 0 for v in flows):
        return NUM

    def npv(r: float) -> float:
        return math.fsum(v / (1 + r) ** t for v, t in zip(flows, years, strict=True))

    def slope(r: float) -> float:
        return math.fsum(-t * v / (1 + r) ** (t + 1) for v, t in zip(flows, years, strict=True))

    rate = _settled(npv, slope, g, 100)
    return NUM if rate <= -1 else rate


@register("MIRR", num_disputed=True)
def _mirr(values: Any, finance_rate: Any, reinvest_rate: Any) -> Any:
    flows = _cash(values)
    f, r = num(finance_rate), num(reinvest_rate)
    n = len(flows)
    if n < 2:
        raise Uncomputable("MIRR of fewer than two flows: #DIV/0! in Excel, #VALUE! in LibreOffice")
    negative = math.fsum(v / _growth(f, i) for i, v in enumerate(flows) if v < 0)
    positive = math.fsum(v * _growth(r, n - 1 - i) for i, v in enumerate(flows) if v > 0)
    if negative == 0 or positive == 0:
        raise Uncomputable("MIRR without both signs: Excel and LibreOffice answer differently")
    ratio = -positive / negative
    if ratio < 0:
        return NUM
    return _finite(ratio ** (1 / (n - 1)) - 1)


# -- rates ----------------------------------------------------------------------------------------


@register("EFFECT", num_disputed=True)
def _effect(nominal: Any, periods: Any) -> Any:
    r, n = num(nominal), integer(periods)
    if r == 0 and n >= 1:
        raise Uncomputable("EFFECT of 0: #NUM! in Excel, 0 in LibreOffice")
    if r <= 0 or n < 1:
        return NUM
    return _growth(r / n, n) - 1


@register("NOMINAL", num_disputed=True)
def _nominal(effective: Any, periods: Any) -> Any:
    r, n = num(effective), integer(periods)
    if r <= 0 or n < 1:
        return NUM
    return n * (_growth(r, 1 / n) - 1)


@register("RRI", num_disputed=True)
def _rri(periods: Any, pv: Any, fv: Any) -> Any:
    n, p, f = num(periods), num(pv), num(fv)
    if n <= 0:
        return NUM
    if p == 0:
        return NUM
    ratio = f / p
    if ratio < 0:
        return NUM
    return ratio ** (1 / n) - 1


@register("PDURATION", num_disputed=True)
def _pduration(rate: Any, pv: Any, fv: Any) -> Any:
    r, p, f = num(rate), num(pv), num(fv)
    if r <= 0 or p <= 0 or f <= 0:
        return NUM
    return (math.log(f) - math.log(p)) / math.log1p(r)


@register("FVSCHEDULE", num_disputed=True)
def _fvschedule(principal: Any, schedule: Any) -> Any:
    total = num(principal)
    for v, _in_area in cells((schedule,)):
        if isinstance(v, CellError):
            return v
        if v is None:
            continue
        if not is_number(v):
            return VALUE
        total *= 1 + float(v)
    return _finite(total)


# -- depreciation ---------------------------------------------------------------------------------


@register("SLN", num_disputed=True)
def _sln(cost: Any, salvage: Any, life: Any) -> Any:
    c, s, n = num(cost), num(salvage), num(life)
    if n == 0:
        return DIV0
    return (c - s) / n


@register("SYD", num_disputed=True)
def _syd(cost: Any, salvage: Any, life: Any, per: Any) -> Any:
    c, s, n, p = num(cost), num(salvage), num(life), num(per)
    if n <= 0 or p <= 0 or p > n:
        raise Uncomputable("SYD outside the asset's life: #NUM! in Excel, LibreOffice computes it")
    return (c - s) * (n - p + 1) * 2 / (n * (n + 1))


@register("DB", num_disputed=True)
def _db(cost: Any, salvage: Any, life: Any, period: Any, month: Any = MISSING) -> Any:
    c, s, n, p, m = num(cost), num(salvage), num(life), num(period), num(month, 12.0)
    if c == 0:
        raise Uncomputable("DB of a cost of 0: Excel and LibreOffice answer differently")
    if c < 0 or s < 0 or n <= 0 or p <= 0 or not 1 <= m <= 12:
        return NUM
    if not (n.is_integer() and p.is_integer() and m.is_integer()):
        raise Uncomputable("DB over fractional periods")
    life, per, months = int(n), int(p), int(m)
    if per > life + (0 if months == 12 else 1):
        raise Uncomputable("DB past the asset's life: #NUM! in Excel, 0 in LibreOffice")
    rate = round(1 - (s / c) ** (1 / life), 3)
    total = c * rate * months / 12
    if per == 1:
        return total
    for i in range(2, per + 1):
        share = (12 - months) / 12 if i == life + 1 else 1.0  # the last, partial year
        depreciation = (c - total) * rate * share
        if i == per:
            return depreciation
        total += depreciation
    return NUM


@register("DDB", num_disputed=True)
def _ddb(cost: Any, salvage: Any, life: Any, period: Any, factor: Any = MISSING) -> Any:
    c, s, n, p, f = num(cost), num(salvage), num(life), num(period), num(factor, 2.0)
    if c == 0:
        raise Uncomputable("DDB of a cost of 0: Excel and LibreOffice answer differently")
    if c < 0 or s < 0 or n <= 0 or p <= 0 or f <= 0 or p > n:
        return NUM
    if not p.is_integer():
        raise Uncomputable("DDB over a fractional period")
    total = 0.0
    depreciation = 0.0
    for _ in range(int(p)):
        depreciation = max(0.0, min((c - total) * f / n, c - s - total))
        total += depreciation
    return depreciation


# -- dollar fractions -----------------------------------------------------------------------------


def _fraction_base(arg: Any) -> int:
    f = integer(arg)
    if f < 0:
        raise Raised(NUM)
    if f == 0:
        raise Uncomputable("a fraction of 0: #DIV/0! in Excel, #VALUE! in LibreOffice")
    return f


@register("DOLLARDE", num_disputed=True)
def _dollarde(value: Any, fraction: Any) -> Any:
    v, f = num(value), _fraction_base(fraction)
    whole = math.trunc(v)
    digits = math.ceil(math.log10(f))
    return whole + (v - whole) * 10**digits / f


@register("DOLLARFR", num_disputed=True)
def _dollarfr(value: Any, fraction: Any) -> Any:
    v, f = num(value), _fraction_base(fraction)
    whole = math.trunc(v)
    digits = math.ceil(math.log10(f))
    return whole + (v - whole) * f / 10**digits
