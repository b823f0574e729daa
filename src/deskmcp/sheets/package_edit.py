"""Cell edits of an xlsx written straight into its package: only the changed rows are rewritten.

openpyxl loads every cell of every sheet and writes the whole package again (a one-cell edit of
a 100,000-row workbook took 55 s and 1.3 GB). Here a sheet part is kept as bytes with an index
of its rows; a write rebuilds only the rows it touches and the rows of the formulas it makes
stale, patches `workbook.xml` (`fullCalcOnLoad`), the styles (a date format) and the custom
properties (the uncomputed list) when needed, and copies every other part of the zip unchanged.
Only formulas that read a changed cell (directly or through other formulas) or that hold no
cached value are evaluated. Anything this cannot do exactly (a non-plain part, a shared or array
formula's anchor overwritten, no styles part for a date) raises `Fallback`, and the caller
edits the workbook through openpyxl instead.
"""

from __future__ import annotations

import contextlib
import copy
import datetime as dt
import html
import io
import json
import os
import re
import shutil
import tempfile
import zipfile
from array import array
from bisect import bisect_left
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import pairwise
from pathlib import Path
from typing import Any, BinaryIO

from deskmcp.core.files import fsync_dir, replace_file
from deskmcp.sheets.a1 import MAX_COLUMNS, MAX_ROWS, A1Range, cell_name, column_index
from deskmcp.sheets.cellxml import (
    ATTR,
    CELL,
    FORMULA,
    REF,
    VALUE,
    attributes,
    cached,
    plain,
    unescape,
    xml_text,
)
from deskmcp.sheets.formulas.budget import CellBudget
from deskmcp.sheets.formulas.dependencies import Dependents, InputReader, Key, anchor_refs
from deskmcp.sheets.formulas.engine import WorkbookCalculator
from deskmcp.sheets.formulas.values import DATE_SHIFT, CellError, DateSerial, Uncomputable, moment_serial
from deskmcp.sheets.ooxml import MAX_CELLS_PART_BYTES, UNCOMPUTED_PROPERTY, PackageMap, read_part, too_big
from deskmcp.sheets.sheetdata import Styles, read_shared_strings

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
LAST_ROW = 1_048_576
CHUNK = 1 << 20  # bytes read or written at a time when a part is streamed
ZIP64_FROM = 1 << 30  # parts this big are written with zip64 sizes (their final size is not known first)
EMPTY_DATA = re.compile(rb"<sheetData\s*/>")
DIMENSION = re.compile(rb'<dimension ref="[^"]*"\s*/>')
CUSTOM_NS = "http://schemas.openxmlformats.org/officeDocument/2006/custom-properties"
VT_NS = "http://schemas.openxmlformats.org/officeDocument/2006/docPropsVTypes"
FMTID = "{D5CDD505-2E9C-101B-9397-08002B2CF9AE}"


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

    @classmethod
    def load(cls, title: str, part: str, data: bytes | bytearray) -> Sheet:
        if not plain(data) or b"<sheetData" not in data:
            raise Fallback(f"{part} is not in the plain form")
        if EMPTY_DATA.search(data):  # (a substitution copies even when it finds nothing to replace)
            data = EMPTY_DATA.sub(b"<sheetData></sheetData>", data, count=1)
        start = data.index(b"<sheetData")
        end = data.find(b"</sheetData>", start)
        if end < 0:
            raise Fallback(f"{part} has no end of sheetData")
        sheet = cls(title, part, data, start=start, end=end)
        number = 0
        rows = sheet.rows
        for m in ROW_OPEN.finditer(data, start, end):
            ref = m.group(1)
            number = int(ref) if ref else number + 1
            rows[number] = m.start()
        sheet.max_row = max(rows, default=0)
        dim = re.search(rb'<dimension ref="[A-Z]*[0-9]*:?\$?([A-Z]{1,3})', data[:start])
        sheet.max_column = column_index(dim.group(1).decode("ascii")) if dim else MAX_COLUMNS
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


@dataclass
class Formula:
    text: str  # with its leading "="
    kind: bytes  # b"" (normal), b"shared", b"array", b"dataTable"
    anchor: bool  # holds the text of a shared or array formula others use
    cached: Any  # None: no cached value


