"""Statistics (STDEV, VAR, PERCENTILE, QUARTILE, MODE, CORREL, FORECAST...) and the probability
distributions (NORM.DIST, T.DIST, CHISQ.DIST, BINOM.DIST...), with Excel's rules.

The distributions rest on the regularized incomplete gamma and beta functions, computed here by
their series and continued fractions; an inverse (NORM.INV, T.INV...) is found by bisection on its
distribution to the last bit a double holds.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from statistics import NormalDist
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
)
from deskmcp.sheets.formulas.values import (
    DIV0,
    MISSING,
    NUM,
    CellError,
    Uncomputable,
    approx_equal,
    is_number,
    number,
    significant,
)

_STANDARD = NormalDist()


def _fail(error: CellError = NUM) -> Raised:
    return Raised(error)


# -- values as the A functions take them ---------------------------------------------------------


def _values_a(args: tuple[Any, ...]) -> list[float]:
    """AVERAGEA and its kind: in references text counts 0 and booleans 1 (blanks are skipped);
    typed arguments convert as in arithmetic."""
    out: list[float] = []
    for v, in_area in cells(args):
        if isinstance(v, CellError):
            raise Raised(v)
        if in_area:
            if v is None:
                continue
            if isinstance(v, bool):
                out.append(1.0 if v else 0.0)
            elif is_number(v):
                out.append(float(v))
            else:
                out.append(0.0)
            continue
        n = number(v)
        if isinstance(n, CellError):
            raise Raised(n)
        out.append(n)
    return out


def _mean(values: list[float]) -> float:
    return math.fsum(values) / len(values)


def _squares(values: list[float]) -> float:
    m = _mean(values)
    return math.fsum((v - m) ** 2 for v in values)


def _variance(values: list[float], sample: bool) -> float:
    if len(values) < (2 if sample else 1):
        raise Raised(DIV0)
    return _squares(values) / (len(values) - (1 if sample else 0))


@register("VAR", "VAR.S", num_disputed=True)
def _var(*args: Any) -> Any:
    return _variance(numbers(args), sample=True)


@register("VARP", "VAR.P", num_disputed=True)
def _varp(*args: Any) -> Any:
    return _variance(numbers(args), sample=False)


@register("STDEV", "STDEV.S", num_disputed=True)
def _stdev(*args: Any) -> Any:
    return math.sqrt(_variance(numbers(args), sample=True))


@register("STDEVP", "STDEV.P", num_disputed=True)
def _stdevp(*args: Any) -> Any:
    return math.sqrt(_variance(numbers(args), sample=False))


@register("VARA", num_disputed=True)
def _vara(*args: Any) -> Any:
    return _variance(_values_a(args), sample=True)


@register("VARPA", num_disputed=True)
def _varpa(*args: Any) -> Any:
    return _variance(_values_a(args), sample=False)


@register("STDEVA", num_disputed=True)
def _stdeva(*args: Any) -> Any:
    return math.sqrt(_variance(_values_a(args), sample=True))


@register("STDEVPA", num_disputed=True)
def _stdevpa(*args: Any) -> Any:
    return math.sqrt(_variance(_values_a(args), sample=False))


@register("AVERAGEA", num_disputed=True)
def _averagea(*args: Any) -> Any:
    values = _values_a(args)
    return _mean(values) if values else DIV0


@register("MAXA", num_disputed=True)
def _maxa(*args: Any) -> Any:
    return max(_values_a(args), default=0.0)


@register("MINA", num_disputed=True)
def _mina(*args: Any) -> Any:
    return min(_values_a(args), default=0.0)


@register("DEVSQ", num_disputed=True)
def _devsq(*args: Any) -> Any:
    values = numbers(args)
    if not values:
        raise Uncomputable("DEVSQ of no numbers: #NUM! in Excel, #DIV/0! in LibreOffice")
    return _squares(values)


@register("AVEDEV", num_disputed=True)
def _avedev(*args: Any) -> Any:
    values = numbers(args)
    if not values:
        return NUM
    m = _mean(values)
    return math.fsum(abs(v - m) for v in values) / len(values)


@register("GEOMEAN", num_disputed=True)
def _geomean(*args: Any) -> Any:
    values = numbers(args)
    if 0 in values:
        raise Uncomputable("GEOMEAN of a 0: #NUM! in Excel, 0 in LibreOffice")
    if not values or any(v <= 0 for v in values):
        return NUM
    return math.exp(math.fsum(math.log(v) for v in values) / len(values))


@register("HARMEAN", num_disputed=True)
def _harmean(*args: Any) -> Any:
    values = numbers(args)
    if not values or any(v <= 0 for v in values):
        return NUM
    return len(values) / math.fsum(1 / v for v in values)


@register("KURT", num_disputed=True)
def _kurt(*args: Any) -> Any:
    values = numbers(args)
    n = len(values)
    if n < 4:
        return DIV0
    s = math.sqrt(_variance(values, sample=True))
    if s == 0:
        return DIV0
    m = _mean(values)
    fourth = math.fsum(((v - m) / s) ** 4 for v in values)
    return n * (n + 1) / ((n - 1) * (n - 2) * (n - 3)) * fourth - 3 * (n - 1) ** 2 / ((n - 2) * (n - 3))


@register("SKEW", num_disputed=True)
def _skew(*args: Any) -> Any:
    values = numbers(args)
    n = len(values)
    if n < 3:
        return DIV0
    s = math.sqrt(_variance(values, sample=True))
    if s == 0:
        return DIV0
    m = _mean(values)
    return n / ((n - 1) * (n - 2)) * math.fsum(((v - m) / s) ** 3 for v in values)


@register("SKEW.P", num_disputed=True)
def _skew_p(*args: Any) -> Any:
    values = numbers(args)
    if not values:
        return DIV0
    s = math.sqrt(_variance(values, sample=False))
    if s == 0:
        return DIV0
    m = _mean(values)
    return math.fsum(((v - m) / s) ** 3 for v in values) / len(values)


@register("MODE", "MODE.SNGL", num_disputed=True)
def _mode(*args: Any) -> Any:
    values = numbers(args)
    counts: dict[float, int] = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    best = max(counts.values(), default=0)
    if best < 2:
        raise Uncomputable("MODE without a repeated number: #N/A in Excel, #VALUE! in LibreOffice")
    if sum(1 for c in counts.values() if c == best) > 1:
        raise Uncomputable("MODE with a tie: Excel takes the first, LibreOffice the smallest")
    return next(v for v in values if counts[v] == best)


@register("TRIMMEAN", num_disputed=True)
def _trimmean(values: Any, fraction: Any) -> Any:
    data = sorted(numbers((area(values),)))
    p = num(fraction)
    if not 0 <= p < 1 or not data:
        return NUM
    cut = math.floor(len(data) * p / 2)
    kept = data[cut : len(data) - cut]
    return _mean(kept)


# -- percentiles and ranks ------------------------------------------------------------------------


def _data(values: Any) -> list[float]:
    return sorted(numbers((area(values),)))


def _at_rank(data: list[float], rank: float) -> float:
    """The value at 0-based fractional `rank` of sorted data, interpolated."""
    low = math.floor(rank)
    if low + 1 >= len(data):
        return data[-1]
    return data[low] + (rank - low) * (data[low + 1] - data[low])


def _percentile_inc(data: list[float], k: float) -> float:
    if not data or not 0 <= k <= 1:
        raise _fail()
    return _at_rank(data, k * (len(data) - 1))


def _percentile_exc(data: list[float], k: float) -> float:
    n = len(data)
    rank = k * (n + 1)
    if not data or rank < 1 or rank > n or k <= 0 or k >= 1:
        raise _fail()
    return _at_rank(data, rank - 1)


@register("PERCENTILE", "PERCENTILE.INC", num_disputed=True)
def _percentile(values: Any, k: Any) -> Any:
    return _percentile_inc(_data(values), num(k))


@register("PERCENTILE.EXC", num_disputed=True)
def _percentile_exc_fn(values: Any, k: Any) -> Any:
    return _percentile_exc(_data(values), num(k))


@register("QUARTILE", "QUARTILE.INC", num_disputed=True)
def _quartile(values: Any, quart: Any) -> Any:
    q = integer(quart)
    if not 0 <= q <= 4:
        return NUM
    return _percentile_inc(_data(values), q / 4)


@register("QUARTILE.EXC", num_disputed=True)
def _quartile_exc(values: Any, quart: Any) -> Any:
    q = integer(quart)
    if not 1 <= q <= 3:
        return NUM
    return _percentile_exc(_data(values), q / 4)


def _percent_rank(values: Any, x: Any, digits: Any, exclusive: bool) -> Any:
    data, target, sig = _data(values), num(x), integer(digits, 3)
    if sig < 1 or not data:
        return NUM
    if target < data[0] or target > data[-1]:
        raise Uncomputable("PERCENTRANK of a value outside the data: #N/A in Excel, #VALUE! in LibreOffice")
    n = len(data)

    def position(v: float) -> float:
        below = sum(1 for d in data if d < v)
        return (below + 1) / (n + 1) if exclusive else (below / (n - 1) if n > 1 else 1.0)

    if any(d == target for d in data):
        result = position(target)
    else:
        upper = next(i for i, d in enumerate(data) if d > target)
        lo, hi = data[upper - 1], data[upper]
        p_lo, p_hi = position(lo), position(hi)
        result = p_lo + (target - lo) / (hi - lo) * (p_hi - p_lo)
    scale = 10**sig
    shown = math.floor(significant(result * scale))
    if shown != math.floor(significant(result * scale) + 0.5):
        raise Uncomputable("PERCENTRANK's last digit: Excel truncates, LibreOffice rounds")
    return shown / scale


@register("PERCENTRANK", "PERCENTRANK.INC", num_disputed=True)
def _percentrank(values: Any, x: Any, digits: Any = MISSING) -> Any:
    return _percent_rank(values, x, digits, exclusive=False)


@register("PERCENTRANK.EXC", num_disputed=True)
def _percentrank_exc(values: Any, x: Any, digits: Any = MISSING) -> Any:
    return _percent_rank(values, x, digits, exclusive=True)


@register("RANK.AVG", num_disputed=True)
def _rank_avg(value: Any, ref: Any, order: Any = MISSING) -> Any:
    n = num(value)
    block = list(area(ref).cells())
    if any(isinstance(v, CellError) for v in block):
        raise Uncomputable("RANK over a range holding an error: LibreOffice gives the error")
    data = [float(v) for v in block if is_number(v)]
    same = sum(1 for v in data if approx_equal(v, n))
    if not same:
        raise Uncomputable("RANK of a number not in the list: #N/A in Excel, #VALUE! in LibreOffice")
    ascending = flag(order, False)
    before = sum(1 for v in data if not approx_equal(v, n) and (v < n if ascending else v > n))
    return before + (same + 1) / 2


# -- two samples ----------------------------------------------------------------------------------


def _paired(ys: Any, xs: Any, least: int = 2) -> tuple[list[float], list[float]]:
    """The pairs where both values are numbers; fewer than `least` are flagged (Excel answers
    #DIV/0!, LibreOffice #VALUE!)."""
    a, b = area(ys), area(xs)
    if a.height * a.width != b.height * b.width:
        raise Uncomputable("samples of different sizes: #N/A in Excel, #VALUE! in LibreOffice")
    left: list[float] = []
    right: list[float] = []
    for y, x in zip(a.cells(), b.cells(), strict=True):
        for v in (y, x):
            if isinstance(v, CellError):
                raise Raised(v)
        if is_number(y) and is_number(x):
            left.append(float(y))
            right.append(float(x))
    if len(left) < least:
        raise Uncomputable("too few pairs of numbers: #DIV/0! in Excel, #VALUE! in LibreOffice")
    return left, right


def _co_moments(ys: list[float], xs: list[float]) -> tuple[float, float, float]:
    """Sums of squares of x, of y, and of their products, about the means."""
    my, mx = _mean(ys), _mean(xs)
    sxx = math.fsum((x - mx) ** 2 for x in xs)
    syy = math.fsum((y - my) ** 2 for y in ys)
    sxy = math.fsum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    return sxx, syy, sxy


@register("COVAR", "COVARIANCE.P", num_disputed=True)
def _covar(a: Any, b: Any) -> Any:
    ys, xs = _paired(a, b, least=1)
    return _co_moments(ys, xs)[2] / len(ys)


@register("COVARIANCE.S", num_disputed=True)
def _covariance_s(a: Any, b: Any) -> Any:
    ys, xs = _paired(a, b)
    if len(ys) < 2:
        return DIV0
    return _co_moments(ys, xs)[2] / (len(ys) - 1)


@register("CORREL", "PEARSON", num_disputed=True)
def _correl(a: Any, b: Any) -> Any:
    ys, xs = _paired(a, b)
    if len(ys) < 2:
        return DIV0
    sxx, syy, sxy = _co_moments(ys, xs)
    if sxx == 0 or syy == 0:
        return DIV0
    return sxy / math.sqrt(sxx * syy)


@register("RSQ", num_disputed=True)
def _rsq(known_y: Any, known_x: Any) -> Any:
    ys, xs = _paired(known_y, known_x)
    if len(ys) < 2:
        return DIV0
    sxx, syy, sxy = _co_moments(ys, xs)
    if sxx == 0 or syy == 0:
        return DIV0
    return sxy * sxy / (sxx * syy)


def _line(known_y: Any, known_x: Any) -> tuple[float, float]:
    """The least-squares line's slope and intercept."""
    ys, xs = _paired(known_y, known_x)
    sxx, _syy, sxy = _co_moments(ys, xs)
    if sxx == 0:
        raise Raised(DIV0)
    slope = sxy / sxx
    return slope, _mean(ys) - slope * _mean(xs)


@register("SLOPE", num_disputed=True)
def _slope(known_y: Any, known_x: Any) -> Any:
    return _line(known_y, known_x)[0]


@register("INTERCEPT", num_disputed=True)
def _intercept(known_y: Any, known_x: Any) -> Any:
    return _line(known_y, known_x)[1]


@register("FORECAST", "FORECAST.LINEAR", num_disputed=True)
def _forecast(x: Any, known_y: Any, known_x: Any) -> Any:
    at = num(x)
    slope, intercept = _line(known_y, known_x)
    return intercept + slope * at


@register("STEYX", num_disputed=True)
def _steyx(known_y: Any, known_x: Any) -> Any:
    ys, xs = _paired(known_y, known_x, least=3)
    sxx, syy, sxy = _co_moments(ys, xs)
    if sxx == 0:
        return DIV0
    return math.sqrt((syy - sxy * sxy / sxx) / (len(ys) - 2))


# -- special functions ----------------------------------------------------------------------------


def _lower_gamma(a: float, x: float) -> float:
    """The regularized lower incomplete gamma P(a, x)."""
    if x <= 0:
        return 0.0
    log_front = a * math.log(x) - x - math.lgamma(a)
    if x < a + 1:
        term = total = 1 / a
        k = a
        for _ in range(10_000):
            k += 1
            term *= x / k
            total += term
            if abs(term) < abs(total) * 1e-17:
                break
        return min(1.0, total * math.exp(log_front))
    return max(0.0, 1 - _upper_gamma_fraction(a, x, log_front))


def _upper_gamma_fraction(a: float, x: float, log_front: float) -> float:
    """Q(a, x) by its continued fraction (modified Lentz), for x >= a + 1."""
    tiny = 1e-300
    b = x + 1 - a
    c = 1 / tiny
    d = 1 / b
    h = d
    for i in range(1, 10_000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        delta = d * c
        h *= delta
        if abs(delta - 1) < 1e-16:
            break
    return math.exp(log_front) * h


def _upper_gamma(a: float, x: float) -> float:
    if x <= 0:
        return 1.0
    if x < a + 1:
        return 1 - _lower_gamma(a, x)
    return _upper_gamma_fraction(a, x, a * math.log(x) - x - math.lgamma(a))


def _beta_fraction(a: float, b: float, x: float) -> float:
    tiny = 1e-300
    c = 1.0
    d = 1 - (a + b) * x / (a + 1)
    d = 1 / (tiny if abs(d) < tiny else d)
    h = d
    for m in range(1, 10_000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((a + m2 - 1) * (a + m2))
        d = 1 + aa * d
        d = 1 / (tiny if abs(d) < tiny else d)
        c = 1 + aa / c
        c = tiny if abs(c) < tiny else c
        h *= d * c
        aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1))
        d = 1 + aa * d
        d = 1 / (tiny if abs(d) < tiny else d)
        c = 1 + aa / c
        c = tiny if abs(c) < tiny else c
        delta = d * c
        h *= delta
        if abs(delta - 1) < 1e-16:
            break
    return h


def _beta_inc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta I_x(a, b)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1) / (a + b + 2):
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1 - math.exp(log_front) * _beta_fraction(b, a, 1 - x) / b


