"""Benchmark the meetings server over a real stdio MCP session.

For each size (default 1,000, 5,000 and 10,000 meetings with transcripts) it generates a
Granola cache and measures: index build time (in-process), cold start (spawn to first search
result) without and with a persisted index, warm search p50/p95 over varied queries,
list/filter latency, re-index time after one meeting changes, and memory: the peak RSS of
the server and any process it starts (sampled, summed; the largest single process too), the
server's resident set after the first index once it has settled (the text index's writer is
released a few seconds after the last write), and the peak while one changed meeting is
taken in.
A bare `MCPServer` hello-world's cold start is measured in the same run for the ratio.

    uv run python bench/meetings.py [--sizes 1000,5000,10000] [--rounds 30]

A heavy user's cache (10,000 meetings with full transcripts, about 340 MB as `cache-v3.json`):

    uv run python bench/meetings.py --sizes 10000 --transcript-words 1300 --cache-version 3
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/http.py would shadow the standard library's `http`: keep this folder off the import path.
_BENCH = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _BENCH]

import argparse
import shutil
import tempfile
import time

import anyio

sys.path.insert(0, str(_BENCH.parent))

from bench.common import PeakSampler, peak_rss_mb, pid_from, session, stdio_params, summary, timed_call, tree_rss_mb
from deskmcp.core.textindex import IDLE_RELEASE
from deskmcp.demo.meetings import build_state, write_cache
from deskmcp.meetings.service import MeetingService
from deskmcp.meetings.settings import MeetingsSettings

HELLO = Path(__file__).resolve().parent / "hello_server.py"
QUERIES = [
    "budget",
    "database failover",
    "pricing page",
    "customers keep asking",
    "security questionnaire",
    "alice",
    "roadmap priorities",
    '"follow up with legal"',
    "dark mode accessibility",
    "hiring plan",
    "runbook",
    "cloud costs",
    "onboarding",
    "API limits",
    "renewal",
]
FILTERS = [
    {"days": 7},
    {"platform": "zoom", "limit": 20},
    {"participants": ["maya"], "limit": 20},
    {"folder": "Engineering", "limit": 20},
    {"from_ts": "2026-01-01", "to_ts": "2026-06-30", "limit": 50},
]


def disk_mb(folder: Path) -> float:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 1e6


async def settled_rss_mb(pid: int, *, settle: float = IDLE_RELEASE + 1.0, limit: float = 15.0) -> float:
    """The server's resident set once the work is over: the text index lets its writer go (and
    trims the heap) `IDLE_RELEASE` seconds after the last write, so sample after that, until
    two samples a quarter second apart agree within 1 MB."""
    started = time.perf_counter()
    last = float("nan")
    while True:
        await anyio.sleep(0.25)
        current = tree_rss_mb(pid)
        waited = time.perf_counter() - started
        if waited >= limit or (waited >= settle and abs(current - last) < 1.0):
            return current
        last = current


async def cold_start(args: list[str], env: dict[str, str], tool: str, tool_args: dict, pidfile: Path) -> float:
    started = time.perf_counter()
    async with session(stdio_params(args, env, pidfile)) as client:
        await timed_call(client, tool, tool_args)
        return (time.perf_counter() - started) * 1000


def transcript_range(words: int) -> tuple[int, int] | None:
    """Segments per transcript for about `words` words each (a generated line is ~11 words)."""
    if words <= 0:
        return None
    mean = max(1, round(words / 11))
    return max(1, round(mean * 2 / 3)), max(1, round(mean * 4 / 3))


async def bench_size(count: int, rounds: int, work: Path, hello_ms: float, words: int, version: int) -> None:
    folder = work / f"m{count}"
    cache_dir = folder / "granola"
    segments = transcript_range(words)
    extra = {"transcript_segments": segments} if segments else {}
    state = build_state(count, seed=count, **extra)
    path = write_cache(cache_dir / f"cache-v{version}.json", state, version=version)
    size_mb = path.stat().st_size / 1e6
    env = {"GRANOLA_CACHE_PATH": str(cache_dir), "DESKMCP_WORKSPACE": str(folder / "ws"), "DESKMCP_TIMEZONE": "UTC"}
    print(f"\n== {count:,} meetings ({size_mb:.1f} MB cache-v{version}.json) ==")

    settings = MeetingsSettings(workspace=folder / "inproc", cache_path=cache_dir, timezone="UTC")
    service = MeetingService(settings)
    started = time.perf_counter()
    service.refresh()
    service.index.flush()  # the text index commits lazily: count its commit too
    print(f"index build (in-process, from scratch): {time.perf_counter() - started:.2f} s")
    service.close()
    print(f"index on disk:                   {disk_mb(service.index_path.parent):8.1f} MB")

    pidfile = folder / "server.pid"
    server_args = ["-m", "deskmcp.cli", "serve", "meetings"]
    with PeakSampler(pid_from(pidfile)) as first_peak:
        started = time.perf_counter()
        async with session(stdio_params(server_args, env, pidfile)) as client:
            await timed_call(client, "granola.meetings.search", {"q": "budget"})
            cold_empty = (time.perf_counter() - started) * 1000
            pid = pid_from(pidfile)()
            at_answer = tree_rss_mb(pid) if pid else float("nan")
            settled = await settled_rss_mb(pid) if pid else float("nan")
    cold_persisted = await cold_start(server_args, env, "granola.meetings.search", {"q": "budget"}, pidfile)
    print(f"cold start, no index yet:        {cold_empty:8.0f} ms (spawn to first search result)")
    print(f"  peak RSS (server + workers):   {first_peak.peak:8.1f} MB (largest process {first_peak.peak_one:.1f} MB)")
    print(f"  resident at the first answer:  {at_answer:8.1f} MB; once settled (writer released) {settled:.1f} MB")
    print(f"cold start, persisted index:     {cold_persisted:8.0f} ms")
    print(f"bare MCPServer hello-world:      {hello_ms:8.0f} ms  -> difference {cold_persisted - hello_ms:+.0f} ms")

    async with session(stdio_params(server_args, env, pidfile)) as client:
        await timed_call(client, "granola.meetings.search", {"q": "warmup"})
        for validate, label in ((False, "protocol round trip"), (True, "SDK Client.call_tool incl. schema check")):
            search_ms = [
                await timed_call(client, "granola.meetings.search", {"q": q}, validate=validate)
                for _ in range(rounds)
                for q in QUERIES
            ]
            print(f"warm search, {label}: {summary(search_ms)}")
            list_ms = [
                await timed_call(client, "granola.meetings.list", f, validate=validate)
                for _ in range(rounds)
                for f in FILTERS
            ]
            print(f"list with filters, {label}: {summary(list_ms)}")
        hello_ms = [await timed_call(client, "granola.cache.status", {}, validate=False) for _ in range(rounds)]
        print(f"cache.status (cheap call), protocol round trip: {summary(hello_ms)}")
        get_ms = [
            await timed_call(client, "granola.meetings.get", {"id": next(iter(state["documents"]))})
            for _ in range(rounds)
        ]
        print(f"get one meeting:                 {summary(get_ms)}")

        # Change one meeting's notes on disk; the next call re-indexes incrementally.
        doc_id = next(iter(state["documents"]))
        state["documents"][doc_id]["notes_markdown"] = "zanzibarian quokka strategy"
        write_cache(path, state, version=version)
        with PeakSampler(pid_from(pidfile)) as change_peak:
            reindex_ms = await timed_call(client, "granola.meetings.search", {"q": "zanzibarian quokka"})
        after = await client.call_tool("granola.meetings.search", {"q": "zanzibarian quokka"})
        assert after.structured_content and after.structured_content["items"][0]["id"] == doc_id
        print(f"one meeting changed -> searchable: {reindex_ms:6.0f} ms (re-parse + incremental index)")
        print(
            f"  peak RSS meanwhile (server + workers): {change_peak.peak:8.1f} MB"
            f" (largest single process {change_peak.peak_one:.1f} MB)"
        )
        rss = peak_rss_mb(pidfile)
    print(f"server peak RSS (VmHWM, server alone, last session): {rss:8.1f} MB" if rss else "server peak RSS: n/a")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,5000,10000")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument(
        "--transcript-words", type=int, default=0, help="about this many words per transcript (default: short ones)"
    )
    parser.add_argument("--cache-version", type=int, default=6, choices=(3, 4, 6), help="cache file format")
    opts = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="deskmcp-bench-"))
    try:
        hello_runs = [await cold_start([str(HELLO)], {}, "hello", {}, work / "hello.pid") for _ in range(3)]
        hello_ms = sorted(hello_runs)[1]
        print(f"bare MCPServer hello-world cold start (median of 3): {hello_ms:.0f} ms")
        for size in (int(s) for s in opts.sizes.split(",")):
            await bench_size(size, opts.rounds, work, hello_ms, opts.transcript_words, opts.cache_version)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    anyio.run(main)
