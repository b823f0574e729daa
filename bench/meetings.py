"""Benchmark the meetings server from outside, as a client sees it: the official MCP client over
stdio against `uv run --no-sync deskmcp serve meetings`, a fresh workspace for every run.

The input is a cache made by the shared generator (deterministic, ~340 MB for 10,000 meetings):

    python3 ../shared/bench/gen_granola.py -n 10000 --out DATA/granola-10000-v3.json
    uv run python bench/meetings.py --cache DATA/granola-10000-v3.json [--runs 3] [--peer PATH]

Per run, on a fresh workspace and a private link to the cache (named `cache-v3.json`):
- first search: time from `initialize` done to the first `granola_meetings_search` answer
  (a big cache's first index runs in the background: that answer may cover only the meetings
  indexed so far, flagged `indexing`), and to the first complete answer, one that considered
  every meeting by its own flags: without `indexing`, or with `indexing.scanned` (the meetings
  not indexed yet matched by a scan of their text, those hits ranked provisionally). Meanwhile
  `granola_cache_status` is asked every 0.1 s (POLL) and the search again as soon as it says
  `indexing.scanned` or no longer `indexing`: asking the search itself every second hid up to a
  second of the figure, and asking it every 0.25 s cost the indexing server CPU (a search is
  far dearer than a status call) and slowed what it measured. The CPU seconds until then are
  the server's and its worker's. Then the time until the index itself is complete (no
  `indexing` in the status);
- resident: the server's and its worker's VmRSS together, the most seen while the first index
  ran (sampled at every status call); the server's alone right after the index is complete, and
  again 10 s later;
- one changed meeting: once the server is idle (the first index's merges and write-back
  over: less than 0.05 s of CPU in a second), the cache atomically replaced (`os.replace`) by a
  copy with one meeting's title changed, time until a search for the new word finds that meeting;
- warm search p50 / p95 over the generator's query terms, through `Client.call_tool` (what a
  Python client sees, its output-schema check included) and as the bare protocol round trip.

The peer, granola-mcp-server 1.4.0 (PyPI; it needs Python 3.12 and an MCP SDK 1.x, so it lives in
a venv outside this project: `uv venv --python 3.12 DIR && VIRTUAL_ENV=DIR uv pip install
granola-mcp-server==1.4.0 "mcp<2"`),
is run in the same run on the same file (it reads `~/Library/Application Support/Granola`, so
HOME points at a folder holding a link there), and the ratio of its warm search to ours is printed.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/http.py would shadow the standard library's `http`: keep this folder off the import path.
_BENCH = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _BENCH]

import argparse
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field

import anyio
import orjson
from mcp import Client
from mcp.client.stdio import StdioServerParameters

sys.path.insert(0, str(_BENCH.parent))

from bench.common import link_or_copy, percentile, rss_mb, timed_call

ROOT = _BENCH.parent
DEFAULT_CACHE = Path("/work/benchdata/granola-10000-v3.json")
NEW_WORD = "zanzibarquokka"
SETTLE = 10.0
POLL = 0.1
STATUS = "granola_cache_status"
SEARCH = "granola_meetings_search"
"""The name the server lists (`DESKMCP_TOOL_NAMES=safe`): `call_tool` checks answers against its schema."""


@dataclass
class Figures:
    first_s: float = float("nan")
    first_partial: bool = False
    complete_s: float = float("nan")
    complete_scanned: bool = False
    cpu_complete: float = float("nan")
    indexed_s: float = float("nan")
    peak_rss: float = 0.0
    rss_first: float = float("nan")
    rss_later: float = float("nan")
    worker_first: float = 0.0
    cpu_first: float = float("nan")
    cpu_change: float = float("nan")
    change_s: float = float("nan")
    warm: list[float] = field(default_factory=list)
    warm_raw: list[float] = field(default_factory=list)
    peer_first_s: float = float("nan")
    peer_rss: float = float("nan")
    peer_cpu: float = float("nan")
    peer_warm: list[float] = field(default_factory=list)


def queries(cache: Path) -> list[str]:
    meta = cache.with_name(cache.name + ".meta.json")
    try:
        return list(orjson.loads(meta.read_bytes())["facts"]["query_doc_frequency"])
    except (OSError, KeyError, orjson.JSONDecodeError):
        return ["budget", "remote control", "marketing strategy"]


def changed_copy(source: Path, target: Path) -> str:
    """Write `target`: `source` (a string cache) with NEW_WORD put first in its first meeting's
    title, byte for byte otherwise. Returns that meeting's id."""
    data = source.read_bytes()
    opening = b'\\"documents\\":{\\"'
    at = data.index(opening) + len(opening)
    meeting_id = data[at : data.index(b'\\"', at)].decode()
    title = data.index(b'\\"title\\":\\"', at) + len(b'\\"title\\":\\"')
    target.write_bytes(data[:title] + NEW_WORD.encode() + b" " + data[title:])
    return meeting_id