def _inverse(cdf: Callable[[float], float], p: float, low: float, high: float) -> float:
    """The x in [low, high] (widened while needed) where the increasing `cdf` reaches `p`."""
    while cdf(high) < p:
        low, high = high, high * 2 if high > 0 else 1.0
        if high > 1e300:
            raise Raised(NUM)
    for _ in range(2000):
        mid = (low + high) / 2
        if mid in (low, high):
            break
        if cdf(mid) < p:
            low = mid
        else:
            high = mid
    return (low + high) / 2


# -- the normal family ----------------------------------------------------------------------------


def _positive(arg: Any) -> float:
    v = num(arg)
    if v <= 0:
        raise _fail()
    return v


def _above_zero(arg: Any) -> float:
    v = num(arg)
    if v <= 0:
        raise Uncomputable("a distribution below its range: #NUM! in Excel, 0 in LibreOffice")
    return v


def _probability(arg: Any) -> float:
    p = num(arg)
    if not 0 < p < 1:
        raise _fail()
    return p


def _normal(x: float, mean: float, sd: float, cumulative: bool) -> float:
    z = (x - mean) / sd
    if cumulative:
        return 0.5 * math.erfc(-z / math.sqrt(2))
    return math.exp(-z * z / 2) / (sd * math.sqrt(2 * math.pi))


