"""Shared pieces of the benchmarks: spawning servers over stdio, timing, percentiles, RSS."""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
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


def link_or_copy(source: Path, target: Path) -> None:
    """`target` as a hard link to `source` (a big input costs no copy), or a copy on another file system."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


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


def cpu_seconds(pidfile: Path) -> float | None:
    """User plus system CPU time so far of the process whose pid is in `pidfile` (Linux only): on
    a machine shared with other jobs, what a call cost its server apart from waiting for a core."""
    try:
        pid = int(pidfile.read_text(encoding="utf-8").strip())
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
        fields = stat[stat.rindex(")") + 2 :].split()  # after the command name, which may hold spaces
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


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


def _children(pid: int) -> list[int]:
    """Children of every thread of `pid` (a worker is often started from a thread)."""
    found: list[int] = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return found
    for task in tasks:
        try:
            found.extend(int(p) for p in (task / "children").read_text(encoding="utf-8").split())
        except OSError:
            continue
    return found


def status_mb(pid: int, *fields: str) -> dict[str, float]:
    """The named sizes of one process's /proc/PID/status (VmRSS, RssAnon, RssFile...) in MiB: those
    present, none when it has ended or cannot be read (Linux only)."""
    sizes: dict[str, float] = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text(encoding="utf-8").splitlines():
            name = line.split(":", 1)[0]
            if name in fields:
                sizes[name] = int(line.split()[1]) / 1024
    except (OSError, ValueError):
        return {}
    return sizes


def rss_mb(pid: int, gone: float = 0.0) -> float:
    """Current resident set (VmRSS) of one process in MiB, `gone` when it has ended or cannot be
    read (Linux only): 0 where sizes are summed, NaN where a missing figure must not pass for one."""
    return status_mb(pid, "VmRSS").get("VmRSS", gone)


def tree_rss_each_mb(pid: int) -> list[float]:
    """Resident set of a process and of each of its descendants."""
    sizes, stack = [], [pid]
    while stack:
        current = stack.pop()
        sizes.append(rss_mb(current))
        stack.extend(_children(current))
    return sizes


def tree_rss_mb(pid: int) -> float:
    """Resident set of a process and all its descendants (a worker it started counts too)."""
    return sum(tree_rss_each_mb(pid))


class PeakSampler:
    """Samples the resident set of a process tree every few milliseconds in a thread; `peak`
    is the largest sum seen, `peak_one` the largest single process (a worker, or the server).
    Sampling can miss a spike shorter than the interval."""

    def __init__(self, pid_of: Callable[[], int | None], interval: float = 0.005) -> None:
        self._pid_of = pid_of
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.peak = 0.0
        self.peak_one = 0.0

    def _run(self) -> None:
        while not self._stop.is_set():
            pid = self._pid_of()
            if pid is not None:
                sizes = tree_rss_each_mb(pid)
                self.peak = max(self.peak, sum(sizes))
                self.peak_one = max(self.peak_one, *sizes, 0.0)
            self._stop.wait(self._interval)

    def __enter__(self) -> PeakSampler:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()


def pid_from(pidfile: Path) -> Callable[[], int | None]:
    def read() -> int | None:
        try:
            return int(pidfile.read_text(encoding="utf-8").strip())
        except (OSError, ValueError):
            return None

    return read
