"""What installing deskmcp costs a person: packages, size, install time, time to the first answer.

    uv run python bench/install.py [--extras google,remote] [--cold] [--runs 3]

Builds the wheel (`uv build --wheel`) into a temporary folder, makes a fresh virtual environment
there (`uv venv`), installs the wheel into it (`uv pip install`, from uv's cache unless --cold,
which uses an empty cache and so downloads every package), then prints:

- the number of distributions installed (deskmcp included, pip/setuptools not: `uv venv` adds none),
- the size of site-packages (`du -sk`),
- how long the install took,
- how long `deskmcp serve all` over stdio takes from its start to the answer of `initialize`
  (the best and the median of --runs starts, on an empty workspace).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, check=True, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload]


def first_initialize(deskmcp: Path, workspace: Path) -> float:
    """Seconds from starting `deskmcp serve all` to the line answering `initialize`."""
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "bench-install", "version": "1"},
        },
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DESKMCP_", "VAULT_", "MAIL_", "GRANOLA_"))}
    env["DESKMCP_WORKSPACE"] = str(workspace)
    started = time.perf_counter()
    process = subprocess.Popen(
        [str(deskmcp), "serve", "all"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        text=True,
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(json.dumps(request) + "\n")
    process.stdin.flush()
    line = process.stdout.readline()
    elapsed = time.perf_counter() - started
    process.stdin.close()
    process.wait(timeout=30)
    answer = json.loads(line)
    if "result" not in answer:
        raise SystemExit(f"initialize failed: {line}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--extras", default="", help="Comma-separated extras to install with the wheel.")
    parser.add_argument("--cold", action="store_true", help="Install with an empty uv cache (downloads all).")
    parser.add_argument("--runs", type=int, default=3, help="Starts of `serve all` to time.")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="deskmcp-install-") as folder:
        tmp = Path(folder)
        run(["uv", "build", "--wheel", "--out-dir", str(tmp / "dist")], cwd=ROOT)
        wheel = next((tmp / "dist").glob("deskmcp-*.whl"))
        venv = tmp / "venv"
        run(["uv", "venv", "--quiet", "--python", f"{sys.version_info.major}.{sys.version_info.minor}", str(venv)])
        env = dict(os.environ, VIRTUAL_ENV=str(venv))
        if args.cold:
            env["UV_CACHE_DIR"] = str(tmp / "cache")
        target = f"{wheel}[{args.extras}]" if args.extras else str(wheel)
        started = time.perf_counter()
        run(["uv", "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"), target], env=env)
        install_seconds = time.perf_counter() - started

        listed = json.loads(
            run(["uv", "pip", "list", "--format", "json", "--python", str(venv / "bin" / "python")]).stdout
        )
        site = next((venv / "lib").glob("python3.*/site-packages"))
        kib = int(run(["du", "-sk", str(site)]).stdout.split()[0])

        times = [first_initialize(venv / "bin" / "deskmcp", tmp / f"workspace-{n}") for n in range(args.runs)]

        print(f"wheel:               {wheel.name}{f' [{args.extras}]' if args.extras else ''}")
        print(f"packages installed:  {len(listed)}")
        print(f"site-packages:       {kib / 1024:.0f} MiB ({kib} KiB)")
        print(f"install time:        {install_seconds:.1f} s ({'empty cache' if args.cold else 'warm uv cache'})")
        print(
            f"first initialize:    best {min(times):.2f} s, median {statistics.median(times):.2f} s "
            f"of {args.runs} starts of `deskmcp serve all`"
        )
        google = sorted(p["name"] for p in listed if p["name"].lower().startswith(("google", "googleapis")))
        print(f"google packages:     {', '.join(google) or 'none'}")


if __name__ == "__main__":
    main()