@register("NORM.DIST", num_disputed=True)
def _norm_dist(x: Any, mean: Any, sd: Any, cumulative: Any) -> Any:
    return _normal(num(x), num(mean), _positive(sd), flag(cumulative, True))


@register("NORMDIST", num_disputed=True)
def _normdist(x: Any, mean: Any, sd: Any, cumulative: Any) -> Any:
    return _normal(num(x), num(mean), _positive(sd), flag(cumulative, True))


@register("NORM.INV", "NORMINV", num_disputed=True)
def _norm_inv(p: Any, mean: Any, sd: Any) -> Any:
    q, m, s = _probability(p), num(mean), _positive(sd)
    return NormalDist(m, s).inv_cdf(q)


@register("NORM.S.DIST", num_disputed=True)
def _norm_s_dist(z: Any, cumulative: Any) -> Any:
    return _normal(num(z), 0.0, 1.0, flag(cumulative, True))


@register("NORMSDIST", num_disputed=True)
def _normsdist(z: Any) -> Any:
    return _normal(num(z), 0.0, 1.0, True)


@register("NORM.S.INV", "NORMSINV", num_disputed=True)
def _norm_s_inv(p: Any) -> Any:
    return _STANDARD.inv_cdf(_probability(p))


@register("STANDARDIZE", num_disputed=True)
def _standardize(x: Any, mean: Any, sd: Any) -> Any:
    if num(sd) == 0:
        raise Uncomputable("STANDARDIZE with a deviation of 0: #NUM! in Excel, #DIV/0! in LibreOffice")
    return (num(x) - num(mean)) / _positive(sd)


