"""Lookup and reference functions (VLOOKUP, MATCH, INDEX, XLOOKUP, ROW...), with Excel's rules."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from deskmcp.sheets.a1 import column_letters, quote_sheet
from deskmcp.sheets.formulas.functions.registry import (
    Context,
    Raised,
    area,
    flag,
    integer,
    register,
    same_kind,
    txt,
    value_of,
)
from deskmcp.sheets.formulas.values import (
    MISSING,
    NA,
    REF,
    VALUE,
    Area,
    CellError,
    Uncomputable,
    compare,
    text_matches,
)

# -- lookup -------------------------------------------------------------------------------------


def _exact(wanted: Any, values: list[Any], wildcards: bool, last: bool = False) -> int | None:
    order = range(len(values) - 1, -1, -1) if last else range(len(values))
    for i in order:
        v = values[i]
        if not same_kind(wanted, v):
            continue
        if isinstance(wanted, str):
            if text_matches(v, wanted, wildcards):
                return i
        elif compare("=", v, wanted) is True:
            return i
    return None


def _sorted_position(wanted: Any, values: list[Any], descending: bool) -> int | None:
    """The position a binary search finds in sorted data: the last value <= wanted (>= if descending)."""
    kind = [(i, v) for i, v in enumerate(values) if same_kind(wanted, v)]
    for (_i, a), (_j, b) in itertools.pairwise(kind):
        if compare(">" if not descending else "<", a, b) is True:
            # Excel's binary search over unsorted data finds a row we cannot predict honestly.
            raise Uncomputable("an approximate lookup needs its first column (or row) sorted")
    found = None
    for i, v in kind:
        if compare("<=" if not descending else ">=", v, wanted) is True:
            found = i
        else:
            break
    return found


def _lookup_value(arg: Any) -> Any:
    v = value_of(arg)
    if v is None:
        raise Uncomputable("looking up an empty cell")
    return v


@register("VLOOKUP")
def _vlookup(wanted: Any, table: Any, col: Any, approximate: Any = MISSING) -> Any:
    return _table_lookup(wanted, area(table), integer(col), flag(approximate, True), by_row=True)


@register("HLOOKUP")
def _hlookup(wanted: Any, table: Any, row: Any, approximate: Any = MISSING) -> Any:
    return _table_lookup(wanted, area(table), integer(row), flag(approximate, True), by_row=False)


def _table_lookup(wanted: Any, table: Area, index: int, approximate: bool, by_row: bool) -> Any:
    key = _lookup_value(wanted)
    if index < 1:
        return VALUE
    if index > (table.width if by_row else table.height):
        return REF
    keys = table.column_values(0) if by_row else list(table.rows[0])
    pos = _sorted_position(key, keys, descending=False) if approximate else _exact(key, keys, wildcards=True)
    if pos is None:
        return NA
    return table.rows[pos][index - 1] if by_row else table.rows[index - 1][pos]


def _vector(arg: Any) -> tuple[Area, list[Any], bool]:
    """A one-row or one-column area, its values, and whether it runs down a column."""
    block = area(arg)
    if block.width == 1:
        return block, block.column_values(0), True
    if block.height == 1:
        return block, list(block.rows[0]), False
    raise Raised(NA)


@register("MATCH")
def _match(wanted: Any, lookup: Any, kind: Any = MISSING) -> Any:
    key = _lookup_value(wanted)
    _block, values, _down = _vector(lookup)
    mode = integer(kind, 1)
    pos = _exact(key, values, wildcards=True) if mode == 0 else _sorted_position(key, values, descending=mode < 0)
    return NA if pos is None else float(pos + 1)


@register("INDEX")
def _index(ref: Any, row: Any, col: Any = MISSING, which: Any = MISSING) -> Any:
    block = area(ref)
    if which is not MISSING and integer(which) != 1:
        raise Uncomputable("INDEX over several areas")
    r = integer(row, 0)
    c = integer(col, 0)
    if col is MISSING and block.height == 1 and block.width > 1:
        r, c = 0, r  # one row: the single index picks a column
    if r < 0 or c < 0:
        return VALUE
    if r > block.height or c > block.width:
        return REF
    if col is MISSING and block.width > 1 and block.height > 1:
        c = 0
    rows = block.rows if r == 0 else [block.rows[r - 1]]
    picked = [list(row) if c == 0 else [row[c - 1]] for row in rows]
    return Area(
        picked,
        ref=block.ref,
        sheet=block.sheet,
        row=block.row + (r - 1 if r else 0),
        column=block.column + (c - 1 if c else 0),
    )


@register("XLOOKUP")
def _xlookup(
    wanted: Any,
    lookup: Any,
    result: Any,
    missing: Any = MISSING,
    match_mode: Any = MISSING,
    search_mode: Any = MISSING,
) -> Any:
    key = _lookup_value(wanted)
    _block, values, down = _vector(lookup)
    out = area(result)
    if (out.height if down else out.width) != len(values):
        return VALUE
    found = _position(key, values, integer(match_mode, 0), integer(search_mode, 1))
    if found is VALUE:
        return VALUE
    pos = found if isinstance(found, int) else None
    if pos is None:
        return NA if missing is MISSING else missing
    rows = [out.rows[pos]] if down else [[row[pos]] for row in out.rows]
    return Area(
        rows, ref=out.ref, sheet=out.sheet, row=out.row + (pos if down else 0), column=out.column + (0 if down else pos)
    )


def _position(key: Any, values: list[Any], mode: int, search: int) -> int | CellError | None:
    """Where XLOOKUP and XMATCH find `key`: exact (0), exact or next smaller (-1) or larger (1),
    wildcards (2); searching from the first (1) or the last (-1) value. #VALUE! for other modes."""
    if search not in (1, -1):
        if search in (2, -2):
            raise Uncomputable("XLOOKUP's and XMATCH's binary search modes")
        return VALUE
    last = search == -1
    if mode in (0, 2):
        return _exact(key, values, wildcards=mode == 2, last=last)
    if mode not in (-1, 1):
        return VALUE
    pos = _exact(key, values, wildcards=False, last=last)
    if pos is not None:
        return pos
    best: tuple[int, Any] | None = None
    for i, v in enumerate(values):
        if not same_kind(key, v) or compare("<" if mode == -1 else ">", v, key) is not True:
            continue
        better = best is None or compare(">" if mode == -1 else "<", v, best[1]) is True
        if better or (last and best is not None and compare("=", v, best[1]) is True):
            best = (i, v)
    return None if best is None else best[0]