def params(command: list[str], env: dict[str, str]) -> StdioServerParameters:
    return StdioServerParameters(command=command[0], args=command[1:], env={**os.environ, **env}, cwd=str(ROOT))


def descendants(pid: int) -> list[int]:
    found, stack = [], [pid]
    while stack:
        current = stack.pop()
        for task in Path(f"/proc/{current}/task").glob("*"):
            try:
                kids = [int(p) for p in (task / "children").read_text(encoding="utf-8").split()]
            except OSError:
                continue
            found.extend(kids)
            stack.extend(kids)
    return found


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def find_process(marker: str, exclude: str = "\0") -> int | None:
    """Our descendant whose command line holds `marker` (the server under `uv run`)."""
    for pid in descendants(os.getpid()):
        line = cmdline(pid)
        if marker in line and exclude not in line and "python" in line:
            return pid
    return None


def cpu_s(pid: int | None) -> float:
    """CPU seconds (user + system) a process used, with its waited-for children (a worker)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return float("nan")
    return sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def worker_rss() -> float:
    return sum(rss_mb(p) for p in descendants(os.getpid()) if "deskmcp.meetings.worker" in cmdline(p))


def worker_cpu() -> float:
    """CPU seconds of a worker still running (once it has exited, the server's figure holds it)."""
    return sum(cpu_s(p) for p in descendants(os.getpid()) if "deskmcp.meetings.worker" in cmdline(p))


def covers_every_meeting(answer: dict[str, object]) -> bool:
    """The answer says it considered every meeting: not `indexing`, or the rest `scanned`."""
    indexing = answer.get("indexing")
    return not indexing or (isinstance(indexing, dict) and indexing.get("scanned") is not None)


async def ours(cache: Path, work: Path, words: list[str], rounds: int, figures: Figures) -> None:
    folder = work / "granola"
    folder.mkdir()
    live = folder / "cache-v3.json"
    link_or_copy(cache, live)
    staged = folder / ".next.json"
    changed_id = changed_copy(cache, staged)
    env = {"GRANOLA_CACHE_PATH": str(folder), "DESKMCP_WORKSPACE": str(work / "ws"), "DESKMCP_TIMEZONE": "UTC"}
    command = ["uv", "run", "--no-sync", "deskmcp", "serve", "meetings"]
    async with Client(params(command, env)) as client:
        started = time.perf_counter()
        result = await client.call_tool(SEARCH, {"q": words[0]})
        figures.first_s = time.perf_counter() - started
        figures.first_partial = bool((result.structured_content or {}).get("indexing"))
        pid = find_process("serve meetings")

        def sample() -> None:
            if pid:
                figures.peak_rss = max(figures.peak_rss, rss_mb(pid) + worker_rss())

        # A big cache's first index runs in the background: until a search answers complete,
        # answers cover the meetings indexed so far. Ask the (cheap) status every POLL seconds,
        # and the search again once the status says searches consider every meeting.
        with anyio.fail_after(600):
            while not covers_every_meeting(result.structured_content or {}):
                status = await client.call_tool(STATUS, {})
                sample()
                if not covers_every_meeting(status.structured_content or {}):
                    await anyio.sleep(POLL)
                    continue
                result = await client.call_tool(SEARCH, {"q": words[0]})
        figures.complete_s = time.perf_counter() - started
        figures.cpu_complete = cpu_s(pid) + worker_cpu()
        figures.complete_scanned = bool((result.structured_content or {}).get("indexing"))
        with anyio.fail_after(600):
            while True:
                status = await client.call_tool(STATUS, {})
                sample()
                if not (status.structured_content or {}).get("indexing"):
                    break
                await anyio.sleep(POLL)
        figures.indexed_s = time.perf_counter() - started
        figures.cpu_first = cpu_s(pid)
        figures.rss_first = rss_mb(pid) if pid else float("nan")
        figures.worker_first = worker_rss()
        await anyio.sleep(SETTLE)
        figures.rss_later = rss_mb(pid) if pid else float("nan")

        for _ in range(3):
            for q in words:
                await timed_call(client, SEARCH, {"q": q})
        for _ in range(rounds):
            for q in words:
                figures.warm.append(await timed_call(client, SEARCH, {"q": q}))
                figures.warm_raw.append(await timed_call(client, SEARCH, {"q": q}, validate=False))

        with anyio.fail_after(600):
            while True:  # the server idle: the change is timed alone
                before = cpu_s(pid)
                await anyio.sleep(1.0)
                if cpu_s(pid) - before < 0.05:
                    break
        os.replace(staged, live)
        started, cpu_before = time.perf_counter(), cpu_s(pid)
        with anyio.fail_after(120):
            while True:
                result = await client.call_tool(SEARCH, {"q": NEW_WORD})
                items = (result.structured_content or {}).get("items") or []
                if any(item["id"] == changed_id for item in items):
                    break
        figures.change_s = time.perf_counter() - started
        figures.cpu_change = cpu_s(pid) - cpu_before


async def peer(executable: Path, cache: Path, work: Path, words: list[str], rounds: int, figures: Figures) -> None:
    home = work / "peer-home"
    folder = home / "Library" / "Application Support" / "Granola"
    folder.mkdir(parents=True)
    link_or_copy(cache, folder / "cache-v3.json")
    async with Client(params([str(executable)], {"HOME": str(home)})) as client:
        started = time.perf_counter()
        await timed_call(client, "search_meetings", {"query": words[0]}, validate=False)
        figures.peer_first_s = time.perf_counter() - started
        pid = find_process(str(executable))
        figures.peer_rss = rss_mb(pid) if pid else float("nan")
        figures.peer_cpu = cpu_s(pid)
        for _ in range(rounds):
            for q in words:
                figures.peer_warm.append(await timed_call(client, "search_meetings", {"query": q}, validate=False))


def one_run(f: Figures) -> str:
    ratio = percentile(f.peer_warm, 50) / percentile(f.warm, 50) if f.peer_warm else float("nan")
    return (
        f"first search {f.first_s:.2f} s{' (partial, flagged indexing)' if f.first_partial else ''}, "
        f"complete {f.complete_s:.2f} s{' (rest scanned)' if f.complete_scanned else ''} "
        f"(server + worker CPU {f.cpu_complete:.1f} s), index complete {f.indexed_s:.2f} s "
        f"(server CPU {f.cpu_first:.1f} s); resident at most {f.peak_rss:.0f} MB while indexing "
        f"(server + worker), after {f.rss_first:.0f} MB, {SETTLE:.0f} s later {f.rss_later:.0f} MB; "
        f"changed meeting {f.change_s:.2f} s (CPU {f.cpu_change:.2f} s); "
        f"warm p50/p95 {percentile(f.warm, 50):.2f}/{percentile(f.warm, 95):.2f} ms "
        f"(round trip {percentile(f.warm_raw, 50):.2f}/{percentile(f.warm_raw, 95):.2f} ms); "
        f"peer: first {f.peer_first_s:.2f} s (CPU {f.peer_cpu:.1f} s), resident {f.peer_rss:.0f} MB, "
        f"warm p50 {percentile(f.peer_warm, 50):.1f} ms, ratio {ratio:.0f}x"
    )


def span(values: list[float], fmt: str) -> str:
    finite = [v for v in values if v == v]
    if not finite:
        return "n/a"
    lo, hi = min(finite), max(finite)
    return fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else f"{fmt.format(lo)}-{fmt.format(hi)}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="a string cache (gen_granola.py --format v3)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=20, help="warm searches per query term")
    parser.add_argument("--peer", type=Path, help="granola-mcp-server's executable (default: on PATH)")
    opts = parser.parse_args()
    cache: Path = opts.cache.resolve()
    words = queries(cache)
    peer_exe = opts.peer or (Path(found) if (found := shutil.which("granola-mcp-server")) else None)
    print(f"cache {cache} ({cache.stat().st_size / 1e6:.1f} MB); queries {words}")
    if peer_exe is None or not peer_exe.exists():
        print("granola-mcp-server not found (--peer PATH): no peer ratio")
        peer_exe = None
    anyio.run(bench, cache, words, opts.runs, opts.rounds, peer_exe)


