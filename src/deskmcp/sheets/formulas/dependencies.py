"""Which formulas a write makes stale: the cells each formula reads, and what depends on a change.

A formula's inputs are read from its text (references, ranges, whole columns, defined names), so
they are known even for a formula the evaluator cannot compute. A formula whose inputs cannot be
known from its text (`INDIRECT`, `OFFSET`, a name that is not defined) is taken to read every
cell: any change makes it stale. (The `_xlfn.` prefixes of newer functions are in `prefixes`.)

Workbooks hold hundreds of thousands of formulas, mostly filled down from a few: `InputReader`
reads the references of one shape (`=B7*2` and `=B8*2` share `=B0*0`) once, and `Dependents`
keeps its index in flat integer arrays rather than a Python object per cell.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from itertools import islice
from operator import gt, sub
from typing import NamedTuple

from deskmcp.sheets.a1 import MAX_ROWS, column_index
from deskmcp.sheets.formulas.engine import Names
from deskmcp.sheets.formulas.tokens import _TOKEN, tokenize
from deskmcp.sheets.formulas.values import Uncomputable

Key = tuple[str, int, int]
"""(sheet, row, column) of a cell."""

SMALL_RANGE = 256
"""Ranges of fewer rows than this are found by binary search; taller ones are checked one by one."""

VOLATILE = frozenset({"TODAY", "NOW", "RAND", "RANDBETWEEN", "RANDARRAY", "OFFSET", "INDIRECT", "INFO", "CELL"})
"""Functions Excel computes again at every change of the workbook: their value changes without
any input changing (the day, a random number) or their inputs are computed."""
DYNAMIC = VOLATILE
"""Functions that make a formula stale at every change: it is taken to read any cell, so every
write computes it again (and what reads it)."""
_VOLATILE_NAMES = tuple(n.encode() for n in sorted(VOLATILE))
_VOLATILE_CALL = re.compile(rb"(?<![A-Z0-9_.])(?:_XLFN\.)?(?:" + b"|".join(_VOLATILE_NAMES) + rb")\s*\(")


def calls_volatile(text: bytes) -> bool:
    """Whether formula text (or XML holding formulas) calls a function of `VOLATILE`. The names are
    looked for as plain bytes first: a whole sheet part costs a few byte searches, not a regex."""
    upper = text.upper()
    return any(name in upper for name in _VOLATILE_NAMES) and _VOLATILE_CALL.search(upper) is not None


class Area(NamedTuple):
    sheet: str
    row0: int
    col0: int
    row1: int
    col1: int


def _cell(text: str) -> tuple[int, int | None]:
    m = re.fullmatch(r"\$?([A-Za-z]{1,3})\$?(\d+)?", text)
    if not m:
        raise ValueError(text)
    return column_index(m.group(1).upper()), int(m.group(2)) if m.group(2) else None


def _area(token: str, sheet: str) -> Area:
    if "!" in token:
        prefix, _, token = token.rpartition("!")
        sheet = prefix[1:-1].replace("''", "'") if prefix.startswith("'") else prefix
    first, _, second = token.partition(":")
    c0, r0 = _cell(first)
    c1, r1 = _cell(second) if second else (c0, r0)
    if r0 is None or r1 is None:  # whole columns
        return Area(sheet, 1, min(c0, c1), MAX_ROWS, max(c0, c1))
    return Area(sheet, min(r0, r1), min(c0, c1), max(r0, r1), max(c0, c1))


def _function(token: str) -> str:
    name = token.rstrip("( \t").upper()
    for prefix in ("_XLFN.", "_XLWS."):
        name = name.removeprefix(prefix)
    return name


def inputs(formula: str, sheet: str, names: Names | None = None, depth: int = 0) -> list[Area] | None:
    """The areas `formula` (on `sheet`) reads, or None when they cannot be known from its text."""
    body = formula[1:] if formula.startswith("=") else formula
    try:
        tokens = tokenize(body)
    except Uncomputable:
        return None
    found: list[Area] = []
    for kind, token in tokens:
        if kind == "spill":  # `D1#` reads its anchor: the anchor is computed whenever its spill changes
            kind, token = "ref", token[:-1]
        if kind == "ref":
            try:
                found.append(_area(token, sheet))
            except ValueError:
                return None
        elif kind == "func":
            if _function(token) in DYNAMIC:
                return None
        elif kind == "name":
            if token.upper().startswith("_XLPM."):
                continue  # a name LET binds inside the formula, not a defined name
            definition = names(sheet, token.upper()) if names is not None else None
            if definition is None or depth > 20:
                return None
            inner = inputs(definition, sheet, names, depth + 1)
            if inner is None:
                return None
            found.extend(inner)
    return found


_DIGITS = re.compile(r"\d+")

DIRECT = "direct"
"""The recipe of a shape whose digits are not all rows (a defined name, a sheet name with digits)."""


def _recipe(shape: str) -> Recipe | str | None:
    """How to read the areas of any formula of `shape` from its digit runs (`inputs` semantics):
    None when such formulas read anything, `DIRECT` when the shape cannot say."""
    text = shape.rstrip()
    pos = 0
    out: Recipe = []
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            return None  # tokenize fails on every formula of this shape
        kind = m.lastgroup or ""
        token = m.group(kind)
        if kind == "spill":
            kind, token = "ref", token[:-1]
        if kind == "name":
            return DIRECT  # a defined name's digits are part of its name
        if kind == "func" and _function(token) in DYNAMIC:
            return None
        if kind == "ref":
            prefix, bang, cells = token.rpartition("!")
            if _DIGITS.search(prefix):
                return DIRECT  # a sheet name with digits in it
            sheet = (prefix[1:-1].replace("''", "'") if prefix.startswith("'") else prefix) if bang else None
            first, _, second = cells.partition(":")
            run = len(_DIGITS.findall(text, 0, m.start(kind)))
            c0, r0 = _cell(first)
            i0 = -1 if r0 is None else run
            run += r0 is not None
            c1, r1 = _cell(second) if second else (c0, r0)
            i1 = (-1 if r1 is None else run) if second else i0
            if i0 < 0 or i1 < 0:
                i0 = i1 = -1
            out.append((sheet, min(c0, c1), max(c0, c1), i0, i1))
        pos = m.end()
    return out


Recipe = list[tuple[str | None, int, int, int, int]]
"""How to read the areas of every formula of one shape from its digit runs: per reference, its sheet
(None: the formula's own), first and last column, and the index of the digit run holding its
first and last row (-1: whole columns)."""


class InputReader:
    """`inputs` of many formulas, each shape read once (a shape: the text with digit runs as `0`)."""

    def __init__(self, names: Names | None = None) -> None:
        self.names = names
        self._shapes: dict[str, Recipe | str | None] = {}

    def recipe(self, shape: str) -> Recipe | str | None:
        """The recipe of a shape; None: its formulas may read any cell; `DIRECT`: read each in full."""
        if shape in self._shapes:
            return self._shapes[shape]
        try:
            found = _recipe(shape)
        except ValueError:
            found = DIRECT
        self._shapes[shape] = found
        return found

    def areas(self, formula: str, sheet: str) -> list[Area] | None:
        body = formula[1:] if formula.startswith("=") else formula
        recipe = self.recipe(_DIGITS.sub("0", body))
        if recipe is None:
            return None
        if isinstance(recipe, str):
            return inputs(body, sheet, self.names)
        if not recipe:
            return []
        digits = _DIGITS.findall(body)
        found: list[Area] = []
        for ref_sheet, c0, c1, i0, i1 in recipe:
            if i0 < 0:
                found.append(Area(ref_sheet or sheet, 1, c0, MAX_ROWS, c1))
                continue
            r0, r1 = int(digits[i0]), int(digits[i1])
            found.append(Area(ref_sheet or sheet, r0 if r0 <= r1 else r1, c0, r1 if r0 <= r1 else r0, c1))
        return found


Corner = tuple[int, bool, int | None, bool]
"""A corner of a reference in a shared formula's anchor: column, whether it is fixed (`$`), row
(None: whole columns), whether it is fixed."""

_CORNER = re.compile(r"(\$?)([A-Za-z]{1,3})(\$?)(\d+)?")


def anchor_refs(formula: str) -> list[tuple[str | None, Corner, Corner]] | None:
    """The references of a shared formula's anchor (sheet or None, first and last corner), from
    which every cell sharing it reads the same references moved by its offset; None when that
    cannot be said from the text alone (a defined name, `INDIRECT`, text the tokenizer cannot read)."""
    body = formula[1:] if formula.startswith("=") else formula
    try:
        tokens = tokenize(body)
    except Uncomputable:
        return None
    found: list[tuple[str | None, Corner, Corner]] = []
    for kind, token in tokens:
        if kind == "name" or (kind == "func" and _function(token) in DYNAMIC):
            return None
        if kind == "spill":
            kind, token = "ref", token[:-1]
        if kind != "ref":
            continue
        prefix, bang, cells = token.rpartition("!")
        sheet = (prefix[1:-1].replace("''", "'") if prefix.startswith("'") else prefix) if bang else None
        corners: list[Corner] = []
        for part in cells.split(":"):
            m = _CORNER.fullmatch(part)
            if m is None:
                return None
            corners.append(
                (
                    column_index(m.group(2).upper()),
                    bool(m.group(1)),
                    int(m.group(4)) if m.group(4) else None,
                    bool(m.group(3)),
                )
            )
        found.append((sheet, corners[0], corners[-1]))
    return found


_LAST_ROW = 2**31 - 1  # rows are kept in C ints; no cell is below this one
_BUCKETS = SMALL_RANGE.bit_length()  # bucket b holds areas of fewer than 2**b rows


class _Column:
    """The areas over one column: short ones in buckets by height, sorted by first row, so a cell's
    readers are found by binary search; tall ones (whole columns) in a list checked one by one."""

    __slots__ = ("firsts", "formulas", "lasts", "ordered", "tall")

    def __init__(self) -> None:
        self.firsts = [array("i") for _ in range(_BUCKETS)]
        self.lasts = [array("i") for _ in range(_BUCKETS)]
        self.formulas = [array("i") for _ in range(_BUCKETS)]
        self.ordered = [True] * _BUCKETS
        self.tall: list[tuple[int, int, int]] = []

    def add(self, row0: int, row1: int, formula: int) -> None:
        height = row1 - row0 + 1
        if height >= SMALL_RANGE:
            self.tall.append((row0, row1, formula))
            return
        if row0 > _LAST_ROW:
            return  # past any row a cell can have (and past what the arrays hold)
        row1 = min(row1, _LAST_ROW)
        b = height.bit_length()
        firsts = self.firsts[b]
        if firsts and firsts[-1] > row0:
            self.ordered[b] = False
        firsts.append(row0)
        self.lasts[b].append(row1)
        self.formulas[b].append(formula)

    def add_many(self, row0s: list[int], row1s: list[int], formulas: range) -> None:
        if len(row0s) != len(row1s):
            raise ValueError("as many first rows as last rows")
        heights = set(map(sub, row1s, row0s))  # (a pass in C: blocks are of many formulas)
        if len(heights) != 1 or not 0 <= next(iter(heights)) < SMALL_RANGE - 1 or max(row1s) > _LAST_ROW:
            for row0, row1, formula in zip(row0s, row1s, formulas, strict=True):
                self.add(row0, row1, formula)
            return
        b = (next(iter(heights)) + 1).bit_length()  # one height: one bucket, extended at once
        firsts = self.firsts[b]
        if (firsts and firsts[-1] > row0s[0]) or any(map(gt, row0s, islice(row0s, 1, None))):
            self.ordered[b] = False
        firsts.extend(row0s)
        self.lasts[b].extend(row1s)
        self.formulas[b].extend(formulas)

    def readers(self, row: int) -> list[int]:
        """The formulas (ids) of the short areas holding `row`."""
        found: list[int] = []
        for b in range(_BUCKETS):
            firsts = self.firsts[b]
            if not firsts:
                continue
            if not self.ordered[b]:
                order = sorted(range(len(firsts)), key=firsts.__getitem__)
                self.firsts[b] = firsts = array("i", map(firsts.__getitem__, order))
                self.lasts[b] = array("i", map(self.lasts[b].__getitem__, order))
                self.formulas[b] = array("i", map(self.formulas[b].__getitem__, order))
                self.ordered[b] = True
            lasts, formulas = self.lasts[b], self.formulas[b]
            # an area of fewer than 2**b rows holding `row` starts at most 2**b - 1 rows above it
            for i in range(bisect_left(firsts, row - (1 << b) + 1), bisect_right(firsts, row)):
                if lasts[i] >= row:
                    found.append(formulas[i])
        return found


class Dependents:
    """Which formulas read which cells, to find every formula a change makes stale (transitively)."""

    def __init__(self) -> None:
        self._sheets: list[str] = []
        self._sheet_ids: dict[str, int] = {}
        # the cell of each formula, by id
        self._key_sheets = array("i")
        self._key_rows = array("i")
        self._key_cols = array("i")
        self._columns: dict[tuple[str, int], _Column] = {}
        self._anything: list[int] = []
        # cells whose formula was overwritten: their ids below this one are gone
        self._gone: dict[Key, int] = {}

    def __len__(self) -> int:
        return len(self._key_rows)

    def _key(self, formula: int) -> Key:
        return (self._sheets[self._key_sheets[formula]], self._key_rows[formula], self._key_cols[formula])

    def _sheet_id(self, sheet: str) -> int:
        sheet_id = self._sheet_ids.get(sheet)
        if sheet_id is None:
            sheet_id = self._sheet_ids[sheet] = len(self._sheets)
            self._sheets.append(sheet)
        return sheet_id

    def _column(self, sheet: str, col: int) -> _Column:
        column = self._columns.get((sheet, col))
        if column is None:
            column = self._columns[(sheet, col)] = _Column()
        return column

    def forget(self, key: Key) -> None:
        """The formula of `key` (if any) is no more: a value or another formula was written there."""
        self._gone[key] = len(self._key_rows)

    def add(self, key: Key, areas: list[Area] | None) -> None:
        formula = len(self._key_rows)
        self._key_sheets.append(self._sheet_id(key[0]))
        self._key_rows.append(key[1])
        self._key_cols.append(key[2])
        if areas is None:
            self._anything.append(formula)
            return
        for sheet, row0, col0, row1, col1 in areas:
            for c in range(col0, col1 + 1):
                self._column(sheet, c).add(row0, row1, formula)

    def add_block(
        self,
        sheet: str,
        rows: Sequence[int],
        cols: Sequence[int],
        reads: list[tuple[str, int, int, list[int], list[int]]],
    ) -> None:
        """Formulas of one shape at once: the cell of each (`rows`, `cols`) and, per reference of the
        shape, its sheet, columns, and the first and last row it reads for each formula."""
        first = len(self._key_rows)
        self._key_sheets.extend([self._sheet_id(sheet)] * len(rows))
        self._key_rows.extend(rows)
        self._key_cols.extend(cols)
        ids = range(first, first + len(rows))
        for ref_sheet, col0, col1, row0s, row1s in reads:
            for c in range(col0, col1 + 1):
                self._column(ref_sheet, c).add_many(row0s, row1s, ids)

    def add_anything(self, sheet: str, rows: Sequence[int], cols: Sequence[int]) -> None:
        """Formulas that may read any cell."""
        first = len(self._key_rows)
        self._key_sheets.extend([self._sheet_id(sheet)] * len(rows))
        self._key_rows.extend(rows)
        self._key_cols.extend(cols)
        self._anything.extend(range(first, first + len(rows)))

    def keys(self) -> set[Key]:
        """The cell of every formula indexed (those overwritten since left out)."""
        gone = self._gone
        return {k for f in range(len(self._key_rows)) if (k := self._key(f)) not in gone or f >= gone[k]}

    def stale(self, changed: Iterable[Key]) -> set[Key]:
        """Every formula that reads a changed cell, or a formula that does, and so on."""
        todo = list(changed)
        found: set[Key] = set()
        gone = self._gone
        if todo and self._anything:
            more = [k for f in self._anything if (k := self._key(f)) not in gone or f >= gone[k]]
            found.update(more)
            todo.extend(more)
        left: dict[tuple[str, int], list[tuple[int, int, int]]] = {}  # tall ranges not yet stale
        while todo:
            cell = todo.pop()
            where = (cell[0], cell[2])
            column = self._columns.get(where)
            if column is None:
                continue
            hits = column.readers(cell[1])
            tall = left.get(where, column.tall)
            if tall:
                keep = []
                for r0, r1, formula in tall:
                    if r0 <= cell[1] <= r1:
                        hits.append(formula)
                    elif self._key(formula) not in found:
                        keep.append((r0, r1, formula))
                if len(keep) < len(tall):  # a range once stale need not be checked again in this call
                    left[where] = keep
            for formula in hits:
                key = self._key(formula)
                if key not in found and (key not in gone or formula >= gone[key]):
                    found.add(key)
                    todo.append(key)
        return found


def depends_on(formulas: dict[Key, str], names: Names | None = None) -> Dependents:
    index = Dependents()
    reader = InputReader(names)
    for key, text in formulas.items():
        index.add(key, reader.areas(text, key[0]))
    return index


__all__ = [
    "Area",
    "Dependents",
    "InputReader",
    "Key",
    "anchor_refs",
    "depends_on",
    "inputs",
]
