"""Benchmark of the vault server as an outside client sees it (not a test: it prints what it measures).

The input is a vault made by the shared generator, with its `.meta.json` beside it:

    python3 ../shared/bench/gen_vault.py -n 50000 --out DATA/vault-50000
    uv run python bench/vault.py --vault DATA/vault-50000 [--runs 3]

Each run starts `uv run deskmcp serve vault` with the official MCP client over stdio, the
vault as `VAULT_PATH` and a fresh, empty workspace (so the first index is built), and takes:

- first search: the first `search_notes` answered while the index is being built, and the
  slowest call made while polling;
- fully indexed: time from the first call (`vault_status`, sent right after `initialize`)
  to a `vault_status` showing no `indexing` (polled every `--poll` seconds);
- warm search p50 / p95 at the client: the generator's queries (`params.search_queries`
  in the meta file), `--rounds` passes, after one warm-up pass;
- ripgrep (`rg -l -i -F`, from the dev group) over the same vault for the same queries in
  the same run, and its p50 over the server's search p50;
- the server's resident set once indexed.

With `--runs N`, each figure's range over the runs is printed at the end.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/http.py would shadow the standard library's `http`: keep this folder off the import path.
_BENCH = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _BENCH]

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

sys.path.insert(0, str(_BENCH.parent))

from bench.common import _children, percentile, tree_rss_each_mb

REPO = _BENCH.parent


@dataclass
class Run:
    first_call_ms: float = 0.0
    first_search_ms: float = 0.0
    first_search_partial: bool = False
    slowest_call_ms: float = 0.0
    indexed_s: float = 0.0
    notes: int = 0
    search_ms: list[float] = field(default_factory=list)
    rg_ms: list[float] = field(default_factory=list)
    rss_mb: float = 0.0
    cpu_s: float = 0.0

    @property
    def p50(self) -> float:
        return percentile(self.search_ms, 50)

    @property
    def p95(self) -> float:
        return percentile(self.search_ms, 95)

    @property
    def rg_p50(self) -> float:
        return percentile(self.rg_ms, 50)

    @property
    def ratio(self) -> float:
        return self.rg_p50 / self.p50 if self.p50 else float("nan")


def load_meta(vault: Path) -> dict[str, Any]:
    meta = vault.with_name(vault.name + ".meta.json")
    if not meta.is_file():
        raise SystemExit(f"{meta} is missing: generate the vault with ../shared/bench/gen_vault.py --out {vault}")
    return json.loads(meta.read_text(encoding="utf-8"))


def server_params(vault: Path, workspace: Path, pidfile: Path, src: Path | None) -> StdioServerParameters:
    """`uv run deskmcp serve vault` through a shell that records its pid (exec keeps it);
    `src`: the deskmcp package is imported from that source folder instead (same environment)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VAULT_", "DESKMCP_"))}
    if src is not None:
        env["PYTHONPATH"] = str(src)
    env.update(
        {
            "VAULT_PATH": str(vault),
            "DESKMCP_WORKSPACE": str(workspace),
            "DESKMCP_TOOLSETS": "all",  # vault_status is outside the default toolsets
        }
    )
    uv = shutil.which("uv") or "uv"
    command = f'echo $$ > "{pidfile}"; exec "{uv}" run deskmcp serve vault'
    return StdioServerParameters(command="/bin/sh", args=["-c", command], env=env, cwd=str(REPO))


