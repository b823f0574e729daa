"""Text functions (CONCAT, LEFT, FIND, SUBSTITUTE, TEXT...), with Excel's rules."""

from __future__ import annotations

from typing import Any

from deskmcp.sheets.formulas.formatting import format_value
from deskmcp.sheets.formulas.functions.registry import (
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
    VALUE,
    CellError,
    Uncomputable,
    is_number,
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
