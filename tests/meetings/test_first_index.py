"""A big cache's first index runs in the background: search and list answer meanwhile, flagged."""

import os
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from deskmcp.demo.meetings import build_state, write_cache
from deskmcp.meetings.models import SearchMeetingsOutput
from deskmcp.meetings.service import MeetingService
from deskmcp.meetings.settings import MeetingsSettings

from .fixtures import ALPHA, BETA, GAMMA, write

pytestmark = pytest.mark.e2e  # every test here starts a worker process

# A worker that sends the cache's summary, then waits for the test to open the FIFO named in
# argv[1] for writing before it sends the meetings.
HELD_BACK = """
import sys
from pathlib import Path
import msgspec
from deskmcp.meetings.worker import _write, changes
request = msgspec.msgpack.decode(sys.stdin.buffer.read())
encoder = msgspec.msgpack.Encoder()
stream = changes(Path(request["path"]), request["max_bytes"], request["known"])
kind, body = next(stream)
_write(sys.stdout.buffer, encoder, kind, body)
sys.stdout.buffer.flush()
with open(sys.argv[1], "rb") as gate:
    gate.read()
for kind, body in stream:
    _write(sys.stdout.buffer, encoder, kind, body)
sys.stdout.buffer.flush()
"""

# A worker that sends everything up to `done`, then waits for the test to open the FIFO named
# in argv[1] for writing before it sends the cache's layout.
LAYOUT_HELD_BACK = """
import sys
from pathlib import Path
import msgspec
from deskmcp.meetings.worker import _write, changes
request = msgspec.msgpack.decode(sys.stdin.buffer.read())
encoder = msgspec.msgpack.Encoder()
for kind, body in changes(Path(request["path"]), request["max_bytes"], request["known"]):
    if kind == "layout":
        with open(sys.argv[1], "rb") as gate:
            gate.read()
    _write(sys.stdout.buffer, encoder, kind, body)
    sys.stdout.buffer.flush()
"""


def settings_for(tmp_path: Path, name: str, *, background: bool) -> MeetingsSettings:
    return MeetingsSettings(
        workspace=tmp_path / name,
        cache_path=tmp_path / "g",
        timezone="UTC",
        worker_min_mb=0,
        background_min_mb=0 if background else 1024,
    )


def test_search_and_list_answer_during_a_first_index_and_say_how_far_it_is(tmp_path: Path):
    write(tmp_path / "g", version=3)
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    service = MeetingService(settings_for(tmp_path, "ws", background=True))
    service.worker_command = [sys.executable, "-c", HELD_BACK, str(gate)]
    try:
        found = service.search("cloud spend", service.filters(), limit=5, cursor=None)
        listed = service.list_meetings(service.filters(), q=None, limit=50, cursor=None)
        status = service.status()
        assert found.indexing is not None and found.indexing.done == 0
        assert found.items == []
        assert listed.indexing is not None and listed.total == 0
        assert status.indexing is not None
        with gate.open("wb"):
            pass  # lets the worker send its meetings
        assert service.wait_indexed(60)
        done = service.search("cloud spend", service.filters(), limit=5, cursor=None)
        assert done.indexing is None
        assert [h.id for h in done.items] == [ALPHA]
        listed = service.list_meetings(service.filters(), q=None, limit=50, cursor=None)
        assert listed.indexing is None
        assert {m.id for m in listed.items} == {ALPHA, BETA, GAMMA}
        assert service.status().indexing is None
    finally:
        service.close()


def test_a_call_that_needs_the_whole_cache_waits_for_the_first_index(tmp_path: Path):
    write(tmp_path / "g", version=3)
    service = MeetingService(settings_for(tmp_path, "ws", background=True))
    try:
        service.search("budget", service.filters(), limit=5, cursor=None)  # starts it
        assert service.get(ALPHA).title == "Quarterly budget review"
        assert service.indexing() is None
    finally:
        service.close()


QUERIES = ["budget", "hiring plan", '"follow up"', "alice", "roadmap -pricing", "runbook failover"]