@register("XMATCH")
def _xmatch(wanted: Any, lookup: Any, match_mode: Any = MISSING, search_mode: Any = MISSING) -> Any:
    key = _lookup_value(wanted)
    _block, values, _down = _vector(lookup)
    found = _position(key, values, integer(match_mode, 0), integer(search_mode, 1))
    if isinstance(found, CellError):
        return found
    return NA if found is None else float(found + 1)


@register("CHOOSE", lazy=True)
def _choose(index: Callable[[], Any], *options: Callable[[], Any]) -> Any:
    i = integer(index())
    if not 1 <= i <= len(options):
        return VALUE
    return options[i - 1]()


@register("ROW", context=True)
def _row(ctx: Context, ref: Any = MISSING) -> Any:
    return float(ctx.row if ref is MISSING else area(ref).row)


@register("COLUMN", context=True)
def _column(ctx: Context, ref: Any = MISSING) -> Any:
    return float(ctx.column if ref is MISSING else area(ref).column)


@register("ROWS")
def _rows(ref: Any) -> Any:
    if isinstance(ref, CellError):  # an error in place of the array (a spill reference to no spill)
        return ref
    return float(area(ref).height)


@register("COLUMNS")
def _columns(ref: Any) -> Any:
    if isinstance(ref, CellError):
        return ref
    return float(area(ref).width)


