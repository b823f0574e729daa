"""tools/call through haproxy in front of one, then two, `deskmcp serve all --http --stateless` replicas.

    uv run python bench/remote.py [--seconds 20] [--clients 50] [--mode 2026-07-28]

The replicas (subprocesses, `--only meetings` over a small generated workspace, the shared
DESKMCP_STATE_KEYS) and haproxy run with the configuration the tests use
(tests/helpers/haproxy.py, the one docs/deployment.md shows). For each setup, `--clients` MCP
clients in this process open their session, call `granola.cache.status` once, then call it in a
loop until the window closes. It prints calls per second, p50 and p95 latency for 1 and 2
replicas, and the ratio 2 / 1. The load generator shares the machine with the replicas and
haproxy: on a machine with few cores the ratio says as much about the cores as about deskmcp.
Loopback only; every loop ends at its deadline.
"""

from __future__ import annotations

import sys
from pathlib import Path

_BENCH = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _BENCH]
sys.path.insert(0, str(_BENCH.parent))

import argparse
import json
import os
import tempfile
import time
from dataclasses import dataclass

import anyio
from mcp import Client
from tests.helpers.haproxy import Replica, balancer, haproxy_binary
from tests.helpers.network import free_port

from bench.common import percentile

TOOL = "granola.cache.status"
STATE_KEYS = "bench-request-state-key-0123456789abcdef"


@dataclass
class Run:
    replicas: int
    calls: int
    errors: int
    seconds: float
    latencies_ms: list[float]

    @property
    def rps(self) -> float:
        return self.calls / self.seconds if self.seconds else 0.0


async def load(url: str, clients: int, seconds: float, mode: str) -> tuple[int, int, float, list[float]]:
    """Every client connects and warms up first; the window opens when all are ready."""
    latencies: list[float] = []
    errors = 0
    ready = 0
    go = anyio.Event()
    window: dict[str, float] = {}

    async def client() -> None:
        nonlocal errors, ready
        async with Client(url, mode=mode) as session:  # type: ignore[arg-type]
            await session.call_tool(TOOL, {})
            ready += 1
            if ready == clients:
                window["start"] = time.perf_counter()
                window["end"] = window["start"] + seconds
                go.set()
            await go.wait()
            while time.perf_counter() < window["end"]:
                began = time.perf_counter()
                try:
                    result = await session.call_tool(TOOL, {})
                    errors += bool(result.is_error)
                except Exception:  # a failed call counts, the loop goes on
                    errors += 1
                latencies.append((time.perf_counter() - began) * 1000)

    with anyio.fail_after(seconds + 180):
        async with anyio.create_task_group() as tg:
            for _ in range(clients):
                tg.start_soon(client)
    return len(latencies), errors, time.perf_counter() - window["start"], latencies


def workspace(root: Path) -> dict[str, str]:
    folder = root / "workspace"
    (folder / "granola").mkdir(parents=True)
    state = {"documents": {"m-1": {"id": "m-1", "title": "Quarterly planning", "created_at": "2026-11-02T09:00:00Z"}}}
    (folder / "granola" / "cache-v4.json").write_text(json.dumps({"cache": {"state": state}}), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "DESKMCP_TOKEN"}
    env.update(DESKMCP_WORKSPACE=str(folder), GRANOLA_CACHE_PATH=str(folder / "granola"), DESKMCP_STATE_KEYS=STATE_KEYS)
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--mode", default="2026-07-28", help="MCP client mode: 2026-07-28 or legacy")
    args = parser.parse_args()
    if haproxy_binary() is None:
        sys.exit("bench/remote.py needs haproxy (apt-get install haproxy)")

    root = Path(tempfile.mkdtemp(prefix="deskmcp-bench-remote-"))
    env = workspace(root)
    ports = {"r1": free_port(), "r2": free_port()}
    replicas = []
    try:
        for port in ports.values():
            command = ["serve", "all", "--only", "meetings", "--http", "--stateless", "--port", str(port)]
            replicas.append(Replica([*command, "--trusted-proxy", "127.0.0.1"], env))
        runs: list[Run] = []
        for count in (1, 2):
            backends = dict(list(ports.items())[:count])
            with balancer(root, free_port(), backends) as base:
                calls, errors, elapsed, latencies = anyio.run(
                    load, base + "/mcp", args.clients, args.seconds, args.mode
                )
            runs.append(Run(count, calls, errors, elapsed, latencies))
    finally:
        for replica in replicas:
            replica.stop()

    print(
        f"tools/call {TOOL} through haproxy, {args.clients} concurrent clients (mode {args.mode}), "
        f"{args.seconds:g} s per setup, {os.cpu_count()} CPUs"
    )
    print(f"{'replicas':>8} {'calls':>7} {'errors':>6} {'calls/s':>8} {'p50 ms':>8} {'p95 ms':>8}")
    for run in runs:
        print(
            f"{run.replicas:>8} {run.calls:>7} {run.errors:>6} {run.rps:>8.1f} "
            f"{percentile(run.latencies_ms, 50):>8.1f} {percentile(run.latencies_ms, 95):>8.1f}"
        )
    one, two = runs
    ratio = two.rps / one.rps if one.rps else float("nan")
    p95 = percentile(two.latencies_ms, 95) / percentile(one.latencies_ms, 95) if one.latencies_ms else float("nan")
    print(f"2 replicas / 1: throughput x{ratio:.2f}, p95 x{p95:.2f}")


if __name__ == "__main__":
    main()
