"""The scan of the meetings not indexed yet finds the meetings the finished index finds."""

import contextlib
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from deskmcp.demo.meetings import build_state, write_cache
from deskmcp.meetings import worker
from deskmcp.meetings.filters import Filters
from deskmcp.meetings.models import IndexingProgress
from deskmcp.meetings.service import MeetingService
from deskmcp.meetings.settings import MeetingsSettings
from deskmcp.meetings.unindexed import Unindexed, admits
from deskmcp.meetings.worker import changes

NOW = datetime(2026, 6, 1, tzinfo=UTC)

QUERIES = [
    "budget",
    "decisions",
    "decided",
    "customer's",
    "reviewed",
    "roadmap priorities",
    "hiring plan",
    '"hiring plan"',
    '"follow up"',
    '"plan hiring"',
    "budget -hiring",
    "customer -interview",
    "+budget roadmap",
    '+"cloud costs" -travel',
    "-roadmap budget",
    "the",
    "the budget",
    "what did we decide",
    "kubernetes",
    "cafe",
    "café",
    "deja",
    "naïve",
    "batteries",
    "dying",
    "die",
    "tomas",
    "Tomás",
    "northwind",
    "sam.rivera@northwind.io",
    "postgres 17",
    "17",
    "finance",
    "1:1",
    "look-and-feel",
    "CSV export",
]


def odd_meetings(state: dict[str, Any]) -> None:
    """Words the index analyses in ways a plain lower-casing does not: accents, `_`, the
    stemmer's exceptions, phrases across fields, capitals."""
    documents = state["documents"]
    keys = sorted(documents)
    documents[keys[0]]["title"] = "Café déjà vu: the NAÏVE dying_batteries plan"
    documents[keys[1]]["title"] = "Look-and-feel review of Hiring"
    documents[keys[2]]["notes_markdown"] = "Plan hiring; the batteries were dying. Café ‘quotes’ — and naive ideas."
    documents[keys[3]]["title"] = "Die Besprechung über Größe"


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("g")
    state = build_state(300, seed=21, now=NOW)
    odd_meetings(state)
    write_cache(folder / "cache-v3.json", state, version=3)
    return folder


@pytest.fixture(scope="module")
def indexed(cache: Path, tmp_path_factory: pytest.TempPathFactory) -> MeetingService:
    settings = MeetingsSettings(
        workspace=tmp_path_factory.mktemp("ws"), cache_path=cache, timezone="UTC", worker_min_mb=1024
    )
    service = MeetingService(settings)
    service.refresh()
    return service


@pytest.fixture(scope="module")
def pool(cache: Path) -> Unindexed:
    scan = Unindexed()
    for kind, body in changes(cache / "cache-v3.json", 1 << 40, {}, texts=True):
        if kind == "texts":
            scan.add(body["items"])
        elif kind == "texts_done":
            scan.finish()
            break
    assert scan.ready
    return scan


def index_keys(service: MeetingService, q: str, filters: Filters) -> set[str]:
    where, params = filters.sql()
    return {h.key for h in service.index.search(q, where=where, params=params, limit=10_000, snippet_tokens=0)}


def scan_keys(pool: Unindexed, q: str, filters: Filters) -> set[str]:
    return {h.pending.key for h in pool.search(q, admits(filters)).hits}


@pytest.mark.parametrize("q", QUERIES)
def test_the_scan_finds_the_meetings_the_index_finds(indexed: MeetingService, pool: Unindexed, q: str):
    filters = indexed.filters()
    assert pool.remaining() == indexed.index.count() == 300
    assert scan_keys(pool, q, filters) == index_keys(indexed, q, filters)


def test_the_queries_find_something_and_leave_something_out(indexed: MeetingService):
    """The comparison above means something: most queries match some meetings, and not all."""
    filters = indexed.filters()
    sizes = {q: len(index_keys(indexed, q, filters)) for q in QUERIES}
    assert sum(1 for n in sizes.values() if 0 < n < 300) >= len(QUERIES) - 5, sizes
    for q in ("cafe", "café", "dying", "die", "batteries", "naïve", "look-and-feel", '"plan hiring"'):
        assert sizes[q] >= 1, q