@register("LOOKUP")
def _lookup(wanted: Any, lookup: Any, result: Any = MISSING) -> Any:
    key = _lookup_value(wanted)
    block = area(lookup)
    if result is MISSING and block.height > 1 and block.width > 1:
        # the array form: the first row (wider than tall) or column is searched, the last one given
        if block.width > block.height:
            pos = _sorted_position(key, list(block.rows[0]), descending=False)
            return NA if pos is None else block.rows[-1][pos]
        pos = _sorted_position(key, block.column_values(0), descending=False)
        return NA if pos is None else block.rows[pos][-1]
    _block, values, _down = _vector(lookup)
    pos = _sorted_position(key, values, descending=False)
    if pos is None:
        return NA
    if result is MISSING:
        return values[pos]
    out = area(result)
    answers = list(out.cells()) if out.height == 1 or out.width == 1 else None
    if answers is None:
        raise Uncomputable("LOOKUP with a result range of several rows and columns")
    if pos >= len(answers):
        raise Uncomputable("LOOKUP past the end of its result range: Excel reads on, LibreOffice answers #N/A")
    return answers[pos]


_MAX_ROW = 1_048_576
_MAX_COLUMN = 16_384


@register("ADDRESS")
def _address(row: Any, column: Any, kind: Any = MISSING, a1: Any = MISSING, sheet: Any = MISSING) -> Any:
    r, c, k, style = integer(row), integer(column), integer(kind, 1), flag(a1, True)
    if k > 4:
        raise Uncomputable("ADDRESS of an unknown kind: #VALUE! in Excel, LibreOffice reads it as another")
    if r < 1 or c < 1 or r > _MAX_ROW or c > _MAX_COLUMN or k < 1:
        return VALUE
    fixed_row, fixed_column = k in (1, 2), k in (1, 3)
    if style:
        ref = f"{'$' if fixed_column else ''}{column_letters(c)}{'$' if fixed_row else ''}{r}"
    else:
        ref = f"R{r if fixed_row else f'[{r}]'}C{c if fixed_column else f'[{c}]'}"
    if sheet is MISSING:
        return ref
    name = txt(sheet)
    if not name:
        raise Uncomputable("ADDRESS with an empty sheet name: Excel and LibreOffice write it differently")
    return f"{quote_sheet(name)}!{ref}"


@register("HYPERLINK")
def _hyperlink(link: Any, label: Any = MISSING) -> Any:
    if label is MISSING:
        return txt(link)
    v = value_of(label)
    return 0.0 if v is None else v


@register("OFFSET", context=True)
def _offset(ctx: Context, ref: Any, rows: Any, columns: Any, height: Any = MISSING, width: Any = MISSING) -> Any:
    if not isinstance(ref, Area) or not ref.ref:
        return VALUE
    r0, c0 = ref.row + integer(rows), ref.column + integer(columns)
    h, w = integer(height, ref.height), integer(width, ref.width)
    if h < 0 or w < 0:
        raise Uncomputable("OFFSET with a negative height or width: Excel and LibreOffice differ")
    if h == 0 or w == 0 or r0 < 1 or c0 < 1 or r0 + h - 1 > _MAX_ROW or c0 + w - 1 > _MAX_COLUMN:
        raise Uncomputable("OFFSET outside the sheet: #REF! in Excel, #VALUE! in LibreOffice")
    if ctx.read is None:
        raise Uncomputable("OFFSET needs the workbook's cells")
    return ctx.read(ref.sheet, r0, c0, r0 + h - 1, c0 + w - 1)


@register("INDIRECT", context=True)
def _indirect(ctx: Context, ref: Any, a1: Any = MISSING) -> Any:
    written = txt(ref).strip()
    if not flag(a1, True):
        raise Uncomputable("INDIRECT of an R1C1 reference")
    if not written:
        return REF
    if ctx.refer is None:
        raise Uncomputable("INDIRECT needs the workbook's cells")
    return ctx.refer(written)


@register("TRANSPOSE", arrays=True)
def _transpose(values: Any) -> Any:
    block = area(values)
    if any(isinstance(v, CellError) for v in block.cells()):
        raise Uncomputable("TRANSPOSE of an error: Excel and LibreOffice answer differently")
    return Area([list(column) for column in zip(*block.rows, strict=True)])


@register("AREAS")
def _areas(ref: Any) -> Any:
    if not isinstance(ref, Area) or not ref.ref:
        return VALUE
    return 1.0
