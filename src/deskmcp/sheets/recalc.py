"""Which formulas a write makes stale: the cells each formula reads, and what depends on a change.

A formula's inputs are read from its text (references, ranges, whole columns, defined names), so
they are known even for a formula the evaluator cannot compute. A formula whose inputs cannot be
known from its text (`INDIRECT`, `OFFSET`, a name that is not defined) is taken to read every
cell: any change makes it stale. Also here: the `_xlfn.` prefixes Excel stores on functions newer
than Excel 2007, which a file must carry or Excel and LibreOffice show `#NAME?`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from deskmcp.sheets.a1 import MAX_ROWS, column_index
from deskmcp.sheets.formula_values import Uncomputable
from deskmcp.sheets.formulas import Names, tokenize

Key = tuple[str, int, int]
"""(sheet, row, column) of a cell."""

SMALL_RANGE = 256
"""Ranges of at most this many cells are indexed cell by cell; larger ones are checked per column."""

DYNAMIC = frozenset({"INDIRECT", "OFFSET"})
"""Functions whose inputs are computed: a formula using one may read any cell."""


@dataclass(frozen=True, slots=True)
class Area:
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


def inputs(formula: str, sheet: str, names: Names | None = None, depth: int = 0) -> list[Area] | None:
    """The areas `formula` (on `sheet`) reads, or None when they cannot be known from its text."""
    body = formula[1:] if formula.startswith("=") else formula
    try:
        tokens = tokenize(body)
    except Uncomputable:
        return None
    found: list[Area] = []
    for kind, token in tokens:
        if kind == "ref":
            try:
                found.append(_area(token, sheet))
            except ValueError:
                return None
        elif kind == "func":
            name = token.rstrip("( \t").upper()
            for prefix in ("_XLFN.", "_XLWS."):
                name = name.removeprefix(prefix)
            if name in DYNAMIC:
                return None
        elif kind == "name":
            definition = names(sheet, token.upper()) if names is not None else None
            if definition is None or depth > 20:
                return None
            inner = inputs(definition, sheet, names, depth + 1)
            if inner is None:
                return None
            found.extend(inner)
    return found


class Dependents:
    """Which formulas read which cells, to find every formula a change makes stale (transitively)."""

    def __init__(self) -> None:
        self.by_cell: dict[Key, list[Key]] = {}
        self.by_column: dict[tuple[str, int], list[tuple[int, int, Key]]] = {}
        self.anything: list[Key] = []

    def add(self, key: Key, areas: list[Area] | None) -> None:
        if areas is None:
            self.anything.append(key)
            return
        for a in areas:
            if (a.row1 - a.row0 + 1) * (a.col1 - a.col0 + 1) <= SMALL_RANGE:
                for r in range(a.row0, a.row1 + 1):
                    for c in range(a.col0, a.col1 + 1):
                        self.by_cell.setdefault((a.sheet, r, c), []).append(key)
            else:
                for c in range(a.col0, a.col1 + 1):
                    self.by_column.setdefault((a.sheet, c), []).append((a.row0, a.row1, key))

    def stale(self, changed: Iterable[Key]) -> set[Key]:
        """Every formula that reads a changed cell, or a formula that does, and so on."""
        todo = list(changed)
        found: set[Key] = set()
        if todo and self.anything:
            found.update(self.anything)
            todo.extend(self.anything)
        while todo:
            cell = todo.pop()
            hits = list(self.by_cell.get(cell, ()))
            column = self.by_column.get((cell[0], cell[2]))
            if column:
                keep = []
                for r0, r1, key in column:
                    if r0 <= cell[1] <= r1:
                        hits.append(key)
                    elif key not in found:
                        keep.append((r0, r1, key))
                if len(keep) < len(column):  # a range once stale need not be checked again
                    self.by_column[(cell[0], cell[2])] = keep
            for key in hits:
                if key not in found:
                    found.add(key)
                    todo.append(key)
        return found


def depends_on(formulas: dict[Key, str], names: Names | None = None) -> Dependents:
    index = Dependents()
    for key, text in formulas.items():
        index.add(key, inputs(text, key[0], names))
    return index


# Functions Excel added after 2007, stored with `_xlfn.` (`_xlfn._xlws.` for FILTER and SORT);
# without it Excel and LibreOffice read an unknown function and show #NAME?.
NEW_FUNCTIONS = frozenset(
    [
        "ACOT",
        "ACOTH",
        "AGGREGATE",
        "ARABIC",
        "ARRAYTOTEXT",
        "BASE",
        "BETA.DIST",
        "BETA.INV",
        "BINOM.DIST",
        "BINOM.DIST.RANGE",
        "BINOM.INV",
        "BITAND",
        "BITLSHIFT",
        "BITOR",
        "BITRSHIFT",
        "BITXOR",
        "BYCOL",
        "BYROW",
        "CEILING.MATH",
        "CEILING.PRECISE",
        "CHISQ.DIST",
        "CHISQ.DIST.RT",
        "CHISQ.INV",
        "CHISQ.INV.RT",
        "CHISQ.TEST",
        "CHOOSECOLS",
        "CHOOSEROWS",
        "COMBINA",
        "CONCAT",
        "CONFIDENCE.NORM",
        "CONFIDENCE.T",
        "COT",
        "COTH",
        "COVARIANCE.P",
        "COVARIANCE.S",
        "CSC",
        "CSCH",
        "DAYS",
        "DECIMAL",
        "DROP",
        "ERF.PRECISE",
        "ERFC.PRECISE",
        "EXPAND",
        "EXPON.DIST",
        "F.DIST",
        "F.DIST.RT",
        "F.INV",
        "F.INV.RT",
        "F.TEST",
        "FILTERXML",
        "FLOOR.MATH",
        "FLOOR.PRECISE",
        "FORECAST.ETS",
        "FORECAST.ETS.CONFINT",
        "FORECAST.ETS.SEASONALITY",
        "FORECAST.ETS.STAT",
        "FORECAST.LINEAR",
        "FORMULATEXT",
        "GAMMA",
        "GAMMA.DIST",
        "GAMMA.INV",
        "GAMMALN.PRECISE",
        "GAUSS",
        "HSTACK",
        "HYPGEOM.DIST",
        "IFNA",
        "IFS",
        "IMCOSH",
        "IMCOT",
        "IMCSC",
        "IMCSCH",
        "IMSEC",
        "IMSECH",
        "IMSINH",
        "IMTAN",
        "ISFORMULA",
        "ISOMITTED",
        "ISOWEEKNUM",
        "LAMBDA",
        "LET",
        "LOGNORM.DIST",
        "LOGNORM.INV",
        "MAKEARRAY",
        "MAP",
        "MAXIFS",
        "MINIFS",
        "MODE.MULT",
        "MODE.SNGL",
        "MUNIT",
        "NEGBINOM.DIST",
        "NETWORKDAYS.INTL",
        "NORM.DIST",
        "NORM.INV",
        "NORM.S.DIST",
        "NORM.S.INV",
        "NUMBERVALUE",
        "PDURATION",
        "PERCENTILE.EXC",
        "PERCENTILE.INC",
        "PERCENTRANK.EXC",
        "PERCENTRANK.INC",
        "PERMUTATIONA",
        "PHI",
        "POISSON.DIST",
        "QUARTILE.EXC",
        "QUARTILE.INC",
        "RANDARRAY",
        "RANK.AVG",
        "RANK.EQ",
        "REDUCE",
        "RRI",
        "SCAN",
        "SEC",
        "SECH",
        "SEQUENCE",
        "SHEET",
        "SHEETS",
        "SINGLE",
        "SKEW.P",
        "SORTBY",
        "STDEV.P",
        "STDEV.S",
        "SWITCH",
        "T.DIST",
        "T.DIST.2T",
        "T.DIST.RT",
        "T.INV",
        "T.INV.2T",
        "T.TEST",
        "TAKE",
        "TEXTAFTER",
        "TEXTBEFORE",
        "TEXTJOIN",
        "TEXTSPLIT",
        "TOCOL",
        "TOROW",
        "UNICHAR",
        "UNICODE",
        "UNIQUE",
        "VALUETOTEXT",
        "VAR.P",
        "VAR.S",
        "VSTACK",
        "WEBSERVICE",
        "WEIBULL.DIST",
        "WORKDAY.INTL",
        "WRAPCOLS",
        "WRAPROWS",
        "XLOOKUP",
        "XMATCH",
        "XOR",
        "Z.TEST",
    ]
)
WORKSHEET_FUNCTIONS = frozenset({"FILTER", "SORT"})

_FUNCTION = re.compile(r'"(?:[^"]|"")*"|(?<![\w.])([A-Za-z_][\w.]*)(?=\s*\()')


def _prefixed(m: re.Match[str]) -> str:
    name = m.group(1)
    if name is None:
        return m.group(0)
    upper = name.upper()
    if upper in NEW_FUNCTIONS:
        return "_xlfn." + name
    if upper in WORKSHEET_FUNCTIONS:
        return "_xlfn._xlws." + name
    return name


def excel_prefixes(formula: str) -> str:
    """`formula` as Excel stores it: functions newer than Excel 2007 carry `_xlfn.` (`=_xlfn.CONCAT(A1,B1)`)."""
    return _FUNCTION.sub(_prefixed, formula)


_PREFIX = re.compile(r'"(?:[^"]|"")*"|_xlfn\.(?:_xlws\.)?', re.IGNORECASE)


def without_prefixes(formula: str) -> str:
    """`formula` as a user types it: `_xlfn.` and `_xlws.` prefixes dropped (text in quotes kept)."""
    return _PREFIX.sub(lambda m: m.group(0) if m.group(0).startswith('"') else "", formula)


__all__ = [
    "Area",
    "Dependents",
    "Key",
    "depends_on",
    "excel_prefixes",
    "inputs",
    "without_prefixes",
]
