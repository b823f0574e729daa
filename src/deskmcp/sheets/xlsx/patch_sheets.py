"""The sheet parts of an .xlsx as bytes, indexed by row, for the in-place patch (`patch`): the
byte patterns of rows and formula cells, and the scan finding the formulas a write must compute
(those holding no cached value, and the anchors of shared formulas). Anything the patch cannot do
exactly raises `Fallback`, and the caller edits the workbook through openpyxl instead."""

from __future__ import annotations

import html
import re
import zipfile
from array import array
from bisect import bisect_left
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import compress, groupby, islice, pairwise, repeat
from operator import contains, ge
from typing import Any

from deskmcp.sheets.a1 import GRID_ROWS, MAX_COLUMNS, MAX_ROWS, cell_name, column_index
from deskmcp.sheets.formulas.dependencies import Dependents, InputReader, Key, anchor_refs
from deskmcp.sheets.xlsx.cellxml import (
    CELL,
    REF,
    VALUE,
    attributes,
    plain,
    unescape,
)
from deskmcp.sheets.xlsx.parts import MAX_CELLS_PART_BYTES, too_big

ROW = re.compile(rb"<row\b([^>]*?)(?:/>|>(.*?)</row>)", re.S)
ROW_OPEN = re.compile(rb'<row\b(?:[^>]*?\sr="([0-9]+)")?[^>]*>')  # and its number, when it says
# A formula cell in the plain form, its `<f>` first: reference, cell attributes, formula attributes,
# text, and what follows (the cached value).
FORMULA_CELL = re.compile(
    rb'<c r="([A-Z]{1,3})([0-9]+)"([^>]*)>\s*<f\b([^>]*?)(?:/>|>([^<]*)</f>)([^<]*(?:<(?!/c>)[^<]*)*)</c>'
)
DIGITS = re.compile(rb"[0-9]+")
# An entity other than the five of XML: unescaping it may change the digits of a formula's text.
_ODD_ENTITY = re.compile(rb"&(?!(?:lt|gt|amp|quot|apos);)")
CHUNK = 1 << 20  # bytes read or written at a time when a part is streamed
SCAN_BYTES = 1 << 17
"""Bytes of a sheet part whose formulas are read at once: what a stretch's matches hold at once
stays small enough to be fast to make and let go (4 MB stretches were slower than one by one)."""
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
EMPTY_DATA = re.compile(rb"<sheetData\s*/>")


class Fallback(Exception):
    """This edit needs openpyxl (the reason is logged)."""


@dataclass
class Cell:
    attrs: dict[bytes, bytes]
    inner: bytes
    raw: bytes


@dataclass
class Sheet:
    """One worksheet part as bytes, where each row starts, cells parsed on demand."""

    title: str
    part: str
    data: bytes | bytearray
    rows: dict[int, int] = field(default_factory=dict)  # row -> where its <row> starts in data
    start: int = 0  # where <sheetData starts
    end: int = 0  # where </sheetData> starts
    parsed: dict[int, dict[int, Cell]] = field(default_factory=dict)
    max_column: int = 0
    max_row: int = 0
    disorder: int | None = None  # the first row numbered twice or out of order (the patch refuses it)

    @classmethod
    def load(cls, title: str, part: str, data: bytes | bytearray) -> Sheet:
        start = data.find(b"<sheetData")
        if start < 0 or not plain(data):
            raise Fallback(f"{part} is not in the plain form")
        empty = EMPTY_DATA.match(data, start)  # (the one sheetData element: the first)
        if empty is not None:
            data = data[:start] + b"<sheetData></sheetData>" + data[empty.end() :]
        end = data.find(b"</sheetData>", start)
        if end < 0:
            raise Fallback(f"{part} has no end of sheetData")
        sheet = cls(title, part, data, start=start, end=end)
        # the usual part, every row numbered and in order, read in passes in C
        refs = ROW_OPEN.findall(data, start, end)
        numbers = list(map(int, refs)) if all(refs) else []
        if len(numbers) == len(refs) and (
            not numbers or (numbers[0] > 0 and not any(map(ge, numbers, islice(numbers, 1, None))))
        ):
            sheet.rows = dict(zip(numbers, map(re.Match.start, ROW_OPEN.finditer(data, start, end)), strict=True))
            sheet.max_row = numbers[-1] if numbers else 0
            sheet.max_column = _max_column(data, start)
            return sheet
        number = 0
        rows = sheet.rows
        for m in ROW_OPEN.finditer(data, start, end):
            ref = m.group(1)
            last, number = number, int(ref) if ref else number + 1
            if number <= last and sheet.disorder is None:
                sheet.disorder = number
            rows.setdefault(number, m.start())
        sheet.max_row = max(rows, default=0)
        sheet.max_column = _max_column(data, start)
        return sheet

    def span(self, row: int) -> tuple[int, int] | None:
        """Where the `<row>` element of `row` starts and ends in data."""
        start = self.rows.get(row)
        if start is None:
            return None
        m = ROW.match(self.data, start)
        if m is None:
            raise Fallback(f"row {row} of {self.part} is not well formed")
        return start, m.end()

    def cells(self, row: int) -> dict[int, Cell]:
        found = self.parsed.get(row)
        if found is not None:
            return found
        found = {}
        span = self.span(row)
        if span is not None:
            col = 0
            for m in CELL.finditer(self.data, span[0], span[1]):
                ref = REF.search(m.group(1))
                col = column_index(ref.group(1).decode("ascii")) if ref else col + 1
                found[col] = Cell(attributes(m.group(1)), m.group(2) or b"", m.group(0))
        self.parsed[row] = found
        return found