@register("GAUSS", num_disputed=True)
def _gauss(z: Any) -> Any:
    return 0.5 * math.erf(num(z) / math.sqrt(2))


@register("PHI", num_disputed=True)
def _phi(x: Any) -> Any:
    return _normal(num(x), 0.0, 1.0, False)


@register("CONFIDENCE", "CONFIDENCE.NORM", num_disputed=True)
def _confidence(alpha: Any, sd: Any, size: Any) -> Any:
    a, s, n = _probability(alpha), _positive(sd), integer(size)
    if n < 1:
        return NUM
    return _STANDARD.inv_cdf(1 - a / 2) * s / math.sqrt(n)


@register("LOGNORM.DIST", num_disputed=True)
def _lognorm_dist(x: Any, mean: Any, sd: Any, cumulative: Any) -> Any:
    v, m, s = _above_zero(x), num(mean), _positive(sd)
    if flag(cumulative, True):
        return _normal(math.log(v), m, s, True)
    return _normal(math.log(v), m, s, False) / v


@register("LOGNORMDIST", num_disputed=True)
def _lognormdist(x: Any, mean: Any, sd: Any) -> Any:
    return _normal(math.log(_above_zero(x)), num(mean), _positive(sd), True)


@register("LOGNORM.INV", "LOGINV", num_disputed=True)
def _lognorm_inv(p: Any, mean: Any, sd: Any) -> Any:
    q, m, s = _probability(p), num(mean), _positive(sd)
    return math.exp(NormalDist(m, s).inv_cdf(q))


