"""A spreadsheet formula evaluator, so formulas written locally read back as the values Excel shows.

A formula is parsed once into a small tree and evaluated against the workbook through callbacks:
arithmetic, comparison, `&`, `%`, references (other sheets, whole columns, defined names) and the
functions of `functions.FUNCTIONS`, with Excel's rules for blanks, text and booleans
(`values`). Anything else raises `Uncomputable`, and the caller says so instead of
guessing: a value this module returns is the one Excel or LibreOffice would compute.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from deskmcp.sheets.a1 import column_index
from deskmcp.sheets.formulas.functions import FUNCTIONS, Context
from deskmcp.sheets.formulas.tokens import tokenize
from deskmcp.sheets.formulas.values import (
    DIV0,
    ERROR_CODES,
    MISSING,
    NA,
    NAME,
    NUM,
    REF,
    SPILL,
    VALUE,
    Area,
    CellError,
    DateSerial,
    ScalarExpected,
    Uncomputable,
    arith,
    compare,
    scalar,
    text,
)

__all__ = [
    "DIV0",
    "NA",
    "VALUE",
    "CellError",
    "DateSerial",
    "Spill",
    "Uncomputable",
    "WorkbookCalculator",
    "evaluate",
    "names_resolver",
    "shift_rows",
    "workbook_names",
]

log = logging.getLogger(__name__)

Lookup = Callable[[str, int, int], Any]
"""(sheet, row, column) -> the cell's value, evaluating its formula if it has one."""
Extent = Callable[[str], tuple[int, int]]
"""sheet -> (rows, columns) holding data, for whole-column references."""
Names = Callable[[str, str], str | None]
"""(sheet, NAME in upper case) -> what the defined name refers to (e.g. "Rates!$B$2:$B$9"), or None."""

SpillLookup = Callable[[str, int, int], Any]
"""(sheet, row, column) of a spill reference's anchor -> the cells it spills over (an `Area`), or
`#REF!` when that cell holds no spilling formula."""

MAX_RANGE_CELLS = 2_000_000


# -- the formula tree ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Const:
    value: Any


@dataclass(frozen=True, slots=True)
class Ref:
    sheet: str | None  # None: the formula's own sheet
    row0: int | None  # None: whole columns
    col0: int
    row1: int | None
    col1: int
    single: bool


@dataclass(frozen=True, slots=True)
class SpillRef:
    """`D1#`: the cells the dynamic array formula in D1 spills over (`_xlfn.ANCHORARRAY(D1)` in a file)."""

    anchor: Ref


@dataclass(frozen=True, slots=True)
class NameRef:
    name: str


@dataclass(frozen=True, slots=True)
class Call:
    name: str
    args: tuple[Any, ...] = field(default=())


@dataclass(frozen=True, slots=True)
class Op:
    op: str
    left: Any
    right: Any


@dataclass(frozen=True, slots=True)
class Unary:
    op: str  # "-" or "%"
    operand: Any