def ranked(output: SearchMeetingsOutput) -> tuple[list[float], list[dict[str, object]]]:
    """The scores in order, and the hits with ties in id order, the lowest score on the page
    left out: equal scores come in the text index's segment order, which two builds of the
    same records need not share, so a page may end inside a different part of the last tie
    (and a hit's rank among its ties may differ)."""
    scores = [h.score for h in output.items]
    last = scores[-1] if scores else None
    kept = sorted((h for h in output.items if h.score != last), key=lambda h: (-h.score, h.id))
    return scores, [h.model_dump(exclude={"lexical_rank"}) for h in kept]


def test_a_generated_cache_indexed_in_the_background_answers_as_one_indexed_at_once(tmp_path: Path):
    now = datetime(2026, 6, 1, tzinfo=UTC)
    write_cache(tmp_path / "g" / "cache-v3.json", build_state(1200, seed=11, now=now), version=3)
    at_once = MeetingService(settings_for(tmp_path, "a", background=False))
    behind = MeetingService(settings_for(tmp_path, "b", background=True))
    try:
        first = behind.list_meetings(behind.filters(), q=None, limit=1, cursor=None)
        assert first.indexing is not None
        assert behind.wait_indexed(60)
        at_once.refresh()
        for q in QUERIES:
            expected = at_once.search(q, at_once.filters(), limit=50, cursor=None)
            found = behind.search(q, behind.filters(), limit=50, cursor=None)
            assert expected.items, q
            assert ranked(found) == ranked(expected), q
            assert (found.unmatched_terms, found.next_cursor) == (expected.unmatched_terms, expected.next_cursor)
            listed = at_once.list_meetings(at_once.filters(days=90), q=q, limit=50, cursor=None)
            assert behind.list_meetings(behind.filters(days=90), q=q, limit=50, cursor=None) == listed, q
        assert behind.index.count() == at_once.index.count() == 1200
        assert behind.stats(behind.filters(), "folder") == at_once.stats(at_once.filters(), "folder")
        newest = at_once.list_meetings(at_once.filters(), q=None, limit=1, cursor=None).items[0].id
        assert behind.get(newest) == at_once.get(newest)
        for service in (at_once, behind):  # a first index builds its side indexes at its end
            with service.index.reader() as conn:
                names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
            assert {"people_doc", "folder_members_doc", "folder_members_folder", "docs_start"} <= names
    finally:
        at_once.close()
        behind.close()


def test_answers_are_complete_once_every_meeting_is_indexed_before_the_first_index_ends(tmp_path: Path):
    """The first index's tail (side indexes, the layout the worker sends after its meetings) runs
    after answers are complete: they are then the same as when it has ended."""
    now = datetime(2026, 6, 1, tzinfo=UTC)
    write_cache(tmp_path / "g" / "cache-v3.json", build_state(600, seed=5, now=now), version=3)
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    service = MeetingService(settings_for(tmp_path, "ws", background=True))
    service.worker_command = [sys.executable, "-c", LAYOUT_HELD_BACK, str(gate)]
    released: list[bool] = []

    def release() -> None:
        """Let the worker send the layout (once): it waits for this, whatever the test found."""
        if not released:
            released.append(True)
            with gate.open("wb"):
                pass

    try:
        assert service.search("budget", service.filters(), limit=5, cursor=None).indexing is not None
        assert service.wait_complete(60)
        assert not service.wait_indexed(0), "the first index still waits for the layout"
        during = {q: service.search(q, service.filters(), limit=50, cursor=None) for q in QUERIES}
        listed = service.list_meetings(service.filters(), q=None, limit=500, cursor=None)
        assert all(found.indexing is None for found in during.values()) and listed.indexing is None
        release()
        assert service.wait_indexed(60)
        assert service._layout is not None  # the tail did run
        for q, found in during.items():
            after = service.search(q, service.filters(), limit=50, cursor=None)
            assert found.items, q
            assert found == after, q
        assert service.list_meetings(service.filters(), q=None, limit=500, cursor=None) == listed
        assert listed.total == service.index.count() == 600
    finally:
        release()
        service.close()
