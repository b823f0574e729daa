"""The `<c>` elements of a worksheet part as bytes: reading cached values, building new cells, and
the text a number and the serial and format a date are stored with (by both ways of saving).

Excel, LibreOffice and openpyxl all write cells as `<c r="B7" ...>` with double-quoted
attributes and no namespace prefix; `plain(data)` says whether a part is in that form, and the
byte-level readers here are only used on parts that are (others go through ElementTree).
"""

from __future__ import annotations

import datetime as dt
import html
import re
from collections.abc import Callable, Collection
from typing import IO, Any

from deskmcp.sheets.a1 import column_index
from deskmcp.sheets.formulas.values import CellError, moment_serial

CELL = re.compile(rb"<c\b([^>]*?)(?:/>|>(.*?)</c>)", re.S)
ATTR = re.compile(rb'([\w:]+)="([^"]*)"')
REF = re.compile(rb'\br="([A-Z]{1,3})([0-9]+)"')
FORMULA = re.compile(rb"<f\b([^>]*?)(?:/>|>(.*?)</f>)", re.S)
VALUE = re.compile(rb"<v>(.*?)</v>", re.S)
INLINE = re.compile(rb"<is>(.*?)</is>", re.S)
TEXT = re.compile(rb"<t\b[^>]*?(?:/>|>(.*?)</t>)", re.S)
PHONETIC = re.compile(rb"<rPh\b.*?</rPh>", re.S)


# What makes python-calamine refuse a whole worksheet part (the read answers parse_error), which
# a patch would carry into the file it writes
_UNDEFINED_ENTITY = re.compile(rb"&(?!(?:lt|gt|amp|quot|apos|#[0-9]+|#x[0-9A-Fa-f]+);)[^;&<\s]{0,30};?")
_ROW_ZERO = re.compile(rb'<row\b[^>]*?\sr="0+"')
_ROW_NUMBER = re.compile(rb'<row\b(?:[^>]*?\sr="([0-9]+)")?')
_STRING_ITEM = re.compile(rb"<(?:\w+:)?si[\s>/]")
_NOT_PLAIN_CELL = re.compile(rb'<c(?:>|/>| (?!r="))')
"""A cell tag without attributes, or whose first is not `r="` (`<c r='A1'`, `<c s="1" r="A1"`)."""


def unreadable(
    data: bytes | bytearray,
    strings: Callable[[], int],
    rows: Collection[int] | None = None,
    disorder: int | None = None,
) -> str | None:
    """Why the reader refuses this worksheet part, for the damage a write would carry along (an
    undefined entity, a row numbered 0, a row numbered twice or out of order, a shared string past
    the table; `strings()` gives the table's size, `rows` the row numbers and `disorder` the first
    row out of order when they are known); None when it has none of them."""
    if (m := _UNDEFINED_ENTITY.search(data)) is not None:
        return f"uses the undefined XML entity {bytes(m.group(0)).decode('utf-8', 'replace')!r}"
    if (0 in rows) if rows is not None else (_ROW_ZERO.search(data) is not None):
        return "numbers a row 0 (rows start at 1)"
    if rows is None:
        disorder = row_out_of_order(data)
    if disorder is not None:
        return (
            f"holds row {disorder} twice or out of order (rows are written once each, in order; Excel "
            "repairs such a file and a write could not tell which of the row's elements it changes)"
        )
    if b't="s"' in data:
        count = strings()
        # one pass that stops at the first index past the table, without reading every index
        past = re.search(rb't="s"[^>]*>\s*<v>\s*0*(' + _at_least(count) + rb")\s*</v>", data)
        if past is not None:
            return f"refers to shared string {int(past.group(1))}, but the shared strings part holds {count}"
    return None


def row_out_of_order(data: bytes | bytearray, start: int = 0, end: int | None = None) -> int | None:
    """The first row of a worksheet part numbered at or before the row preceding it (a duplicated
    `<row r="1">`), or None when every row comes after the one before."""
    last = 0
    for m in _ROW_NUMBER.finditer(data, start, len(data) if end is None else end):
        number = int(m.group(1)) if m.group(1) else last + 1
        if number <= last:
            return number
        last = number
    return None