def _max_column(data: bytes | bytearray, start: int) -> int:
    """The last column the part's `<dimension>` names (before `start`), else the last there is."""
    dim = re.search(rb'<dimension ref="[A-Z]*[0-9]*:?\$?([A-Z]{1,3})', data[:start])
    return column_index(dim.group(1).decode("ascii")) if dim else MAX_COLUMNS


@dataclass
class Formula:
    text: str  # with its leading "="
    kind: bytes  # b"" (normal), b"shared", b"array", b"dataTable"
    anchor: bool  # holds the text of a shared or array formula others use
    cached: Any  # None: no cached value


def scan_sheet(sheet: Sheet, skip: Collection[Key], reader: InputReader, index: Dependents) -> tuple[list[Key], Shares]:
    """Every formula of `sheet` not in `skip` added to `index`, in one pass over the part's bytes
    (no object per cell): formulas are grouped by shape (`InputReader`) and each group's references
    read from the digits of their texts; shared formulas by anchor, their references the anchor's
    moved. Returns the formulas holding no cached value, and the anchor of each shared formula
    that borrows its text."""
    data, title = sheet.data, sheet.title
    uncached: list[Key] = []
    masters: dict[bytes, Master] = {}
    columns: dict[bytes, int] = {}
    skip_rows = {k[1] for k in skip if k[0] == title}
    by_zeros: dict[bytes, tuple[array[int], array[int], list[bytes]]] = {}  # rows, columns, texts
    sharing: dict[tuple[Master, int], array[int]] = {}  # (anchor, column) -> rows
    count = 0

    def one_by_one(row: int, col: int, cattrs: bytes, fattrs: bytes, ftext: bytes, tail: bytes) -> None:
        """A formula read by itself: shared, empty, or in a row written."""
        text = unescape(ftext) if ftext else ""
        master: Master | None = None
        if b"shared" in fattrs and (fa := attributes(fattrs)).get(b"t") == b"shared":
            si = fa.get(b"si", b"")
            if text:
                masters[si] = (cell_name(row, col), text, row, col)
            elif si in masters:
                master = masters[si]
            else:
                raise Fallback("a shared formula before its anchor")
        key = (title, row, col)
        if key in skip:
            return
        if _no_value(cattrs, tail):
            uncached.append(key)
        if master is None:
            index.add(key, reader.areas("=" + text, title))
        else:
            rows_of = sharing.get((master, col))
            if rows_of is None:
                rows_of = sharing[(master, col)] = array("i")
            rows_of.append(row)

    # The formulas of each stretch of rows (`SCAN_BYTES` of the part) are read at once, each question
    # asked of the whole stretch in one pass (a Python step per formula costs more than the
    # regular expression finding them); only the formulas a question singles out are read alone.
    for found in _formula_cells(data, sheet.start, sheet.end):
        count += len(found)
        letters_of, digits_of, cattrs_of, fattrs_of, ftexts, tails = zip(*found, strict=True)
        del found
        rows = array("i", map(int, digits_of))
        if max(rows) > GRID_ROWS:
            raise Fallback(f"a cell of {sheet.part} past the last row a sheet can have")
        for letters in set(letters_of).difference(columns):
            columns[letters] = column_index(letters.decode("ascii"))
        cols = array("i", map(columns.__getitem__, letters_of))
        alone = _read_alone(rows, fattrs_of, ftexts, skip_rows)
        for i in alone:
            one_by_one(rows[i], cols[i], cattrs_of[i], fattrs_of[i], ftexts[i], tails[i])
        # a <v> holds a value unless the cell is a shared string's (t="s" exactly)
        if (
            not all(map(contains, tails, repeat(b"</v>")))
            or b"<v></v>" in b"".join(tails)
            or b't="s"' in b"".join(cattrs_of)
        ):
            by_itself = set(alone)
            uncached.extend(
                (title, rows[i], cols[i])
                for i in range(len(rows))
                if i not in by_itself
                and (b"</v>" not in tails[i] or b"<v></v>" in tails[i] or b't="s"' in cattrs_of[i])
                and _no_value(cattrs_of[i], tails[i])
            )
        # grouped by the text with each digit read as 0 (a byte mapping of the whole stretch);
        # the groups of one shape are joined below
        zeros = b"\0".join(ftexts).translate(_DIGITS_AS_ZERO).split(b"\0")
        if len(zeros) != len(ftexts):  # (a NUL in a formula's text: not XML, but read as it stands)
            zeros = [text.translate(_DIGITS_AS_ZERO) for text in ftexts]
        for i in alone:
            zeros[i] = b""  # (every other formula's text has something)
        for key, members in _groups(zeros):
            if not key:
                continue
            group = by_zeros.get(key)
            if group is None:
                group = by_zeros[key] = (array("i"), array("i"), [])
            if len(members) == len(rows):
                group[0].extend(rows)
                group[1].extend(cols)
                group[2].extend(ftexts)
            else:
                group[0].extend(map(rows.__getitem__, members))
                group[1].extend(map(cols.__getitem__, members))
                group[2].extend(map(ftexts.__getitem__, members))
    # a text with an entity other than XML's five is unescaped whole, formula by formula (such an
    # entity has no digit in its name before the `;`, so the text of zeros shows it as the text does)
    for key in [key for key in by_zeros if b"&" in key and _ODD_ENTITY.search(key)]:
        for row, col, ftext in zip(*by_zeros.pop(key), strict=True):
            index.add((title, row, col), reader.areas("=" + unescape(ftext), title))
    # every <f> of the cells is one of those read above, or the part is not in the form they assume
    # (`<family>` of rich text is the one other element of cells whose name starts with f; each
    # cell read holds an <f>, so when the <f> are as many as the cells read there is no <family>)
    tags = data.count(b"<f", sheet.start, sheet.end)
    if count != tags:
        tags -= data.count(b"<family", sheet.start, sheet.end)
    if count != tags:
        raise Fallback(f"formulas of {sheet.part} in an unexpected form")
    shapes = _by_shape(by_zeros)
    del by_zeros
    while shapes:  # one shape at a time, each let go once indexed
        shape, (rows, cols, texts) = shapes.popitem()
        recipe = reader.recipe(html.unescape(shape.decode("utf-8")))
        if recipe is None:
            index.add_anything(title, rows, cols)
        elif isinstance(recipe, str):
            for row, col, ftext in zip(rows, cols, texts, strict=True):
                index.add((title, row, col), reader.areas("=" + unescape(ftext), title))
        else:
            # every text of the shape has as many digit runs as the shape has zeros: the runs of
            # all of them, read at once, are that many per formula (a space keeps texts apart)
            per = shape.count(b"0")
            runs = DIGITS.findall(b" ".join(texts)) if recipe else []
            del texts
            reads: list[tuple[str, int, int, list[int], list[int]]] = []
            for ref_sheet, c0, c1, i0, i1 in recipe:
                if i0 < 0:
                    reads.append((ref_sheet or title, c0, c1, [1] * len(rows), [MAX_ROWS] * len(rows)))
                    continue
                firsts = list(map(int, runs[i0::per]))
                if i1 == i0:
                    reads.append((ref_sheet or title, c0, c1, firsts, firsts))
                    continue
                lasts = list(map(int, runs[i1::per]))
                reads.append((ref_sheet or title, c0, c1, list(map(min, firsts, lasts)), list(map(max, firsts, lasts))))
            del runs
            index.add_block(title, rows, cols, reads)
    shares: Shares = {}
    for (master, col), rows in sharing.items():
        shares.setdefault(col, []).append((rows if _ascending(rows) else array("i", sorted(rows)), master))
        moved = _shared_reads(master, col, rows, title)
        if moved is not None:
            index.add_block(title, rows, [col] * len(rows), moved)
            continue
        for row in rows:  # each translated as Excel would (which may refuse it)
            text = translate(master, cell_name(row, col))
            index.add((title, row, col), reader.areas("=" + text, title))
    return uncached, shares


