"""The cells of one xlsx worksheet part, streamed: how far they reach, and those of one window.

python-calamine builds a dense grid from the first to the last cell of a sheet: a sheet holding
A1 and one cell at XFD1048576 asks it for 17 billion cells (512 GB), and the allocation failure
aborts the whole process (no Python exception is raised). `extent` measures a sheet without
building anything, so the caller can tell a dense sheet (calamine's fast path) from a sparse one,
and `window` reads the cells of one rectangle of a sparse sheet, costing what the sheet holds and
what the window asks, never what its coordinates span.
"""

from __future__ import annotations

import datetime as dt
import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any
from xml.etree.ElementTree import Element, ParseError, XMLPullParser

from deskmcp.sheets.a1 import column_index, column_letters
from deskmcp.sheets.formulas.engine import CellError
from deskmcp.sheets.xlsx.cellxml import from_xstring

CHUNK = 1 << 20

_TAG = re.compile(rb"<(?:[A-Za-z_][\w.-]*:)?(c|row)(?=[\s/>])([^>]*)>")
_REF_ATTR = re.compile(rb"""(?:^|\s)r\s*=\s*["']\$?([A-Za-z]*)\$?([0-9]*)["']""")
_CELL_REF = re.compile(r"\$?([A-Za-z]{1,3})\$?([0-9]+)")


def _cell_position(element: Element, row: int, col: int) -> tuple[int, int]:
    """Where a `<c>` element stands: its `r` reference, else the column after the previous cell."""
    m = _CELL_REF.fullmatch(element.get("r") or "")
    return (int(m.group(2)), column_index(m.group(1))) if m else (row, col + 1)


@dataclass(frozen=True)
class Extent:
    """How far the cells of a sheet reach (1-based; 0 when it holds none) and how many it holds."""

    rows: int
    columns: int
    cells: int

    @property
    def area(self) -> int:
        """Cells of the dense grid from A1 to the farthest cell (what calamine would build)."""
        return self.rows * self.columns


# References are not trusted to be valid (XFD1048576 at most): any length is measured.
_ROW_DIGITS = {k: re.compile(rb'<c r="[A-Za-z]+([0-9]{%d})"' % k) for k in range(1, 8)}
_LONG_ROW = re.compile(rb'<c r="[A-Za-z]+([0-9]{8,})"')
_COLUMNS = re.compile(rb'<c r="([A-Za-z]+)[0-9]')
_BARE = re.compile(rb"<c/?>")
_PREFIXED = re.compile(rb":c[\s/>]")


def extent(handle: IO[bytes]) -> Extent:
    """Scan a worksheet part for its farthest row and column, without building its cells.

    The common form (`<c r="B7" ...>`, as Excel, LibreOffice and openpyxl write it) is measured
    with byte searches; anything else (prefixed tags, cells without `r`) by reading every tag.
    """
    rows = digits = cells = 0
    letters: set[bytes] = set()
    tail = b""
    while True:
        chunk = handle.read(CHUNK)
        data = tail + chunk
        cut = data.rfind(b"<") if chunk else len(data)  # a tag may continue in the next chunk
        body, tail = (data[:cut], data[cut:]) if cut > 0 else (b"", data)
        if body:
            refs = body.count(b'<c r="')
            if refs != body.count(b"<c ") or _BARE.search(body) or _PREFIXED.search(body):
                so_far = Extent(rows, max((column_index(c.decode("ascii")) for c in letters), default=0), cells)
                return _extent_by_tags(handle, [body, tail], so_far)
            cells += refs
            if refs:
                if long := _LONG_ROW.findall(body):
                    rows = max(rows, *map(int, long))
                    digits = 8
                for k in range(7, digits - 1, -1):
                    found = _ROW_DIGITS[k].findall(body)
                    if found:
                        rows = max(rows, int(max(found)))  # equal lengths: the text order is the number order
                        digits = k
                        break
                letters.update(_COLUMNS.findall(body))
        if not chunk:
            break
    columns = max((column_index(c.decode("ascii")) for c in letters), default=0)
    return Extent(rows, columns, cells)