FILTERS: list[dict[str, Any]] = [
    {"from_ts": "2026-03-01", "to_ts": "2026-04-15"},
    {"days": 30, "now": NOW},
    {"folder": "Engineering"},
    {"folder": "finance"},
    {"participants": ["ali"]},
    {"participants": ["Tomás"]},
    {"participants": ["bilal okafor", "sam"]},
    {"participants": ["acme.dev"]},
    {"platform": "zoom"},
    {"platform": "zoom", "folder": "Product", "from_ts": "2026-02-01"},
]


@pytest.mark.parametrize("given", FILTERS)
@pytest.mark.parametrize("q", ["budget", "roadmap -hiring", '"follow up"', "the"])
def test_the_scan_applies_the_filters_as_the_index_does(
    indexed: MeetingService, pool: Unindexed, q: str, given: dict[str, Any]
):
    filters = indexed.filters(**given)
    found = index_keys(indexed, q, filters)
    assert scan_keys(pool, q, filters) == found


def test_a_folder_filter_by_id_and_the_filters_keep_some(indexed: MeetingService, pool: Unindexed):
    folder = indexed.folders().folders[0]
    filters = indexed.filters(folder=folder.id)
    found = index_keys(indexed, "the", filters)
    assert 0 < len(found) < 300
    assert scan_keys(pool, "the", filters) == found


def test_terms_no_scanned_meeting_holds_are_named(pool: Unindexed, indexed: MeetingService):
    result = pool.search("budget kubernetes", admits(indexed.filters()))
    assert result.held == {"budget"}
    assert result.hits and all(h.score > 0 for h in result.hits)
    snippet = result.snippet(result.hits[0])
    assert snippet is not None and "⟦budget⟧" in snippet


def test_meetings_marked_indexed_leave_the_scan(cache: Path):
    scan = Unindexed()
    for kind, body in changes(cache / "cache-v3.json", 1 << 40, {}, texts=True):
        if kind == "texts":
            scan.add(body["items"])
        elif kind == "texts_done":
            break
    everyone = Filters(zone=UTC)
    first = sorted(scan.keys())[:100]
    scan.indexed(first[:50])  # before the texts are all here: left out once they are
    scan.finish()
    assert scan.remaining() == 250
    scan.indexed(first[50:])
    assert scan.remaining() == 200
    assert not scan_keys(scan, "the", everyone) & set(first)


# A worker that sends the summary and every meeting's text, then `argv[2]` entries, then waits
# for the test to open the FIFO named in argv[1] for writing before it sends the rest.
HELD_AFTER = """
import sys
from pathlib import Path
import msgspec
from deskmcp.meetings.worker import _write, changes
request = msgspec.msgpack.decode(sys.stdin.buffer.read())
encoder = msgspec.msgpack.Encoder()
held, entries = int(sys.argv[2]), 0
for kind, body in changes(Path(request["path"]), request["max_bytes"], request["known"], texts=request["texts"]):
    if kind == "entry":
        if entries == held:
            with open(sys.argv[1], "rb") as gate:
                gate.read()
        entries += 1
    _write(sys.stdout.buffer, encoder, kind, body)
    sys.stdout.buffer.flush()
"""

SERVICE_QUERIES = ["budget", '"follow up"', "roadmap -hiring", "+budget roadmap", "the", "dying", "kubernetes"]


def all_hits(service: MeetingService, q: str, filters: Filters) -> tuple[set[str], list[Any]]:
    """Every hit of the search, page after page, and the answers."""
    keys: set[str] = set()
    answers: list[Any] = []
    cursor = None
    while True:
        answer = service.search(q, filters, limit=100, cursor=cursor)
        answers.append(answer)
        keys.update(h.id for h in answer.items)
        cursor = answer.next_cursor
        if cursor is None:
            return keys, answers