@register("FISHER", num_disputed=True)
def _fisher(x: Any) -> Any:
    v = num(x)
    return NUM if abs(v) >= 1 else math.atanh(v)


@register("FISHERINV", num_disputed=True)
def _fisherinv(y: Any) -> Any:
    return math.tanh(num(y))


# -- other continuous distributions ---------------------------------------------------------------


def _exponential(x: float, rate: float, cumulative: bool) -> float:
    if x < 0 and rate > 0:
        raise Uncomputable("a distribution below its range: #NUM! in Excel, 0 in LibreOffice")
    if x < 0 or rate <= 0:
        raise _fail()
    return -math.expm1(-rate * x) if cumulative else rate * math.exp(-rate * x)


@register("EXPON.DIST", "EXPONDIST", num_disputed=True)
def _expon_dist(x: Any, rate: Any, cumulative: Any) -> Any:
    return _exponential(num(x), num(rate), flag(cumulative, True))


def _weibull(x: float, shape: float, scale: float, cumulative: bool) -> float:
    if x < 0 or shape <= 0 or scale <= 0:
        raise _fail()
    if cumulative:
        return -math.expm1(-((x / scale) ** shape))
    return shape / scale**shape * x ** (shape - 1) * math.exp(-((x / scale) ** shape))


@register("WEIBULL.DIST", "WEIBULL", num_disputed=True)
def _weibull_dist(x: Any, shape: Any, scale: Any, cumulative: Any) -> Any:
    return _weibull(num(x), num(shape), num(scale), flag(cumulative, True))


def _gamma_dist(x: float, shape: float, scale: float, cumulative: bool) -> float:
    if x < 0:
        raise Uncomputable("a distribution below its range: #NUM! in Excel, 0 in LibreOffice")
    if shape <= 0 or scale <= 0:
        raise _fail()
    if cumulative:
        return _lower_gamma(shape, x / scale)
    if x == 0:
        if shape == 1:
            return 1 / scale
        if shape > 1:
            return 0.0
        raise _fail()
    return math.exp((shape - 1) * math.log(x) - x / scale - math.lgamma(shape) - shape * math.log(scale))


@register("GAMMA.DIST", "GAMMADIST", num_disputed=True)
def _gamma_dist_fn(x: Any, shape: Any, scale: Any, cumulative: Any) -> Any:
    return _gamma_dist(num(x), num(shape), num(scale), flag(cumulative, True))


@register("GAMMA.INV", "GAMMAINV", num_disputed=True)
def _gamma_inv(p: Any, shape: Any, scale: Any) -> Any:
    q, a, b = num(p), _positive(shape), _positive(scale)
    if not 0 <= q < 1:
        return NUM
    if q == 0:
        return 0.0
    return _inverse(lambda x: _lower_gamma(a, x / b), q, 0.0, a * b + 1)


