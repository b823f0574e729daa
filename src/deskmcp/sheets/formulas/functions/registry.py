"""How a spreadsheet function is registered in `FUNCTIONS`, and the argument helpers the function
modules (`arithmetic`, `lookup`, `logic`, `text`, `dates`) share.

Each function takes the values of its arguments (`values`): an `Area` for a reference
or an array, a scalar otherwise. A function either returns the value Excel would, or raises
`Uncomputable` where Excel's answer depends on something we do not model: never a guess.
"""

from __future__ import annotations

import datetime as dt
import inspect
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from deskmcp.sheets.formulas.values import (
    MISSING,
    NUM,
    TIME_TEXT,
    Area,
    CellError,
    Uncomputable,
    is_number,
    number,
    scalar,
    text,
    truth,
)


@dataclass(frozen=True)
class Context:
    """Where the formula is, for the functions that ask (ROW(), TODAY())."""

    sheet: str
    row: int
    column: int
    now: Callable[[], dt.datetime]
    read: Callable[[str, int, int, int, int], Area] | None = None
    """(sheet, first row, first column, last row, last column) -> the cells there (OFFSET)."""
    refer: Callable[[str], Any] | None = None
    """A reference written as text (`B2`, `Data!A1:C9`, a defined name) -> its cells (INDIRECT)."""
    formula_text: Callable[[str, int, int], str | None] | None = None
    """(sheet, row, column) -> the formula the cell holds, or None (SUBTOTAL leaves out its own kind)."""
    hidden_rows: Callable[[str], frozenset[int]] | None = None
    """sheet -> the rows hidden in it (SUBTOTAL 101-111, AGGREGATE); None: not known, flagged."""


class Raised(Exception):
    """An error value met while computing: the function's result is that error."""

    def __init__(self, error: CellError) -> None:
        super().__init__(error.code)
        self.error = error


@dataclass(frozen=True)
class Function:
    run: Callable[..., Any]
    lazy: bool = False  # arguments come as thunks, evaluated only when asked
    arrays: bool = False  # operators inside the arguments work element by element
    context: bool = False  # the first parameter is the formula's Context
    min_args: int = field(default=0)
    max_args: int | None = field(default=None)

    def check_arity(self, name: str, count: int) -> None:
        if count < self.min_args or (self.max_args is not None and count > self.max_args):
            raise Uncomputable(f"{name} does not take {count} arguments")


FUNCTIONS: dict[str, Function] = {}


def register(
    *names: str, lazy: bool = False, arrays: bool = False, context: bool = False, num_disputed: bool = False
) -> Callable[..., Any]:
    """Register `fn` under `names`. `num_disputed`: where the function itself answers `#NUM!` (an
    argument outside its domain), LibreOffice answers `#VALUE!`; the cell is flagged, not guessed."""

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        params = list(inspect.signature(fn).parameters.values())[1 if context else 0 :]
        variadic = any(p.kind == p.VAR_POSITIONAL for p in params)
        required = sum(1 for p in params if p.default is p.empty and p.kind == p.POSITIONAL_OR_KEYWORD)
        maximum = None if variadic else len(params)

        def run(*args: Any) -> Any:
            try:
                result = fn(*args)
            except Raised as raised:
                result = raised.error
            if num_disputed and result is NUM:  # this function's own #NUM!, not an input's error
                raise Uncomputable(
                    f"{names[0]} of an argument outside its domain: #NUM! in Excel, #VALUE! in LibreOffice"
                )
            return result

        for name in names:
            FUNCTIONS[name] = Function(run, lazy, arrays, context, required, maximum)
        return fn

    return wrap


# -- argument helpers ---------------------------------------------------------------------------


def value_of(arg: Any) -> Any:
    """A scalar argument's value; an error raises so the function returns it."""
    v = scalar(arg)
    if isinstance(v, CellError):
        raise Raised(v)
    return v


def num(arg: Any, default: float | None = None) -> float:
    if arg is MISSING and default is not None:
        return default
    n = number(arg)
    if isinstance(n, CellError):
        raise Raised(n)
    return n


def integer(arg: Any, default: int | None = None) -> int:
    if arg is MISSING and default is not None:
        return default
    return math.trunc(num(arg))


def txt(arg: Any, default: str | None = None) -> str:
    if arg is MISSING and default is not None:
        return default
    return text(value_of(arg))


def flag(arg: Any, default: bool) -> bool:
    if arg is MISSING:
        return default
    t = truth(arg)
    if isinstance(t, CellError):
        raise Raised(t)
    return t


def area(arg: Any) -> Area:
    if isinstance(arg, Area):
        return arg
    return Area([[None if arg is MISSING else arg]])


def cells(args: tuple[Any, ...]) -> Iterator[tuple[Any, bool]]:
    """Every value of the arguments, with whether it came from a reference or an array."""
    for arg in args:
        if isinstance(arg, Area):
            for v in arg.cells():
                yield v, True
        elif arg is not MISSING:
            yield arg, False


def numbers(args: tuple[Any, ...]) -> list[float]:
    """The numbers SUM and its kind add up: in references only numbers count; typed arguments convert."""
    out: list[float] = []
    for v, in_area in cells(args):
        if isinstance(v, CellError):
            raise Raised(v)
        if in_area:
            if is_number(v):
                out.append(float(v))
            elif isinstance(v, str) and TIME_TEXT.match(v):
                # A time of day read back as text: Excel would have a number here, not text to skip.
                raise Uncomputable(f"the cell holding {v!r} is a time stored as text")
            continue
        out.append(num(v))
    return out


def same_kind(a: Any, b: Any) -> bool:
    """Both numbers, both texts or both booleans (lookups and SWITCH compare only such pairs)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool)
    return (is_number(a) and is_number(b)) or (isinstance(a, str) and isinstance(b, str))
