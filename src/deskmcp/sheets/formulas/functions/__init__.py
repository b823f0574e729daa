"""The spreadsheet functions the formula evaluator knows, with Excel's rules for each: `FUNCTIONS`,
filled by the modules of this package as they are imported (`registry.register`)."""

from deskmcp.sheets.formulas.functions import (
    aggregates,
    arithmetic,
    arrays,
    dates,
    financial,
    logic,
    lookup,
    maths,
    statistical,
    text,
)
from deskmcp.sheets.formulas.functions.registry import FUNCTIONS, Context

__all__ = [
    "FUNCTIONS",
    "Context",
    "aggregates",
    "arithmetic",
    "arrays",
    "dates",
    "financial",
    "logic",
    "lookup",
    "maths",
    "statistical",
    "text",
]
