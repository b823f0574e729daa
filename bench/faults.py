"""Faults measured from outside: runs the fault tests (tests/faults) and prints what each measured.

    uv run python bench/faults.py [-k EXPRESSION]

Each fault test starts the real processes it needs (deskmcp servers, haproxy, PostgreSQL, Dovecot,
an SMTP capture), makes one of them fail in the middle of a call (kill -9, a stopped service, a
full disk) and checks what deskmcp kept: no mail sent twice or lost, no half-written file, an
index the next start completes, a clear error. Alongside its assertions each test records figures
(how many deliveries, how long until the next call succeeded, which error came back); this script
runs them with pytest and prints the figures as a table, then pytest's outcome. A test that skips
(its software is not installed, or the disk cannot be limited here) is listed with its reason.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="", help="run only the fault tests matching this pytest expression")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="deskmcp-faults-") as work:
        figures_file = Path(work) / "figures.jsonl"
        env = {**os.environ, "DESKMCP_FAULT_FIGURES": str(figures_file)}
        command = [sys.executable, "-m", "pytest", "tests/faults", "-q", "-rs", "-p", "no:cacheprovider"]
        if args.k:
            command += ["-k", args.k]
        outcome = subprocess.run(command, cwd=ROOT, env=env, check=False)
        rows = (
            [json.loads(line) for line in figures_file.read_text(encoding="utf-8").splitlines()]
            if (figures_file.exists())
            else []
        )
    print()
    print(f"{'fault test':<70} {'figure':<34} value")
    for row in rows:
        name = row["test"].removeprefix("tests/faults/")
        for figure in row["figures"]:
            value = f"{figure['value']} {figure['unit']}".strip()
            print(f"{name:<70} {figure['name']:<34} {value}")
            name = ""
    return outcome.returncode


if __name__ == "__main__":
    raise SystemExit(main())
