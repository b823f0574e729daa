"""Cell edits of an xlsx written straight into its package: only the changed rows are rewritten.

openpyxl loads every cell of every sheet and writes the whole package again (a one-cell edit of
a 100,000-row workbook took 55 s and 1.3 GB). Here a sheet part is kept as bytes with an index
of its rows; a write rebuilds only the rows it touches and the rows of the formulas it makes
stale, patches `workbook.xml` (`fullCalcOnLoad`), the styles (a date format) and the custom
properties (the uncomputed list) when needed, and copies every other part of the zip unchanged.
Only formulas that read a changed cell (directly or through other formulas) or that hold no
cached value are evaluated. A formula written here that gives several values spills as Excel
365 writes it (`xlsx/spill.py`): the covered cells get its values, the workbook's metadata the
dynamic-array record. Anything this cannot do exactly (a non-plain part, a shared or legacy
array formula's anchor overwritten, no styles part for a date) raises `Fallback`, and the
caller edits the workbook through openpyxl instead.
"""

from __future__ import annotations

import datetime as dt
import io
import re
import zipfile
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any, BinaryIO

from deskmcp.sheets.a1 import GRID_COLUMNS, GRID_ROWS, MAX_COLUMNS, A1Range, cell_name, column_index
from deskmcp.sheets.formulas.budget import CellBudget
from deskmcp.sheets.formulas.dependencies import Dependents, InputReader, Key
from deskmcp.sheets.formulas.engine import Spill, WorkbookCalculator
from deskmcp.sheets.formulas.values import DATE_SHIFT, SPILL, DateSerial, Uncomputable
from deskmcp.sheets.xlsx.cellxml import (
    FORMULA,
    attributes,
    cached,
    date_cell,
    date_format,
    unescape,
    xml_text,
)
from deskmcp.sheets.xlsx.package_edit import with_attribute
from deskmcp.sheets.xlsx.parts import MAX_CELLS_PART_BYTES, PackageMap, read_part
from deskmcp.sheets.xlsx.patch_sheets import (
    CHUNK,
    Fallback,
    Formula,
    FormulaIndex,
    Shares,
    Sheet,
    anchor_of,
    read_cells,
    scan_sheet,
    translate,
)
from deskmcp.sheets.xlsx.patch_xml import (
    add_date_style,
    copy_part,
    formula_cell,
    patched_rows,
    record_uncomputed,
    value_cell,
    zip_entry,
)
from deskmcp.sheets.xlsx.sheetdata import Styles, read_shared_strings
from deskmcp.sheets.xlsx.spill import Rect, add_dynamic_metadata, dynamic_anchors, existing_dynamic_cm, ref_text

ZIP64_FROM = 1 << 30  # parts this big are written with zip64 sizes (their final size is not known first)

HIDDEN_ROW = re.compile(rb'<row\b[^>]*\bhidden="(?:1|true)"')
"""A `<row>` start tag hiding its row (SUBTOTAL 101-111 and AGGREGATE leave such rows out)."""


_NONE = object()


def _differ(a: Any, b: Any) -> bool:
    """Whether two cell values differ (a number and an equal boolean do; so does an absent value)."""
    return type(a) is not type(b) or a != b


def _rect(ref: bytes, row: int, col: int) -> Rect:
    """The cells an array formula's `ref` covers (the formula's own cell when it names none)."""
    m = re.fullmatch(rb"\$?([A-Z]{1,3})\$?([0-9]+)(?::\$?([A-Z]{1,3})\$?([0-9]+))?", ref)
    if m is None:
        return (row, col, row, col)
    r0, c0 = int(m.group(2)), column_index(m.group(1).decode())
    if m.group(3) is None:
        return (r0, c0, r0, c0)
    return (r0, c0, int(m.group(4)), column_index(m.group(3).decode()))


