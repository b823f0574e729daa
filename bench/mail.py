"""Benchmark of the mail server on a generated Maildir (not a test: it prints what it measures).

For each size it generates a Maildir++ tree of conversations, then measures:

- index build: a cold scan into an empty index (every message parsed), then a warm
  refresh over the unchanged Maildir (directory mtimes only), and the peak RSS of that build;
- search and list latency at the client over a real stdio MCP connection
  (`python -m deskmcp.cli serve mail`), p50 and p95: `list_emails` with words, with
  operators (from:, has:attachment, newer_than:), and the default `is:unread` list;
- the server's peak RSS (VmHWM, Linux).

    uv run python bench/mail.py --sizes 50000
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/http.py would shadow the standard library's `http`: keep this folder off the import path.
_BENCH = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _BENCH]
sys.path.insert(0, str(_BENCH.parent))

import argparse
import random
import resource
import shutil
import time

import anyio

from bench.common import peak_rss_mb, stdio_params, summary, timed_call
from deskmcp.demo.mail import write_mailbox
from deskmcp.mail.backends.maildir import MaildirBackend

SEARCHES = [
    "budget",
    "invoice",
    '"annual renewals"',
    "latency rollback",
    "from:okafor",
    "subject:offsite",
    "has:attachment pricing",
    "vendor OR contract",
    "accessibility -launch",
    "newer_than:30d budget",
]
LISTS = ["is:unread", "in:inbox", "in:sent", "is:unread -label:AI_PROCESSED", ""]


def generate(root: Path, size: int) -> float:
    marker = root / f".generated-{size}"
    if marker.exists():
        return 0.0
    if root.exists():
        shutil.rmtree(root)
    started = time.perf_counter()
    write_mailbox(root, random.Random(size), messages=size)
    marker.write_text("ok\n", encoding="utf-8")
    return time.perf_counter() - started


def build_index(root: Path, index: Path) -> tuple[float, float, int, float]:
    if index.parent.exists():
        shutil.rmtree(index.parent)
    backend = MaildirBackend(root, index, address="me@localhost", max_message_bytes=50 * 1024 * 1024)
    started = time.perf_counter()
    count = backend.refresh()
    cold = time.perf_counter() - started
    started = time.perf_counter()
    backend.refresh()
    warm = time.perf_counter() - started
    backend.close()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return cold, warm, count, rss


async def serve_and_measure(root: Path, workspace: Path, index_dir: Path, rounds: int) -> dict[str, object]:
    pidfile = workspace / "server.pid"
    env = {
        "DESKMCP_WORKSPACE": str(workspace),
        "DESKMCP_INDEX_DIR": str(index_dir),
        "MAIL_MAILDIR": str(root),
        "MAIL_BACKEND": "maildir",
    }
    params = stdio_params(["-m", "deskmcp.cli", "serve", "mail"], env, pidfile)
    from mcp import Client

    async with Client(params) as client:
        started = time.perf_counter()
        await timed_call(client, "list_emails", {"query": "is:unread", "max_results": 10})
        first = (time.perf_counter() - started) * 1000
        search: list[float] = []
        listing: list[float] = []
        for _ in range(rounds):
            for query in SEARCHES:
                search.append(await timed_call(client, "list_emails", {"query": query, "max_results": 10}))
            for query in LISTS:
                listing.append(await timed_call(client, "list_emails", {"query": query, "max_results": 10}))
        raw_search = [
            await timed_call(client, "list_emails", {"query": q, "max_results": 10}, validate=False) for q in SEARCHES
        ]
        rss = peak_rss_mb(pidfile)
    return {"first": first, "search": search, "list": listing, "raw_search": raw_search, "rss": rss}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="50000", help="comma-separated message counts")
    parser.add_argument("--rounds", type=int, default=5, help="passes over the queries per size")
    parser.add_argument("--root", type=Path, default=Path("/tmp/deskmcp-bench-mail"), help="where data goes")
    args = parser.parse_args()
    for size in (int(s) for s in args.sizes.split(",")):
        base = args.root / str(size)
        maildir = base / "mail"
        workspace = base / "ws"
        workspace.mkdir(parents=True, exist_ok=True)
        generated = generate(maildir, size)
        index = workspace / "index" / "mail.sqlite3"
        cold, warm, count, build_rss = build_index(maildir, index)
        measured = anyio.run(serve_and_measure, maildir, workspace, index.parent, args.rounds)
        print(f"\n== {size:,} messages ({count:,} indexed) ==")
        if generated:
            print(f"generate Maildir      {generated:8.1f} s")
        print(f"first index build     {cold:8.1f} s   ({count / cold:,.0f} messages/s; peak RSS {build_rss:.0f} MB)")
        print(f"warm refresh          {warm * 1000:8.1f} ms")
        print(f"first call (stdio)    {measured['first']:8.1f} ms")
        print(f"search (stdio)        {summary(measured['search'])}")  # type: ignore[arg-type]
        print(f"search, no client validation {summary(measured['raw_search'])}")  # type: ignore[arg-type]
        print(f"list (stdio)          {summary(measured['list'])}")  # type: ignore[arg-type]
        rss = measured["rss"]
        print(f"server peak RSS       {rss:8.1f} MB" if isinstance(rss, float) else "server peak RSS       n/a")


if __name__ == "__main__":
    main()
