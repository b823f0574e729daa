"""More math (EXP, LN, LOG, MROUND, GCD, FACT, COMBIN, the trigonometry, SUMSQ, RAND...) and the
engineering functions people use in sheets (base conversions, bit operations, ERF, DELTA), with
Excel's rules."""

from __future__ import annotations

import math
import random
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from deskmcp.sheets.formulas.functions.registry import (
    Raised,
    area,
    cells,
    integer,
    num,
    numbers,
    register,
    txt,
    value_of,
)
from deskmcp.sheets.formulas.values import (
    MISSING,
    NUM,
    VALUE,
    CellError,
    Uncomputable,
    is_number,
    significant,
)


def _finite(x: float) -> float:
    if not math.isfinite(x):
        raise Raised(NUM)
    return x


# -- exponents and logarithms ---------------------------------------------------------------------


@register("EXP")
def _exp(value: Any) -> Any:
    try:
        return _finite(math.exp(num(value)))
    except OverflowError:
        return NUM


@register("LN", num_disputed=True)
def _ln(value: Any) -> Any:
    x = num(value)
    return NUM if x <= 0 else math.log(x)


@register("LOG10", num_disputed=True)
def _log10(value: Any) -> Any:
    x = num(value)
    return NUM if x <= 0 else math.log10(x)


@register("LOG", num_disputed=True)
def _log(value: Any, base: Any = MISSING) -> Any:
    x, b = num(value), num(base, 10.0)
    if x <= 0 or b <= 0:
        return NUM
    if b == 1:
        raise Uncomputable("LOG to base 1: #DIV/0! in Excel, #VALUE! in LibreOffice")
    return math.log10(x) if b == 10 else math.log(x) / math.log(b)


@register("SQRTPI", num_disputed=True)
def _sqrtpi(value: Any) -> Any:
    x = num(value)
    return NUM if x < 0 else math.sqrt(x * math.pi)


# -- rounding to steps ----------------------------------------------------------------------------


def _half_up(x: float) -> float:
    return float(Decimal(repr(significant(x))).quantize(Decimal(1), rounding=ROUND_HALF_UP))


@register("MROUND", num_disputed=True)
def _mround(value: Any, multiple: Any) -> Any:
    n, m = num(value), num(multiple)
    if m == 0 or n == 0:
        return 0.0
    if (n > 0) != (m > 0):
        raise Uncomputable("MROUND of a number and a multiple of different signs: #NUM! in Excel, LibreOffice rounds")
    return _half_up(n / m) * m


def _precise(value: Any, step: Any, up: bool) -> float:
    n, s = num(value), abs(num(step, 1.0))
    if s == 0 or n == 0:
        return 0.0
    ratio = significant(n / s)
    return (math.ceil(ratio) if up else math.floor(ratio)) * s + 0.0


@register("CEILING.PRECISE", "ISO.CEILING", num_disputed=True)
def _ceiling_precise(value: Any, step: Any = MISSING) -> Any:
    return _precise(value, step, up=True)


@register("FLOOR.PRECISE", num_disputed=True)
def _floor_precise(value: Any, step: Any = MISSING) -> Any:
    return _precise(value, step, up=False)


def _away(value: Any, odd: bool) -> float:
    n = num(value)
    size = math.ceil(significant(abs(n)))
    if size % 2 != (1 if odd else 0):
        size += 1
    return math.copysign(float(size), n) if n else (1.0 if odd else 0.0)


@register("EVEN", num_disputed=True)
def _even(value: Any) -> Any:
    return _away(value, odd=False)


@register("ODD", num_disputed=True)
def _odd(value: Any) -> Any:
    return _away(value, odd=True)


@register("QUOTIENT", num_disputed=True)
def _quotient(a: Any, b: Any) -> Any:
    x, y = num(a), num(b)
    if y == 0:
        raise Uncomputable("QUOTIENT by 0: #DIV/0! in Excel, #VALUE! in LibreOffice")
    return float(math.trunc(significant(x / y)))


# -- whole numbers --------------------------------------------------------------------------------