def _scan(sheet: Sheet, skip: Collection[Key], reader: InputReader, index: Dependents) -> tuple[list[Key], Shares]:
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
    shapes: dict[bytes, tuple[array[int], array[int], list[bytes]]] = {}  # rows, columns, texts
    sharing: dict[tuple[Master, int], array[int]] = {}  # (anchor, column) -> rows
    count = 0
    for m in FORMULA_CELL.finditer(data, sheet.start, sheet.end):
        count += 1
        letters, digits, cattrs, fattrs, ftext, tail = m.groups()
        row = int(digits)
        if row > LAST_ROW:
            raise Fallback(f"a cell of {sheet.part} past the last row a sheet can have")
        col = columns.get(letters)
        if col is None:
            col = columns[letters] = column_index(letters.decode("ascii"))
        if row in skip_rows or b"shared" in fattrs or not ftext or (b"&" in ftext and _ODD_ENTITY.search(ftext)):
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
                continue
            if _no_value(cattrs, tail):
                uncached.append(key)
            if master is None:
                index.add(key, reader.areas("=" + text, title))
            else:
                rows_of = sharing.get((master, col))
                if rows_of is None:
                    rows_of = sharing[(master, col)] = array("i")
                rows_of.append(row)
            continue
        # a <v> holds a value unless the cell is a shared string's (t="s" exactly)
        if (b"</v>" not in tail or b"<v></v>" in tail or b't="s"' in cattrs) and _no_value(cattrs, tail):
            uncached.append((title, row, col))
        shape = DIGITS.sub(b"0", ftext)
        group = shapes.get(shape)
        if group is None:
            group = shapes[shape] = (array("i"), array("i"), [])
        group[0].append(row)
        group[1].append(col)
        group[2].append(ftext)
    # every <f> of the cells is one of those read above, or the part is not in the form they assume
    # (`<family>` of rich text is the one other element of cells whose name starts with f)
    tags = data.count(b"<f", sheet.start, sheet.end) - data.count(b"<family", sheet.start, sheet.end)
    if count != tags:
        raise Fallback(f"formulas of {sheet.part} in an unexpected form")
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
            text = _translate(master, cell_name(row, col))
            index.add((title, row, col), reader.areas("=" + text, title))
    return uncached, shares


def _ascending(rows: array[int]) -> bool:
    return all(a < b for a, b in pairwise(rows))


def _anchor_of(shares: Shares, row: int, col: int) -> Master | None:
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
        if min(min(firsts), min(lasts)) < 1 or max(max(firsts), max(lasts)) > LAST_ROW:
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


def _read_cells(zf: zipfile.ZipFile, part: str) -> bytearray:
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


def _translate(master: Master, here: str) -> str:
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


