"""Benchmark of word search over every folder of an IMAP account (not a test: it prints what it measures).

It starts a private Dovecot (tests/mail/dovecot.py), fills one user's Maildir with `--size` messages
(default 20,000) made from the shared corpus's real .eml files, varied (each copy gets its own
Message-ID, a Date spread over two years and a few words of a small vocabulary in its subject; half of
them are plain messages whose body is drawn from the vocabulary), spread over INBOX, Sent, Archive,
Projects and Trash, each file named as Dovecot's own delivery names it (with its size). Then, in
this process, through the IMAP backend:

- before: `list_emails`-style searches `in:anywhere WORD` (a page of 20) answered by the server's
  SEARCH in every folder, p50 and p95;
- the first sync of the local copy (every folder), its time;
- after: the same searches answered from the synced copy, p50 and p95, and whether each answer
  equals the server's (the same summaries, in the same order);
- the same for listings on flags (`is:unread`, `is:starred`...), which the copy answers too.

    uv run python bench/imap_search.py
    uv run python bench/imap_search.py --size 2000 --rounds 3
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
import re
import shutil
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

from tests.helpers.corpora import SHARED
from tests.helpers.mail import make_mail
from tests.mail.dovecot import PASSWORD, start, stop

from deskmcp.mail.backends.imap import ImapBackend, ImapConfig
from deskmcp.mail.query import parse_query

VOCABULARY = [
    "budget",
    "invoice",
    "renewal",
    "offsite",
    "latency",
    "rollback",
    "vendor",
    "contract",
    "accessibility",
    "launch",
    "roadmap",
    "hiring",
    "quarterly",
    "forecast",
    "migration",
    "outage",
    "postmortem",
    "onboarding",
    "security",
    "audit",
    "pricing",
    "discount",
    "partner",
    "workshop",
    "deadline",
    "milestone",
]
FOLDERS = {"INBOX": "", "Sent": ".Sent", "Archive": ".Archive", "Projects": ".Projects", "Trash": ".Trash"}
LISTINGS = ["is:unread", "in:anywhere is:unread", "is:starred", "in:Sent is:read"]
WORDS = ["budget", "renewal", "postmortem", "milestone", "message", "unsubscribe", "zzzabsent", "security"]
_HEADER = re.compile(rb"^(Subject|Message-ID|Date):[^\n]*\n(?:[ \t][^\n]*\n)*", re.IGNORECASE | re.MULTILINE)


def fill(maildir: Path, size: int, rng: random.Random) -> None:
    files = sorted((SHARED / "corpora" / "emails").rglob("*.eml"))
    originals = [path.read_bytes().replace(b"\r\n", b"\n") for path in files]
    base = datetime(2026, 11, 20, 12, tzinfo=UTC)
    for sub in FOLDERS.values():
        for part in ("cur", "new", "tmp"):
            (maildir / sub / part).mkdir(parents=True, exist_ok=True)
    weights = [60, 15, 15, 7, 3]
    for i in range(size):
        folder = rng.choices(list(FOLDERS.values()), weights)[0]
        words = " ".join(rng.sample(VOCABULARY, 3))
        when = base - timedelta(minutes=rng.randrange(2 * 365 * 24 * 60))
        if i % 2:
            body = " ".join(rng.choices(VOCABULARY, k=rng.randrange(20, 200)))
            raw = make_mail(f"Note {i} {words}", body, msgid=f"<b{i}@bench.test>", days_ago=rng.random() * 730).replace(
                b"\r\n", b"\n"
            )
        else:
            head, sep, rest = originals[i % len(originals)].partition(b"\n\n")
            head = _HEADER.sub(b"", head + b"\n").rstrip(b"\n")
            extra = f"Subject: {words} #{i}\nMessage-ID: <c{i}@bench.test>\nDate: {format_datetime(when)}\n"
            raw = extra.encode() + head + b"\n" + sep + rest
        # named as Dovecot names what it delivers, with the size (S=): without it Dovecot reads
        # the size of every file of a folder on each STATUS or SELECT (240 vs 9 ms on INBOX here)
        name = f"{1_700_000_000 + i}.M{i}P1.bench,S={len(raw)}:2,{'S' if rng.random() < 0.7 else ''}"
        (maildir / folder / "cur" / name).write_bytes(raw)


def timed(
    backend: ImapBackend, rounds: int, queries: list[str] | None = None
) -> tuple[list[float], dict[str, list[dict[str, Any]]]]:
    """Each query (default: `in:anywhere WORD` for each of WORDS) `rounds` times, a page of 20."""
    took: list[float] = []
    answers: dict[str, list[dict[str, Any]]] = {}
    for _ in range(rounds):
        for query in queries or [f"in:anywhere {word}" for word in WORDS]:
            started = time.perf_counter()
            page = backend.list(parse_query(query), raw=query, limit=20, offset=0)
            took.append((time.perf_counter() - started) * 1000)
            answers[query] = [e.model_dump() for e in page.emails]
    return took, answers


def p(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] if len(values) > 1 else values[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="deskmcp-imap-bench-"))
    server, proc = start(root / "dovecot")
    try:
        user = server.add_user()
        home = server.homes / user
        started = time.perf_counter()
        fill(home / "Maildir", args.size, random.Random(args.size))
        print(f"filled {args.size:,} messages in {time.perf_counter() - started:.1f} s")
        if os.getuid() == 0:  # Dovecot reads the mail as its unprivileged account
            for path in [home, *home.rglob("*")]:
                os.chown(path, server.mail_uid, server.mail_gid)
        config = ImapConfig(host=server.host, port=server.port, user=user, password=PASSWORD, security="none")
        plain = ImapBackend(config, address=user, transport=None, max_message_bytes=50_000_000)
        timed(plain, 1)  # Dovecot builds its own indexes of the folders on first use: not counted
        before, server_answers = timed(plain, args.rounds)
        before_listing, server_listing = timed(plain, args.rounds, LISTINGS)
        local = ImapBackend(
            config, address=user, transport=None, max_message_bytes=50_000_000, index_path=root / "imap.sqlite3"
        )
        started = time.perf_counter()
        local.sync_all()
        sync = time.perf_counter() - started
        after, local_answers = timed(local, args.rounds)
        after_listing, local_listing = timed(local, args.rounds, LISTINGS)
        started = time.perf_counter()
        local.sync_all()
        resync = time.perf_counter() - started
        same = sum(server_answers[q] == local_answers[q] for q in server_answers)
        same_listing = sum(server_listing[q] == local_listing[q] for q in LISTINGS)
        size_mb = (root / "imap.sqlite3").stat().st_size / 1e6
        local.close()
        plain.close()
    finally:
        stop(server, proc)
        shutil.rmtree(root, ignore_errors=True)
    print(f"\n== word search over every folder, {args.size:,} messages (Dovecot on loopback, pages of 20) ==")
    print(f"server SEARCH   p50 {p(before, 50):8.1f} ms   p95 {p(before, 95):8.1f} ms   ({len(before)} searches)")
    print(f"local copy      p50 {p(after, 50):8.1f} ms   p95 {p(after, 95):8.1f} ms   ({len(after)} searches)")
    print(f"ratio (p50)     {p(before, 50) / p(after, 50):.1f}x faster")
    print(f"first sync      {sync:8.1f} s    ({args.size / sync:,.0f} messages/s), index {size_mb:.0f} MB")
    print(f"sync, nothing changed {resync * 1000:8.1f} ms")
    print(f"same answers as the server (whole summaries, same order): {same}/{len(WORDS)} words")
    print(f"\n== listings on flags: {', '.join(LISTINGS)} ==")
    print(f"server          p50 {p(before_listing, 50):8.1f} ms   p95 {p(before_listing, 95):8.1f} ms")
    print(f"local copy      p50 {p(after_listing, 50):8.1f} ms   p95 {p(after_listing, 95):8.1f} ms")
    print(f"same answers as the server: {same_listing}/{len(LISTINGS)} listings")


if __name__ == "__main__":
    main()