Node = Const | Ref | SpillRef | NameRef | Call | Op | Unary


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.tokens = tokens
        self.i = 0

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        tok = self.peek()
        if tok is None:
            raise Uncomputable("the formula ends early")
        self.i += 1
        return tok

    def op(self, *ops: str) -> str | None:
        tok = self.peek()
        if tok and tok[0] == "op" and tok[1] in ops:
            self.i += 1
            return tok[1]
        return None

    def run(self) -> Node:
        node = self.comparison()
        tok = self.peek()
        if tok is not None:
            raise Uncomputable(f"unexpected {tok[1]!r}")
        return node

    def comparison(self) -> Node:
        left = self.concat()
        while (o := self.op("=", "<>", "<", ">", "<=", ">=")) is not None:
            left = Op(o, left, self.concat())
        return left

    def concat(self) -> Node:
        left = self.additive()
        while self.op("&"):
            left = Op("&", left, self.additive())
        return left

    def additive(self) -> Node:
        left = self.term()
        while (o := self.op("+", "-")) is not None:
            left = Op(o, left, self.term())
        return left

    def term(self) -> Node:
        left = self.power()
        while (o := self.op("*", "/")) is not None:
            left = Op(o, left, self.power())
        return left

    def power(self) -> Node:
        left = self.percent()
        while self.op("^"):
            left = Op("^", left, self.percent())
        return left

    def percent(self) -> Node:
        node = self.unary()
        while self.op("%"):
            node = Unary("%", node)
        return node

    def unary(self) -> Node:
        if self.op("-"):
            return Unary("-", self.unary())
        if self.op("+"):
            return self.unary()
        return self.primary()

    def primary(self) -> Node:
        kind, tok = self.take()
        if kind == "number":
            return Const(float(tok))
        if kind == "string":
            return Const(tok[1:-1].replace('""', '"'))
        if kind == "bool":
            return Const(tok.upper() == "TRUE")
        if kind == "error":
            return Const(CellError(tok.upper()))
        if kind == "ref":
            return _reference(tok)
        if kind == "spill":
            return SpillRef(_reference(tok[:-1]))
        if kind == "array":
            return Const(_array_constant(tok))
        if kind == "name":
            return NameRef(tok.upper().removeprefix("_XLPM."))
        if kind == "func":
            return self.call(tok.rstrip("( \t").upper())
        if kind == "op" and tok == "(":
            node = self.comparison()
            if not self.op(")"):
                raise Uncomputable("a parenthesis is not closed")
            return node
        raise Uncomputable(f"unexpected {tok!r}")

    def call(self, name: str) -> Node:
        args: list[Node] = []
        if not self.op(")"):
            while True:
                tok = self.peek()
                if tok and tok[0] == "op" and tok[1] in (",", ";", ")"):
                    args.append(Const(MISSING))
                else:
                    args.append(self.comparison())
                if self.op(")"):
                    break
                if not self.op(",", ";"):
                    raise Uncomputable(f"expected ',' or ')' in {name}")
        for prefix in ("_XLFN.", "_XLWS."):
            name = name.removeprefix(prefix)
        if name == "ANCHORARRAY":  # how a file stores `D1#`
            if len(args) != 1 or not isinstance(args[0], Ref) or not args[0].single:
                raise Uncomputable("ANCHORARRAY of something other than one cell")
            return SpillRef(args[0])
        return Call(name, tuple(args))


_ARRAY_ITEM = re.compile(r'"(?:[^"]|"")*"|[^,;"]+|[,;]')


def _array_constant(tok: str) -> Area:
    """An array written in a formula, `{1,2;3,4}`: `,` between columns, `;` between rows."""
    rows: list[list[Any]] = [[]]
    expect_item = True
    for m in _ARRAY_ITEM.finditer(tok[1:-1]):
        item = m.group(0).strip()
        if item in (",", ";"):
            if expect_item:
                raise Uncomputable("an empty item in an array constant")
            if item == ";":
                rows.append([])
            expect_item = True
            continue
        if not expect_item:
            raise Uncomputable(f"cannot read the array constant {tok}")
        rows[-1].append(_array_item(item))
        expect_item = False
    if expect_item or any(len(row) != len(rows[0]) for row in rows):
        raise Uncomputable(f"cannot read the array constant {tok}")
    return Area(rows)


def _array_item(item: str) -> Any:
    if item.startswith('"'):
        return item[1:-1].replace('""', '"')
    upper = item.upper()
    if upper in ("TRUE", "FALSE"):
        return upper == "TRUE"
    if upper in ERROR_CODES:
        return CellError(upper)
    try:
        return float(item)
    except ValueError as exc:
        raise Uncomputable(f"cannot read {item!r} in an array constant") from exc


def _reference(tok: str) -> Ref:
    sheet: str | None = None
    if "!" in tok:
        prefix, _, tok = tok.rpartition("!")
        sheet = prefix[1:-1].replace("''", "'") if prefix.startswith("'") else prefix
    tok = tok.replace("$", "").upper()
    first, _, second = tok.partition(":")
    c0, r0 = _split(first)
    if not second:
        if r0 is None:
            raise Uncomputable(f"{tok} is not a cell")
        return Ref(sheet, r0, c0, r0, c0, True)
    c1, r1 = _split(second)
    if (r0 is None) != (r1 is None):
        raise Uncomputable(f"{tok} is not a range")
    if r0 is None or r1 is None:
        return Ref(sheet, None, min(c0, c1), None, max(c0, c1), False)
    return Ref(sheet, min(r0, r1), min(c0, c1), max(r0, r1), max(c0, c1), False)


def _split(ref: str) -> tuple[int, int | None]:
    m = re.fullmatch(r"([A-Z]{1,3})(\d+)?", ref)
    if not m:
        raise Uncomputable(f"{ref} is not a cell")
    return column_index(m.group(1)), int(m.group(2)) if m.group(2) else None


@lru_cache(maxsize=4096)
def parse(formula: str) -> Node:
    """The tree of a formula (with or without its leading '=')."""
    body = formula[1:] if formula.startswith("=") else formula
    return _Parser(tokenize(body)).run()