class PackageBook:
    """The edits of one call (values written, cells cleared) on an xlsx, saved as a patch."""

    def __init__(self, path: Path, where: PackageMap, look: Styles, fmt: str) -> None:
        self.now: Callable[[], dt.datetime] = dt.datetime.now
        """The local date and time TODAY() and NOW() answer."""
        self.path = path
        self.where = where
        self.look = look
        self.fmt = fmt
        self.zf = zipfile.ZipFile(path)
        self.sheets: dict[str, Sheet] = {}
        self.writes: dict[Key, Any] = {}  # None clears the cell
        self.literal: set[Key] = set()
        self.report: list[str] = []
        self.borrowed: dict[str, Shares] = {}  # the cells sharing formulas, by sheet
        self.parts: dict[str, bytes] = {}  # small parts replaced by the patch
        self.new_parts: dict[str, bytes] = {}
        self.edits: dict[str, tuple[Sheet, list[tuple[int, int, bytes]]]] = {}  # sheet parts patched
        self.formula_index: FormulaIndex | None = None

    def close(self) -> None:
        self.zf.close()

    def sheet(self, name: str | None) -> Sheet:
        if name is None:
            name = next(iter(self.where.sheets), "")
        part = self.where.sheets.get(name)
        if part is None:
            raise KeyError(name)
        if name not in self.sheets:
            self.sheets[name] = Sheet.load(name, part, _read_cells(self.zf, part))
        return self.sheets[name]

    def value(self, key: Key) -> Any:
        """A cell's value after the edits so far (formulas as their text)."""
        if key in self.writes:
            written = self.writes[key]
            return None if written == "" else written  # "" empties the cell, as the save does
        cell = self.sheet(key[0]).cells(key[1]).get(key[2])
        if cell is None:
            return None
        f = FORMULA.search(cell.inner)
        if f is not None:
            return "=formula"
        return cached(cell.attrs.get(b"t", b"n"), cell.inner, self._strings())

    _shared: list[str] | None = None

    def _strings(self) -> list[str]:
        if self._shared is None:
            self._shared = []
            part = self.where.shared_strings
            if part and part in self.zf.namelist():
                data = read_part(self.zf, part, MAX_CELLS_PART_BYTES)
                self._shared = list(read_shared_strings(io.BytesIO(data), part).values())
        return self._shared

    # -- the operations the tools call ------------------------------------------------------------

    def write_cell(self, sheet: str, row: int, col: int, stored: Any, literal: bool) -> None:
        key = (sheet, row, col)
        existing = self.sheet(sheet).cells(row).get(col)
        if existing is not None and (f := FORMULA.search(existing.inner)) is not None:
            fattrs = attributes(f.group(1))
            if (fattrs.get(b"t") == b"shared" and f.group(2)) or fattrs.get(b"t") in (b"array", b"dataTable"):
                raise Fallback("a shared or array formula's anchor is overwritten")
        self.writes[key] = stored
        if literal:
            self.literal.add(key)
        else:
            self.literal.discard(key)

    def clear(self, rng: A1Range) -> str:
        sheet = self.sheet(rng.sheet)
        r0, c0, r1, c1 = rng.bounds(sheet.max_row, sheet.max_column)
        for row in [r for r in sheet.rows if r0 <= r <= r1]:
            for col in [c for c in sheet.cells(row) if c0 <= c <= c1]:
                self.write_cell(sheet.title, row, col, None, False)
        for key in [k for k in self.writes if k[0] == sheet.title and r0 <= k[1] <= r1 and c0 <= k[2] <= c1]:
            self.writes[key] = None
        if r1 >= r0 and c1 >= c0:
            return A1Range(sheet.title, r0, c0, r1, c1).a1()
        return rng.a1(default_sheet=sheet.title)

    def last_row(self, sheet: Sheet, c0: int, c1: int | None) -> int:
        high = c1 if c1 is not None else MAX_COLUMNS
        written = [
            k[1] for k, v in self.writes.items() if k[0] == sheet.title and c0 <= k[2] <= high and v not in (None, "")
        ]
        for row in sorted(sheet.rows, reverse=True):
            if written and max(written) >= row:
                return max(written)
            for col, cell in sheet.cells(row).items():
                if c0 <= col <= high and (
                    FORMULA.search(cell.inner) or cached(cell.attrs.get(b"t", b"n"), cell.inner, [""]) not in (None, "")
                ):
                    return row
        return max(written, default=0)

    # -- saving ----------------------------------------------------------------------------------

    def formula(self, key: Key) -> Formula | None:
        """The formula of a cell after the edits so far, or None when it holds none."""
        if key in self.writes:
            stored = self.writes[key]
            if isinstance(stored, str) and stored.startswith("=") and key not in self.literal:
                return Formula(stored, b"", False, None)
            return None
        if key[0] not in self.where.sheets:
            return None
        cell = self.sheet(key[0]).cells(key[1]).get(key[2])
        if cell is None:
            return None
        f = FORMULA.search(cell.inner)
        if f is None:
            return None
        fattrs = attributes(f.group(1))
        kind = fattrs.get(b"t", b"")
        # a cell sharing an anchor's formula (its own <f> empty) has that text, moved to the cell
        master = _anchor_of(self.borrowed.get(key[0], {}), key[1], key[2]) if kind == b"shared" else None
        text = _translate(master, cell_name(key[1], key[2])) if master is not None else unescape(f.group(2) or b"")
        anchor = (kind == b"shared" and master is None) or (
            kind == b"array" and fattrs.get(b"ref", b"") not in (b"", cell_name(key[1], key[2]).encode())
        )
        value = cached(cell.attrs.get(b"t", b"n"), cell.inner)
        return Formula("=" + text, kind, anchor or kind == b"array", value)

    def save(
        self, names: Any, known: FormulaIndex | None = None, budget: CellBudget | None = None
    ) -> dict[str, list[str]]:
        """Compute what the edits make stale and prepare the patch (`write` then streams it out);
        returns the formulas left uncomputed (sheet -> cells). `known`: the formula index of this
        version of the file (taken over: it is changed), so no sheet is scanned; `formula_index`
        is then the index of the version the patch writes. Formulas not computed when the `budget`
        of cells read is spent are left without a value, as those that cannot be computed."""
        if known is None:
            reader = InputReader(names)
            index = Dependents()
            uncached: set[Key] = set()
            for title in self.where.sheets:
                found, self.borrowed[title] = _scan(self.sheet(title), self.writes, reader, index)
                uncached.update(found)
        else:
            reader, index, uncached, self.borrowed = known.reader, known.index, known.uncached, known.borrowed
            reader.names = names
            for key in self.writes:
                index.forget(key)
                uncached.discard(key)
        needed = set(uncached)
        for key, stored in self.writes.items():
            if isinstance(stored, str) and stored.startswith("=") and key not in self.literal:
                index.add(key, reader.areas(stored, key[0]))
                needed.add(key)
        needed |= index.stale(self.writes)

        def raw(sheet: str, row: int, col: int) -> Any:
            key = (sheet, row, col)
            f = self.formula(key)
            if f is not None:
                if key in needed:
                    if f.kind in (b"array", b"dataTable"):
                        raise Uncomputable("array or table formula")
                    return f.text
                return f.cached
            if sheet not in self.where.sheets:
                raise Uncomputable(f"no sheet {sheet}")
            value = self.value(key)
            if isinstance(value, dt.datetime | dt.date):
                return moment_serial(value)
            return value

        def extent(sheet: str) -> tuple[int, int]:
            if sheet not in self.where.sheets:
                return (0, 0)
            s = self.sheet(sheet)
            written = [k[1] for k in self.writes if k[0] == sheet]
            return (max(s.max_row, *written) if written else s.max_row, s.max_column)

        def is_text(sheet: str, row: int, col: int) -> bool:
            key = (sheet, row, col)
            if self.formula(key) is not None:
                return key not in needed
            return True  # plain values are never formulas

        calc = WorkbookCalculator((budget or CellBudget()).counted(raw), extent, is_text, names=names, now=self.now)
        results: dict[Key, Any] = {}
        uncomputed: dict[str, list[str]] = {}
        for key in sorted(needed):
            try:
                results[key] = calc.value(*key)
            except (Uncomputable, RecursionError):
                results[key] = None
                uncomputed.setdefault(key[0], []).append(cell_name(key[1], key[2]))
        self._prepare(results, uncomputed)
        for key, value in results.items():  # the patch stores a value for these, or none
            if value is None:
                uncached.add(key)
            else:
                uncached.discard(key)
        self.formula_index = FormulaIndex(index, reader, uncached, self.borrowed)
        return uncomputed

    def _shows_date(self, sheet: str, formula: str, value: Any) -> bool:
        """A date function's result, or a date cell moved by some days (`=B4+30`), as Excel shows it."""
        if isinstance(value, DateSerial):
            return True
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        m = DATE_SHIFT.match(formula)
        if m is None:
            return False
        row, col = int(m.group(2)), column_index(m.group(1))
        written = self.writes.get((sheet, row, col))
        if written is not None:
            return isinstance(written, dt.date)
        cell = self.sheet(sheet).cells(row).get(col)
        try:
            return cell is not None and int(cell.attrs.get(b"s", b"0")) in self.look.dates
        except ValueError:
            return False

    def _prepare(self, results: dict[Key, Any], uncomputed: dict[str, list[str]]) -> None:
        """The new cells, rows and small parts of the patch: all that can refuse it (`Fallback`)."""
        styles_part = self.where.styles
        date_style: list[int] = []  # found or added on first use
        styles_data = read_part(self.zf, styles_part) if styles_part and styles_part in self.zf.namelist() else None

        def date_xf() -> int:
            nonlocal styles_data
            if not date_style:
                if styles_data is None:
                    raise Fallback("no styles part to hold a date format")
                index, styles_data = _date_xf(styles_data)
                date_style.append(index)
            return date_style[0]

        changed: dict[str, dict[int, dict[int, bytes | None]]] = {}
        for key in {*self.writes, *results}:
            sheet, row, col = key
            existing = self.sheet(sheet).cells(row).get(col)
            attrs = dict(existing.attrs) if existing is not None else {}
            style = attrs.get(b"s", b"0")
            f = self.formula(key)
            if f is None:
                element = _value_cell(key, self.writes[key], style, key in self.literal, date_xf, self.look)
            else:
                if key in self.writes:
                    fxml = b"<f>" + xml_text(f.text[1:]).encode("utf-8") + b"</f>"
                else:
                    assert existing is not None
                    m = FORMULA.search(existing.inner)
                    assert m is not None
                    fxml = m.group(0)
                value = results.get(key, f.cached)
                if key in results and style == b"0" and self._shows_date(key[0], f.text, value):
                    style = str(date_xf()).encode()
                element = _formula_cell(key, fxml, value, style)
            changed.setdefault(sheet, {}).setdefault(row, {})[col] = element
        parts: dict[str, bytes] = {}
        for title, rows in changed.items():
            sheet = self.sheet(title)
            self.edits[sheet.part] = (sheet, _patched(sheet, rows))
        if styles_data is not None and date_style and styles_part:
            parts[styles_part] = styles_data
        self.new_parts = _flag(self.zf, parts, uncomputed)
        self.parts = parts

    def write(self, handle: BinaryIO) -> None:
        """The patched package into `handle`: every part the edit did not change copied as it is,
        the big ones streamed (a sheet part is never held twice, nor the new zip at all)."""
        with zipfile.ZipFile(handle, "w", zipfile.ZIP_DEFLATED) as dst:
            for info in self.zf.infolist():
                body = self.parts.get(info.filename)
                if body is not None:
                    dst.writestr(_entry(info, len(body)), body)
                    continue
                edited = self.edits.get(info.filename)
                if edited is not None:
                    sheet, edits = edited
                    size = len(sheet.data) + sum(len(new) - (end - start) for start, end, new in edits)
                    view = memoryview(sheet.data)
                    with dst.open(_entry(info, size), "w", force_zip64=size > ZIP64_FROM) as out:
                        pos = 0
                        for start, end, new in [*edits, (len(view), len(view), b"")]:
                            for at in range(pos, start, CHUNK):  # in chunks: each is compressed whole
                                out.write(view[at : min(at + CHUNK, start)])
                            out.write(new)
                            pos = end
                    continue
                with self.zf.open(info) as src, dst.open(_entry(info, info.file_size), "w") as out:
                    shutil.copyfileobj(src, out, 1 << 20)
            for name, body in self.new_parts.items():
                dst.writestr(name, body)


