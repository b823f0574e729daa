"""Benchmark the meetings server over a real stdio MCP session.

For each size (default 1,000, 5,000 and 10,000 meetings with transcripts) it generates a
Granola cache and measures: index build time (in-process), cold start (spawn to first search
result) without and with a persisted index, warm search p50/p95 over varied queries,
list/filter latency, re-index time after one meeting changes, and the server's peak RSS.
A bare `MCPServer` hello-world's cold start is measured in the same run for the ratio.

    uv run python bench/meetings.py [--sizes 1000,5000,10000] [--rounds 30]
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

from bench.common import peak_rss_mb, session, stdio_params, summary, timed_call
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


async def cold_start(args: list[str], env: dict[str, str], tool: str, tool_args: dict, pidfile: Path) -> float:
    started = time.perf_counter()
    async with session(stdio_params(args, env, pidfile)) as client:
        await timed_call(client, tool, tool_args)
        return (time.perf_counter() - started) * 1000


async def bench_size(count: int, rounds: int, work: Path, hello_ms: float) -> None:
    folder = work / f"m{count}"
    cache_dir = folder / "granola"
    state = build_state(count, seed=count)
    path = write_cache(cache_dir / "cache-v6.json", state)
    size_mb = path.stat().st_size / 1e6
    env = {"GRANOLA_CACHE_PATH": str(cache_dir), "DESKMCP_WORKSPACE": str(folder / "ws"), "DESKMCP_TIMEZONE": "UTC"}
    print(f"\n== {count:,} meetings ({size_mb:.1f} MB cache) ==")

    settings = MeetingsSettings(workspace=folder / "inproc", cache_path=cache_dir, timezone="UTC")
    service = MeetingService(settings)
    started = time.perf_counter()
    service.refresh()
    print(f"index build (in-process, from scratch): {time.perf_counter() - started:.2f} s")
    service.close()

    pidfile = folder / "server.pid"
    server_args = ["-m", "deskmcp.cli", "serve", "meetings"]
    cold_empty = await cold_start(server_args, env, "granola.meetings.search", {"q": "budget"}, pidfile)
    cold_persisted = await cold_start(server_args, env, "granola.meetings.search", {"q": "budget"}, pidfile)
    print(f"cold start, no index yet:        {cold_empty:8.0f} ms (spawn to first search result)")
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
        write_cache(path, state)
        reindex_ms = await timed_call(client, "granola.meetings.search", {"q": "zanzibarian quokka"})
        after = await client.call_tool("granola.meetings.search", {"q": "zanzibarian quokka"})
        assert after.structured_content and after.structured_content["items"][0]["id"] == doc_id
        print(f"one meeting changed -> searchable: {reindex_ms:6.0f} ms (re-parse + incremental index)")
        rss = peak_rss_mb(pidfile)
    print(f"server peak RSS:                 {rss:8.1f} MB" if rss else "server peak RSS: n/a")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,5000,10000")
    parser.add_argument("--rounds", type=int, default=30)
    opts = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="deskmcp-bench-"))
    try:
        hello_runs = [await cold_start([str(HELLO)], {}, "hello", {}, work / "hello.pid") for _ in range(3)]
        hello_ms = sorted(hello_runs)[1]
        print(f"bare MCPServer hello-world cold start (median of 3): {hello_ms:.0f} ms")
        for size in (int(s) for s in opts.sizes.split(",")):
            await bench_size(size, opts.rounds, work, hello_ms)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    anyio.run(main)
