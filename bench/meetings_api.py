"""Benchmark the meetings server's sync from Granola's public API, against a loopback stub of it
that enforces the published rate limits (25 requests a burst, 5 a second sustained).

    uv run python bench/meetings_api.py [--notes 10000] [--segments 60] [--rate 1.0]

The stub (tests/helpers/granola_api.py) runs in a process of its own, serving N generated notes
(each with a transcript of `--segments` lines, as the tests' generator writes them). `--rate`
scales the limits the stub enforces and the client keeps to (1.0: as published; the full
10,000 notes take about 35 minutes at that rate). Printed:

- first sync: wall time, requests made (listing pages and note fetches), and the rate-limit
  floor (requests / (5 * rate) per second), with their ratio;
- an incremental sync after 10 notes changed: wall time and requests;
- the resident memory of this process (the client side: service, index, sync) while syncing,
  peak and at the end (sampled every 50 ms);
- search p50 / p95 in-process over the same queries, on the API-synced index and on an index
  built from a plain cache holding the same meetings.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

# The project's root in place of bench/ (whose http.py would hide the standard library's).
sys.path[0] = str(Path(__file__).resolve().parents[1])

from tests.helpers.granola_api import KEY, granola_api
from tests.meetings.api_notes_data import WORDS, cache_state, make_notes, stamp
from tests.meetings.fixtures import write

from bench.common import percentile, rss_mb
from deskmcp.meetings.api_source import ApiSource
from deskmcp.meetings.service import MeetingService
from deskmcp.meetings.settings import MeetingsSettings

QUERIES = [*WORDS, "budget review", "hiring plan", "search by meaning", "incident retro", "Kofi", "onboarding flow"]


def serve(args: argparse.Namespace) -> None:
    """The stub's process: serve, and answer commands on stdin (`touch N`, `hits`)."""
    notes = make_notes(args.notes, seed=args.seed, transcript_lines=args.segments)
    with granola_api(notes, rate=args.rate) as stub:
        print(f"URL {stub.url}", flush=True)
        for line in sys.stdin:
            command, _, value = line.strip().partition(" ")
            if command == "touch":
                changed = []
                newest = max(n["updated_at"] for n in stub.notes.values())
                for i, note in enumerate(list(stub.notes.values())[: int(value)]):
                    stub.put(dict(note, title=f"{note['title']} (changed)", updated_at=later(newest, i + 1)))
                    changed.append(note["id"])
                print(json.dumps(changed), flush=True)
            elif command == "hits":
                print(
                    json.dumps({"list": stub.hits["list"], "get": stub.hits["get"], "429": stub.rate_limited}),
                    flush=True,
                )


def later(when: str, seconds: int) -> str:
    """`seconds` after the ISO time `when` (the generated notes reach into the future)."""
    return stamp(datetime.fromisoformat(when.replace("Z", "+00:00")) + timedelta(seconds=seconds))


class RssSampler:
    def __init__(self) -> None:
        self.peak = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_mb(os.getpid()))
            self._stop.wait(0.05)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()


def ask(stub: subprocess.Popen[str], command: str) -> Any:
    assert stub.stdin is not None and stub.stdout is not None
    stub.stdin.write(command + "\n")
    stub.stdin.flush()
    return json.loads(stub.stdout.readline())


def search_times(service: MeetingService, rounds: int) -> list[float]:
    times: list[float] = []
    for _ in range(rounds):
        for q in QUERIES:
            started = time.perf_counter()
            service.search(q, service.filters(), limit=20, cursor=None)
            times.append((time.perf_counter() - started) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--segments", type=int, default=60, help="transcript lines per note (default 60)")
    parser.add_argument("--rate", type=float, default=1.0, help="scale of the published rate limits (default 1.0)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=10, help="rounds of the search queries (default 10)")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args)
        return
    command = [sys.executable, __file__, "--serve", "--notes", str(args.notes), "--segments", str(args.segments)]
    command += ["--rate", str(args.rate), "--seed", str(args.seed)]
    stub = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert stub.stdout is not None
    url = stub.stdout.readline().split()[1]
    print(f"{args.notes} notes, {args.segments} transcript lines each, limits x{args.rate} (stub at {url})")
    with tempfile.TemporaryDirectory() as tmp:
        settings = MeetingsSettings(workspace=Path(tmp) / "api", api_key=KEY, api_url=url, timezone="UTC")
        service = MeetingService(
            settings, source=lambda s: ApiSource(s.settings, s.index, rate=args.rate, background=False)
        )
        source = service.source
        assert isinstance(source, ApiSource)
        start_rss = rss_mb(os.getpid())
        with RssSampler() as sampler:
            started = time.perf_counter()
            complete = source.sync_once()
            first = time.perf_counter() - started
        hits = ask(stub, "hits")
        requests = hits["list"] + hits["get"]
        floor = requests / (5.0 * args.rate)
        print(
            f"first sync: {first:.1f} s ({'complete' if complete else 'NOT complete'}), {requests} requests "
            f"({hits['list']} listing pages, {hits['get']} notes), 429 answers {hits['429']}; "
            f"rate-limit floor {floor:.1f} s; ratio {first / floor:.3f}"
        )
        after_rss = rss_mb(os.getpid())
        print(
            f"resident while syncing: peak {sampler.peak:.0f} MB (before {start_rss:.0f} MB, after {after_rss:.0f} MB)"
        )
        changed = ask(stub, "touch 10")
        started = time.perf_counter()
        source.sync_once()
        incremental = time.perf_counter() - started
        after = ask(stub, "hits")
        renamed = sum(service.get(note_id).title.endswith("(changed)") for note_id in changed)
        print(
            f"incremental sync of {len(changed)} changed notes: {incremental:.2f} s, "
            f"{after['list'] + after['get'] - requests} requests, {renamed} changes found in the index"
        )
        api_times = search_times(service, args.rounds)
        notes = make_notes(args.notes, seed=args.seed, transcript_lines=args.segments)
        write(Path(tmp) / "granola", cache_state(notes))
        del notes
        cache = MeetingService(
            MeetingsSettings(workspace=Path(tmp) / "cache", cache_path=Path(tmp) / "granola", timezone="UTC")
        )
        cache.refresh()
        cache.wait_indexed()
        cache_times = search_times(cache, args.rounds)
        print(
            f"search p50 / p95: API-synced index {percentile(api_times, 50):.2f} / {percentile(api_times, 95):.2f} ms, "
            f"plain-cache index {percentile(cache_times, 50):.2f} / {percentile(cache_times, 95):.2f} ms "
            f"({len(api_times)} searches each)"
        )
        service.close()
        cache.close()
    assert stub.stdin is not None
    stub.stdin.close()
    stub.wait(timeout=30)


if __name__ == "__main__":
    main()