@register("GAMMA", num_disputed=True)
def _gamma(x: Any) -> Any:
    v = num(x)
    if v <= 0 and v.is_integer():
        return NUM
    try:
        result = math.gamma(v)
    except OverflowError:
        return NUM
    return result if math.isfinite(result) else NUM


@register("GAMMALN", "GAMMALN.PRECISE", num_disputed=True)
def _gammaln(x: Any) -> Any:
    return math.lgamma(_positive(x))


def _degrees_of_freedom(arg: Any) -> float:
    df = float(math.trunc(num(arg)))
    if df < 1 or df > 1e10:
        raise _fail()
    return df


def _chisq_cdf(x: float, df: float) -> float:
    return _lower_gamma(df / 2, x / 2)


@register("CHISQ.DIST", num_disputed=True)
def _chisq_dist(x: Any, df: Any, cumulative: Any) -> Any:
    v, k = num(x), _degrees_of_freedom(df)
    if v < 0:
        return NUM
    if flag(cumulative, True):
        return _chisq_cdf(v, k)
    return _gamma_dist(v, k / 2, 2.0, False)


@register("CHISQ.DIST.RT", "CHIDIST", num_disputed=True)
def _chisq_dist_rt(x: Any, df: Any) -> Any:
    v, k = num(x), _degrees_of_freedom(df)
    if v < 0:
        raise Uncomputable("a distribution below its range: #NUM! in Excel, 1 or #VALUE! in LibreOffice")
    return _upper_gamma(k / 2, v / 2)


@register("CHISQ.INV", num_disputed=True)
def _chisq_inv(p: Any, df: Any) -> Any:
    q, k = num(p), _degrees_of_freedom(df)
    if not 0 <= q < 1:
        return NUM
    return 0.0 if q == 0 else _inverse(lambda x: _chisq_cdf(x, k), q, 0.0, k + 1)


@register("CHISQ.INV.RT", "CHIINV", num_disputed=True)
def _chisq_inv_rt(p: Any, df: Any) -> Any:
    q, k = num(p), _degrees_of_freedom(df)
    if not 0 < q <= 1:
        return NUM
    return 0.0 if q == 1 else _inverse(lambda x: -_upper_gamma(k / 2, x / 2), -q, 0.0, k + 1)


def _t_cdf(t: float, df: float) -> float:
    tail = 0.5 * _beta_inc(df / 2, 0.5, df / (df + t * t))
    return 1 - tail if t > 0 else tail


def _t_pdf(t: float, df: float) -> float:
    log = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return math.exp(log - (df + 1) / 2 * math.log1p(t * t / df))


@register("T.DIST", num_disputed=True)
def _t_dist(x: Any, df: Any, cumulative: Any) -> Any:
    t, k = num(x), _degrees_of_freedom(df)
    return _t_cdf(t, k) if flag(cumulative, True) else _t_pdf(t, k)


@register("T.DIST.RT", num_disputed=True)
def _t_dist_rt(x: Any, df: Any) -> Any:
    t, k = num(x), _degrees_of_freedom(df)
    return _t_cdf(-t, k)


@register("T.DIST.2T", num_disputed=True)
def _t_dist_2t(x: Any, df: Any) -> Any:
    t, k = num(x), _degrees_of_freedom(df)
    if t < 0:
        return NUM
    return _beta_inc(k / 2, 0.5, k / (k + t * t))


@register("TDIST", num_disputed=True)
def _tdist(x: Any, df: Any, tails: Any) -> Any:
    t, k, n = num(x), _degrees_of_freedom(df), integer(tails)
    if t < 0 or n not in (1, 2):
        return NUM
    return n * _t_cdf(-t, k)


def _t_inverse(p: float, df: float) -> float:
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -_t_inverse(1 - p, df)
    return _inverse(lambda t: _t_cdf(t, df), p, 0.0, 1.0)


@register("T.INV", num_disputed=True)
def _t_inv(p: Any, df: Any) -> Any:
    return _t_inverse(_probability(p), _degrees_of_freedom(df))


@register("T.INV.2T", "TINV", num_disputed=True)
def _t_inv_2t(p: Any, df: Any) -> Any:
    q, k = num(p), _degrees_of_freedom(df)
    if not 0 < q <= 1:
        return NUM
    return _t_inverse(1 - q / 2, k)


@register("CONFIDENCE.T", num_disputed=True)
def _confidence_t(alpha: Any, sd: Any, size: Any) -> Any:
    a, s, n = _probability(alpha), _positive(sd), integer(size)
    if n < 2:
        return DIV0 if n == 1 else NUM
    return _t_inverse(1 - a / 2, n - 1) * s / math.sqrt(n)


def _f_cdf(x: float, d1: float, d2: float) -> float:
    return _beta_inc(d1 / 2, d2 / 2, d1 * x / (d1 * x + d2)) if x > 0 else 0.0