async def call(client: Client, tool: str, args: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    result = await client.call_tool(tool, args)
    elapsed = (time.perf_counter() - started) * 1000
    if result.is_error:
        raise RuntimeError(f"{tool} failed: {result.content}")
    return elapsed, result.structured_content or {}


async def measure(vault: Path, queries: list[str], rounds: int, poll: float, src: Path | None, run: Run) -> None:
    with tempfile.TemporaryDirectory(prefix="vault-bench-ws-") as tmp:
        workspace = Path(tmp)
        pidfile = workspace / "server.pid"
        async with Client(server_params(vault, workspace, pidfile, src)) as client:
            started = time.perf_counter()
            run.first_call_ms, status = await call(client, "vault_status", {})
            run.first_search_ms, found = await call(client, "search_notes", {"query": queries[0], "limit": 10})
            run.first_search_partial = bool(found.get("indexing"))
            while status.get("indexing"):
                await anyio.sleep(poll)
                for tool, args in (("search_notes", {"query": queries[-1], "limit": 10}), ("vault_status", {})):
                    elapsed, status = await call(client, tool, args)
                    run.slowest_call_ms = max(run.slowest_call_ms, elapsed)
            run.indexed_s = time.perf_counter() - started
            run.cpu_s = tree_cpu_seconds(int(pidfile.read_text(encoding="utf-8").strip()))
            run.notes = int(status.get("notes") or 0)
            for query in queries:  # warm-up
                await call(client, "search_notes", {"query": query, "limit": 10})
            for _ in range(rounds):
                for query in queries:
                    elapsed, _ = await call(client, "search_notes", {"query": query, "limit": 10})
                    run.search_ms.append(elapsed)
            pid = int(pidfile.read_text(encoding="utf-8").strip())
            run.rss_mb = max(tree_rss_each_mb(pid))  # uv and the server under it: the server is the larger


def tree_cpu_seconds(pid: int) -> float:
    """CPU time (user + system) used so far by a process, its live descendants and the children
    it has waited for (worker processes that are gone). Unlike elapsed time, this hardly moves
    when other jobs share the machine."""
    tick = os.sysconf("SC_CLK_TCK")
    total, stack = 0.0, [pid]
    while stack:
        current = stack.pop()
        try:
            fields = Path(f"/proc/{current}/stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(v) for v in fields[11:15]) / tick  # utime stime cutime cstime
        stack.extend(_children(current))
    return total


def ripgrep(vault: Path, queries: list[str], rounds: int) -> list[float]:
    rg = shutil.which("rg") or str(Path(sys.executable).parent / "rg")
    command = [rg, "-l", "-i", "-F", "--glob", "*.md"]
    for query in queries:  # warm the page cache as the server's index is warm
        subprocess.run([*command, query, str(vault)], capture_output=True, check=False)
    times: list[float] = []
    for _ in range(rounds):
        for query in queries:
            started = time.perf_counter()
            subprocess.run([*command, query, str(vault)], capture_output=True, check=False)
            times.append((time.perf_counter() - started) * 1000)
    return times


def span(values: list[float], fmt: str) -> str:
    low, high = min(values), max(values)
    return format(low, fmt) if format(low, fmt) == format(high, fmt) else f"{low:{fmt}}-{high:{fmt}}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vault", type=Path, required=True, help="a vault made by gen_vault.py (meta file beside it)")
    parser.add_argument("--runs", type=int, default=1, help="runs, each with a fresh workspace")
    parser.add_argument("--rounds", type=int, default=20, help="passes over the queries for warm search")
    parser.add_argument("--rg-rounds", type=int, default=3, help="passes over the queries with ripgrep")
    parser.add_argument("--poll", type=float, default=0.1, help="seconds between vault_status polls")
    parser.add_argument(
        "--server-src",
        type=Path,
        help="run the server from this source folder (e.g. an older commit's src/ from git archive)",
    )
    args = parser.parse_args()
    vault = args.vault.resolve()
    meta = load_meta(vault)
    queries = [q["query"] for q in meta["params"]["search_queries"]]
    if args.server_src:
        print(f"server source: {args.server_src}")
    print(f"vault {vault}: {meta['n']:,} notes, {meta['bytes'] / 1e6:.0f} MB; queries {queries}")
    runs: list[Run] = []
    for n in range(args.runs):
        run = Run()
        anyio.run(measure, vault, queries, args.rounds, args.poll, args.server_src, run)
        run.rg_ms = ripgrep(vault, queries, args.rg_rounds)
        runs.append(run)
        print(f"\n== run {n + 1} of {args.runs}: {run.notes:,} notes indexed")
        print(f"first vault_status                    : {run.first_call_ms:8.1f} ms")
        print(
            f"first search while indexing           : {run.first_search_ms:8.1f} ms"
            f" (partial: {run.first_search_partial}); slowest call meanwhile {run.slowest_call_ms:.1f} ms"
        )
        print(f"fully indexed after the first call    : {run.indexed_s:8.2f} s")
        print(f"  CPU time of the server until then    : {run.cpu_s:8.2f} s (its worker processes included)")
        print(f"warm search p50 / p95 at the client   : {run.p50:8.2f} / {run.p95:.2f} ms (n={len(run.search_ms)})")
        print(f"ripgrep p50 / p95, same queries       : {run.rg_p50:8.2f} / {percentile(run.rg_ms, 95):.2f} ms")
        print(f"ripgrep p50 / search p50              : {run.ratio:8.1f}x")
        print(f"server resident once indexed          : {run.rss_mb:8.1f} MiB")
    if len(runs) > 1:
        print(f"\n== range over {len(runs)} runs")
        print(f"fully indexed        : {span([r.indexed_s for r in runs], '.1f')} s")
        print(f"server CPU until then: {span([r.cpu_s for r in runs], '.1f')} s")
        print(f"first search         : {span([r.first_search_ms for r in runs], '.0f')} ms")
        print(f"warm search p50      : {span([r.p50 for r in runs], '.1f')} ms")
        print(f"warm search p95      : {span([r.p95 for r in runs], '.1f')} ms")
        print(f"ripgrep / search p50 : {span([r.ratio for r in runs], '.0f')}x")
        print(f"server resident      : {span([r.rss_mb for r in runs], '.0f')} MiB")
    print(f"\nmedian of runs: fully indexed {statistics.median(r.indexed_s for r in runs):.1f} s")


if __name__ == "__main__":
    main()
