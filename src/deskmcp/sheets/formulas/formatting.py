"""TEXT(value, format): the number and date formats people write, as Excel renders them (en-US).

Covered: `General`, `@`, digit patterns (`0`, `0.00`, `#,##0.00`, `0%`, `$#,##0`, literal text in
quotes or after `\\`), up to three `;` sections, and dates and times (`yyyy-mm-dd`, `d mmm yyyy`,
`dddd`, `hh:mm:ss`, `h:mm AM/PM`...). Other formats (fractions, exponents, colours, conditions,
elapsed `[h]`) raise `Uncomputable` rather than render something else.
"""

from __future__ import annotations

import math
import re
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from deskmcp.sheets.formulas.values import Uncomputable, number_text, parse_number, significant, to_date

_DATE_TOKEN = re.compile(
    r'"[^"]*"|\\.|yyyy|yy|mmmmm|mmmm|mmm|mm|m|dddd|ddd|dd|d|hh|h|ss|s|am/pm|a/p|[^ymdhs"\\]',
    re.IGNORECASE,
)
_DAY_NAMES = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_MONTH_NAMES = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]


def _sections(fmt: str) -> list[str]:
    out, current, quoted, i = [], "", False, 0
    while i < len(fmt):
        ch = fmt[i]
        if ch == '"':
            quoted = not quoted
        elif ch == "\\" and i + 1 < len(fmt):
            current += fmt[i : i + 2]
            i += 2
            continue
        elif ch == ";" and not quoted:
            out.append(current)
            current = ""
            i += 1
            continue
        current += ch
        i += 1
    out.append(current)
    return out


def _unquoted(section: str) -> str:
    return re.sub(r'"[^"]*"|\\.', "", section)


def format_value(value: Any, fmt: str) -> str:
    """`value` rendered with the number format `fmt`, as TEXT gives it."""
    if value is None:
        value = 0.0
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        n = parse_number(value)
        if n is None:
            return _text_section(value, fmt)
        value = n
    n = float(value)
    sections = _sections(fmt)
    if len(sections) > 4:
        raise Uncomputable(f"the format {fmt!r}")
    if n < 0 and len(sections) >= 2:
        section, n, sign = sections[1], -n, ""
    elif n == 0 and len(sections) >= 3:
        section, sign = sections[2], ""
    else:
        section = sections[0]
        sign = "-" if n < 0 else ""
        n = abs(n)
    bare = _unquoted(section)
    if "[" in bare or "?" in bare or ("/" in bare and not _is_date(bare)):
        raise Uncomputable(f"the format {fmt!r}")
    if bare.strip().lower() == "general":
        return sign + number_text(n)
    if bare.strip() == "@":
        return sign + number_text(n)
    if _is_date(bare):
        return sign + _date_text(n, section)
    return sign + _number_text(n, section)


def _text_section(value: str, fmt: str) -> str:
    sections = _sections(fmt)
    if len(sections) >= 4:
        return _literal(sections[3]).replace("@", value)
    if "@" in _unquoted(sections[0]):
        return _literal(sections[0]).replace("@", value)
    return value


def _literal(section: str) -> str:
    return re.sub(r'"([^"]*)"|\\(.)', lambda m: m.group(1) if m.group(1) is not None else m.group(2), section)


def _is_date(bare: str) -> bool:
    return re.search(r"[ymdhs]", bare, re.IGNORECASE) is not None and re.search(r"[0#]", bare) is None


