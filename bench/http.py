"""HTTP throughput and latency of deskmcp's gateway against a bare SDK server, on loopback.

    uv run python bench/http.py [--seconds 30] [--concurrency 1,8,32] [--mcp-mode auto]

Three servers run as subprocesses (so client and server do not share an interpreter):

- `deskmcp`: `deskmcp serve all`'s app (composition, tool API, token gate, body limit,
  DNS-rebinding checks) over a small generated workspace, plus a `bench.hello` tool;
- `bare`: the SDK's `MCPServer` with the same `hello` tool and its own `streamable_http_app()`.

For each concurrency, N clients call the tool in a loop for the given seconds: through the MCP
endpoint (one MCP session per client) and, for deskmcp, through `POST /api/tools/...`. It
prints requests per second, p50 and p99 latency, and the ratios deskmcp / bare. The target
is an MCP-path overhead under 20%. Loopback only; every loop ends at its deadline.
"""

from __future__ import annotations

import sys
from pathlib import Path

# This file is named http.py: keep its folder off the import path so `import http` finds the stdlib.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse
import json
import os
import socket
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass

import anyio
import httpx2
from mcp import Client

ROOT = Path(__file__).resolve().parent.parent
HELLO = {"bare": "hello", "deskmcp": "bench.hello"}
ROWS = (("bare", "mcp"), ("deskmcp", "mcp"), ("deskmcp", "rest"))