def _extent_by_tags(handle: IO[bytes], read: list[bytes], so_far: Extent) -> Extent:
    """The extent of any well-formed worksheet: every row and cell tag, `r` or not, from where
    the byte searches stopped (`so_far` measured what came before `read`)."""
    max_row, max_col, cells = so_far.rows, so_far.columns, so_far.cells
    row, col = max_row, 0
    tail = b""
    pending = list(read)
    while True:
        chunk = pending.pop(0) if pending else handle.read(CHUNK)
        data = tail + chunk
        cut = data.rfind(b"<") if chunk else len(data)
        body, tail = (data[:cut], data[cut:]) if cut > 0 else (b"", data)
        for m in _TAG.finditer(body):
            ref = _REF_ATTR.search(m.group(2))
            if m.group(1) == b"row":
                row = int(ref.group(2)) if ref and ref.group(2) else row + 1
                col = 0
                continue
            if ref and ref.group(1) and ref.group(2):
                col = column_index(ref.group(1).decode("ascii"))
                row = int(ref.group(2))
            else:
                col += 1
            cells += 1
            max_row = max(max_row, row)
            max_col = max(max_col, col)
        if not chunk and not pending:
            return Extent(max_row, max_col, cells)


@dataclass
class Styles:
    """Which cell styles show a number as a date or a duration, and the workbook's date system."""

    dates: frozenset[int]
    durations: frozenset[int]
    epoch: dt.datetime


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _events(handle: IO[bytes]) -> Iterator[tuple[str, Element]]:
    """("start"|"end", element) of an XML stream, parsed as it is read."""
    parser = XMLPullParser(events=("start", "end"))
    while True:
        chunk = handle.read(64 * 1024)
        if not chunk:
            break
        parser.feed(chunk)
        yield from parser.read_events()  # type: ignore[misc]
    parser.close()
    yield from parser.read_events()  # type: ignore[misc]


def _text(element: Element) -> str:
    """The text of a string item: its `t` runs, without phonetic (`rPh`) hints."""
    parts: list[str] = []
    for child in element:
        name = _local(child.tag)
        if name == "t":
            parts.append(child.text or "")
        elif name == "r":
            parts.extend(t.text or "" for t in child if _local(t.tag) == "t")
    return from_xstring("".join(parts))


# A formula cell in the plain form holding no value after its formula: nothing, `<v/>` or `<v></v>`.
_VALUELESS = re.compile(rb"(?:</f>|<f\b[^>]*?/>)\s*(<v\s*/>|<v>\s*</v>)?\s*</c>")
_CELL_OPEN = re.compile(rb'<c r="([A-Z]{1,3})([0-9]+)"([^>]*)>')
_FORMULA = re.compile(rb"<f\b([^>]*?)(?:/>|>([^<]*)</f>)")
_SHARED_ID = re.compile(rb'\bsi="([0-9]+)"')


@dataclass
class FormulaScan:
    """What a sheet's formula cells say about their values, (row, column) each."""

    valueless: set[tuple[int, int]]
    """Stored without a value: saved by a program that did not compute them."""
    volatile: set[tuple[int, int]]
    """Calling a function whose value changes without its inputs changing (`recalc.VOLATILE`)."""


_LAST_ROW = re.compile(rb'<row\b[^>]*?\sr="([0-9]+)"')


def scan_formulas(zf: zipfile.ZipFile, part: str, last_row: int | None = None) -> FormulaScan:
    """`FormulaScan` of a worksheet part, read in chunks. openpyxl writes a formula it did not
    compute with `<v></v>` or no `<v>`; a formula whose value is the empty text (`t="str"` and an
    empty `<v>`) has one. A cell sharing a volatile anchor's formula is volatile too. With
    `last_row`, only the rows up to it (reading stops past it: rows come in order)."""
    scan = _scan_blocks(zf, part, last_row)
    if last_row is not None:
        scan.valueless = {k for k in scan.valueless if k[0] <= last_row}
        scan.volatile = {k for k in scan.volatile if k[0] <= last_row}
    return scan