def _read_alone(
    rows: array[int], fattrs_of: Sequence[bytes], ftexts: Sequence[bytes], skip_rows: Collection[int]
) -> list[int]:
    """The formulas of a stretch read one by one, in order: shared ones, those without a text and
    those in the rows written."""
    alone: set[int] = set()
    if any(fattrs_of):  # (most formulas have no attributes)
        alone.update(i for i, fattrs in enumerate(fattrs_of) if b"shared" in fattrs)
    if not all(ftexts):
        alone.update(i for i, text in enumerate(ftexts) if not text)
    if skip_rows and rows:
        # (one pass over the stretch, for the written rows it spans: an append writes rows past
        # every stretch, and a search per written row would read each stretch as often)
        low, high = min(rows), max(rows)
        if wanted := {row for row in skip_rows if low <= row <= high}:
            alone.update(i for i, row in enumerate(rows) if row in wanted)
    return sorted(alone)


def _groups(keys: list[bytes]) -> Iterator[tuple[bytes, list[int]]]:
    """The positions in `keys` of each key, in order; a few distinct keys (the usual case: a
    column's formulas differ only by their digits) found by one comparison pass each."""
    distinct = dict.fromkeys(keys)
    if len(distinct) <= 16:
        every = range(len(keys))
        for key in distinct:
            yield key, list(compress(every, map(key.__eq__, keys)))
        return
    ordered = sorted(range(len(keys)), key=keys.__getitem__)
    for key, members in groupby(ordered, keys.__getitem__):
        yield key, list(members)


