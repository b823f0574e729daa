"""The work one call may spend computing formulas, counted in cells read (never in time, so the
same call gives the same answer on any machine): past it, every formula not yet computed is left
without a value and listed with the reason, never guessed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from deskmcp.sheets.formulas.values import Uncomputable

DEFAULT_CELLS = 2_000_000
"""Cell reads one call may make computing formulas (4 to 8 s of work measured on a shared 2-core machine)."""

Raw = Callable[[str, int, int], Any]


class CellBudget:
    """Counts the cells the evaluator reads (a range's cells one by one, a cell read twice twice)."""

    def __init__(self, cells: int = DEFAULT_CELLS) -> None:
        self.cells = cells
        self.used = 0
        self.reached = False

    def counted(self, raw: Raw) -> Raw:
        """`raw`, refusing (`Uncomputable`) every read past the budget."""

        def read(sheet: str, row: int, column: int) -> Any:
            self.used += 1
            if self.used > self.cells:
                self.reached = True
                raise Uncomputable(f"the formula budget of {self.cells:,} cells read in one call is spent")
            return raw(sheet, row, column)

        return read

    def reason(self) -> str | None:
        """What the answer says when the budget stopped the computation; None when it did not."""
        if not self.reached:
            return None
        return (
            f"Computing stopped after {self.cells:,} cells read, the most one call may read "
            "(SHEETS_FORMULA_BUDGET_CELLS): the formulas listed in uncomputed were stored without a value "
            "(Excel and LibreOffice compute them on open). Raise the setting, or write formulas over smaller ranges."
        )