class PackageBook:
    """The edits of one call (values written, cells cleared) on an xlsx, saved as a patch."""

    def __init__(self, path: Path, where: PackageMap, look: Styles, fmt: str, source: BinaryIO | None = None) -> None:
        self.now: Callable[[], dt.datetime] = dt.datetime.now
        """The local date and time TODAY() and NOW() answer."""
        self.path = path
        self.where = where
        self.look = look
        self.fmt = fmt
        self.zf = zipfile.ZipFile(source if source is not None else path)  # `source`: the package, when not at path
        self.sheets: dict[str, Sheet] = {}
        self.writes: dict[Key, Any] = {}  # None clears the cell
        self.literal: set[Key] = set()
        self.report: list[str] = []
        self.borrowed: dict[str, Shares] = {}  # the cells sharing formulas, by sheet
        self.parts: dict[str, bytes] = {}  # small parts replaced by the patch
        self.new_parts: dict[str, bytes] = {}
        self.edits: dict[str, tuple[Sheet, list[tuple[int, int, bytes]]]] = {}  # sheet parts patched
        self.formula_index: FormulaIndex | None = None
        self.old_spills: dict[Key, Rect] = {}  # dynamic array formulas written over or computed again: their old cells
        self.spilled: dict[Key, Any] = {}  # cells a spill fills (None: a spill's old cell emptied)
        self.spill_ranges: dict[Key, Rect] = {}  # dynamic array formulas saved: the cells each covers
        self._cm: int | bool | None = False  # the dynamic arrays' `cm` value in this package (False: not read)

    def dynamic_cm(self) -> int | None:
        """The `cm` value marking dynamic array formulas in this package (None: it has none yet)."""
        if self._cm is False:
            self._cm = existing_dynamic_cm(self.zf)
        return None if isinstance(self._cm, bool) else self._cm

    def close(self) -> None:
        self.zf.close()

    def sheet(self, name: str | None) -> Sheet:
        if name is None:
            name = next(iter(self.where.sheets), "")
        part = self.where.sheets.get(name)
        if part is None:
            raise KeyError(name)
        if name not in self.sheets:
            self.sheets[name] = Sheet.load(name, part, read_cells(self.zf, part))
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
            dynamic = self.dynamic_cm()
            if (
                fattrs.get(b"t") == b"array"
                and dynamic is not None
                and existing.attrs.get(b"cm") == str(dynamic).encode()
            ):
                # a dynamic array formula written over: the cells it spilled over are its own
                self.old_spills[key] = _rect(fattrs.get(b"ref", b""), row, col)
            elif (fattrs.get(b"t") == b"shared" and f.group(2)) or fattrs.get(b"t") in (b"array", b"dataTable"):
                raise Fallback("a shared or legacy array formula's anchor is overwritten")
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
        master = anchor_of(self.borrowed.get(key[0], {}), key[1], key[2]) if kind == b"shared" else None
        text = translate(master, cell_name(key[1], key[2])) if master is not None else unescape(f.group(2) or b"")
        anchor = (kind == b"shared" and master is None) or (
            kind == b"array" and fattrs.get(b"ref", b"") not in (b"", cell_name(key[1], key[2]).encode())
        )
        value = cached(cell.attrs.get(b"t", b"n"), cell.inner)
        return Formula("=" + text, kind, anchor or kind == b"array", value)

    def save(
        self,
        names: Any,
        known: FormulaIndex | None = None,
        budget: CellBudget | None = None,
        *,
        everything: bool = False,
        changed: Collection[Key] = (),
    ) -> dict[str, list[str]]:
        """Compute what the edits make stale and prepare the patch (`write` then streams it out);
        returns the formulas left uncomputed (sheet -> cells). `known`: the formula index of this
        version of the file (taken over: it is changed), so no sheet is scanned; `formula_index`
        is then the index of the version the patch writes. Formulas not computed when the `budget`
        of cells read is spent are left without a value, as those that cannot be computed.
        `everything`: every formula is computed (after rows moved), not only those the edits make stale;
        `changed`: cells changed besides the edits (a sheet added), whose readers are computed too."""
        if known is None:
            reader = InputReader(names)
            index = Dependents()
            uncached: set[Key] = set()
            for title in self.where.sheets:
                found, self.borrowed[title] = scan_sheet(self.sheet(title), self.writes, reader, index)
                uncached.update(found)
        else:
            reader, index, uncached, self.borrowed = known.reader, known.index, known.uncached, known.borrowed
            reader.names = names
            for key in self.writes:
                index.forget(key)
                uncached.discard(key)
        needed = set(uncached)
        if everything:  # cells moved: every formula's value is computed again
            needed |= index.keys()
        for key, stored in self.writes.items():
            if isinstance(stored, str) and stored.startswith("=") and key not in self.literal:
                index.add(key, reader.areas(stored, key[0]))
                needed.add(key)
        needed |= index.stale([*self.writes, *changed])
        spills = self._spilling(needed)
        # what reads a dynamic array formula computed again (`D1*2`, `SUM(D1#)`) is computed again too:
        # its array may change without its inputs changing (a cell in its way written or emptied)
        needed |= spills | index.stale(spills)
        spills |= self._dynamic_among(needed - spills)

        def raw(sheet: str, row: int, col: int) -> Any:
            key = (sheet, row, col)
            f = self.formula(key)
            if f is not None:
                if key in needed:
                    if f.kind in (b"array", b"dataTable") and key not in spills:
                        raise Uncomputable("array or table formula")
                    return f.text
                return f.cached
            if sheet not in self.where.sheets:
                raise Uncomputable(f"no sheet {sheet}")
            if key in self.spilled:
                return self.spilled[key]
            value = self.value(key)
            if isinstance(value, dt.datetime | dt.date):
                return date_cell(value)[0]
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

        def formula_text(sheet: str, row: int, col: int) -> str | None:
            f = self.formula((sheet, row, col))
            return None if f is None else f.text

        anchors: dict[str, dict[tuple[int, int], Rect]] = {}

        def spill_ranges(sheet: str, row: int, col: int) -> Rect | None:
            """The cells a dynamic array formula the file holds (not computed here) covers."""
            if sheet not in self.where.sheets or (sheet, row, col) in self.writes:
                return None
            if sheet not in anchors:
                anchors[sheet] = dynamic_anchors(self.sheet(sheet), self.dynamic_cm())
            return anchors[sheet].get((row, col))

        def hidden_rows(sheet: str) -> frozenset[int]:
            if sheet not in self.where.sheets:
                raise Uncomputable(f"no sheet {sheet}")
            s = self.sheet(sheet)
            return frozenset(r for r, at in s.rows.items() if HIDDEN_ROW.match(s.data, at))

        counted = (budget or CellBudget()).counted(raw)
        blocked: set[Key] = set()
        results: dict[Key, Any] = {}
        uncomputed: dict[str, list[str]] = {}
        for round_ in range(3):
            # A spill changes the cells it covers: what reads them is computed again with them in
            # place (a second round), and a third settles a spill that reads another's cells.
            calc = WorkbookCalculator(
                counted,
                extent,
                is_text,
                names=names,
                now=self.now,
                formula_text=formula_text,
                hidden_rows=hidden_rows,
                spills=spills,
                blocked=blocked,
                spill_ranges=spill_ranges,
            )
            results, uncomputed = {}, {}
            for key in sorted(needed):
                try:
                    results[key] = calc.value(*key)
                except (Uncomputable, RecursionError):
                    results[key] = None
                    uncomputed.setdefault(key[0], []).append(cell_name(key[1], key[2]))
            if not spills and not self.old_spills:
                break
            placed, now_blocked, ranges = self._place(spills, calc.arrays, results)
            moved = {
                k
                for k in placed.keys() | self.spilled.keys()
                if _differ(placed.get(k, _NONE), self.spilled.get(k, _NONE))
            }
            moved |= now_blocked ^ blocked
            self.spilled, blocked, self.spill_ranges = placed, now_blocked, ranges
            if not moved:
                break
            if round_ == 2:  # still moving: none of these arrays is trusted
                for key in spills:
                    if results.get(key) is not None:
                        results[key] = None
                        uncomputed.setdefault(key[0], []).append(cell_name(key[1], key[2]))
                    self.spill_ranges.pop(key, None)
                self.spilled = {k: None for k in self.spilled if self._released(k)}
                break
            needed |= index.stale(moved)
            spills |= self._dynamic_among(needed - spills)
        for title in uncomputed:
            uncomputed[title] = list(dict.fromkeys(uncomputed[title]))
        self._prepare(results, uncomputed)
        for key, value in results.items():  # the patch stores a value for these, or none
            if value is None:
                uncached.add(key)
            else:
                uncached.discard(key)
        self.formula_index = FormulaIndex(index, reader, uncached, self.borrowed)
        return uncomputed

    def _spilling(self, needed: set[Key]) -> set[Key]:
        """The cells that may hold a dynamic array formula in this save: the formulas written, and
        the dynamic array formulas to compute again (their inputs changed, or a cell they spill
        over was written: they are added to `needed`), whose old cells go into `old_spills`."""
        spills = {
            key
            for key, stored in self.writes.items()
            if isinstance(stored, str) and stored.startswith("=") and key not in self.literal
        }
        cm = self.dynamic_cm()
        if cm is None:
            return spills
        for title in {key[0] for key in self.writes}:
            anchors = dynamic_anchors(self.sheet(title), cm)
            for (row, col), rect in anchors.items():
                key = (title, row, col)
                r0, c0, r1, c1 = rect
                if key in self.writes:
                    continue
                if any(k[0] == title and r0 <= k[1] <= r1 and c0 <= k[2] <= c1 for k in self.writes) or (
                    self._blocked(key)  # what was in its way may be gone
                ):
                    spills.add(key)
                    self.old_spills[key] = rect
        return spills | self._dynamic_among(needed - spills)

    def _dynamic_among(self, keys: set[Key]) -> set[Key]:
        """The dynamic array formulas of the file among `keys` (formulas to compute again, not
        written here), their old cells put in `old_spills`."""
        cm = self.dynamic_cm()
        found: set[Key] = set()
        if cm is None:
            return found
        for key in keys:
            if key in self.writes or key[0] not in self.where.sheets:
                continue
            cell = self.sheet(key[0]).cells(key[1]).get(key[2])
            if cell is None or cell.attrs.get(b"cm") != str(cm).encode():
                continue
            f = FORMULA.search(cell.inner)
            if f is not None and (fattrs := attributes(f.group(1))).get(b"t") == b"array":
                found.add(key)
                self.old_spills[key] = _rect(fattrs.get(b"ref", b""), key[1], key[2])
        return found

    def _blocked(self, key: Key) -> bool:
        """Whether the formula in `key` was saved blocked (`#SPILL!`)."""
        cell = self.sheet(key[0]).cells(key[1]).get(key[2])
        return cell is not None and cached(cell.attrs.get(b"t", b"n"), cell.inner) == SPILL

    def _released(self, key: Key) -> bool:
        """Whether `key` is a cell an old spill covered that nothing written holds now."""
        return key not in self.writes and any(
            key != anchor and anchor[0] == key[0] and r0 <= key[1] <= r1 and c0 <= key[2] <= c1
            for anchor, (r0, c0, r1, c1) in self.old_spills.items()
        )

    def _holds(self, key: Key, released: set[Key]) -> bool:
        """Whether a cell holds something a spill may not cover (after the edits)."""
        if key in self.writes:
            return self.writes[key] not in (None, "")
        if key in released:
            return False
        cell = self.sheet(key[0]).cells(key[1]).get(key[2])
        if cell is None:
            return False
        if FORMULA.search(cell.inner) is not None:
            return True
        return cached(cell.attrs.get(b"t", b"n"), cell.inner, self._strings()) is not None

    def _place(
        self, spills: set[Key], arrays: dict[Key, Spill], results: dict[Key, Any]
    ) -> tuple[dict[Key, Any], set[Key], dict[Key, Rect]]:
        """Where the computed arrays go: (cells filled, None for an old spill's cell emptied;
        formulas blocked by cells in their way; the cells each array formula covers)."""
        released: set[Key] = set()
        for anchor, (r0, c0, r1, c1) in self.old_spills.items():
            if anchor not in self.writes and results.get(anchor) is None:
                continue  # not computed: its old values stay until Excel computes it
            for row in range(r0, r1 + 1):
                for col in range(c0, c1 + 1):
                    key = (anchor[0], row, col)
                    if key != anchor and key not in self.writes:
                        released.add(key)
        placed: dict[Key, Any] = dict.fromkeys(released)
        blocked: set[Key] = set()
        ranges: dict[Key, Rect] = {}
        taken: set[Key] = set()
        for anchor in sorted(spills):
            found = arrays.get(anchor)
            if results.get(anchor) is None:
                continue
            title, row, col = anchor
            if found is None:
                if anchor not in self.writes:  # a dynamic array formula of the file now giving one value
                    ranges[anchor] = (row, col, row, col)
                continue
            last_row, last_col = row + found.height - 1, col + found.width - 1
            cells = [
                ((title, r, c), found.rows[r - row][c - col])
                for r in range(row, last_row + 1)
                for c in range(col, last_col + 1)
                if (r, c) != (row, col)
            ]
            if (
                last_row > GRID_ROWS
                or last_col > GRID_COLUMNS
                or any(key in taken or key in spills or self._holds(key, released) for key, _v in cells)
            ):
                blocked.add(anchor)
                ranges[anchor] = (row, col, row, col)
                continue
            ranges[anchor] = (row, col, last_row, last_col)
            for key, value in cells:
                placed[key] = value
                taken.add(key)
        return placed, blocked, ranges

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
        date_style: dict[str, int] = {}  # format -> cell format index, found or added on first use
        styles_data = read_part(self.zf, styles_part) if styles_part and styles_part in self.zf.namelist() else None

        def date_xf(fmt: str = "yyyy-mm-dd") -> int:
            nonlocal styles_data
            if fmt not in date_style:
                if styles_data is None:
                    raise Fallback("no styles part to hold a date format")
                date_style[fmt], styles_data = add_date_style(styles_data, fmt)
            return date_style[fmt]

        changed: dict[str, dict[int, dict[int, bytes | None]]] = {}
        cm = add_dynamic_metadata(self.zf, {}, {}) if self.spill_ranges else None  # (the parts: below)
        for key in {*self.writes, *results, *self.spilled}:
            sheet, row, col = key
            existing = self.sheet(sheet).cells(row).get(col)
            attrs = dict(existing.attrs) if existing is not None else {}
            style = attrs.get(b"s", b"0")
            f = self.formula(key)
            if f is None and key in self.spilled and self.writes.get(key) in (None, ""):  # a spill's cell
                value = self.spilled[key]
                if value is None:
                    element = value_cell(key, None, style, False, date_xf, self.look)
                else:
                    element = formula_cell(key, b"", value, style)
            elif f is None:
                element = value_cell(key, self.writes[key], style, key in self.literal, date_xf, self.look)
            else:
                rect = self.spill_ranges.get(key)
                if key in self.writes:
                    kind = b"" if rect is None else b' t="array" ref="' + ref_text(rect) + b'"'
                    fxml = b"<f" + kind + b">" + xml_text(f.text[1:]).encode("utf-8") + b"</f>"
                else:
                    assert existing is not None
                    m = FORMULA.search(existing.inner)
                    assert m is not None
                    fxml = m.group(0)
                    if rect is not None:
                        fxml = with_attribute(fxml, b"ref", ref_text(rect))
                value = results.get(key, f.cached)
                if key in results and style == b"0" and self._shows_date(key[0], f.text, value):
                    style = str(date_xf(date_format(value))).encode()
                element = formula_cell(key, fxml, value, style, cm=cm if rect is not None else None)
            changed.setdefault(sheet, {}).setdefault(row, {})[col] = element
        parts: dict[str, bytes] = {}
        for title, rows in changed.items():
            sheet = self.sheet(title)
            self.edits[sheet.part] = (sheet, patched_rows(sheet, rows))
        if styles_data is not None and date_style and styles_part:
            parts[styles_part] = styles_data
        self.new_parts = record_uncomputed(self.zf, parts, uncomputed)
        if cm is not None:
            add_dynamic_metadata(self.zf, parts, self.new_parts)
        self.parts = parts

    def write(self, handle: BinaryIO) -> None:
        """The patched package into `handle`: every part the edit did not change copied as it is,
        the big ones streamed (a sheet part is never held twice, nor the new zip at all)."""
        with zipfile.ZipFile(handle, "w", zipfile.ZIP_DEFLATED) as dst:
            for info in self.zf.infolist():
                body = self.parts.get(info.filename)
                if body is not None:
                    dst.writestr(zip_entry(info, len(body)), body)
                    continue
                edited = self.edits.get(info.filename)
                if edited is not None:
                    sheet, edits = edited
                    size = len(sheet.data) + sum(len(new) - (end - start) for start, end, new in edits)
                    view = memoryview(sheet.data)
                    with dst.open(zip_entry(info, size), "w", force_zip64=size > ZIP64_FROM) as out:
                        pos = 0
                        for start, end, new in [*edits, (len(view), len(view), b"")]:
                            for at in range(pos, start, CHUNK):  # in chunks: each is compressed whole
                                out.write(view[at : min(at + CHUNK, start)])
                            out.write(new)
                            pos = end
                    continue
                copy_part(self.zf, info, dst)
            for name, body in self.new_parts.items():
                dst.writestr(name, body)