def _esc(text: str) -> str:
    return html.escape(text, quote=False)


def _number(value: float) -> bytes:
    number = float(value)
    return (str(int(number)) if number.is_integer() and abs(number) < 2**53 else repr(number)).encode()


def _value_cell(key: Key, value: Any, style: bytes, literal: bool, date_xf: Any, look: Styles) -> bytes | None:
    ref = cell_name(key[1], key[2]).encode()
    s = b"" if style == b"0" else b' s="' + style + b'"'
    if value is None or value == "":
        return b'<c r="' + ref + b'"' + s + b"/>" if s else None
    if isinstance(value, bool):
        return b'<c r="' + ref + b'"' + s + b' t="b"><v>' + (b"1" if value else b"0") + b"</v></c>"
    if isinstance(value, dt.date):
        serial = moment_serial(value)
        if int(style) not in look.dates:
            s = b' s="' + str(date_xf()).encode() + b'"'
        return b'<c r="' + ref + b'"' + s + b"><v>" + _number(serial) + b"</v></c>"
    if isinstance(value, int | float):
        return b'<c r="' + ref + b'"' + s + b"><v>" + _number(value) + b"</v></c>"
    text = xml_text(str(value)).encode("utf-8")
    space = b' xml:space="preserve"' if str(value) != str(value).strip() else b""
    return b'<c r="' + ref + b'"' + s + b' t="inlineStr"><is><t' + space + b">" + text + b"</t></is></c>"


