"""Benchmark of the mail server on a generated Maildir (not a test: it prints what it measures).

For each size it generates a Maildir++ tree of conversations, then measures:

- index build: a cold scan into an empty index (every message parsed), then a warm
  refresh over the unchanged Maildir (directory mtimes only), and the peak RSS of that build;
- search and list latency at the client over a real stdio MCP connection
  (`python -m deskmcp.cli serve mail`), p50 and p95: `list_emails` with words, with
  operators (from:, has:attachment, newer_than:), and the default `is:unread` list;
- the server's peak RSS (VmHWM, Linux).

With `--backend imap` it starts a private Dovecot (tests/mail/dovecot.py), puts the generated
Maildir in a user's home there, and measures pages of 100 over IMAP through the MCP server,
plus the raw FETCH of one page both ways in this process: the summary items the backend asks
for now against the first 16 KB of each message it used to download and parse.

    uv run python bench/mail.py --sizes 50000
    uv run python bench/mail.py --backend imap --sizes 5000
    uv run python bench/mail.py --backend gmail-stub

With `--backend gmail-stub` it lists pages of 20 over the Gmail backend against a stand-in for
the Gmail API on loopback that answers each HTTP request after 100 ms (tests/mail/gmail_stub.py),
batched summaries against one request per message.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/http.py would shadow the standard library's `http`: keep this folder off the import path.
_BENCH = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _BENCH]
sys.path.insert(0, str(_BENCH.parent))

import argparse
import os
import random
import resource
import shutil
import statistics
import time
from typing import Any

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


IMAP_LISTS = ["", "in:inbox", "is:unread", "in:sent", "budget", "from:okafor", "has:attachment", "vendor OR contract"]


async def serve_imap(server: Any, user: str, workspace: Path, rounds: int) -> dict[str, Any]:
    pidfile = workspace / "server.pid"
    env = {
        "DESKMCP_WORKSPACE": str(workspace),
        "MAIL_BACKEND": "imap",
        "MAIL_MODE": "read_only",
        **{f"MAIL_{k.upper()}": str(v) for k, v in server.settings(user).items() if k.startswith("imap_")},
    }
    params = stdio_params(["-m", "deskmcp.cli", "serve", "mail"], env, pidfile)
    from mcp import Client

    async with Client(params) as client:
        started = time.perf_counter()
        await timed_call(client, "list_emails", {"query": "", "max_results": 100})
        first = (time.perf_counter() - started) * 1000
        pages: list[float] = []
        later: list[float] = []
        by_query: dict[str, list[float]] = {q: [] for q in IMAP_LISTS}
        for _ in range(rounds):
            for query in IMAP_LISTS:
                took = await timed_call(client, "list_emails", {"query": query, "max_results": 100})
                pages.append(took)
                by_query[query].append(took)
            cursor = None
            for _page in range(3):
                started = time.perf_counter()
                result = await client.call_tool("list_emails", {"query": "", "max_results": 100, "cursor": cursor})
                later.append((time.perf_counter() - started) * 1000)
                cursor = (result.structured_content or {}).get("next_cursor")
                if cursor is None:
                    break
        rss = peak_rss_mb(pidfile)
    return {"first": first, "pages": pages, "paging": later, "by_query": by_query, "rss": rss}


def fetch_both_ways(server: Any, user: str, rounds: int) -> tuple[list[float], list[float]]:
    """One page of 100 summaries fetched and decoded: the summary items against 16 KB prefixes."""
    from deskmcp.mail.backends import imap_fetch
    from deskmcp.mail.mime import decode, parse_bytes

    client = server.client(user)
    client.select_folder("INBOX", readonly=True)
    uids = client.sort(["REVERSE", "DATE"], ["ALL"])[:100]
    items = imap_fetch.summary_items(client.has_capability("PREVIEW"))
    now: list[float] = []
    before: list[float] = []
    for _ in range(rounds):
        started = time.perf_counter()
        for uid, item in client.fetch(uids, items).items():
            imap_fetch.read(uid, item)
        now.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        for item in client.fetch(uids, ["FLAGS", "RFC822.SIZE", "BODY.PEEK[]<0.16384>"]).values():
            decode(parse_bytes(next((v for k, v in item.items() if k.startswith(b"BODY[]")), b"")))
        before.append((time.perf_counter() - started) * 1000)
    client.logout()
    return now, before


def run_imap(size: int, rounds: int, root: Path) -> None:
    from tests.mail.dovecot import start, stop

    base = root / f"imap-{size}"
    if base.exists():
        shutil.rmtree(base)
    server, proc = start(base / "dovecot")
    try:
        user = server.add_user()
        home = server.homes / user
        started = time.perf_counter()
        write_mailbox(home / "Maildir", random.Random(size), messages=size)
        generated = time.perf_counter() - started
        if os.getuid() == 0:  # Dovecot reads the mail as its unprivileged account
            for path in [home, *home.rglob("*")]:
                os.chown(path, server.mail_uid, server.mail_gid)
        workspace = base / "ws"
        workspace.mkdir(parents=True)
        measured = anyio.run(serve_imap, server, user, workspace, rounds)
        now, before = fetch_both_ways(server, user, max(rounds, 5))
    finally:
        stop(server, proc)
    print(f"\n== IMAP (Dovecot on loopback), {size:,} messages ==")
    print(f"generate Maildir      {generated:8.1f} s")
    print(f"first page of 100 (stdio, Dovecot indexing cold) {measured['first']:8.1f} ms")
    print(f"pages of 100 (stdio)  {summary(measured['pages'])}")
    for query, took in measured["by_query"].items():
        print(f"  {query or '(everything)':<22} median {statistics.median(took):7.1f} ms")
    print(f"pages 1-3 by cursor   {summary(measured['paging'])}")
    print(f"FETCH+decode 100, summary items   {summary(now)}")
    print(f"FETCH+decode 100, 16 KB prefixes  {summary(before)}")
    ratio = statistics.median(before) / statistics.median(now)
    print(f"summary items vs 16 KB prefixes: {ratio:.1f}x faster (median)")
    rss = measured["rss"]
    print(f"server peak RSS       {rss:8.1f} MB" if isinstance(rss, float) else "server peak RSS       n/a")


def run_gmail_stub(rounds: int, root: Path, delay: float = 0.1, page: int = 20) -> None:
    """list_emails of `page` messages over the Gmail backend against a loopback stand-in for
    the Gmail API that answers every HTTP request after `delay` seconds: the summaries in one
    batch request now, against one request per message (the earlier way, run here as the baseline)."""
    from tests.mail.gmail_stub import FakeGmail, LoopbackGmail

    from deskmcp.google.auth import SCOPES, FileTokenStore
    from deskmcp.mail.backends.gmail import HEADERS, GmailBackend
    from deskmcp.mail.query import parse_query
    from deskmcp.mail.settings import MailSettings

    class OneByOne(GmailBackend):
        def _metadata(self, ids: list[str]) -> dict[str, dict[str, Any]]:
            def one(api: Any, mid: str) -> Any:
                return api.users().messages().get(userId="me", id=mid, format="metadata", metadataHeaders=HEADERS)

            return {mid: self._call(lambda api, mid=mid: one(api, mid)) for mid in ids}

    workspace = root / "gmail-stub"
    shutil.rmtree(workspace, ignore_errors=True)
    settings = MailSettings(workspace=workspace, backend="gmail", google_client_id="cid", google_client_secret="cs")
    FileTokenStore(settings.google_token_path).save(
        {"token": "t", "refresh_token": "r", "token_uri": "https://oauth2.googleapis.com/token", "client_id": "cid",
         "client_secret": "cs", "scopes": list(SCOPES["mail"]), "expiry": "2999-01-01T00:00:00Z"}
    )  # fmt: skip
    fake = FakeGmail(500)
    stub = LoopbackGmail(fake, delay)
    results: dict[str, tuple[list[float], int]] = {}
    try:
        for name, kind in (("batched", GmailBackend), ("one request per message", OneByOne)):
            backend = kind(settings, http=stub.http())
            backend.labels()  # label names are fetched once per process: not part of a page
            took: list[float] = []
            before = len(fake.requests)
            for _ in range(rounds):
                started = time.perf_counter()
                backend.list(parse_query(""), raw="", limit=page, offset=0)
                took.append((time.perf_counter() - started) * 1000)
            results[name] = (took, (len(fake.requests) - before) // rounds)
            backend.close()
    finally:
        stub.close()
    print(f"\n== Gmail backend against a loopback API stub, {delay * 1000:.0f} ms per HTTP request ==")
    for name, (took, requests) in results.items():
        print(f"list {page} ({name:<24}) {summary(took)}  {requests} requests")
    ratio = statistics.median(results["one request per message"][0]) / statistics.median(results["batched"][0])
    print(f"batched vs one request per message: {ratio:.1f}x faster (median)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="50000", help="comma-separated message counts")
    parser.add_argument("--rounds", type=int, default=5, help="passes over the queries per size")
    parser.add_argument("--root", type=Path, default=Path("/tmp/deskmcp-bench-mail"), help="where data goes")
    parser.add_argument(
        "--backend", choices=("maildir", "imap", "gmail-stub"), default="maildir", help="what to measure"
    )
    args = parser.parse_args()
    if args.backend == "gmail-stub":
        run_gmail_stub(args.rounds, args.root)
        return
    for size in (int(s) for s in args.sizes.split(",")):
        if args.backend == "imap":
            run_imap(size, args.rounds, args.root)
            continue
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