# -- evaluation ---------------------------------------------------------------------------------


class _Evaluator:
    """Evaluates one formula's tree in the context of its cell."""

    def __init__(
        self, ctx: Context, lookup: Lookup, extent: Extent, names: Names | None, spilled: SpillLookup | None = None
    ) -> None:
        self.ctx = ctx
        self.lookup = lookup
        self.spilled = spilled
        self.extent = extent
        self.names = names
        self.name_depth = 0
        self.scopes: list[dict[str, Any]] = []  # the names LET binds, innermost last

    def value(self, node: Node, arrays: bool = False) -> Any:
        if isinstance(node, Const):
            return node.value
        if isinstance(node, Ref):
            return self.area(node)
        if isinstance(node, SpillRef):
            if self.spilled is None:
                raise Uncomputable("which cells a formula spills over is not known here")
            anchor = node.anchor
            return self.spilled(self.ctx.sheet if anchor.sheet is None else anchor.sheet, anchor.row0 or 0, anchor.col0)
        if isinstance(node, Op):
            left = self.value(node.left, arrays)
            right = self.value(node.right, arrays)
            return self.binary(node.op, left, right, arrays)
        if isinstance(node, Unary):
            operand = self.value(node.operand, arrays)
            if node.op == "-":
                return self.binary("*", operand, -1.0, arrays)
            return self.binary("/", operand, 100.0, arrays)
        if isinstance(node, Call):
            return self.call(node, arrays)
        return self.name(node.name, arrays)

    def area(self, ref: Ref) -> Area:
        sheet = self.ctx.sheet if ref.sheet is None else ref.sheet
        if ref.row0 is None or ref.row1 is None:
            rows, _cols = self.extent(sheet)
            r0, r1 = 1, max(rows, 1)
        else:
            r0, r1 = ref.row0, ref.row1
        if (r1 - r0 + 1) * (ref.col1 - ref.col0 + 1) > MAX_RANGE_CELLS:
            raise Uncomputable("the range is too large to compute")
        cells = [[self.lookup(sheet, r, c) for c in range(ref.col0, ref.col1 + 1)] for r in range(r0, r1 + 1)]
        return Area(cells, ref=True, sheet=sheet, row=r0, column=ref.col0)

    def read_area(self, sheet: str, row0: int, col0: int, row1: int, col1: int) -> Area:
        """The cells of a rectangle a function computed (OFFSET)."""
        return self.area(Ref(sheet, row0, col0, row1, col1, row0 == row1 and col0 == col1))

    def refer(self, written: str) -> Any:
        """The cells a reference written as text names (INDIRECT): `B2`, `'My Sheet'!A1:C9`, a name."""
        tokens = tokenize(written)
        if len(tokens) != 1 or tokens[0][0] not in ("ref", "name"):
            raise Uncomputable(f"INDIRECT of {written!r}")
        kind, token = tokens[0]
        if kind == "ref":
            return self.area(_reference(token))
        found = self.name(token.upper(), False)
        return found if isinstance(found, Area) and found.ref else REF

    def name(self, name: str, arrays: bool) -> Any:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        if self.names is None:
            raise Uncomputable(f"the name {name} is not known here")
        definition = self.names(self.ctx.sheet, name)
        if definition is None:
            return NAME
        if self.name_depth > 20:
            raise Uncomputable(f"the name {name} refers to itself")
        self.name_depth += 1
        try:
            return self.value(parse(definition), arrays)
        finally:
            self.name_depth -= 1

    def let(self, args: tuple[Any, ...], arrays: bool) -> Any:
        """LET(name, value, ..., calculation): each value computed once, in order, then the calculation."""
        if len(args) < 3 or len(args) % 2 == 0:
            raise Uncomputable("LET takes (name, value) pairs and a calculation")
        scope: dict[str, Any] = {}
        self.scopes.append(scope)
        try:
            for i in range(0, len(args) - 1, 2):
                bound = args[i]
                if not isinstance(bound, NameRef):
                    raise Uncomputable("LET names a value with something that is not a name")
                scope[bound.name] = self.value(args[i + 1], True)
            return self.value(args[-1], arrays)
        finally:
            self.scopes.pop()

    def call(self, node: Call, arrays: bool) -> Any:
        if node.name == "LET":
            return self.let(node.args, arrays)
        fn = FUNCTIONS.get(node.name)
        if fn is None:
            raise Uncomputable(f"the function {node.name} is not supported")
        fn.check_arity(node.name, len(node.args))
        inner = arrays or fn.arrays
        if fn.lazy:
            args: list[Any] = [_Thunk(self, arg, inner) for arg in node.args]
        else:
            args = [self.value(arg, inner) for arg in node.args]
        if fn.context:
            return fn.run(self.ctx, *args)
        return fn.run(*args)

    def binary(self, op: str, left: Any, right: Any, arrays: bool) -> Any:
        if _is_block(left) or _is_block(right):
            if not arrays:
                # Outside SUMPRODUCT and its kind, Excel would intersect the range with the formula's row.
                raise ScalarExpected("a range is used where one value is expected")
            return _elementwise(op, left, right)
        return _scalar_op(op, scalar(left), scalar(right))