def _number_text(n: float, section: str) -> str:
    # Split the section into literal prefix, digit pattern and literal suffix.
    parts: list[tuple[str, str]] = []  # (kind, text): "lit" or "pat"
    i = 0
    while i < len(section):
        ch = section[i]
        if ch == '"':
            end = section.find('"', i + 1)
            end = len(section) if end < 0 else end
            parts.append(("lit", section[i + 1 : end]))
            i = end + 1
        elif ch == "\\" and i + 1 < len(section):
            parts.append(("lit", section[i + 1]))
            i += 2
        elif ch in "0#,.":
            parts.append(("pat", ch))
            i += 1
        elif ch == "%":
            parts.append(("pct", ch))
            i += 1
        elif ch in "$-+()/: €£¥":
            parts.append(("lit", ch))
            i += 1
        else:
            raise Uncomputable(f"the format {section!r}")
    kinds = "".join("p" if k == "pat" else "l" for k, _t in parts)
    if re.fullmatch(r"l*p*l*", kinds) is None:
        raise Uncomputable(f"the format {section!r}")
    pattern = "".join(t for k, t in parts if k == "pat")
    n *= 100 ** sum(1 for k, _t in parts if k == "pct")
    int_pattern, _, dec_pattern = pattern.partition(".")
    if int_pattern.endswith(","):
        raise Uncomputable(f"the format {section!r} (scaling by thousands)")
    grouped = "," in int_pattern
    min_int = int_pattern.count("0")
    decimals = len(dec_pattern.replace(",", ""))
    min_decimals = len(dec_pattern.rstrip("#").replace(",", "")) if "0" in dec_pattern else 0
    rounded = Decimal(repr(significant(n))).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)
    whole, _, fraction = f"{rounded:f}".partition(".")
    fraction = fraction.ljust(decimals, "0")
    while len(fraction) > min_decimals and fraction.endswith("0"):
        fraction = fraction[:-1]
    if whole == "0" and min_int == 0:
        whole = ""
    whole = whole.rjust(min_int, "0")
    if grouped and whole:
        whole = f"{int(whole):,}".rjust(min_int, "0")
    body = whole + ("." + fraction if "." in pattern else "")
    prefix, suffix, seen = "", "", False
    for kind, t in parts:
        if kind == "pat":
            seen = True
        elif seen:
            suffix += t
        else:
            prefix += t
    return prefix + body + suffix


def _date_text(n: float, section: str) -> str:
    day = to_date(n) if n >= 1 else None
    seconds = round((n - math.floor(n)) * 86400)
    if seconds >= 86400:
        raise Uncomputable("a time that rounds to the next day")
    hour, minute, second = seconds // 3600, seconds // 60 % 60, seconds % 60
    tokens = _DATE_TOKEN.findall(section)
    twelve = any(t.lower() in ("am/pm", "a/p") for t in tokens)
    out: list[str] = []
    for i, token in enumerate(tokens):
        low = token.lower()
        if low.startswith("m") and low in ("m", "mm") and _is_minute(tokens, i):
            out.append(f"{minute:0{len(low)}d}")
            continue
        if low[0] in "ymd" and low not in ("am/pm", "a/p"):
            if day is None:
                raise Uncomputable("a date format for a time without a date")
            out.append(_date_part(low, day))
        elif low in ("h", "hh"):
            h = hour % 12 or 12 if twelve else hour
            out.append(f"{h:0{len(low)}d}")
        elif low in ("s", "ss"):
            out.append(f"{second:0{len(low)}d}")
        elif low == "am/pm":
            am = hour < 12
            out.append(("AM" if am else "PM") if token[0].isupper() else ("am" if am else "pm"))
        elif low == "a/p":
            out.append("A" if hour < 12 else "P")
        else:
            out.append(_literal(token))
    return "".join(out)


def _is_minute(tokens: list[str], i: int) -> bool:
    """`m` means minutes right after an hour or right before seconds."""
    for j in range(i - 1, -1, -1):
        low = tokens[j].lower()
        if low[0] in "ymdhs" and low not in ("am/pm", "a/p") and low[0] != '"':
            if low[0] == "h":
                return True
            break
    for j in range(i + 1, len(tokens)):
        low = tokens[j].lower()
        if low[0] in "ymdhs" and low not in ("am/pm", "a/p") and low[0] != '"':
            return low[0] == "s"
    return False


def _date_part(token: str, day: Any) -> str:
    if token == "yyyy":
        return f"{day.year:04d}"
    if token == "yy":
        return f"{day.year % 100:02d}"
    if token in ("m", "mm"):
        return f"{day.month:0{len(token)}d}"
    if token == "mmm":
        return _MONTH_NAMES[day.month - 1][:3]
    if token == "mmmm":
        return _MONTH_NAMES[day.month - 1]
    if token == "mmmmm":
        return _MONTH_NAMES[day.month - 1][0]
    if token in ("d", "dd"):
        return f"{day.day:0{len(token)}d}"
    if token == "ddd":
        return _DAY_NAMES[day.weekday()][:3]
    if token == "dddd":
        return _DAY_NAMES[day.weekday()]
    raise Uncomputable(f"the date format part {token!r}")