def _naturals(args: tuple[Any, ...]) -> list[int]:
    """GCD's and LCM's arguments: every one a number (a blank cell is 0, text is #VALUE!)."""
    out: list[int] = []
    for v, in_area in cells(args):
        if isinstance(v, CellError):
            raise Raised(v)
        if in_area and isinstance(v, bool):
            raise Uncomputable("a boolean cell: LibreOffice takes it as a number")
        if in_area and isinstance(v, str):
            raise Raised(VALUE)
        n = 0.0 if v is None else num(v)
        if n < 0:
            raise Raised(NUM)
        out.append(math.trunc(n))
    return out


@register("GCD", num_disputed=True)
def _gcd(*args: Any) -> Any:
    return float(math.gcd(*_naturals(args)))


@register("LCM", num_disputed=True)
def _lcm(*args: Any) -> Any:
    values = _naturals(args)
    if 0 in values:
        return 0.0
    return float(math.lcm(*values))


def _count(arg: Any) -> int:
    n = num(arg)
    if n < 0:
        raise Raised(NUM)
    return math.trunc(n)


@register("FACT", num_disputed=True)
def _fact(value: Any) -> Any:
    n = _count(value)
    return NUM if n > 170 else float(math.factorial(n))


@register("FACTDOUBLE", num_disputed=True)
def _factdouble(value: Any) -> Any:
    n = _count(value)
    if n > 300:
        return NUM
    return float(math.prod(range(n, 0, -2)))


@register("COMBIN", num_disputed=True)
def _combin(n: Any, k: Any) -> Any:
    a, b = _count(n), _count(k)
    return NUM if b > a else _finite(float(math.comb(a, b)))


@register("COMBINA", num_disputed=True)
def _combina(n: Any, k: Any) -> Any:
    a, b = _count(n), _count(k)
    if a == 0 and b == 0:
        return 1.0
    if a == 0:
        return NUM
    return _finite(float(math.comb(a + b - 1, b)))


@register("PERMUT", num_disputed=True)
def _permut(n: Any, k: Any) -> Any:
    a, b = _count(n), _count(k)
    return NUM if b > a else _finite(float(math.perm(a, b)))


@register("PERMUTATIONA", num_disputed=True)
def _permutationa(n: Any, k: Any) -> Any:
    a, b = _count(n), _count(k)
    return _finite(float(a) ** b)


@register("MULTINOMIAL", num_disputed=True)
def _multinomial(*args: Any) -> Any:
    parts = _naturals(args)
    total = math.factorial(sum(parts))
    for p in parts:
        total //= math.factorial(p)
    return _finite(float(total))


# -- sums of squares ------------------------------------------------------------------------------


@register("SUMSQ", num_disputed=True)
def _sumsq(*args: Any) -> Any:
    return math.fsum(v * v for v in numbers(args))


def _pairs(xs: Any, ys: Any) -> list[tuple[float, float]]:
    a, b = area(xs), area(ys)
    if a.height * a.width != b.height * b.width:
        raise Uncomputable("arrays of different sizes: #N/A in Excel, #VALUE! in LibreOffice")
    for block in (a, b):
        only = block.rows[0][0] if block.height * block.width == 1 else 0.0
        if not is_number(only) and not isinstance(only, CellError):
            raise Uncomputable("one cell that is not a number: LibreOffice takes it as a value, Excel skips it")
    out = []
    for x, y in zip(a.cells(), b.cells(), strict=True):
        for v in (x, y):
            if isinstance(v, CellError):
                raise Raised(v)
        if is_number(x) and is_number(y):
            out.append((float(x), float(y)))
    return out


@register("SUMX2MY2", arrays=True, num_disputed=True)
def _sumx2my2(xs: Any, ys: Any) -> Any:
    return math.fsum(x * x - y * y for x, y in _pairs(xs, ys))


@register("SUMX2PY2", arrays=True, num_disputed=True)
def _sumx2py2(xs: Any, ys: Any) -> Any:
    return math.fsum(x * x + y * y for x, y in _pairs(xs, ys))


@register("SUMXMY2", arrays=True, num_disputed=True)
def _sumxmy2(xs: Any, ys: Any) -> Any:
    return math.fsum((x - y) ** 2 for x, y in _pairs(xs, ys))


# -- trigonometry ---------------------------------------------------------------------------------