def _by_shape(
    by_zeros: dict[bytes, tuple[array[int], array[int], list[bytes]]],
) -> dict[bytes, tuple[array[int], array[int], list[bytes]]]:
    """The formulas grouped by shape (each run of digits read as one 0), from their groups by text
    with each digit read as 0 (`=B7*2` and `=B10*2` are two of those, of one shape). The formulas
    of a shape stay in the order of the part; where its groups interleave, by row then column."""
    shapes: dict[bytes, tuple[array[int], array[int], list[bytes]]] = {}
    unordered: set[bytes] = set()
    for zeros, (rows, cols, texts) in by_zeros.items():
        shape = DIGITS.sub(b"0", zeros)
        found = shapes.get(shape)
        if found is None:
            shapes[shape] = (rows, cols, texts)
            continue
        if (found[0][-1], found[1][-1]) > (rows[0], cols[0]):
            unordered.add(shape)
        found[0].extend(rows)
        found[1].extend(cols)
        found[2].extend(texts)
    for shape in unordered:
        rows, cols, texts = shapes[shape]
        order = sorted(range(len(rows)), key=lambda i: (rows[i], cols[i]))
        shapes[shape] = (
            array("i", [rows[i] for i in order]),
            array("i", [cols[i] for i in order]),
            [texts[i] for i in order],
        )
    return shapes


def _formula_cells(data: bytes | bytearray, start: int, end: int) -> Iterator[list[tuple[bytes, ...]]]:
    """The groups of `FORMULA_CELL` of every formula cell of `data[start:end]`, a list per stretch
    of about `SCAN_BYTES` ending where a row starts (no cell crosses a row's start)."""
    pos = start
    while pos < end:
        stop = data.find(b"<row", pos + SCAN_BYTES, end) if pos + SCAN_BYTES < end else -1
        stop = end if stop < 0 else stop
        found = FORMULA_CELL.findall(data, pos, stop)
        if found:
            yield found
        pos = stop