def _scan_blocks(zf: zipfile.ZipFile, part: str, last_row: int | None) -> FormulaScan:
    from deskmcp.sheets.formulas.dependencies import calls_volatile
    from deskmcp.sheets.xlsx.cellxml import plain

    scan = FormulaScan(set(), set())
    volatile_ids: set[bytes] = set()
    tail = b""
    size = CHUNK // 4 if last_row is not None else 4 * CHUNK  # a few rows: small blocks first
    with zf.open(part) as handle:
        while True:
            block = handle.read(size)
            size = min(2 * size, 4 * CHUNK)
            data = tail + block
            cut = data.rfind(b"<c ") if block else len(data)  # a cell may go on in the next block
            body, tail = (data[:cut], data[cut:]) if cut > 0 else (b"", data)
            if not plain(body):
                return _scan_elements(zf, part)
            for m in _VALUELESS.finditer(body):
                start = body.rfind(b"<c ", 0, m.start())
                cell = _CELL_OPEN.match(body, start)
                if cell is None:
                    return _scan_elements(zf, part)
                kind = re.search(rb'\bt="([^"]*)"', cell.group(3))
                if m.group(1) is not None and kind is not None and kind.group(1) == b"str":
                    continue  # the empty text, stored
                scan.valueless.add((int(cell.group(2)), column_index(cell.group(1).decode("ascii"))))
            if calls_volatile(body) or (volatile_ids and b'"shared"' in body):
                for cell in _CELL_OPEN.finditer(body):
                    f = _FORMULA.match(body, cell.end())
                    if f is None:
                        continue
                    si = _SHARED_ID.search(f.group(1)) if b"shared" in f.group(1) else None
                    text = f.group(2) or b""
                    if calls_volatile(text):
                        if si is not None:
                            volatile_ids.add(si.group(1))
                    elif si is None or text or si.group(1) not in volatile_ids:
                        continue
                    scan.volatile.add((int(cell.group(2)), column_index(cell.group(1).decode("ascii"))))
            if not block:
                return scan
            if last_row is not None:
                at = body.rfind(b"<row")
                last = _LAST_ROW.match(body, at) if at >= 0 else None
                if last is not None and int(last.group(1)) > last_row:
                    return scan


def _scan_elements(zf: zipfile.ZipFile, part: str) -> FormulaScan:
    """`scan_formulas` of a part in another form (prefixed tags, cells without `r`)."""
    from deskmcp.sheets.formulas.dependencies import calls_volatile

    scan = FormulaScan(set(), set())
    volatile_ids: set[str] = set()
    row = col = 0
    with zf.open(part) as handle:
        try:
            for event, element in _events(handle):
                name = _local(element.tag)
                if name == "row" and event == "start":
                    ref = element.get("r")
                    row = int(ref) if ref and ref.isdigit() else row + 1
                    col = 0
                if name != "c" or event != "end":
                    continue
                row, col = _cell_position(element, row, col)
                children = {_local(child.tag): child for child in element}
                f = children.get("f")
                if f is None:
                    continue
                text, si = f.text or "", f.get("si") if f.get("t") == "shared" else None
                if calls_volatile(text.encode("utf-8")):
                    scan.volatile.add((row, col))
                    if si is not None:
                        volatile_ids.add(si)
                elif si is not None and not text and si in volatile_ids:
                    scan.volatile.add((row, col))
                v = children.get("v")
                if "is" not in children and (v is None or (not (v.text or "").strip() and element.get("t") != "str")):
                    scan.valueless.add((row, col))
                element.clear()
        except ParseError as exc:
            raise ValueError(f"{part} is not well-formed XML: {exc}") from exc
    return scan


