"""Demo data for the sheets server: a household budget workbook with formulas, and a CSV."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

CATEGORIES = ["Rent", "Groceries", "Utilities", "Transport", "Travel", "Insurance", "Eating out", "Savings"]
MONTHS = ["Jan", "Feb", "Mar"]
TOTAL_ROW = len(CATEGORIES) + 2


def generate(root: Path, rng: random.Random) -> None:
    """`budget.xlsx` (a Budget sheet with per-row and per-month SUM formulas) and `suppliers.csv`."""
    from deskmcp.sheets.a1 import A1Range, column_letters
    from deskmcp.sheets.backends.local import LocalBackend

    backend = LocalBackend(root)
    if not (root / "budget.xlsx").exists():
        backend.create_spreadsheet("budget", ["Budget", "Notes"])
    rows: list[list[Any]] = [["Category", *MONTHS, "Quarter"]]
    for i, category in enumerate(CATEGORIES, start=2):
        base = {"Rent": 1400, "Savings": 500, "Insurance": 120}.get(category, rng.randint(60, 450))
        months = [base if category in ("Rent", "Insurance") else base + rng.randint(-40, 60) for _ in MONTHS]
        rows.append([category, *months, f"=SUM(B{i}:D{i})"])
    totals = [f"=SUM({column_letters(c)}2:{column_letters(c)}{TOTAL_ROW - 1})" for c in range(2, len(MONTHS) + 3)]
    rows.append(["Total", *totals])
    notes = [["Note"], ["Rent rises in April."], ["Travel covers the spring trip."]]
    backend.write(
        "budget.xlsx",
        [(A1Range("Budget", 1, 1, TOTAL_ROW, len(MONTHS) + 2), rows), (A1Range("Notes", 1, 1, 3, 1), notes)],
        "USER_ENTERED",
    )
    suppliers = ["name,category,monthly"] + [
        f"{name},{category},{rng.randint(20, 300)}"
        for name, category in [
            ("Northwind Energy", "Utilities"),
            ("Fresh Basket", "Groceries"),
            ("City Transit", "Transport"),
            ("Atlas Insurance", "Insurance"),
        ]
    ]
    (root / "suppliers.csv").write_text("\n".join(suppliers) + "\n", encoding="utf-8")


STEPS: list[tuple[str, str, dict[str, Any]]] = [
    ("The spreadsheets in the workspace (xlsx and csv)", "list_spreadsheets", {}),
    ("Its sheets, sizes and whether it can be edited", "get_spreadsheet", {"spreadsheet_id": "budget.xlsx"}),
    (
        "The budget with the header row as keys: formulas read back as computed values",
        "read_values",
        {"spreadsheet_id": "budget.xlsx", "ranges": ["Budget!A1:E10"], "header": True},
    ),
    (
        "Rent goes up in March (USER_ENTERED, as if typed)",
        "update_values",
        {"spreadsheet_id": "budget.xlsx", "range": "Budget!D2", "values": [[1550]]},
    ),
    (
        "The totals row, recomputed: March and the quarter follow the new rent",
        "read_values",
        {"spreadsheet_id": "budget.xlsx", "ranges": ["Budget!A10:E10", "Budget!E2"]},
    ),
    (
        "The formulas behind the totals",
        "read_values",
        {"spreadsheet_id": "budget.xlsx", "ranges": ["Budget!B10:E10"], "render": "formula"},
    ),
    (
        "Every cell mentioning travel, with its address",
        "find_in_spreadsheet",
        {"spreadsheet_id": "budget.xlsx", "query": "travel"},
    ),
]