def _formula_cell(key: Key, fxml: bytes, value: Any, style: bytes) -> bytes:
    ref = cell_name(key[1], key[2]).encode()
    s = b"" if style == b"0" else b' s="' + style + b'"'
    if value is None:
        return b'<c r="' + ref + b'"' + s + b">" + fxml + b"</c>"
    if isinstance(value, CellError):
        t, v = b' t="e"', _esc(value.code).encode()
    elif isinstance(value, bool):
        t, v = b' t="b"', b"1" if value else b"0"
    elif isinstance(value, int | float):
        t, v = b"", _number(value)
    else:
        t, v = b' t="str"', xml_text(str(value)).encode("utf-8")
    return b'<c r="' + ref + b'"' + s + t + b">" + fxml + b"<v>" + v + b"</v></c>"


def _patched(sheet: Sheet, rows: dict[int, dict[int, bytes | None]]) -> list[tuple[int, int, bytes]]:
    """The edits of the sheet part, in order, as (start, end, replacement): the given cells replaced
    (None: removed), rows added where needed, the dimension widened."""
    data = sheet.data
    existing = sorted(sheet.rows)
    edits: list[tuple[int, int, int, bytes]] = []  # (start, end, order, replacement)
    max_col = 0
    for order, row in enumerate(sorted(rows)):
        new_cells = rows[row]
        span = sheet.span(row)
        if span is not None:
            start, end = span
            head = ROW.match(data, start)
            assert head is not None
            attrs = re.sub(rb'\s+spans="[^"]*"', b"", head.group(1))
            cells = {c: cell.raw for c, cell in sheet.cells(row).items()}
            for c, element in new_cells.items():
                if element is None:
                    cells.pop(c, None)
                else:
                    cells[c] = element
        else:
            cells = {c: e for c, e in new_cells.items() if e is not None}
            if not cells:
                continue
            i = bisect_left(existing, row)
            start = end = sheet.rows[existing[i]] if i < len(existing) else sheet.end
            attrs = b' r="' + str(row).encode() + b'"'
        max_col = max(max_col, *cells) if cells else max_col
        body = b"".join(cells[c] for c in sorted(cells))
        edits.append((start, end, order, b"<row" + attrs + b">" + body + b"</row>"))
    last_row = max([sheet.max_row, *(r for r, cells in rows.items() if any(v is not None for v in cells.values()))])
    last_col = max(sheet.max_column if sheet.max_column != MAX_COLUMNS else 0, max_col)
    dim = DIMENSION.search(data, 0, sheet.start)
    if last_row and last_col and dim is not None:
        ref = b"A1:" + cell_name(last_row, last_col).encode()
        edits.append((dim.start(), dim.end(), -1, b'<dimension ref="' + ref + b'"/>'))
    edits.sort(key=lambda e: (e[0], e[1], e[2]))
    return [(start, end, new) for start, end, _order, new in edits]


