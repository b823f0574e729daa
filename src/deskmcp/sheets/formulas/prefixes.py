"""The `_xlfn.` prefixes Excel stores on functions newer than Excel 2007, which a file must carry
or Excel and LibreOffice show `#NAME?`: added to a formula as written, dropped from one as read."""

from __future__ import annotations

import re

from deskmcp.sheets.formulas.tokens import _TOKEN

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


_CELL = r"(?:(?:'(?:[^']|'')+'|[A-Za-z_][\w.]*)!)?\$?[A-Za-z]{1,3}\$?\d+"
# a spill reference (`D1#`, `'My data'!$D$1#`); text in quotes and quoted sheet names are skipped whole
_SPILL_REF = re.compile(r"(?<![\w.$])(" + _CELL + r")#|\"(?:[^\"]|\"\")*\"|'(?:[^']|'')+'")


def _anchor_array(m: re.Match[str]) -> str:
    return m.group(0) if m.group(1) is None else f"_xlfn.ANCHORARRAY({m.group(1)})"


def excel_prefixes(formula: str) -> str:
    """`formula` as Excel stores it: functions newer than Excel 2007 carry `_xlfn.` (`=_xlfn.CONCAT(A1,B1)`),
    the names LET binds `_xlpm.` (`=_xlfn.LET(_xlpm.x,2,_xlpm.x*3)`), and a spill reference is the
    function it stands for (`=SUM(D1#)` is `=SUM(_xlfn.ANCHORARRAY(D1))`)."""
    if "#" in formula:
        formula = _SPILL_REF.sub(_anchor_array, formula)
    return _let_names(_FUNCTION.sub(_prefixed, formula))


def _let_names(formula: str) -> str:
    """`formula` with the names its LET calls bind written `_xlpm.name`, wherever they are used."""
    if "LET" not in formula.upper():
        return formula
    body_at = 1 if formula.startswith("=") else 0
    spans: list[tuple[str, str, int, int]] = []
    pos = body_at
    while pos < len(formula.rstrip()):
        m = _TOKEN.match(formula, pos)
        if not m or m.end() == pos:
            return formula  # not a formula the evaluator reads: left as written
        kind = m.lastgroup or ""
        spans.append((kind, m.group(kind), m.start(kind), m.end(kind)))
        pos = m.end()
    bound: set[str] = set()
    stack: list[list[int]] = []  # per open call: [is LET, argument index]
    for kind, token, _start, _end in spans:
        if kind == "func":
            name = token.rstrip("( \t").upper().removeprefix("_XLFN.")
            stack.append([name == "LET", 0])
        elif kind == "op" and token == "(":
            stack.append([False, 0])
        elif kind == "op" and token == ")":
            if stack:
                stack.pop()
        elif kind == "op" and token in (",", ";"):
            if stack:
                stack[-1][1] += 1
        elif kind == "name" and stack and stack[-1][0] and stack[-1][1] % 2 == 0:
            bound.add(token.upper())
    out, last = [], 0
    for kind, token, start, end in spans:
        if kind == "name" and token.upper() in bound:
            out.append(formula[last:start] + "_xlpm." + token)
            last = end
    return "".join(out) + formula[last:]


_PREFIX = re.compile(
    r'"(?:[^"]|"")*"|_xlfn\.ANCHORARRAY\(\s*(' + _CELL + r")\s*\)|_xlfn\.(?:_xlws\.)?|_xlpm\.", re.IGNORECASE
)


def _typed(m: re.Match[str]) -> str:
    if m.group(0).startswith('"'):
        return m.group(0)
    return "" if m.group(1) is None else m.group(1) + "#"


def without_prefixes(formula: str) -> str:
    """`formula` as a user types it: `_xlfn.` and `_xlws.` prefixes dropped (text in quotes kept),
    `_xlfn.ANCHORARRAY(D1)` written `D1#`."""
    return _PREFIX.sub(_typed, formula)