@register("F.DIST", num_disputed=True)
def _f_dist(x: Any, df1: Any, df2: Any, cumulative: Any) -> Any:
    v, a, b = num(x), _degrees_of_freedom(df1), _degrees_of_freedom(df2)
    if v < 0:
        return NUM
    if flag(cumulative, True):
        return _f_cdf(v, a, b)
    if v == 0:
        return 0.0 if a > 2 else (1.0 if a == 2 else NUM)
    log = (
        0.5 * (a * math.log(a * v) + b * math.log(b) - (a + b) * math.log(a * v + b))
        - math.log(v)
        - (math.lgamma(a / 2) + math.lgamma(b / 2) - math.lgamma((a + b) / 2))
    )
    return math.exp(log)


@register("F.DIST.RT", "FDIST", num_disputed=True)
def _f_dist_rt(x: Any, df1: Any, df2: Any) -> Any:
    v, a, b = num(x), _degrees_of_freedom(df1), _degrees_of_freedom(df2)
    if v < 0:
        return NUM
    return _beta_inc(b / 2, a / 2, b / (b + a * v)) if v > 0 else 1.0


@register("F.INV", num_disputed=True)
def _f_inv(p: Any, df1: Any, df2: Any) -> Any:
    q, a, b = num(p), _degrees_of_freedom(df1), _degrees_of_freedom(df2)
    if q == 0:
        raise Uncomputable("F.INV of 0: 0 in Excel, #VALUE! in LibreOffice")
    if not 0 < q < 1:
        return NUM
    return _inverse(lambda x: _f_cdf(x, a, b), q, 0.0, 2.0)


@register("F.INV.RT", "FINV", num_disputed=True)
def _f_inv_rt(p: Any, df1: Any, df2: Any) -> Any:
    q, a, b = num(p), _degrees_of_freedom(df1), _degrees_of_freedom(df2)
    if not 0 < q <= 1:
        return NUM
    return 0.0 if q == 1 else _inverse(lambda x: _f_cdf(x, a, b), 1 - q, 0.0, 2.0)


def _beta_bounds(x: float, low: Any, high: Any) -> float:
    a, b = num(low, 0.0), num(high, 1.0)
    if a < b and (x < a or x > b):
        raise Uncomputable("a distribution outside its range: #NUM! in Excel, 0 or #VALUE! in LibreOffice")
    if x < a or x > b or a == b:
        raise _fail()
    return (x - a) / (b - a)


@register("BETA.DIST", num_disputed=True)
def _beta_dist(x: Any, alpha: Any, beta: Any, cumulative: Any, low: Any = MISSING, high: Any = MISSING) -> Any:
    v, a, b = num(x), _positive(alpha), _positive(beta)
    u = _beta_bounds(v, low, high)
    if flag(cumulative, True):
        return _beta_inc(a, b, u)
    if u in (0.0, 1.0):
        raise Uncomputable("the beta density at its bounds")
    width = num(high, 1.0) - num(low, 0.0)
    log = (a - 1) * math.log(u) + (b - 1) * math.log1p(-u)
    return math.exp(log + math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)) / width


@register("BETADIST", num_disputed=True)
def _betadist(x: Any, alpha: Any, beta: Any, low: Any = MISSING, high: Any = MISSING) -> Any:
    v, a, b = num(x), _positive(alpha), _positive(beta)
    return _beta_inc(a, b, _beta_bounds(v, low, high))


@register("BETA.INV", "BETAINV", num_disputed=True)
def _beta_inv(p: Any, alpha: Any, beta: Any, low: Any = MISSING, high: Any = MISSING) -> Any:
    q, a, b = num(p), _positive(alpha), _positive(beta)
    lo, hi = num(low, 0.0), num(high, 1.0)
    if q in (0.0, 1.0):
        raise Uncomputable("BETA.INV of 0 or 1: #NUM! in Excel, a bound in LibreOffice")
    if not 0 < q < 1 or lo >= hi:
        return NUM
    u = _inverse(lambda x: _beta_inc(a, b, x), q, 0.0, 1.0)
    return lo + u * (hi - lo)


# -- discrete distributions -----------------------------------------------------------------------


def _binomial_pmf(k: int, n: int, p: float) -> float:
    if p in (0.0, 1.0):
        return 1.0 if k == (0 if p == 0 else n) else 0.0
    log = math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
    return math.exp(log + k * math.log(p) + (n - k) * math.log1p(-p))


def _binomial(successes: Any, trials: Any, probability: Any, cumulative: bool) -> float:
    k, n, p = math.trunc(num(successes)), math.trunc(num(trials)), num(probability)
    if k < 0 or k > n or not 0 <= p <= 1:
        raise _fail()
    if not cumulative:
        return _binomial_pmf(k, n, p)
    return min(1.0, math.fsum(_binomial_pmf(i, n, p) for i in range(k + 1)))