class _Thunk:
    """An argument evaluated only when a function asks (IF's untaken branch is never evaluated)."""

    __slots__ = ("arrays", "evaluator", "node")

    def __init__(self, evaluator: _Evaluator, node: Node, arrays: bool) -> None:
        self.evaluator = evaluator
        self.node = node
        self.arrays = arrays

    def __call__(self) -> Any:
        return self.evaluator.value(self.node, self.arrays)


def _is_block(value: Any) -> bool:
    return isinstance(value, Area) and (value.height != 1 or value.width != 1)


def _scalar_op(op: str, a: Any, b: Any) -> Any:
    if op in ("+", "-", "*", "/", "^"):
        return arith(op, a, b)
    if op == "&":
        if isinstance(a, CellError):
            return a
        if isinstance(b, CellError):
            return b
        return text(a) + text(b)
    return compare(op, a, b)


def _elementwise(op: str, left: Any, right: Any) -> Area:
    a = left.rows if isinstance(left, Area) else [[left]]
    b = right.rows if isinstance(right, Area) else [[right]]
    height = max(len(a), len(b))
    width = max(len(a[0]), len(b[0]))
    for block in (a, b):
        if len(block) not in (1, height) or len(block[0]) not in (1, width):
            raise Uncomputable("arrays of different sizes are combined")
    rows = [
        [
            _scalar_op(
                op,
                a[r if len(a) > 1 else 0][c if len(a[0]) > 1 else 0],
                b[r if len(b) > 1 else 0][c if len(b[0]) > 1 else 0],
            )
            for c in range(width)
        ]
        for r in range(height)
    ]
    return Area(rows)


@dataclass(frozen=True)
class Spill:
    """What a formula cell allowed to spill gives when it is an array formula: its values by row
    (one row of one value when only its computing needed arrays, as `=SUM(IF(A1:A3>1,1))`)."""

    rows: tuple[tuple[Any, ...], ...]

    @property
    def height(self) -> int:
        return len(self.rows)

    @property
    def width(self) -> int:
        return len(self.rows[0])


def _result(value: Any) -> Any:
    """The value a formula cell shows: one value; a blank reference shows 0."""
    if isinstance(value, Area):
        if value.height != 1 or value.width != 1:
            raise Uncomputable("the formula gives several values (it would spill over cells)")
        value = value.rows[0][0]
    if value is None or value is MISSING:
        return 0.0
    if isinstance(value, bool | str | CellError):
        return value
    if isinstance(value, DateSerial):
        return value
    if isinstance(value, int | float):
        n = float(value)
        return n if n == n and abs(n) != float("inf") else NUM
    raise Uncomputable(f"the formula gives a value of type {type(value).__name__}")