def strings_unreadable(data: bytes | bytearray) -> str | None:
    """Why the reader refuses a shared strings part (it then refuses the whole workbook): an entity
    other than XML's own, which an entity declaration would expand (`&big;` of a billion laughs, or
    an external `SYSTEM` one); None when it has none."""
    if (m := _UNDEFINED_ENTITY.search(data)) is not None:
        return f"uses the XML entity {bytes(m.group(0)).decode('utf-8', 'replace')!r}, which is not expanded here"
    return None


def _at_least(n: int) -> bytes:
    """A regular expression matching the decimal numbers (no leading zeros) from `n` up."""
    digits = str(n)
    width = len(digits)
    alternatives = [f"[1-9][0-9]{{{width},}}", digits]  # more digits than n, or n itself
    for i, digit in enumerate(digits):  # as many digits: the same start, then a greater digit
        low = int(digit) + 1
        if low <= 9:
            alternatives.append(f"{digits[:i]}[{low}-9][0-9]{{{width - i - 1}}}")
    return "|".join(alternatives).encode("ascii")


def string_count(data: bytes) -> int:
    """The items of a shared strings part."""
    return len(_STRING_ITEM.findall(data))


def plain(data: bytes | bytearray) -> bool:
    """Every cell tag is `<c r="..."`, unprefixed, attributes double-quoted (one pass for the cell
    tags not so, one for a prefixed cell tag)."""
    return _NOT_PLAIN_CELL.search(data) is None and b":c " not in data


def number_text(value: float) -> str:
    """The text a cell stores for a number, whichever way the workbook is saved: the shortest text
    that reads back as exactly the same double (Python's `repr`; openpyxl's own `%.16g` loses the
    17th digit, 0.1+0.2 became 0.3), a whole number below 2**53 without a trailing `.0`."""
    number = float(value)
    return str(int(number)) if number.is_integer() and abs(number) < 2**53 else repr(number)


def date_format(serial: float) -> str:
    """The number format a date is stored with (with the time when it has one)."""
    return "yyyy-mm-dd" if float(serial).is_integer() else "yyyy-mm-dd hh:mm"


def date_cell(value: dt.date) -> tuple[float, str]:
    """The serial (days since 1899-12-30, the time of day as its fraction) and the number format a
    written date or date and time is stored with, whichever way the workbook is saved; a cell that
    already shows dates keeps its own format. Before 1 March 1900 the serial is Excel's, one less:
    Excel (and the reader, python-calamine) count a 29 February 1900 that never was."""
    serial = moment_serial(value)
    if 1 <= serial < 61:
        serial -= 1
    return serial, date_format(serial)


def attributes(raw: bytes) -> dict[bytes, bytes]:
    return dict(ATTR.findall(raw))


# Text in a cell (a value, a formula, a shared string) is OOXML's ST_Xstring: a character XML 1.0
# cannot hold is written `_xHHHH_` (its UTF-16 code), and text that already reads like such an
# escape gets its `_` escaped (`_x005F_`), so every text round-trips (ECMA-376 Part 1, 22.9.2.19).
_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_LOOKS_ESCAPED = re.compile("_(?=x[0-9A-Fa-f]{4}_)")
_ESCAPED = re.compile("_x([0-9A-Fa-f]{4})_")
SURROGATE = re.compile("[\ud800-\udfff]")
"""A lone surrogate: no character, and no encoding writes it."""
UNSTORABLE = re.compile("[\ud800-\udfff\ufffe\uffff]")
"""Characters an .xlsx cannot give back: Excel's escape of them is not read back as them
(python-calamine leaves `_xFFFE_` as text) and a lone surrogate is no character at all."""


def xstring(text: str) -> str:
    """`text` as an .xlsx stores it: XML-illegal characters as `_xHHHH_`, a literal `_xHHHH_` kept."""
    if "_x" in text:
        text = _LOOKS_ESCAPED.sub("_x005F_", text)
    return _XML_ILLEGAL.sub(lambda m: f"_x{ord(m.group(0)):04X}_", text)


