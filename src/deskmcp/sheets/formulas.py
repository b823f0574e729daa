"""A small spreadsheet formula evaluator, so formulas written locally read back as values.

It covers what budgets and tables use: arithmetic, comparison, `&`, percentages, cell and range
references (also on other sheets and whole columns) and the common functions in `FUNCTIONS`.
Anything else raises `Uncomputable`, and the caller says so instead of guessing.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from deskmcp.sheets.a1 import column_index


class Uncomputable(Exception):
    """The formula uses something this evaluator does not implement (or refers in a cycle)."""


@dataclass(frozen=True)
class CellError:
    """A spreadsheet error value such as `#DIV/0!`."""

    code: str

    def __str__(self) -> str:
        return self.code


DIV0 = CellError("#DIV/0!")
VALUE = CellError("#VALUE!")
NA = CellError("#N/A")

_TOKEN = re.compile(
    r"""\s*(?:
    (?P<string>"(?:[^"]|"")*")
  | (?P<ref>(?:(?:'(?:[^']|'')+'|[A-Za-z_][\w.]*)!)?
        (?:\$?[A-Za-z]{1,3}\$?\d+(?::\$?[A-Za-z]{1,3}\$?\d+)?|\$?[A-Za-z]{1,3}:\$?[A-Za-z]{1,3}))(?![\w(])
  | (?P<func>[A-Za-z_][\w.]*)\s*\(
  | (?P<bool>TRUE|FALSE)(?![\w(])
  | (?P<number>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+)
  | (?P<error>\#(?:DIV/0!|VALUE!|REF!|NAME\?|NUM!|N/A|NULL!))
  | (?P<op><>|<=|>=|[-+*/^&=<>%(),;])
    )""",
    re.VERBOSE | re.IGNORECASE,
)

Range = list[list[Any]]
Lookup = Callable[[str, int, int], Any]
"""(sheet, row, column) -> the cell's value, evaluating its formula if it has one."""
Extent = Callable[[str], tuple[int, int]]
"""sheet -> (rows, columns) holding data, for whole-column references."""


def tokenize(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise Uncomputable(f"cannot read the formula near {text[pos : pos + 12]!r}")
        kind = m.lastgroup or ""
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]], sheet: str, lookup: Lookup, extent: Extent) -> None:
        self.tokens = tokens
        self.i = 0
        self.sheet = sheet
        self.lookup = lookup
        self.extent = extent

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

    def run(self) -> Any:
        value = self.comparison()
        if self.peek() is not None:
            raise Uncomputable(f"unexpected {self.peek()[1]!r}")  # type: ignore[index]
        return scalar(value)

    def comparison(self) -> Any:
        left = self.concat()
        while (o := self.op("=", "<>", "<", ">", "<=", ">=")) is not None:
            right = self.concat()
            left = compare(o, scalar(left), scalar(right))
        return left

    def concat(self) -> Any:
        left = self.additive()
        while self.op("&"):
            right = self.additive()
            a, b = scalar(left), scalar(right)
            left = a if isinstance(a, CellError) else b if isinstance(b, CellError) else text(a) + text(b)
        return left

    def additive(self) -> Any:
        left = self.term()
        while (o := self.op("+", "-")) is not None:
            left = arith(o, left, self.term())
        return left

    def term(self) -> Any:
        left = self.power()
        while (o := self.op("*", "/")) is not None:
            left = arith(o, left, self.power())
        return left

    def power(self) -> Any:
        left = self.unary()
        while self.op("^"):
            left = arith("^", left, self.unary())
        return left

    def unary(self) -> Any:
        if self.op("-"):
            return arith("*", -1.0, self.unary())
        if self.op("+"):
            return self.unary()
        value = self.primary()
        while self.op("%"):
            value = arith("/", value, 100.0)
        return value

    def primary(self) -> Any:
        kind, tok = self.take()
        if kind == "number":
            return float(tok)
        if kind == "string":
            return tok[1:-1].replace('""', '"')
        if kind == "bool":
            return tok.upper() == "TRUE"
        if kind == "error":
            return CellError(tok.upper())
        if kind == "ref":
            return self.reference(tok)
        if kind == "func":
            return self.call(tok.upper())
        if kind == "op" and tok == "(":
            value = self.comparison()
            if not self.op(")"):
                raise Uncomputable("a parenthesis is not closed")
            return value
        raise Uncomputable(f"unexpected {tok!r}")

    def call(self, name: str) -> Any:
        args: list[Any] = []
        if not self.op(")"):
            while True:
                args.append(self.comparison())
                if self.op(")"):
                    break
                if not self.op(",", ";"):
                    raise Uncomputable(f"expected ',' or ')' in {name}")
        fn = FUNCTIONS.get(name.removeprefix("_XLFN."))
        if fn is None:
            raise Uncomputable(f"the function {name} is not supported")
        return fn(*args)

    def reference(self, tok: str) -> Any:
        sheet = self.sheet
        if "!" in tok:
            prefix, _, tok = tok.rpartition("!")
            sheet = prefix[1:-1].replace("''", "'") if prefix.startswith("'") else prefix
        tok = tok.replace("$", "").upper()
        first, _, second = tok.partition(":")
        c0, r0 = _split(first)
        if not second:
            if r0 is None:
                raise Uncomputable(f"{tok} is not a cell")
            return self.lookup(sheet, r0, c0)
        c1, r1 = _split(second)
        if r0 is None or r1 is None:  # whole columns
            rows, _cols = self.extent(sheet)
            r0, r1 = 1, max(rows, 1)
        r0, r1 = min(r0, r1), max(r0, r1)
        c0, c1 = min(c0, c1), max(c0, c1)
        if (r1 - r0 + 1) * (c1 - c0 + 1) > 2_000_000:
            raise Uncomputable("the range is too large to compute")
        return [[self.lookup(sheet, r, c) for c in range(c0, c1 + 1)] for r in range(r0, r1 + 1)]


def _split(ref: str) -> tuple[int, int | None]:
    m = re.fullmatch(r"([A-Z]{1,3})(\d+)?", ref)
    if not m:
        raise Uncomputable(f"{ref} is not a cell")
    return column_index(m.group(1)), int(m.group(2)) if m.group(2) else None


def evaluate(formula: str, sheet: str, lookup: Lookup, extent: Extent) -> Any:
    """The value of `formula` (with or without the leading '=') on `sheet`."""
    body = formula[1:] if formula.startswith("=") else formula
    return _Parser(tokenize(body), sheet, lookup, extent).run()


# -- values -------------------------------------------------------------------------------------


def scalar(value: Any) -> Any:
    if isinstance(value, list):
        if len(value) == 1 and len(value[0]) == 1:
            return value[0][0]
        return VALUE
    return value


def number(value: Any) -> float | CellError:
    value = scalar(value)
    if isinstance(value, CellError):
        return value
    if value is None or value == "":
        return 0.0
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip().replace(",", ""))
        except ValueError:
            return VALUE
    return VALUE