# The built-in number formats that show a date or a time (ECMA-376 Part 1, 18.8.30), by id; 46 is
# an elapsed time (`[h]:mm:ss`). Read here without importing openpyxl: a first read pays no import.
BUILTIN_DATES = {
    14: "mm-dd-yy",
    15: "d-mmm-yy",
    16: "d-mmm",
    17: "mmm-yy",
    18: "h:mm AM/PM",
    19: "h:mm:ss AM/PM",
    20: "h:mm",
    21: "h:mm:ss",
    22: "m/d/yy h:mm",
    45: "mm:ss",
    46: "[h]:mm:ss",
    47: "mmss.0",
}
# Text in quotes, and bracketed sections other than elapsed hours, minutes or seconds (a colour, a
# condition, a locale), say nothing of dates; a letter d, m, y, h or s elsewhere does, unless it is
# escaped (`\d`) or the width of a space (`_d`). Only the first section (before `;`) counts.
_FORMAT_NOISE = re.compile(r'".*?"|\[(?!hh?\]|mm?\]|ss?\])[^\]]*\]')
_DATE_LETTER = re.compile(r"(?<![_\\])[dmhysDMHYS]")
_ELAPSED = re.compile(r"\[hh?\](:mm(:ss(\.0*)?)?)?|\[mm?\](:ss(\.0*)?)?|\[ss?\](\.0*)?", re.I)


def is_date_format(code: str) -> bool:
    return _DATE_LETTER.search(_FORMAT_NOISE.sub("", code.split(";")[0])) is not None


def is_duration_format(code: str) -> bool:
    return _ELAPSED.search(code.split(";")[0]) is not None


def styles(zf: zipfile.ZipFile, part: str | None, date1904: bool) -> Styles:
    epoch = dt.datetime(1904, 1, 1) if date1904 else dt.datetime(1899, 12, 30)
    if not part or part not in zf.namelist():
        return Styles(frozenset(), frozenset(), epoch)
    formats: dict[int, str] = dict(BUILTIN_DATES)
    dates: set[int] = set()
    durations: set[int] = set()
    in_xfs = False
    index = 0
    with zf.open(part) as handle:
        for event, element in _events(handle):
            name = _local(element.tag)
            if event == "start" and name == "cellXfs":
                in_xfs = True
            elif event == "end" and name == "cellXfs":
                in_xfs = False
            elif event == "end" and name == "numFmt":
                try:
                    formats[int(element.get("numFmtId", ""))] = element.get("formatCode", "")
                except ValueError:
                    continue
            elif event == "end" and name == "xf" and in_xfs:
                try:
                    code = formats.get(int(element.get("numFmtId", "0")), "")
                except ValueError:
                    code = ""
                if code and is_duration_format(code):
                    durations.add(index)
                elif code and is_date_format(code):
                    dates.add(index)
                index += 1
    return Styles(frozenset(dates), frozenset(durations), epoch)


def _number(text: str, style: int, look: Styles) -> Any:
    try:
        value = float(text)
    except ValueError:
        return text
    if style in look.durations:
        return dt.timedelta(days=value)
    if style in look.dates:
        try:
            moment = look.epoch + dt.timedelta(days=value)
        except OverflowError:
            return value
        return moment.time() if 0 <= value < 1 else moment
    return value


