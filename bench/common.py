"""Shared pieces of the benchmarks: spawning servers over stdio, timing, percentiles, RSS."""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import mcp.types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * pct / 100
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def summary(values_ms: list[float]) -> str:
    return (
        f"p50 {percentile(values_ms, 50):7.2f} ms  p95 {percentile(values_ms, 95):7.2f} ms  "
        f"mean {statistics.fmean(values_ms):7.2f} ms  n={len(values_ms)}"
    )


def stdio_params(args: list[str], env: dict[str, str], pidfile: Path) -> StdioServerParameters:
    """Run `python args...` through a shell that records the server's pid (exec keeps it)."""
    full_env = {**os.environ, **env}
    command = f'echo $$ > "{pidfile}"; exec "{sys.executable}" ' + " ".join(f'"{a}"' for a in args)
    return StdioServerParameters(command="/bin/sh", args=["-c", command], env=full_env)


def peak_rss_mb(pidfile: Path) -> float | None:
    """VmHWM (peak resident set) of the process whose pid is in `pidfile` (Linux only)."""
    try:
        pid = int(pidfile.read_text(encoding="utf-8").strip())
        for line in Path(f"/proc/{pid}/status").read_text(encoding="utf-8").splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        return None
    return None


@asynccontextmanager
async def session(params: StdioServerParameters) -> AsyncIterator[Client]:
    async with Client(params) as client:
        yield client


async def timed_call(client: Client, tool: str, args: dict, *, validate: bool = True) -> float:
    """Milliseconds for one tools/call round trip.

    `validate=True` goes through `Client.call_tool`, which re-validates the structured result
    against the tool's output schema with jsonschema on the client side (a Python-client
    cost that grows with the result). `validate=False` sends the same request and parses
    the same result model, without that check: the protocol round trip a non-Python client sees.
    """
    started = time.perf_counter()
    if validate:
        result = await client.call_tool(tool, args)
    else:
        request = types.CallToolRequest(params=types.CallToolRequestParams(name=tool, arguments=args))
        result = await client.session.send_request(request, types.CallToolResult)
    elapsed = (time.perf_counter() - started) * 1000
    if result.is_error:
        raise RuntimeError(f"{tool} failed: {result.content}")
    return elapsed