def _date_xf(styles: bytes) -> tuple[int, bytes]:
    """The index of a cell format showing `yyyy-mm-dd`, added to the styles part if needed."""
    code = b"yyyy-mm-dd"
    fmt_id: int | None = None
    for m in re.finditer(rb"<numFmt\b([^>]*?)/?>", styles):
        a = dict(ATTR.findall(m.group(1)))
        if html.unescape(a.get(b"formatCode", b"").decode("utf-8")).encode() == code:
            fmt_id = int(a.get(b"numFmtId", b"0"))
    xfs = re.search(rb"<cellXfs\b([^>]*)>(.*?)</cellXfs>", styles, re.S)
    if xfs is None:
        raise Fallback("no cell formats in the styles part")
    entries = re.findall(rb"<xf\b[^>]*?(?:/>|>.*?</xf>)", xfs.group(2), re.S)
    if fmt_id is not None:
        for i, entry in enumerate(entries):
            if re.search(rb'numFmtId="%d"' % fmt_id, entry):
                return i, styles
    if fmt_id is None:
        ids = [int(x) for x in re.findall(rb'<numFmt\b[^>]*numFmtId="([0-9]+)"', styles)]
        fmt_id = max([163, *ids]) + 1
        numfmt = b'<numFmt numFmtId="%d" formatCode="yyyy-mm-dd"/>' % fmt_id
        if b"<numFmts" in styles:
            styles = re.sub(rb"</numFmts>", numfmt + b"</numFmts>", styles, count=1)
            styles = re.sub(
                rb'(<numFmts\b[^>]*count=")([0-9]+)"', lambda m: m.group(1) + b'%d"' % (len(ids) + 1), styles, count=1
            )
        else:
            styles = re.sub(
                rb"(<styleSheet\b[^>]*>)",
                lambda m: m.group(1) + b'<numFmts count="1">' + numfmt + b"</numFmts>",
                styles,
                count=1,
            )
    xf = b'<xf numFmtId="%d" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>' % fmt_id
    index = len(entries)
    styles = re.sub(rb"</cellXfs>", xf + b"</cellXfs>", styles, count=1)
    styles = re.sub(rb'(<cellXfs\b[^>]*count=")([0-9]+)"', lambda m: m.group(1) + b'%d"' % (index + 1), styles, count=1)
    return index, styles


