"""Text functions (CONCAT, LEFT, FIND, SUBSTITUTE, TEXT...), with Excel's rules."""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from deskmcp.sheets.formulas.formatting import format_value
from deskmcp.sheets.formulas.functions.registry import (
    Raised,
    cells,
    flag,
    integer,
    num,
    register,
    txt,
    value_of,
)
from deskmcp.sheets.formulas.values import (
    MISSING,
    NUM,
    VALUE,
    Area,
    CellError,
    Uncomputable,
    is_number,
    significant,
    text,
    wildcard_pattern,
)

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


# -- more text ------------------------------------------------------------------------------------


@register("UNICHAR")
def _unichar(code: Any) -> Any:
    n = integer(code)
    if n == 0:
        raise Uncomputable("UNICHAR(0): #VALUE! in Excel, a NUL character in LibreOffice")
    if not 1 <= n <= 0x10FFFF or 0xD800 <= n <= 0xDFFF:
        return VALUE
    return chr(n)


@register("UNICODE")
def _unicode(value: Any) -> Any:
    if value_of(value) is None:
        raise Uncomputable("UNICODE of a blank cell: Excel and LibreOffice answer differently")
    s = txt(value)
    return VALUE if not s else float(ord(s[0]))


@register("T")
def _t(value: Any) -> Any:
    v = value.rows[0][0] if isinstance(value, Area) and value.height == 1 and value.width == 1 else value_of(value)
    if isinstance(v, CellError):
        return v
    return v if isinstance(v, str) else ""


def _grouped(n: float, decimals: int, commas: bool) -> str:
    if not math.isfinite(n):
        raise Raised(NUM)
    exact = Decimal(repr(significant(n)))
    rounded = exact.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP) if decimals > -16 else Decimal(0)
    shown = max(decimals, 0)
    body = f"{abs(rounded):,.{shown}f}" if commas else f"{abs(rounded):.{shown}f}"
    return ("-" if rounded < 0 else "") + body


def _places(arg: Any) -> int:
    n = num(arg, 2.0)
    if n < 0 and not n.is_integer():
        raise Uncomputable("a negative fraction of decimals: Excel truncates it, LibreOffice rounds it down")
    return math.trunc(n)


@register("FIXED")
def _fixed(value: Any, decimals: Any = MISSING, no_commas: Any = MISSING) -> Any:
    d = _places(decimals)
    if d > 127:
        return VALUE
    return _grouped(num(value), d, not flag(no_commas, False))


@register("DOLLAR")
def _dollar(value: Any, decimals: Any = MISSING) -> Any:
    d = _places(decimals)
    if d > 127:
        return VALUE
    shown = _grouped(num(value), d, True)
    if shown.startswith("-"):
        raise Uncomputable("DOLLAR of a negative amount: its sign depends on the locale")
    return "$" + shown


@register("NUMBERVALUE")
def _numbervalue(value: Any, decimal: Any = MISSING, group: Any = MISSING) -> Any:
    if not isinstance(value_of(value), str):
        raise Uncomputable("NUMBERVALUE of a number or a blank: Excel reads it, LibreOffice answers #VALUE!")
    s, d, g = txt(value), txt(decimal, "."), txt(group, ",")
    if len(d) != 1 or len(g) != 1 or d.isdigit() or g.isdigit():
        raise Uncomputable("NUMBERVALUE's separators other than one character: Excel takes the first")
    if "%" in s:
        raise Uncomputable("NUMBERVALUE of a percentage: Excel reads it, LibreOffice answers #VALUE!")
    d, g = d[0], g[0]
    if d == g:
        return VALUE
    s = "".join(s.split())
    if not s:
        return 0.0
    percent = len(s) - len(s.rstrip("%"))
    s = s.rstrip("%")
    head, sep, tail = s.partition(d)
    if d in tail or (sep and g in tail):
        return VALUE
    head = head.replace(g, "")
    try:
        n = float(f"{head}.{tail}" if sep else head)
    except ValueError:
        return VALUE
    return n / 100**percent