def serve(kind: str, port: int, workspace: Path) -> None:
    """Child process: run one server until killed."""
    import logging

    import uvicorn
    from mcp.server.mcpserver import MCPServer

    logging.basicConfig(level=logging.WARNING, force=True)

    if kind == "bare":
        bare = MCPServer("bare-hello")

        @bare.tool("hello")
        def bare_hello(name: str = "world") -> str:
            return f"hello {name}"

        app = bare.streamable_http_app(host="127.0.0.1")
    else:
        from deskmcp.core.server import READ_ONLY
        from deskmcp.gateway import compose
        from deskmcp.serving.app import create_app

        composition = compose(workspace=workspace)

        @composition.server.tool("bench.hello", annotations=READ_ONLY)
        def desk_hello(name: str = "world") -> str:
            return f"hello {name}"

        app = create_app(composition)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="error")


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process (Linux /proc); None elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(kind: str, workspace: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    command = [sys.executable, __file__, "--serve", kind, "--port", str(port), "--workspace", str(workspace)]
    env = {**os.environ, "GRANOLA_CACHE_PATH": str(workspace / "granola"), "DESKMCP_WORKSPACE": str(workspace)}
    proc = subprocess.Popen(command, env=env)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            httpx2.get(base + "/mcp", timeout=2)
            return proc, base
        except httpx2.TransportError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit(f"{kind} server did not start")


@dataclass
class Result:
    target: str
    path: str
    concurrency: int
    calls: int
    errors: int
    seconds: float
    latencies: list[float]
    server_cpu: float | None = None

    @property
    def cpu_ms_per_call(self) -> float:
        return 1000 * self.server_cpu / self.calls if self.server_cpu is not None and self.calls else float("nan")

    @property
    def rps(self) -> float:
        return self.calls / self.seconds if self.seconds else 0.0

    def quantile(self, q: float) -> float:
        if len(self.latencies) < 2:
            return self.latencies[0] if self.latencies else float("nan")
        return statistics.quantiles(self.latencies, n=100, method="inclusive")[round(q * 100) - 1]


async def load_mcp(url: str, tool: str, clients: int, seconds: float, mode: str) -> tuple[int, int, float, list[float]]:
    """Each client opens its session first; the clock starts when all are connected."""
    latencies: list[float] = []
    errors = 0
    connected = 0
    go = anyio.Event()
    window: dict[str, float] = {}

    async def worker() -> None:
        nonlocal errors, connected
        async with Client(url, mode=mode) as client:  # type: ignore[arg-type]
            await client.call_tool(tool, {"name": "warm"})
            connected += 1
            if connected == clients:
                window["start"] = time.perf_counter()
                window["end"] = window["start"] + seconds
                go.set()
            await go.wait()
            while time.perf_counter() < window["end"]:
                began = time.perf_counter()
                result = await client.call_tool(tool, {"name": "bench"})
                latencies.append(time.perf_counter() - began)
                errors += bool(result.is_error)

    with anyio.fail_after(seconds + 120):
        async with anyio.create_task_group() as tg:
            for _ in range(clients):
                tg.start_soon(worker)
    return len(latencies), errors, time.perf_counter() - window["start"], latencies


async def load_rest(base: str, tool: str, clients: int, seconds: float) -> tuple[int, int, float, list[float]]:
    latencies: list[float] = []
    errors = 0
    limits = httpx2.Limits(max_connections=clients, max_keepalive_connections=clients)

    async with httpx2.AsyncClient(base_url=base, limits=limits, timeout=60) as http:

        async def worker(deadline_at: float) -> None:
            nonlocal errors
            while time.perf_counter() < deadline_at:
                began = time.perf_counter()
                response = await http.post(f"/api/tools/{tool}", json={"name": "bench"})
                latencies.append(time.perf_counter() - began)
                errors += response.status_code != 200

        started = time.perf_counter()
        with anyio.fail_after(seconds + 120):
            async with anyio.create_task_group() as tg:
                for _ in range(clients):
                    tg.start_soon(worker, started + seconds)
    return len(latencies), errors, time.perf_counter() - started, latencies


def measure(
    target: str, path: str, proc: subprocess.Popen[bytes], base: str, clients: int, seconds: float, mode: str
) -> Result:
    tool = HELLO[target]
    cpu_before = cpu_seconds(proc.pid)
    if path == "mcp":
        calls, errors, elapsed, latencies = anyio.run(load_mcp, base + "/mcp", tool, clients, seconds, mode)
    else:
        calls, errors, elapsed, latencies = anyio.run(load_rest, base, tool, clients, seconds)
    cpu_after = cpu_seconds(proc.pid)
    cpu = cpu_after - cpu_before if cpu_before is not None and cpu_after is not None else None
    # The server's CPU per call includes the clients' session set-up: small next to the calls.
    return Result(target, path, clients, calls, errors, elapsed, latencies, cpu)


def merge(results: list[Result]) -> list[Result]:
    """One row per (target, path, clients), summing the rounds."""
    merged: dict[tuple[str, str, int], Result] = {}
    for r in results:
        key = (r.target, r.path, r.concurrency)
        if key not in merged:
            merged[key] = Result(r.target, r.path, r.concurrency, 0, 0, 0.0, [], 0.0)
        m = merged[key]
        m.calls += r.calls
        m.errors += r.errors
        m.seconds += r.seconds
        m.latencies += r.latencies
        m.server_cpu = None if m.server_cpu is None or r.server_cpu is None else m.server_cpu + r.server_cpu
    return sorted(merged.values(), key=lambda r: (r.concurrency, r.target, r.path))


def report(results: list[Result], levels: list[int]) -> None:
    print(
        f"{'target':<8} {'path':<5} {'tool':<12} {'clients':>7} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} "
        f"{'cpu ms/call':>11} {'errors':>6}"
    )
    for r in results:
        tool = HELLO[r.target]
        print(
            f"{r.target:<8} {r.path:<5} {tool:<12} {r.concurrency:>7} {r.rps:>9.1f} "
            f"{r.quantile(0.5) * 1000:>8.2f} {r.quantile(0.99) * 1000:>8.2f} {r.cpu_ms_per_call:>11.3f} {r.errors:>6}"
        )
    print()
    print("ratios against the bare SDK server's MCP path (overhead = 1 - throughput ratio);")
    print("server CPU per call is the figure least disturbed by other load on the machine:")
    for clients in levels:
        bare = next(r for r in results if r.target == "bare" and r.concurrency == clients)
        for path in ("mcp", "rest"):
            desk = next(r for r in results if r.target == "deskmcp" and r.path == path and r.concurrency == clients)
            ratio = desk.rps / bare.rps if bare.rps else float("nan")
            p50 = desk.quantile(0.5) / bare.quantile(0.5)
            cpu = desk.cpu_ms_per_call / bare.cpu_ms_per_call
            print(
                f"  {clients:>2} clients, deskmcp {path:<4}: throughput x{ratio:.2f} "
                f"(overhead {100 * (1 - ratio):+.1f}%), p50 latency x{p50:.2f}, server CPU per call x{cpu:.2f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=30.0, help="duration of each measurement")
    parser.add_argument("--concurrency", default="1,8,32", help="comma-separated client counts")
    parser.add_argument("--rounds", type=int, default=1, help="repeat every measurement, alternating order")
    parser.add_argument("--mcp-mode", default="auto", help="Client mode: auto (2026-07-28) or legacy")
    parser.add_argument("--serve", choices=["bare", "deskmcp"], help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--workspace", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.port, args.workspace)
        return

    sys.path.insert(0, str(ROOT / "conformance"))
    from workspace import write_workspace  # the conformance run's demo data

    levels = [int(x) for x in args.concurrency.split(",")]
    with tempfile.TemporaryDirectory(prefix="deskmcp-bench-") as tmp:
        workspace = write_workspace(Path(tmp) / "workspace")
        procs = {kind: start(kind, workspace) for kind in ("bare", "deskmcp")}
        results: list[Result] = []
        try:
            for round_ in range(args.rounds):
                for index, clients in enumerate(levels):
                    # Alternate which server goes first, so drift in the machine's load favours neither.
                    rows = ROWS if (round_ + index) % 2 == 0 else ROWS[::-1]
                    for target, path in rows:
                        proc, base = procs[target]
                        results.append(measure(target, path, proc, base, clients, args.seconds, args.mcp_mode))
        finally:
            for proc, _ in procs.values():
                proc.terminate()
                proc.wait(timeout=30)
    print(
        f"deskmcp gateway vs bare MCPServer, {args.seconds:g}s x {args.rounds} round(s) per row, "
        f"MCP client mode {args.mcp_mode}"
    )
    report(merge(results), levels)
    print(json.dumps({"rows": [[r.target, r.path, r.concurrency, round(r.rps, 1)] for r in results]}))


if __name__ == "__main__":
    main()