def _flag(zf: zipfile.ZipFile, parts: dict[str, bytes], uncomputed: dict[str, list[str]]) -> dict[str, bytes]:
    """Record the uncomputed cells (custom property) and ask apps to compute on open; the parts
    changed go into `parts`, new parts are returned."""
    names = zf.namelist()
    new: dict[str, bytes] = {}
    custom = read_part(zf, "docProps/custom.xml") if "docProps/custom.xml" in names else None
    if custom is None and not uncomputed:
        return new
    text = (custom or b"").decode("utf-8")
    text = re.sub(r'<property\b[^>]*name="' + re.escape(UNCOMPUTED_PROPERTY) + r'".*?</property>', "", text, flags=re.S)
    if uncomputed:
        if not text:
            text = (
                '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
                f'<Properties xmlns="{CUSTOM_NS}" xmlns:vt="{VT_NS}"></Properties>'
            )
        pids = [int(p) for p in re.findall(r'\bpid="([0-9]+)"', text)]
        prop = (
            f'<property fmtid="{FMTID}" pid="{max([1, *pids]) + 1}" name="{UNCOMPUTED_PROPERTY}">'
            f"<vt:lpwstr>{_esc(json.dumps(uncomputed))}</vt:lpwstr></property>"
        )
        if "</Properties>" not in text:
            raise Fallback("custom properties in an unexpected form")
        text = text.replace("</Properties>", prop + "</Properties>", 1)
        workbook = read_part(zf, "xl/workbook.xml")
        parts["xl/workbook.xml"] = _full_calc(workbook)
    if custom is not None:
        parts["docProps/custom.xml"] = text.encode("utf-8")
        return new
    new["docProps/custom.xml"] = text.encode("utf-8")
    types = read_part(zf, "[Content_Types].xml")
    override = (
        b'<Override PartName="/docProps/custom.xml" '
        b'ContentType="application/vnd.openxmlformats-officedocument.custom-properties+xml"/>'
    )
    parts["[Content_Types].xml"] = types.replace(b"</Types>", override + b"</Types>", 1)
    rels = read_part(zf, "_rels/.rels")
    ids = [int(x) for x in re.findall(rb'Id="rId([0-9]+)"', rels)]
    rel = (
        b'<Relationship Id="rId%d" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
        b'custom-properties" Target="docProps/custom.xml"/>' % (max([0, *ids]) + 1)
    )
    parts["_rels/.rels"] = rels.replace(b"</Relationships>", rel + b"</Relationships>", 1)
    return new


def _full_calc(workbook: bytes) -> bytes:
    m = re.search(rb"<calcPr\b([^>]*?)(/?)>", workbook)
    if m is not None:
        attrs = re.sub(rb'\s+fullCalcOnLoad="[^"]*"', b"", m.group(1))
        return (
            workbook[: m.start()]
            + b"<calcPr"
            + attrs
            + b' fullCalcOnLoad="1"'
            + m.group(2)
            + b">"
            + workbook[m.end() :]
        )
    for anchor in (b"</definedNames>", b"</sheets>"):
        if anchor in workbook:
            return workbook.replace(anchor, anchor + b'<calcPr fullCalcOnLoad="1"/>', 1)
    raise Fallback("workbook.xml without sheets")


def _entry(info: zipfile.ZipInfo, size: int) -> zipfile.ZipInfo:
    """A copy of `info` to write a part of `size` bytes, deflated (big parts fast: level 6 of
    100 MB of XML costs seconds for 10% of size)."""
    entry = copy.copy(info)
    entry.compress_type = zipfile.ZIP_DEFLATED
    level = 1 if size > 8 << 20 else 6
    # ZipFile.open(entry, "w") reads the level from the entry (named compress_level from Python 3.13)
    setattr(entry, "compress_level" if hasattr(entry, "compress_level") else "_compresslevel", level)
    return entry


def write_atomically(path: Path, write: Callable[[BinaryIO], None]) -> os.stat_result:
    """`write(handle)` into a temporary file beside `path`, fsynced, then put in its place: readers
    see the old file or the new one, and an interruption leaves the old one. Returns the new file's
    status as written (what `path` shows until someone else writes it)."""
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        tmp.chmod(path.stat().st_mode & 0o7777 if path.exists() else 0o644)
        written = tmp.stat()
        replace_file(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    fsync_dir(path.parent)
    return written