def text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    return str(value)


def truth(value: Any) -> bool | CellError:
    value = scalar(value)
    if isinstance(value, CellError):
        return value
    if isinstance(value, str):
        if value.upper() in ("TRUE", "FALSE"):
            return value.upper() == "TRUE"
        return VALUE
    n = number(value)
    return n if isinstance(n, CellError) else n != 0


def arith(op: str, left: Any, right: Any) -> Any:
    a, b = number(left), number(right)
    if isinstance(a, CellError):
        return a
    if isinstance(b, CellError):
        return b
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        return DIV0 if b == 0 else a / b
    try:
        return float(a**b)
    except (OverflowError, ZeroDivisionError, TypeError):
        return CellError("#NUM!")


def compare(op: str, a: Any, b: Any) -> Any:
    if isinstance(a, CellError):
        return a
    if isinstance(b, CellError):
        return b
    key_a, key_b = _order(a), _order(b)
    return {
        "=": key_a == key_b,
        "<>": key_a != key_b,
        "<": key_a < key_b,
        ">": key_a > key_b,
        "<=": key_a <= key_b,
        ">=": key_a >= key_b,
    }[op]


def _order(value: Any) -> tuple[int, Any]:
    # Spreadsheets order numbers < text < booleans; text compares case-insensitively.
    if value is None:
        return (0, 0.0)
    if isinstance(value, bool):
        return (2, value)
    if isinstance(value, int | float):
        return (0, float(value))
    return (1, str(value).lower())


