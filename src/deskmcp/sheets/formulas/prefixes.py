"""The `_xlfn.` prefixes Excel stores on functions newer than Excel 2007, which a file must carry
or Excel and LibreOffice show `#NAME?`: added to a formula as written, dropped from one as read."""

from __future__ import annotations

import re

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