def evaluate(
    formula: str,
    sheet: str,
    lookup: Lookup,
    extent: Extent,
    names: Names | None = None,
    *,
    row: int = 0,
    column: int = 0,
    now: Callable[[], dt.datetime] = dt.datetime.now,
    formula_text: Callable[[str, int, int], str | None] | None = None,
    hidden_rows: Callable[[str], frozenset[int]] | None = None,
    spill: bool = False,
    spilled: SpillLookup | None = None,
) -> Any:
    """The value of `formula` (with or without the leading '=') on `sheet`, at cell (`row`, `column`).
    `formula_text` and `hidden_rows` tell SUBTOTAL and AGGREGATE what they leave out. `spill`: the
    cell may hold a dynamic array formula, as Excel 365 writes it: a formula giving several values,
    or needing arrays where one value is expected, gives a `Spill` instead of being uncomputable.
    `spilled` reads a spill reference (`D1#`); without it such a formula is uncomputable."""
    ctx = Context(sheet=sheet, row=row, column=column, now=now, formula_text=formula_text, hidden_rows=hidden_rows)
    evaluator = _Evaluator(ctx, lookup, extent, names, spilled)
    evaluator.ctx = replace(ctx, read=evaluator.read_area, refer=evaluator.refer)
    try:
        tree = parse(formula)
        if not spill:
            return _result(evaluator.value(tree))
        try:
            found = evaluator.value(tree)
        except ScalarExpected:
            found = evaluator.value(tree, True)  # computed over the arrays, as Excel 365 does
            if not isinstance(found, Area):
                found = Area([[found]])
        if not isinstance(found, Area) or (found.height == 1 and found.width == 1 and found.ref):
            return _result(found)
        if found.height == 0 or found.width == 0:
            raise Uncomputable("the formula gives an empty array")
        return Spill(tuple(tuple(_result(v) for v in row) for row in found.rows))
    except RecursionError as exc:
        raise Uncomputable("the formula nests too deeply") from exc
    except (ArithmeticError, ValueError, TypeError, IndexError, KeyError) as exc:
        # A case a function does not handle is reported, never turned into a value.
        log.warning("formula %r on %s not computed: %s: %s", formula, sheet, type(exc).__name__, exc)
        raise Uncomputable(f"the formula could not be computed ({type(exc).__name__})") from exc


class WorkbookCalculator:
    """Evaluates every formula of a workbook given its raw cells, memoised, cycles detected.

    `names` resolves defined names; `workbook_names(wb)` builds it from an openpyxl workbook.
    `formula_text` (the formula a cell holds, or None) and `hidden_rows` (a sheet's hidden rows)
    let SUBTOTAL and AGGREGATE compute; without them they are flagged.
    """

    def __init__(
        self,
        raw: Callable[[str, int, int], Any],
        extent: Extent,
        is_text: Callable[[str, int, int], bool] = lambda _s, _r, _c: False,
        names: Names | None = None,
        now: Callable[[], dt.datetime] = dt.datetime.now,
        formula_text: Callable[[str, int, int], str | None] | None = None,
        hidden_rows: Callable[[str], frozenset[int]] | None = None,
        spills: Collection[tuple[str, int, int]] = (),
        blocked: Collection[tuple[str, int, int]] = (),
        spill_ranges: Callable[[str, int, int], tuple[int, int, int, int] | None] | None = None,
    ) -> None:
        self.raw = raw
        self.spill_ranges = spill_ranges
        """For a cell not in `spills`: the cells (first row, first column, last row, last column)
        the dynamic array formula it already holds covers, or None when it holds none. Without it,
        a spill reference to such a cell is uncomputable."""
        self.spills = spills
        """The cells that may hold a dynamic array formula: their arrays go into `arrays`, and a
        reference to the cell reads the array's first value."""
        self.blocked = blocked
        """Cells of `spills` whose array cannot spill (cells in the way): they show `#SPILL!`."""
        self.arrays: dict[tuple[str, int, int], Spill] = {}
        self.formula_text = formula_text
        self.hidden_rows = hidden_rows
        self.extent = extent
        self.is_text = is_text
        self.names = names
        self.now = now
        self.memo: dict[tuple[str, int, int], Any] = {}
        self.failed: dict[tuple[str, int, int], Uncomputable] = {}
        self.active: set[tuple[str, int, int]] = set()

    def value(self, sheet: str, row: int, column: int) -> Any:
        key = (sheet, row, column)
        if key in self.memo:
            return self.memo[key]
        if key in self.failed:
            raise self.failed[key]
        cell = self.raw(sheet, row, column)
        if not (isinstance(cell, str) and cell.startswith("=")) or self.is_text(sheet, row, column):
            return cell
        if key in self.active:
            raise Uncomputable("the formula refers to itself (circular reference)")
        self.active.add(key)
        try:
            result = evaluate(
                cell,
                sheet,
                self.value,
                self.extent,
                self.names,
                row=row,
                column=column,
                now=self.now,
                formula_text=self.formula_text,
                hidden_rows=self.hidden_rows,
                spill=key in self.spills,
                spilled=self.spilled,
            )
        except Uncomputable as exc:
            self.failed[key] = exc
            raise
        finally:
            self.active.discard(key)
        if isinstance(result, Spill):
            self.arrays[key] = result
            result = SPILL if key in self.blocked else result.rows[0][0]
        self.memo[key] = result
        return result

    def spilled(self, sheet: str, row: int, column: int) -> Any:
        """The cells the formula in (`sheet`, `row`, `column`) spills over, for `D1#`; `#REF!`, as in
        Excel, when it holds no formula spilling (a value, a one-value formula, a blocked spill)."""
        key = (sheet, row, column)
        first = self.value(sheet, row, column)  # computes the formula, and its array, first
        if key in self.spills:
            found = self.arrays.get(key)
            if found is None or key in self.blocked:
                return REF
            rows = [list(values) for values in found.rows]
            return Area(rows, ref=True, sheet=sheet, row=row, column=column)
        if self.spill_ranges is None:
            cell = self.raw(sheet, row, column)
            if not (isinstance(cell, str) and cell.startswith("=")) or self.is_text(sheet, row, column):
                return REF  # a value
            raise Uncomputable("which cells a formula spills over is not known here")
        covered = self.spill_ranges(sheet, row, column)
        if covered is None or first == SPILL:
            return REF
        r0, c0, r1, c1 = covered
        cells = [[self.value(sheet, r, c) for c in range(c0, c1 + 1)] for r in range(r0, r1 + 1)]
        return Area(cells, ref=True, sheet=sheet, row=r0, column=c0)