@register("BINOM.DIST", "BINOMDIST", num_disputed=True)
def _binom_dist(successes: Any, trials: Any, probability: Any, cumulative: Any) -> Any:
    return _binomial(successes, trials, probability, flag(cumulative, True))


@register("BINOM.INV", "CRITBINOM", num_disputed=True)
def _binom_inv(trials: Any, probability: Any, alpha: Any) -> Any:
    n, p, a = math.trunc(num(trials)), num(probability), num(alpha)
    if n < 0 or not 0 <= p <= 1 or not 0 <= a <= 1:
        return NUM
    total = 0.0
    for k in range(n + 1):
        total += _binomial_pmf(k, n, p)
        if total >= a or approx_equal(total, a):
            return float(k)
    return float(n)


@register("NEGBINOM.DIST", num_disputed=True)
def _negbinom_dist(failures: Any, successes: Any, probability: Any, cumulative: Any) -> Any:
    f, s, p = math.trunc(num(failures)), math.trunc(num(successes)), num(probability)
    if f < 0 or s < 1 or not 0 < p < 1:
        return NUM
    if flag(cumulative, True):
        return _beta_inc(s, f + 1, p)
    log = math.lgamma(f + s) - math.lgamma(f + 1) - math.lgamma(s)
    return math.exp(log + s * math.log(p) + f * math.log1p(-p))


@register("NEGBINOMDIST", num_disputed=True)
def _negbinomdist(failures: Any, successes: Any, probability: Any) -> Any:
    fails = num(failures)
    if fails < 0:
        raise Uncomputable("NEGBINOMDIST of negative failures: #NUM! in Excel, LibreOffice rounds them")
    f, s, p = math.trunc(fails), math.trunc(num(successes)), num(probability)
    if s < 1 or not 0 < p < 1:
        return NUM
    log = math.lgamma(f + s) - math.lgamma(f + 1) - math.lgamma(s)
    return math.exp(log + s * math.log(p) + f * math.log1p(-p))


def _hypergeometric(k: int, n: int, hits: int, size: int) -> float:
    return math.comb(hits, k) * math.comb(size - hits, n - k) / math.comb(size, n)


def _hypgeom(sample_s: Any, sample: Any, population_s: Any, population: Any) -> tuple[int, int, int, int]:
    k, n = math.trunc(num(sample_s)), math.trunc(num(sample))
    hits, size = math.trunc(num(population_s)), math.trunc(num(population))
    if k < 0 or n <= 0 or hits <= 0 or size <= 0 or n > size or hits > size or k > min(n, hits):
        raise _fail()
    if k < max(0, n - size + hits):
        raise _fail()
    return k, n, hits, size


@register("HYPGEOM.DIST", num_disputed=True)
def _hypgeom_dist(sample_s: Any, sample: Any, population_s: Any, population: Any, cumulative: Any) -> Any:
    k, n, hits, size = _hypgeom(sample_s, sample, population_s, population)
    if flag(cumulative, True):
        return math.fsum(_hypergeometric(i, n, hits, size) for i in range(max(0, n - size + hits), k + 1))
    return _hypergeometric(k, n, hits, size)


@register("HYPGEOMDIST", num_disputed=True)
def _hypgeomdist(sample_s: Any, sample: Any, population_s: Any, population: Any) -> Any:
    return _hypergeometric(*_hypgeom(sample_s, sample, population_s, population))


def _poisson(x: Any, mean: Any, cumulative: bool) -> float:
    k, m = math.trunc(num(x)), num(mean)
    if k < 0 or m < 0:
        raise _fail()
    if m == 0:
        raise Uncomputable("POISSON with a mean of 0: Excel computes it, LibreOffice answers #VALUE!")
    if cumulative:
        return _upper_gamma(k + 1, m)
    return math.exp(k * math.log(m) - m - math.lgamma(k + 1))


@register("POISSON.DIST", "POISSON", num_disputed=True)
def _poisson_dist(x: Any, mean: Any, cumulative: Any) -> Any:
    return _poisson(x, mean, flag(cumulative, True))


# -- tests ----------------------------------------------------------------------------------------


@register("Z.TEST", "ZTEST", num_disputed=True)
def _z_test(values: Any, x: Any, sigma: Any = MISSING) -> Any:
    data = numbers((area(values),))
    if not data:
        raise Uncomputable("Z.TEST of no numbers: #N/A in Excel, #DIV/0! in LibreOffice")
    mu = num(x)
    if sigma is MISSING:
        if len(data) < 2:
            return DIV0
        s = math.sqrt(_variance(data, sample=True))
    else:
        s = num(sigma)
    if s <= 0:
        return DIV0 if s == 0 else NUM
    z = (_mean(data) - mu) / (s / math.sqrt(len(data)))
    return 0.5 * math.erfc(z / math.sqrt(2))