def _ascending(rows: array[int]) -> bool:
    return all(a < b for a, b in pairwise(rows))


def anchor_of(shares: Shares, row: int, col: int) -> Master | None:
    for rows, master in shares.get(col, ()):
        i = bisect_left(rows, row)
        if i < len(rows) and rows[i] == row:
            return master
    return None


def _shared_reads(
    master: Master, col: int, rows: Sequence[int], title: str
) -> list[tuple[str, int, int, list[int], list[int]]] | None:
    """What the cells of `rows` in `col` sharing `master`'s formula read: its references moved by
    each cell's offset (`$` parts fixed). None when the anchor's text does not say, or a moved
    reference would leave the sheet (translating then refuses the formula)."""
    refs = _anchor_refs(master[1])
    if refs is None:
        return None
    _name, _text, row0, col0 = master
    shift = col - col0
    reads: list[tuple[str, int, int, list[int], list[int]]] = []
    for sheet, (ca, ca_fixed, ra, ra_fixed), (cb, cb_fixed, rb, rb_fixed) in refs:
        ca, cb = ca if ca_fixed else ca + shift, cb if cb_fixed else cb + shift
        if not (1 <= ca <= MAX_COLUMNS and 1 <= cb <= MAX_COLUMNS):
            return None
        if ra is None or rb is None:
            reads.append((sheet or title, min(ca, cb), max(ca, cb), [1] * len(rows), [MAX_ROWS] * len(rows)))
            continue
        firsts = [ra] * len(rows) if ra_fixed else [ra + r - row0 for r in rows]
        lasts = [rb] * len(rows) if rb_fixed else [rb + r - row0 for r in rows]
        if min(min(firsts), min(lasts)) < 1 or max(max(firsts), max(lasts)) > GRID_ROWS:
            return None
        reads.append(
            (sheet or title, min(ca, cb), max(ca, cb), list(map(min, firsts, lasts)), list(map(max, firsts, lasts)))
        )
    return reads


_anchor_refs = lru_cache(maxsize=1024)(anchor_refs)


def _no_value(cattrs: bytes, tail: bytes) -> bool:
    """What `cached` reads as no value: no <v>, an empty one (but for text), or a shared string
    (not looked up here)."""
    kind = attributes(cattrs).get(b"t", b"n") if b"t=" in cattrs else b"n"
    if kind == b"s":
        return True
    v = VALUE.search(tail)
    return kind != b"inlineStr" and (v is None or (not v.group(1) and kind != b"str"))


def read_cells(zf: zipfile.ZipFile, part: str) -> bytearray:
    """A worksheet part's bytes, read in chunks (inflating it whole holds it twice for a moment),
    refused when it inflates past `MAX_CELLS_PART_BYTES` (its declared size is not trusted)."""
    info = zf.getinfo(part)
    if info.file_size > MAX_CELLS_PART_BYTES:
        raise too_big(part, info.file_size, MAX_CELLS_PART_BYTES)
    data = bytearray()
    with zf.open(info) as handle:
        while chunk := handle.read(CHUNK):
            data += chunk
            if len(data) > MAX_CELLS_PART_BYTES:
                raise too_big(part, len(data), MAX_CELLS_PART_BYTES)
    return data


Master = tuple[str, str, int, int]
"""The anchor of shared formulas: its cell's name, its text, row and column."""
Shares = dict[int, list[tuple["array[int]", Master]]]
"""The cells of a sheet sharing an anchor's formula: column -> (rows in order, anchor)."""


def translate(master: Master, here: str) -> str:
    from openpyxl.formula.translate import Translator, TranslatorError

    origin, text, _row, _col = master
    try:
        return Translator("=" + text, origin=origin).translate_formula(here)[1:]
    except TranslatorError as exc:
        raise Fallback(f"shared formula not translated: {exc}") from exc


@dataclass
class FormulaIndex:
    """What a write learns of every formula of a workbook, kept for the next write of the same
    version of the file: which cells each reads, which hold no cached value, shared formulas' texts."""

    index: Dependents
    reader: InputReader
    uncached: set[Key]
    borrowed: dict[str, Shares]