def names_resolver(found: dict[tuple[str, str], str]) -> Names:
    """Defined names by (sheet, NAME), "" for the workbook's own, as `WorkbookCalculator` takes
    them: a sheet's name first, else the workbook's."""

    def resolve(sheet: str, name: str) -> str | None:
        return found.get((sheet, name)) or found.get(("", name))

    return resolve


def workbook_names(wb: Any) -> Names:
    """The defined names of an openpyxl workbook (global and per sheet) as `WorkbookCalculator` takes them."""
    found: dict[tuple[str, str], str] = {}
    for name, definition in getattr(wb, "defined_names", {}).items():
        if definition.value:
            found[("", name.upper())] = definition.value
    for ws in getattr(wb, "worksheets", []):
        for name, definition in getattr(ws, "defined_names", {}).items():
            if definition.value:
                found[(ws.title, name.upper())] = definition.value
    return names_resolver(found)


# -- keeping references right when rows move ------------------------------------------------------

_REF_IN_FORMULA = re.compile(
    r"""(?P<string>"(?:[^"]|"")*")
  | (?P<ref>(?:(?P<sheet>'(?:[^']|'')+'|[A-Za-z_][\w.]*)!)?
        (?P<c0>\$?[A-Za-z]{1,3})(?P<r0>\$?\d+)(?::(?P<c1>\$?[A-Za-z]{1,3})(?P<r1>\$?\d+))?)(?![\w(])""",
    re.VERBOSE,
)


def shift_rows(formula: str, formula_sheet: str, target_sheet: str, at: int, delta: int) -> str:
    """`formula` with references to rows >= `at` of `target_sheet` moved by `delta` rows.

    A negative `delta` deletes rows `at`..`at-delta-1`: references into them become `#REF!`
    (a range shrinks instead when only part of it is deleted).
    """

    def move(row: int) -> int | None:
        if delta >= 0:
            return row + delta if row >= at else row
        gone_end = at - delta - 1
        if row < at:
            return row
        if row <= gone_end:
            return None
        return row + delta

    def repl(m: re.Match[str]) -> str:
        if m.group("string"):
            return m.group(0)
        sheet = m.group("sheet")
        name = (sheet[1:-1].replace("''", "'") if sheet.startswith("'") else sheet) if sheet else formula_sheet
        if name != target_sheet:
            return m.group(0)
        prefix = f"{sheet}!" if sheet else ""
        r0 = int(m.group("r0").lstrip("$"))
        d0 = "$" if m.group("r0").startswith("$") else ""
        if m.group("r1") is None:
            new = move(r0)
            return "#REF!" if new is None else f"{prefix}{m.group('c0')}{d0}{new}"
        r1 = int(m.group("r1").lstrip("$"))
        d1 = "$" if m.group("r1").startswith("$") else ""
        n0, n1 = move(r0), move(r1)
        if delta < 0:
            if n0 is None:
                n0 = at if (n1 is not None or r1 > at - delta - 1) else None
            if n1 is None:
                n1 = at - 1 if r0 < at else None
            if n0 is None or n1 is None or n1 < n0:
                return "#REF!"
        return f"{prefix}{m.group('c0')}{d0}{n0}:{m.group('c1')}{d1}{n1}"

    return "=" + _REF_IN_FORMULA.sub(repl, formula[1:]) if formula.startswith("=") else formula