def window(
    zf: zipfile.ZipFile,
    part: str,
    r0: int,
    c0: int,
    r1: int,
    c1: int,
    *,
    shared_strings: str | None,
    look: Styles,
    formulas: bool = False,
) -> dict[tuple[int, int], Any]:
    """The stored cells of rows r0..r1, columns c0..c1, keyed (row, column); parsing stops past r1.

    With `formulas`, a formula cell gives its formula (`=SUM(A1:A3)`) instead of its value.
    """
    found: dict[tuple[int, int], Any] = {}
    masters: dict[str, tuple[str, str]] = {}  # shared formula id -> (cell, formula)
    strings: dict[tuple[int, int], int] = {}
    row = col = 0
    data: Element | None = None
    with zf.open(part) as handle:
        try:
            for event, element in _events(handle):
                name = _local(element.tag)
                if name == "sheetData" and event == "start":
                    data = element
                if name == "row":
                    if event == "start":
                        ref = element.get("r")
                        row = int(ref) if ref and ref.isdigit() else row + 1
                        col = 0
                        if row > r1:
                            break  # rows come in order: nothing below is wanted
                    elif data is not None:
                        data.clear()  # rows already read: memory stays at one row
                    continue
                if name != "c" or event != "end":
                    continue
                row, col = _cell_position(element, row, col)
                if formulas and (formula := _formula(element, masters, row, col)) is not None:
                    if r0 <= row <= r1 and c0 <= col <= c1:
                        found[(row, col)] = formula
                    continue
                if not (r0 <= row <= r1 and c0 <= col <= c1):
                    continue
                kind = element.get("t", "n")
                value_text: str | None = None
                inline: str | None = None
                for child in element:
                    child_name = _local(child.tag)
                    if child_name == "v":
                        value_text = child.text or ""
                    elif child_name == "is":
                        inline = _text(child)
                if kind == "inlineStr":
                    found[(row, col)] = inline or ""
                elif value_text is None:
                    continue
                elif kind == "s":
                    if value_text.strip().isdigit():
                        strings[(row, col)] = int(value_text)
                elif kind == "b":
                    found[(row, col)] = value_text.strip() == "1"
                elif kind == "e":
                    found[(row, col)] = CellError(value_text)
                elif kind == "str":
                    found[(row, col)] = from_xstring(value_text)
                elif kind == "d":
                    try:
                        found[(row, col)] = dt.datetime.fromisoformat(value_text)
                    except ValueError:
                        found[(row, col)] = value_text
                else:
                    try:
                        style = int(element.get("s", "0"))
                    except ValueError:
                        style = 0
                    found[(row, col)] = _number(value_text, style, look)
        except ParseError as exc:
            raise ValueError(f"{part} is not well-formed XML: {exc}") from exc
    if strings and shared_strings:
        texts: dict[int, str] = {}
        if shared_strings in zf.namelist():
            with zf.open(shared_strings) as handle:
                texts = read_shared_strings(handle, shared_strings, set(strings.values()))
        for key, index in strings.items():
            found[key] = texts.get(index, "")
    return found


def _formula(cell: Element, masters: dict[str, tuple[str, str]], row: int, col: int) -> str | None:
    """The formula of a cell as typed (`=...`), shared formulas translated to the cell; None if none."""
    f = next((child for child in cell if _local(child.tag) == "f"), None)
    if f is None:
        return None
    here = f"{column_letters(col)}{row}"
    text = from_xstring(f.text or "")
    if f.get("t") == "shared" and (si := f.get("si")) is not None:
        if text:
            masters[si] = (here, text)
        elif si in masters:
            from openpyxl.formula.translate import Translator, TranslatorError

            origin, master = masters[si]
            try:
                return Translator("=" + master, origin=origin).translate_formula(here)
            except TranslatorError:
                return "=" + master
    return "=" + text if text else None


def read_shared_strings(handle: IO[bytes], part: str, wanted: set[int] | None = None) -> dict[int, str]:
    """The texts of a shared strings part read from `handle`, by index: all of them, or the `wanted`
    indices only (parsing stops after the last of them). Its elements are known by their local names,
    so a part declaring no namespace reads the same as one declaring SpreadsheetML's."""
    out: dict[int, str] = {}
    last = max(wanted) if wanted is not None else None
    index = 0
    root: Element | None = None
    try:
        for event, element in _events(handle):
            if root is None:
                root = element
            if event != "end" or _local(element.tag) != "si":
                continue
            if wanted is None or index in wanted:
                out[index] = _text(element)
            root.clear()  # items already read: memory stays at one item
            index += 1
            if last is not None and index > last:
                break
    except ParseError as exc:
        raise ValueError(f"{part} is not well-formed XML: {exc}") from exc
    return out
