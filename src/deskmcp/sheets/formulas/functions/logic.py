"""Logic and information functions (IF, IFERROR, AND, ISBLANK...), with Excel's rules."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from deskmcp.sheets.formulas.functions.registry import (
    Context,
    Raised,
    cells,
    register,
    same_kind,
    value_of,
)
from deskmcp.sheets.formulas.prefixes import without_prefixes
from deskmcp.sheets.formulas.values import (
    MISSING,
    NA,
    VALUE,
    Area,
    CellError,
    Uncomputable,
    compare,
    is_number,
    scalar,
    truth,
)

# -- logic --------------------------------------------------------------------------------------


@register("IF", lazy=True)
def _if(condition: Callable[[], Any], then: Callable[[], Any] | None = None, otherwise: Any = None) -> Any:
    t = truth(condition())
    if isinstance(t, CellError):
        return t
    branch = then if t else otherwise
    if branch is None:
        return t  # IF(cond) without a branch gives TRUE or FALSE
    value = branch()
    return 0.0 if value is MISSING else value


@register("IFS", lazy=True)
def _ifs(*args: Callable[[], Any]) -> Any:
    if len(args) % 2:
        raise Uncomputable("IFS takes (condition, value) pairs")
    for i in range(0, len(args), 2):
        t = truth(args[i]())
        if isinstance(t, CellError):
            return t
        if t:
            return args[i + 1]()
    return NA


@register("SWITCH", lazy=True)
def _switch(expression: Callable[[], Any], *args: Callable[[], Any]) -> Any:
    subject = value_of(expression())
    if subject is None:
        raise Uncomputable("SWITCH of a blank cell: Excel and LibreOffice compare it differently")
    for i in range(0, len(args) - 1, 2):
        case = value_of(args[i]())
        if compare("=", subject, case) is True and _same_kind_or_blank(subject, case):
            return args[i + 1]()
    return args[-1]() if len(args) % 2 else NA


def _same_kind_or_blank(a: Any, b: Any) -> bool:
    return a is None or b is None or same_kind(a, b)


@register("IFERROR", lazy=True)
def _iferror(value: Callable[[], Any], fallback: Callable[[], Any]) -> Any:
    v = value()
    return fallback() if isinstance(_peek(v), CellError) else v


@register("IFNA", lazy=True)
def _ifna(value: Callable[[], Any], fallback: Callable[[], Any]) -> Any:
    v = value()
    return fallback() if _peek(v) == NA else v


def _peek(v: Any) -> Any:
    if isinstance(v, Area):
        return v.rows[0][0] if v.height == 1 and v.width == 1 else None
    return v


def _logicals(args: tuple[Any, ...]) -> list[bool]:
    out: list[bool] = []
    for v, in_area in cells(args):
        if isinstance(v, CellError):
            raise Raised(v)
        if in_area and (v is None or isinstance(v, str)):
            continue
        t = truth(v)
        if isinstance(t, CellError):
            raise Raised(t)
        out.append(t)
    if not out:
        raise Raised(VALUE)
    return out


@register("AND")
def _and(*args: Any) -> Any:
    return all(_logicals(args))


@register("OR")
def _or(*args: Any) -> Any:
    return any(_logicals(args))


@register("XOR")
def _xor(*args: Any) -> Any:
    return sum(_logicals(args)) % 2 == 1


@register("NOT")
def _not(value: Any) -> Any:
    t = truth(value)
    return t if isinstance(t, CellError) else not t


@register("TRUE")
def _true() -> Any:
    return True


@register("FALSE")
def _false() -> Any:
    return False


# -- information ----------------------------------------------------------------------------------


def _first(arg: Any) -> Any:
    return arg.rows[0][0] if isinstance(arg, Area) and arg.height == 1 and arg.width == 1 else scalar(arg)


@register("ISBLANK")
def _isblank(value: Any) -> Any:
    return _first(value) is None


@register("ISNUMBER")
def _isnumber(value: Any) -> Any:
    return is_number(_first(value))


@register("ISTEXT")
def _istext(value: Any) -> Any:
    return isinstance(_first(value), str)


@register("ISLOGICAL")
def _islogical(value: Any) -> Any:
    return isinstance(_first(value), bool)


@register("ISERROR")
def _iserror(value: Any) -> Any:
    return isinstance(_first(value), CellError)


@register("ISERR")
def _iserr(value: Any) -> Any:
    v = _first(value)
    return isinstance(v, CellError) and v != NA


@register("ISNA")
def _isna(value: Any) -> Any:
    return _first(value) == NA


@register("NA")
def _na() -> Any:
    return NA


def _whole(value: Any) -> int:
    v = _first(value)
    if isinstance(v, CellError):
        raise Raised(v)
    if isinstance(v, bool | str):
        raise Raised(VALUE)
    if v is None:
        raise Uncomputable("ISEVEN or ISODD of a blank cell: Excel takes 0, LibreOffice answers #VALUE!")
    n = float(v)
    return math.trunc(n)


@register("ISEVEN")
def _iseven(value: Any) -> Any:
    return _whole(value) % 2 == 0


@register("ISODD")
def _isodd(value: Any) -> Any:
    return _whole(value) % 2 == 1


@register("ISNONTEXT")
def _isnontext(value: Any) -> Any:
    return not isinstance(_first(value), str)


@register("ISREF")
def _isref(value: Any) -> Any:
    return isinstance(value, Area) and value.ref


@register("TYPE")
def _type(value: Any) -> Any:
    if isinstance(value, Area) and (value.height != 1 or value.width != 1):
        raise Uncomputable("TYPE of a range: 64 in Excel, #VALUE! in LibreOffice")
    v = _first(value)
    if isinstance(v, bool):
        raise Uncomputable("TYPE of a boolean: 4 in Excel, 1 in LibreOffice (it has no booleans)")
    if isinstance(v, str):
        return 2.0
    if isinstance(v, CellError):
        return 16.0
    return 1.0


@register("N")
def _n(value: Any) -> Any:
    v = _first(value)
    if isinstance(v, CellError):
        return v
    if isinstance(v, bool):
        return 1.0 if v else 0.0
    if is_number(v):
        return float(v)
    return 0.0


# Excel's numbers; 8 to 13 are for errors of data types and connections this evaluator never meets.
_ERROR_NUMBERS = {
    "#NULL!": 1,
    "#DIV/0!": 2,
    "#VALUE!": 3,
    "#REF!": 4,
    "#NAME?": 5,
    "#NUM!": 6,
    "#N/A": 7,
    "#SPILL!": 9,
    "#CALC!": 14,
}


@register("ERROR.TYPE")
def _error_type(value: Any) -> Any:
    v = _first(value)
    if isinstance(v, CellError) and v.code in _ERROR_NUMBERS:
        return float(_ERROR_NUMBERS[v.code])
    return NA


def _formula_of(ctx: Context, ref: Any) -> str | None:
    if not isinstance(ref, Area) or not ref.ref:
        raise Raised(VALUE)
    if ctx.formula_text is None:
        raise Uncomputable("which cells hold formulas is not known here")
    return ctx.formula_text(ref.sheet, ref.row, ref.column)


@register("ISFORMULA", context=True)
def _isformula(ctx: Context, ref: Any) -> Any:
    return _formula_of(ctx, ref) is not None


@register("FORMULATEXT", context=True)
def _formulatext(ctx: Context, ref: Any) -> Any:
    written = _formula_of(ctx, ref)
    if written is None:
        return NA
    if "!" in written:
        raise Uncomputable("FORMULATEXT of a reference to another sheet: LibreOffice writes it its own way")
    return without_prefixes(written if written.startswith("=") else "=" + written)