def _angle(arg: Any) -> float:
    x = num(arg)
    if abs(x) >= 2**27:
        raise Raised(NUM)
    return x


@register("DEGREES", num_disputed=True)
def _degrees(value: Any) -> Any:
    return math.degrees(num(value))


@register("RADIANS", num_disputed=True)
def _radians(value: Any) -> Any:
    return math.radians(num(value))


@register("SIN", num_disputed=True)
def _sin(value: Any) -> Any:
    return math.sin(_angle(value))


@register("COS", num_disputed=True)
def _cos(value: Any) -> Any:
    return math.cos(_angle(value))


@register("TAN", num_disputed=True)
def _tan(value: Any) -> Any:
    return math.tan(_angle(value))


def _reciprocal(x: float) -> float:
    if x == 0:
        raise Uncomputable("a cotangent or cosecant of 0: #DIV/0! in Excel, #NUM! in LibreOffice")
    return 1 / x


@register("COT", num_disputed=True)
def _cot(value: Any) -> Any:
    return _reciprocal(math.tan(_angle(value)))


@register("CSC", num_disputed=True)
def _csc(value: Any) -> Any:
    return _reciprocal(math.sin(_angle(value)))


@register("SEC", num_disputed=True)
def _sec(value: Any) -> Any:
    return _reciprocal(math.cos(_angle(value)))


@register("ASIN")
def _asin(value: Any) -> Any:
    x = num(value)
    return NUM if abs(x) > 1 else math.asin(x)


@register("ACOS")
def _acos(value: Any) -> Any:
    x = num(value)
    return NUM if abs(x) > 1 else math.acos(x)


@register("ATAN", num_disputed=True)
def _atan(value: Any) -> Any:
    return math.atan(num(value))


@register("ATAN2", num_disputed=True)
def _atan2(x: Any, y: Any) -> Any:
    a, b = num(x), num(y)
    if a == 0 and b == 0:
        raise Uncomputable("ATAN2(0,0): #DIV/0! in Excel, 0 in LibreOffice")
    return math.atan2(b, a)


@register("ACOT", num_disputed=True)
def _acot(value: Any) -> Any:
    return math.pi / 2 - math.atan(num(value))


def _hyperbolic(fn: Any, arg: Any) -> float:
    try:
        return _finite(fn(num(arg)))
    except OverflowError as exc:
        raise Raised(NUM) from exc


@register("SINH", num_disputed=True)
def _sinh(value: Any) -> Any:
    return _hyperbolic(math.sinh, value)


@register("COSH", num_disputed=True)
def _cosh(value: Any) -> Any:
    return _hyperbolic(math.cosh, value)


@register("TANH", num_disputed=True)
def _tanh(value: Any) -> Any:
    return math.tanh(num(value))


@register("COTH", num_disputed=True)
def _coth(value: Any) -> Any:
    return _reciprocal(math.tanh(num(value)))


@register("CSCH", num_disputed=True)
def _csch(value: Any) -> Any:
    return _reciprocal(_hyperbolic(math.sinh, value))


@register("SECH", num_disputed=True)
def _sech(value: Any) -> Any:
    return _reciprocal(_hyperbolic(math.cosh, value))


@register("ASINH", num_disputed=True)
def _asinh(value: Any) -> Any:
    return math.asinh(num(value))


@register("ACOSH", num_disputed=True)
def _acosh(value: Any) -> Any:
    x = num(value)
    return NUM if x < 1 else math.acosh(x)


@register("ATANH", num_disputed=True)
def _atanh(value: Any) -> Any:
    x = num(value)
    return NUM if abs(x) >= 1 else math.atanh(x)


@register("ACOTH", num_disputed=True)
def _acoth(value: Any) -> Any:
    x = num(value)
    return NUM if abs(x) <= 1 else 0.5 * math.log((x + 1) / (x - 1))


# -- random numbers (volatile: computed again at every write) -------------------------------------


@register("RAND", num_disputed=True)
def _rand() -> Any:
    return random.random()


@register("RANDBETWEEN", num_disputed=True)
def _randbetween(bottom: Any, top: Any) -> Any:
    low, high = math.ceil(num(bottom)), math.floor(num(top))
    if low > high:
        return NUM
    return float(random.randint(low, high))