async def bench(cache: Path, words: list[str], count: int, rounds: int, peer_exe: Path | None) -> None:
    runs: list[Figures] = []
    for n in range(count):
        figures = Figures()
        work = Path(tempfile.mkdtemp(prefix="deskmcp-bench-", dir=cache.parent))
        try:
            await ours(cache, work, words, rounds, figures)
            if peer_exe is not None:
                try:
                    await peer(peer_exe, cache, work, words, max(1, rounds // 4), figures)
                except Exception as exc:
                    print(f"granola-mcp-server failed: {exc!r}; see its stderr above", flush=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        runs.append(figures)
        print(f"run {n + 1}: {one_run(figures)}", flush=True)

    def each(get: object) -> list[float]:
        return [get(r) for r in runs]  # type: ignore[operator]

    print(f"\n== {len(runs)} runs (range) ==")
    partial = " (partial, flagged `indexing`)" if any(r.first_partial for r in runs) else ""
    print(f"first search answered after start:  {span(each(lambda r: r.first_s), '{:.2f}')} s{partial}")
    scanned = " (flagged indexing, the rest scanned)" if any(r.complete_scanned for r in runs) else ""
    print(f"first complete search answer:       {span(each(lambda r: r.complete_s), '{:.2f}')} s{scanned}")
    print(f"  server + worker CPU meanwhile:    {span(each(lambda r: r.cpu_complete), '{:.1f}')} s")
    print(f"index complete:                     {span(each(lambda r: r.indexed_s), '{:.2f}')} s")
    print(f"  server CPU meanwhile (+ worker):  {span(each(lambda r: r.cpu_first), '{:.1f}')} s")
    print(f"resident while indexing, at most:   {span(each(lambda r: r.peak_rss), '{:.0f}')} MB (server + worker)")
    print(f"server resident right after:        {span(each(lambda r: r.rss_first), '{:.0f}')} MB")
    print(f"  and {SETTLE:.0f} s later:                  {span(each(lambda r: r.rss_later), '{:.0f}')} MB")
    print(f"one changed meeting searchable:     {span(each(lambda r: r.change_s), '{:.2f}')} s")
    print(f"  server CPU meanwhile:             {span(each(lambda r: r.cpu_change), '{:.2f}')} s")
    print(
        f"warm search p50 / p95 (call_tool):  {span(each(lambda r: percentile(r.warm, 50)), '{:.2f}')} / "
        f"{span(each(lambda r: percentile(r.warm, 95)), '{:.2f}')} ms"
    )
    print(
        f"warm search p50 / p95 (round trip): {span(each(lambda r: percentile(r.warm_raw, 50)), '{:.2f}')} / "
        f"{span(each(lambda r: percentile(r.warm_raw, 95)), '{:.2f}')} ms"
    )
    if peer_exe is not None:
        print(
            f"peer granola-mcp-server: first search {span(each(lambda r: r.peer_first_s), '{:.2f}')} s "
            f"(CPU {span(each(lambda r: r.peer_cpu), '{:.1f}')} s), "
            f"resident {span(each(lambda r: r.peer_rss), '{:.0f}')} MB, warm p50 "
            f"{span(each(lambda r: percentile(r.peer_warm, 50)), '{:.1f}')} ms"
        )
        print(
            "peer ratio (its warm p50 / ours):  "
            f"{span(each(lambda r: percentile(r.peer_warm, 50) / percentile(r.warm, 50)), '{:.0f}')}x"
        )


if __name__ == "__main__":
    main()