@pytest.mark.e2e
@pytest.mark.parametrize("held", [0, 600])
def test_searches_during_a_first_index_consider_every_meeting(tmp_path: Path, indexed: MeetingService, held: int):
    """Held before any meeting is indexed (all scanned) or after 600 of 1,200 (the first batch
    indexed, the rest scanned): each answer finds what the finished index finds, says so, and
    once the index is complete, answers are the index's alone."""
    state = build_state(1200, seed=21, now=NOW)
    odd_meetings(state)
    write_cache(tmp_path / "g" / "cache-v3.json", state, version=3)
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    settings = MeetingsSettings(
        workspace=tmp_path / "ws", cache_path=tmp_path / "g", timezone="UTC", worker_min_mb=0, background_min_mb=0
    )
    service = MeetingService(settings)
    service.worker_command = [sys.executable, "-c", HELD_AFTER, str(gate), str(held)]
    whole = MeetingService(
        MeetingsSettings(workspace=tmp_path / "w2", cache_path=tmp_path / "g", timezone="UTC", worker_min_mb=1024)
    )
    try:
        whole.refresh()
        first = service.search("budget", service.filters(), limit=5, cursor=None)
        assert first.indexing is not None  # started in the background
        assert service.wait_scannable(60)
        deadline = time.monotonic() + 60
        while (service.indexing() or IndexingProgress(done=0, total=0)).done < held // 500 * 500:
            assert time.monotonic() < deadline, "the first batch was not indexed"
            service.wait_indexed(0.05)  # the indexer runs until the worker is let go
        during: dict[tuple[str, str], set[str]] = {}
        for q in SERVICE_QUERIES:
            for name, filters in (("all", service.filters()), ("folder", service.filters(folder="Engineering"))):
                keys, answers = all_hits(service, q, filters)
                during[(q, name)] = keys
                for answer in answers:
                    assert answer.indexing is not None and answer.indexing.scanned is not None, q
                    assert answer.indexing.scanned + answer.indexing.done >= 1200, q
                    assert all(h.provisional for h in answer.items if h.provisional is not None)
                if held == 0:
                    assert all(h.provisional for a in answers for h in a.items), q
                where, params = filters.sql()
                expected = {h.key for h in whole.index.search(q, where=where, params=params, limit=10_000)}
                assert keys == expected, (q, name)
        status = service.status()
        assert status.indexing is not None and status.indexing.scanned is not None
        listed = service.list_meetings(service.filters(), q="budget", limit=5, cursor=None)
        assert listed.indexing is not None and listed.indexing.scanned is None  # a listing does not scan
        assert service.search("budget kubernetes", service.filters(), limit=5, cursor=None).unmatched_terms == [
            "kubernetes"
        ]
        with gate.open("wb"):
            pass  # lets the worker send the rest
        assert service.wait_indexed(120)
        for (q, name), keys in during.items():
            filters = service.filters(folder="Engineering") if name == "folder" else service.filters()
            after, answers = all_hits(service, q, filters)
            assert after == keys, q
            assert all(a.indexing is None for a in answers)
            assert not any(h.provisional for a in answers for h in a.items)
    finally:
        release(gate)  # a failed check must not leave the worker waiting (close joins the indexer)
        service.close()
        whole.close()


def release(gate: Path) -> None:
    """Let a worker waiting at the gate go on, if one is."""
    with contextlib.suppress(OSError):  # no worker waiting at it: nothing to release
        os.close(os.open(gate, os.O_WRONLY | os.O_NONBLOCK))


def test_texts_made_in_two_processes_are_those_made_in_one(cache: Path, monkeypatch: pytest.MonkeyPatch):
    """The worker makes half of the texts in a forked copy of itself: the same texts arrive."""
    monkeypatch.setattr(worker, "SPLIT_MIN", 100)
    forks: list[int] = []
    fork = os.fork
    monkeypatch.setattr(worker.os, "fork", lambda: forks.append(1) or fork())

    def texts(*, split: bool) -> list[Any]:
        out: list[Any] = []
        for kind, body in changes(cache / "cache-v3.json", 1 << 40, {}, texts=True, split=split):
            if kind == "texts":
                out.extend(body["items"])
            elif kind == "texts_done":
                assert body["count"] == len(out)
                return out
        raise AssertionError("no texts_done")

    alone = texts(split=False)
    assert len(alone) == 300 and not forks
    assert sorted(texts(split=True), key=lambda item: item[0]) == sorted(alone, key=lambda item: item[0])
    assert forks == [1]