# -- numbers written in other bases ---------------------------------------------------------------

_DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"


@register("BASE", num_disputed=True)
def _base(value: Any, radix: Any, length: Any = MISSING) -> Any:
    n, r, width = num(value), integer(radix), integer(length, 0)
    if n < 0 or n >= 2**53 or not 2 <= r <= 36 or not 0 <= width <= 255:
        return NUM
    k = math.trunc(n)
    out = ""
    while k:
        k, d = divmod(k, r)
        out = _DIGITS[d] + out
    return (out or "0").rjust(width, "0")


@register("DECIMAL", num_disputed=True)
def _decimal(value: Any, radix: Any) -> Any:
    s, r = txt(value).strip().upper(), integer(radix)
    if not 2 <= r <= 36 or len(s) > 255:
        return NUM
    if r == 16 and s.startswith("0X"):
        s = s[2:]
    if r == 2 and s.endswith("B"):
        s = s[:-1]
    if r == 16 and s.endswith("H"):
        s = s[:-1]
    total = 0
    for ch in s:
        d = _DIGITS.find(ch)
        if not 0 <= d < r:
            return NUM
        total = total * r + d
    return _finite(float(total))


_BITS = {2: 10, 8: 30, 16: 40}  # a 10-digit number in two's complement: the bits it holds


def _from_base(value: Any, radix: int) -> int:
    v = value_of(value)
    if isinstance(v, bool):
        raise Raised(VALUE)
    s = txt(v).strip().upper() if v is not None else ""
    if isinstance(v, int | float):
        if v < 0 or not float(v).is_integer():
            raise Raised(NUM)
        s = str(int(v))
    if len(s) > 10:
        raise Raised(NUM)
    total = 0
    for ch in s:
        d = _DIGITS.find(ch)
        if not 0 <= d < radix:
            raise Raised(NUM)
        total = total * radix + d
    bits = _BITS[radix]
    if len(s) == 10 and total >= 1 << (bits - 1):
        total -= 1 << bits
    return total


def _to_base(n: int, radix: int, places: Any) -> Any:
    bits = _BITS[radix]
    if not -(1 << (bits - 1)) <= n < 1 << (bits - 1):
        return NUM
    if n < 0:
        return _render(n + (1 << bits), radix).rjust(10, _DIGITS[radix - 1])
    out = _render(n, radix)
    if places is MISSING:
        return out
    width = integer(places)
    if width < len(out) or width > 10:
        return NUM
    return out.rjust(width, "0")


def _render(n: int, radix: int) -> str:
    out = ""
    while n:
        n, d = divmod(n, radix)
        out = _DIGITS[d] + out
    return out or "0"


def _decimal_in(value: Any) -> int:
    n = num(value)
    if n < 0 and not n.is_integer():
        raise Uncomputable("a negative fraction: Excel truncates it, LibreOffice rounds it down")
    return math.trunc(n)


def _to_decimal(radix: int) -> Any:
    def run(value: Any) -> Any:
        return float(_from_base(value, radix))

    return run


def _from_decimal(radix: int) -> Any:
    def run(value: Any, places: Any = MISSING) -> Any:
        return _to_base(_decimal_in(value), radix, places)

    return run


def _across(radix: int, other: int) -> Any:
    def run(value: Any, places: Any = MISSING) -> Any:
        return _to_base(_from_base(value, radix), other, places)

    return run


def _conversions() -> None:
    names = {2: "BIN", 8: "OCT", 16: "HEX"}
    for radix, name in names.items():
        register(f"{name}2DEC", num_disputed=True)(_to_decimal(radix))
        register(f"DEC2{name}", num_disputed=True)(_from_decimal(radix))
        for other, other_name in names.items():
            if other != radix:
                register(f"{name}2{other_name}", num_disputed=True)(_across(radix, other))


_conversions()


def _bits(arg: Any) -> int:
    n = num(arg)
    if n < 0 or n >= 2**48:
        raise Raised(NUM)
    if not n.is_integer():
        raise Uncomputable("a bit operation on a fraction: #NUM! in Excel, LibreOffice truncates it")
    return int(n)


@register("BITAND", num_disputed=True)
def _bitand(a: Any, b: Any) -> Any:
    return float(_bits(a) & _bits(b))


