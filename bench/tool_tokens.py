"""What deskmcp's tool list costs a model, and how fast the command starts.

Not a test: it prints what it measured. Run with

    uv run python bench/tool_tokens.py [--runs 15]

1. The size of `tools/list` per server and for `serve all`, in characters of compact JSON and
   estimated tokens (characters / 4), with the configured toolsets and with every tool, against
   the budget for `serve all` (the same table as `deskmcp tools --stats`).
2. Start-up of `deskmcp --version` and `deskmcp --help` (the installed entry point, no `uv run`
   in front), next to a bare `python -c pass` and `python -c "import mcp"` in the same run: the
   ratio says what the command adds to the interpreter and what importing the SDK would cost.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/http.py would shadow the standard library's `http`: keep this folder off the import path.
_BENCH = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _BENCH]

import argparse
import logging
import os
import resource
import statistics
import subprocess
import tempfile
import time

from deskmcp.toolcost import TOKEN_BUDGET, measure, print_table


def run_times(command: list[str], runs: int) -> tuple[list[float], list[float]]:
    """Wall and CPU (user + sys of the child) milliseconds of `runs` runs."""
    walls: list[float] = []
    cpus: list[float] = []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        walls.append((time.perf_counter() - started) * 1000)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000)
    return walls, cpus


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15, help="runs of each start-up command")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)  # servers without data are listed anyway

    with tempfile.TemporaryDirectory() as tmp:
        rows = measure(workspace=Path(tmp) / "workspace")
    print("== tools/list size ==")
    print_table(rows)
    configured = next(r for r in rows if r.servers == "all" and r.toolsets == "configured")
    print(
        f"serve all, configured toolsets: {configured.tokens} estimated tokens "
        f"({configured.tokens / TOKEN_BUDGET:.0%} of the {TOKEN_BUDGET} budget)"
    )

    entry = Path(sys.executable).with_name("deskmcp")
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        'python -c "import mcp"': [sys.executable, "-c", "import mcp"],
        "deskmcp --version": [str(entry), "--version"],
        "deskmcp --help": [str(entry), "--help"],
    }
    print(f"\n== start-up, {args.runs} runs each (os.cpu_count()={os.cpu_count()}) ==")
    baseline: float | None = None
    for label, command in commands.items():
        walls, cpus = run_times(command, args.runs)
        best, median = min(walls), statistics.median(walls)
        baseline = baseline or best
        cpu = statistics.median(cpus)
        print(
            f"{label:<24} wall min {best:7.1f} ms  median {median:7.1f} ms  cpu median {cpu:7.1f} ms"
            f"  x{best / baseline:.1f} of bare python"
        )


if __name__ == "__main__":
    main()
