"""SUBTOTAL and AGGREGATE: a function over references that leaves out the cells of other SUBTOTAL
and AGGREGATE formulas, and on request hidden rows and errors, with Excel's rules.

Which rows are hidden and which cells hold such formulas are told by the workbook
(`Context.hidden_rows`, `Context.formula_text`); where a caller cannot tell, the cell is flagged.
Rows a filter hides are left out even by SUBTOTAL 1-11, which counts rows hidden by hand: the
two cannot be told apart here, so SUBTOTAL 1-11 over a sheet with hidden rows is flagged too.
"""

from __future__ import annotations

import re
from typing import Any

from deskmcp.sheets.formulas.functions.registry import (
    FUNCTIONS,
    Context,
    integer,
    register,
)
from deskmcp.sheets.formulas.values import (
    MISSING,
    VALUE,
    Area,
    CellError,
    Uncomputable,
)

_TOTALS = re.compile(r"(?<![\w.])(?:_xlfn\.)?(?:SUBTOTAL|AGGREGATE)\s*\(", re.IGNORECASE)

_SUBTOTAL = {
    1: "AVERAGE",
    2: "COUNT",
    3: "COUNTA",
    4: "MAX",
    5: "MIN",
    6: "PRODUCT",
    7: "STDEV",
    8: "STDEVP",
    9: "SUM",
    10: "VAR",
    11: "VARP",
}
_AGGREGATE = {
    **{k: v for k, v in _SUBTOTAL.items()},
    7: "STDEV.S",
    8: "STDEV.P",
    10: "VAR.S",
    11: "VAR.P",
    12: "MEDIAN",
    13: "MODE.SNGL",
    14: "LARGE",
    15: "SMALL",
    16: "PERCENTILE.INC",
    17: "QUARTILE.INC",
    18: "PERCENTILE.EXC",
    19: "QUARTILE.EXC",
}


def _kept(ctx: Context, ref: Any, skip_hidden: bool, skip_errors: bool, skip_totals: bool) -> Area:
    """The cells of `ref` the function sees: the others blank."""
    if not isinstance(ref, Area) or not ref.ref:
        raise Uncomputable("SUBTOTAL or AGGREGATE over an array: Excel and LibreOffice answer differently")
    if ctx.hidden_rows is None or ctx.formula_text is None:
        raise Uncomputable("which rows are hidden is not known here")
    hidden = ctx.hidden_rows(ref.sheet)
    rows: list[list[Any]] = []
    for i, line in enumerate(ref.rows):
        row = ref.row + i
        kept: list[Any] = []
        for j, v in enumerate(line):
            out = v
            if (skip_hidden and row in hidden) or (skip_errors and isinstance(v, CellError)):
                out = None
            elif skip_totals:
                written = ctx.formula_text(ref.sheet, row, ref.column + j)
                if written is not None and _TOTALS.search(written):
                    out = None
            kept.append(out)
        rows.append(kept)
    return Area(rows, ref=True, sheet=ref.sheet, row=ref.row, column=ref.column)


@register("SUBTOTAL", context=True)
def _subtotal(ctx: Context, function: Any, *refs: Any) -> Any:
    k = integer(function)
    name = _SUBTOTAL.get(k % 100 if k > 100 else k)
    if name is None or not (1 <= k <= 11 or 101 <= k <= 111) or not refs:
        return VALUE
    skip_hidden = k > 100
    if not skip_hidden and ctx.hidden_rows is not None:
        for ref in refs:
            if isinstance(ref, Area) and ctx.hidden_rows(ref.sheet):
                raise Uncomputable("SUBTOTAL 1-11 over a sheet with hidden rows: filtered ones would not count")
    blocks = [_kept(ctx, ref, skip_hidden, False, True) for ref in refs]
    return FUNCTIONS[name].run(*blocks)


# AGGREGATE's options: (hidden rows, errors, nested SUBTOTAL and AGGREGATE) left out
_OPTIONS = {
    0: (False, False, True),
    1: (True, False, True),
    2: (False, True, True),
    3: (True, True, True),
    4: (False, False, False),
    5: (True, False, False),
    6: (False, True, False),
    7: (True, True, False),
}


@register("AGGREGATE", context=True)
def _aggregate(ctx: Context, function: Any, options: Any, *args: Any) -> Any:
    for arg in (function, options):
        if isinstance(arg, Area) and any(isinstance(v, CellError) for v in arg.cells()):
            raise Uncomputable("AGGREGATE's function or options an error: LibreOffice answers #VALUE!")
    k, o = integer(function), integer(options, 0) if options is not MISSING else 0
    name = _AGGREGATE.get(k)
    if name is None or o not in _OPTIONS or not args:
        return VALUE
    skip_hidden, skip_errors, skip_totals = _OPTIONS[o]
    if k >= 14:
        if len(args) != 2:
            return VALUE
        block = _kept(ctx, args[0], skip_hidden, skip_errors, skip_totals)
        return FUNCTIONS[name].run(block, args[1])
    blocks = [_kept(ctx, ref, skip_hidden, skip_errors, skip_totals) for ref in args]
    return FUNCTIONS[name].run(*blocks)