@register("BITOR", num_disputed=True)
def _bitor(a: Any, b: Any) -> Any:
    return float(_bits(a) | _bits(b))


@register("BITXOR", num_disputed=True)
def _bitxor(a: Any, b: Any) -> Any:
    return float(_bits(a) ^ _bits(b))


def _shift(value: Any, amount: Any, left: bool) -> Any:
    n, amount_n = _bits(value), num(amount)
    if not amount_n.is_integer():
        raise Uncomputable("a shift by a fraction: Excel and LibreOffice round it differently")
    s = int(amount_n)
    if abs(s) > 53:
        return NUM
    s = s if left else -s
    out = n << s if s >= 0 else n >> -s
    return NUM if out >= 2**48 else float(out)


@register("BITLSHIFT", num_disputed=True)
def _bitlshift(value: Any, amount: Any) -> Any:
    return _shift(value, amount, left=True)


@register("BITRSHIFT", num_disputed=True)
def _bitrshift(value: Any, amount: Any) -> Any:
    return _shift(value, amount, left=False)


@register("DELTA", num_disputed=True)
def _delta(a: Any, b: Any = MISSING) -> Any:
    return 1.0 if num(a) == num(b, 0.0) else 0.0


@register("GESTEP", num_disputed=True)
def _gestep(value: Any, step: Any = MISSING) -> Any:
    return 1.0 if num(value) >= num(step, 0.0) else 0.0


@register("ERF", num_disputed=True)
def _erf(lower: Any, upper: Any = MISSING) -> Any:
    a = num(lower)
    if upper is MISSING:
        return math.erf(a)
    return math.erf(num(upper)) - math.erf(a)


@register("ERF.PRECISE", num_disputed=True)
def _erf_precise(value: Any) -> Any:
    return math.erf(num(value))


@register("ERFC", "ERFC.PRECISE", num_disputed=True)
def _erfc(value: Any) -> Any:
    return math.erfc(num(value))


# -- Roman numerals -------------------------------------------------------------------------------

_ROMAN = [
    (1000, "M"),
    (900, "CM"),
    (500, "D"),
    (400, "CD"),
    (100, "C"),
    (90, "XC"),
    (50, "L"),
    (40, "XL"),
    (10, "X"),
    (9, "IX"),
    (5, "V"),
    (4, "IV"),
    (1, "I"),
]


@register("ROMAN", num_disputed=True)
def _roman(value: Any, form: Any = MISSING) -> Any:
    n = math.trunc(num(value))
    if form is not MISSING and integer(form) != 0:
        raise Uncomputable("ROMAN's shortened forms")
    if not 0 <= n <= 3999:
        return VALUE
    out = ""
    for size, letters in _ROMAN:
        while n >= size:
            out += letters
            n -= size
    return out


@register("ARABIC", num_disputed=True)
def _arabic(value: Any) -> Any:
    s = txt(value).strip().upper()
    sign = 1
    if s.startswith("-"):
        raise Uncomputable("ARABIC of a negative numeral: Excel reads it, LibreOffice answers #VALUE!")
    worth = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}
    if any(ch not in worth for ch in s):
        return VALUE
    total = 0
    for i, ch in enumerate(s):
        v = worth[ch]
        total += -v if i + 1 < len(s) and worth[s[i + 1]] > v else v
    return float(sign * total)


def _all_numbers(arg: Any) -> list[float]:
    out: list[float] = []
    for v, _in_area in cells((arg,)):
        if isinstance(v, CellError):
            raise Raised(v)
        if not is_number(v):
            raise Raised(VALUE)
        out.append(float(v))
    return out


@register("SERIESSUM", num_disputed=True)
def _seriessum(x: Any, n: Any, m: Any, coefficients: Any) -> Any:
    base, first, step = num(x), num(n), num(m)
    if base == 0:
        raise Uncomputable("SERIESSUM at 0: Excel and LibreOffice take 0 to the power 0 differently")
    terms = _all_numbers(coefficients)
    try:
        return _finite(math.fsum(c * base ** (first + i * step) for i, c in enumerate(terms)))
    except (OverflowError, ZeroDivisionError):
        return NUM