def flatten(args: tuple[Any, ...]) -> Iterator[tuple[Any, bool]]:
    """Each argument value, with whether it came from a range (ranges skip text and blanks)."""
    for arg in args:
        if isinstance(arg, list):
            for row in arg:
                for cell in row:
                    yield cell, True
        else:
            yield arg, False


def numbers(args: tuple[Any, ...]) -> list[float] | CellError:
    out: list[float] = []
    for value, from_range in flatten(args):
        if isinstance(value, CellError):
            return value
        if from_range:
            if isinstance(value, int | float) and not isinstance(value, bool):
                out.append(float(value))
            continue
        n = number(value)
        if isinstance(n, CellError):
            return n
        out.append(n)
    return out


def _aggregate(fn: Callable[[list[float]], Any]) -> Callable[..., Any]:
    def run(*args: Any) -> Any:
        values = numbers(args)
        return values if isinstance(values, CellError) else fn(values)

    return run


def _round(mode: str) -> Callable[..., Any]:
    def run(value: Any, digits: Any = 0.0) -> Any:
        n, d = number(value), number(digits)
        if isinstance(n, CellError):
            return n
        if isinstance(d, CellError):
            return d
        factor = 10 ** int(d)
        scaled = n * factor
        if mode == "up":
            scaled = math.ceil(abs(scaled)) * (1 if scaled >= 0 else -1)
        elif mode == "down":
            scaled = math.floor(abs(scaled)) * (1 if scaled >= 0 else -1)
        else:  # half away from zero, as spreadsheets round
            scaled = math.floor(abs(scaled) + 0.5) * (1 if scaled >= 0 else -1)
        return scaled / factor

    return run


def _if(condition: Any, then: Any = True, otherwise: Any = False) -> Any:
    t = truth(condition)
    if isinstance(t, CellError):
        return t
    return scalar(then) if t else scalar(otherwise)


def _iferror(value: Any, fallback: Any) -> Any:
    value = scalar(value)
    return scalar(fallback) if isinstance(value, CellError) else value


def _logical(fn: Callable[[list[bool]], bool]) -> Callable[..., Any]:
    def run(*args: Any) -> Any:
        values: list[bool] = []
        for value, _from_range in flatten(args):
            if value is None or (isinstance(value, str) and _from_range):
                continue
            t = truth(value)
            if isinstance(t, CellError):
                return t
            values.append(t)
        return fn(values)

    return run


def _text_fn(fn: Callable[[str], Any]) -> Callable[..., Any]:
    def run(value: Any) -> Any:
        value = scalar(value)
        return value if isinstance(value, CellError) else fn(text(value))

    return run


def _concat(*args: Any) -> Any:
    parts: list[str] = []
    for value, _r in flatten(args):
        if isinstance(value, CellError):
            return value
        parts.append(text(value))
    return "".join(parts)


def _sumif(criteria_range: Any, criterion: Any, sum_range: Any = None) -> Any:
    if not isinstance(criteria_range, list):
        return VALUE
    target = sum_range if isinstance(sum_range, list) else criteria_range
    match = _criterion(scalar(criterion))
    total = 0.0
    for r, row in enumerate(criteria_range):
        for c, cell in enumerate(row):
            if match(cell):
                try:
                    v = target[r][c]
                except IndexError:
                    continue
                if isinstance(v, int | float) and not isinstance(v, bool):
                    total += v
    return total


