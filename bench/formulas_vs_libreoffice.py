"""deskmcp's formula evaluator against LibreOffice, per function (not a test: it prints what it finds).

It writes the workbook set of tests/sheets/formula_workbooks.py (budget, invoice, sales report
with lookups, timesheet, edge cases, subtotals with hidden rows, every function with edge inputs,
dynamic arrays with Excel's values), has LibreOffice headless recompute them, computes them as
deskmcp does when it saves, and prints for each function how many formula cells using it came out
right, wrong (a different value, unflagged) or flagged as uncomputed.

    uv run python bench/formulas_vs_libreoffice.py              # the table
    uv run python bench/formulas_vs_libreoffice.py --show wrong # and every wrong cell
    uv run python bench/formulas_vs_libreoffice.py --stored     # against the stored expectations, no soffice
    uv run python bench/formulas_vs_libreoffice.py --write-expected  # refresh tests/sheets/data/...json
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/http.py would shadow the standard library's `http`: keep this folder off the import path.
_BENCH = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _BENCH]
sys.path.insert(0, str(_BENCH.parent))

import argparse
import json
import shutil
import tempfile
from collections import Counter, defaultdict

from tests.sheets import formula_workbooks as fw


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--show", choices=["wrong", "flagged", "all"], help="list the cells with that status")
    parser.add_argument("--stored", action="store_true", help="use the stored expectations instead of soffice")
    parser.add_argument("--write-expected", action="store_true", help="write LibreOffice's values as expectations")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="deskmcp-formulas-") as tmp:
        folder = Path(tmp) / "books"
        paths = fw.build(folder)
        if args.stored:
            expected = fw.load_expected()
        else:
            if shutil.which("soffice") is None:
                sys.exit("soffice is not on PATH: install LibreOffice, or pass --stored")
            libre = fw.recompute_with_libreoffice(paths, Path(tmp) / "out", Path(tmp) / "profile")
            expected = fw.expected_from(libre)
            if args.write_expected:
                fw.EXPECTED.parent.mkdir(parents=True, exist_ok=True)
                text = json.dumps(expected, indent=1, sort_keys=True, ensure_ascii=False)
                fw.EXPECTED.write_text(text + "\n", encoding="utf-8")
                print(f"wrote {fw.EXPECTED}")
        rows = list(fw.compare(expected, folder))

    per_function: dict[str, Counter[str]] = defaultdict(Counter)
    totals: Counter[str] = Counter()
    for _book, _ref, formula, status, _want, _got in rows:
        totals[status] += 1
        for name in fw.functions_of(formula):
            per_function[name][status] += 1
    print(f"{'function':<14} {'right':>6} {'wrong':>6} {'flagged':>8}")
    for name in sorted(per_function):
        c = per_function[name]
        print(f"{name:<14} {c['right']:>6} {c['wrong']:>6} {c['flagged']:>8}")
    print(
        f"{'formula cells':<14} {totals['right']:>6} {totals['wrong']:>6} {totals['flagged']:>8}"
        f"   ({len(rows)} cells; a cell counts once per function it uses)"
    )
    if args.show:
        for book, ref, formula, status, want, got in rows:
            if args.show in (status, "all"):
                print(f"{status:<8} {book} {ref:<14} {formula:<60} expected {want!r} got {got!r}")


if __name__ == "__main__":
    main()