def from_xstring(text: str) -> str:
    """The text an .xlsx cell stores (`xstring`'s escapes read back; as python-calamine reads them,
    an escape of a character no text can hold stays as it is)."""
    if "_x" not in text:
        return text

    def char(m: re.Match[str]) -> str:
        code = int(m.group(1), 16)
        return m.group(0) if 0xD800 <= code <= 0xDFFF or code in (0xFFFE, 0xFFFF) else chr(code)

    return _ESCAPED.sub(char, text)


def xml_text(text: str) -> str:
    """`text` as the content of an XML element of a cell: `xstring`, then `&`, `<`, `>` escaped."""
    return html.escape(xstring(text), quote=False)


def unescape(raw: bytes) -> str:
    return from_xstring(html.unescape(raw.decode("utf-8")))


def inline_text(inner: bytes) -> str:
    m = INLINE.search(inner)
    if m is None:
        return ""
    body = PHONETIC.sub(b"", m.group(1))
    return "".join(unescape(t.group(1) or b"") for t in TEXT.finditer(body))


def cached(kind: bytes, inner: bytes, shared: list[str] | None = None) -> Any:
    """The value a cell stores (for a formula, its cached result); None when it stores none.
    Numbers stay numbers (a date is its serial), errors are `CellError`."""
    if kind == b"inlineStr":
        return inline_text(inner)
    m = VALUE.search(inner)
    if m is None:
        return None
    text = m.group(1)
    if not text and kind != b"str":
        return None  # `<v></v>` (openpyxl with lxml writes a formula so): no value, not the text ""
    if kind == b"e":
        return CellError(unescape(text))
    if kind == b"b":
        return text.strip() == b"1"
    if kind == b"str":
        return unescape(text)
    if kind == b"s":
        if shared is None:
            return None
        try:
            return shared[int(text)]
        except (ValueError, IndexError):
            return None
    if kind == b"d":
        return unescape(text)
    try:
        return float(text)
    except ValueError:
        return unescape(text)


def formula_results(data: bytes) -> dict[tuple[int, int], Any]:
    """(row, column) -> the cached result of every formula cell of a plain worksheet part that
    stores one (absent: the cell has no cached result)."""
    out: dict[tuple[int, int], Any] = {}
    for m in CELL.finditer(data):
        inner = m.group(2)
        if not inner or b"<f" not in inner:
            continue
        ref = REF.search(m.group(1))
        if ref is None:
            continue
        kind = attributes(m.group(1)).get(b"t", b"n")
        value = cached(kind, inner)
        if value is not None:
            out[(int(ref.group(2)), column_index(ref.group(1).decode("ascii")))] = value
    return out


def errors_in(handle: IO[bytes], chunk: int = 1 << 22) -> dict[tuple[int, int], CellError]:
    """`error_cells` of a worksheet part read in chunks (memory stays at one chunk)."""
    out: dict[tuple[int, int], CellError] = {}
    tail = b""
    while True:
        block = handle.read(chunk)
        data = tail + block
        cut = data.rfind(b"<c ") if block else len(data)  # a cell may continue in the next chunk
        body, tail = (data[:cut], data[cut:]) if cut > 0 else (b"", data)
        out.update(error_cells(body))
        if not block:
            return out


def error_cells(data: bytes) -> dict[tuple[int, int], CellError]:
    """(row, column) -> the error every `t="e"` cell of a plain worksheet part stores."""
    out: dict[tuple[int, int], CellError] = {}
    if b't="e"' not in data:
        return out
    for m in CELL.finditer(data):
        if b't="e"' not in m.group(1):
            continue
        ref = REF.search(m.group(1))
        value = cached(b"e", m.group(2) or b"")
        if ref is not None and isinstance(value, CellError):
            out[(int(ref.group(2)), column_index(ref.group(1).decode("ascii")))] = value
    return out