def _countif(criteria_range: Any, criterion: Any) -> Any:
    if not isinstance(criteria_range, list):
        return VALUE
    match = _criterion(scalar(criterion))
    return float(sum(1 for row in criteria_range for cell in row if match(cell)))


def _criterion(criterion: Any) -> Callable[[Any], bool]:
    if isinstance(criterion, str):
        m = re.match(r"^(<>|<=|>=|=|<|>)(.*)$", criterion)
        if m:
            op, operand = m.group(1), m.group(2)
            try:
                target: Any = float(operand)
            except ValueError:
                target = operand
            return lambda v: v is not None and compare(op, v, target) is True
        return lambda v: isinstance(v, str) and v.lower() == criterion.lower()
    return lambda v: v is not None and compare("=", v, criterion) is True


def _mod(a: Any, b: Any) -> Any:
    x, y = number(a), number(b)
    if isinstance(x, CellError):
        return x
    if isinstance(y, CellError):
        return y
    return DIV0 if y == 0 else x - y * math.floor(x / y)


def _sqrt(a: Any) -> Any:
    x = number(a)
    if isinstance(x, CellError):
        return x
    return CellError("#NUM!") if x < 0 else math.sqrt(x)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "SUM": _aggregate(lambda v: float(sum(v))),
    "AVERAGE": _aggregate(lambda v: sum(v) / len(v) if v else DIV0),
    "MIN": _aggregate(lambda v: min(v) if v else 0.0),
    "MAX": _aggregate(lambda v: max(v) if v else 0.0),
    "PRODUCT": _aggregate(lambda v: float(math.prod(v)) if v else 0.0),
    "COUNT": lambda *a: float(sum(1 for v, _r in flatten(a) if isinstance(v, int | float) and not isinstance(v, bool))),
    "COUNTA": lambda *a: float(sum(1 for v, _r in flatten(a) if v is not None and v != "")),
    "COUNTBLANK": lambda *a: float(sum(1 for v, _r in flatten(a) if v is None or v == "")),
    "ROUND": _round("half"),
    "ROUNDUP": _round("up"),
    "ROUNDDOWN": _round("down"),
    "INT": lambda a: n if isinstance(n := number(a), CellError) else float(math.floor(n)),
    "ABS": lambda a: n if isinstance(n := number(a), CellError) else abs(n),
    "MOD": _mod,
    "POWER": lambda a, b: arith("^", a, b),
    "SQRT": _sqrt,
    "IF": _if,
    "IFERROR": _iferror,
    "AND": _logical(all),
    "OR": _logical(any),
    "NOT": lambda a: t if isinstance(t := truth(a), CellError) else not t,
    "CONCAT": _concat,
    "CONCATENATE": _concat,
    "LEN": _text_fn(lambda s: float(len(s))),
    "UPPER": _text_fn(str.upper),
    "LOWER": _text_fn(str.lower),
    "TRIM": _text_fn(lambda s: " ".join(s.split())),
    "SUMIF": _sumif,
    "COUNTIF": _countif,
}


class WorkbookCalculator:
    """Evaluates every formula of a workbook given its raw cells, memoised, cycles detected."""

    def __init__(
        self,
        raw: Callable[[str, int, int], Any],
        extent: Extent,
        is_text: Callable[[str, int, int], bool] = lambda _s, _r, _c: False,
    ) -> None:
        self.raw = raw
        self.extent = extent
        self.is_text = is_text
        self.memo: dict[tuple[str, int, int], Any] = {}
        self.active: set[tuple[str, int, int]] = set()

    def value(self, sheet: str, row: int, column: int) -> Any:
        key = (sheet, row, column)
        if key in self.memo:
            return self.memo[key]
        cell = self.raw(sheet, row, column)
        if not (isinstance(cell, str) and cell.startswith("=")) or self.is_text(sheet, row, column):
            return cell
        if key in self.active:
            raise Uncomputable("the formula refers to itself (circular reference)")
        self.active.add(key)
        try:
            result = evaluate(cell, sheet, self.value, self.extent)
        finally:
            self.active.discard(key)
        self.memo[key] = result
        return result


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
