"""Meetings from Granola's public API: synced from a loopback stub of it into the index, and
answered by every tool as a plain cache holding the same meetings answers."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from mcp import Client

from deskmcp.core.clock import SYSTEM_CLOCK
from deskmcp.meetings.api_source import ApiSource
from deskmcp.meetings.server import create_server
from deskmcp.meetings.service import MeetingService
from deskmcp.meetings.settings import MeetingsSettings
from tests.helpers.clock import ManualClock
from tests.helpers.granola_api import KEY, Fault, GranolaStub, granola_api
from tests.helpers.mail import fake_keyring
from tests.helpers.tool_calls import call, fail

from .api_notes_data import cache_state, make_notes
from .fixtures import write

NOTES = make_notes(40)


@pytest.fixture(scope="session")
def granola_server() -> Iterator[GranolaStub]:
    with granola_api() as stub:
        yield stub


@pytest.fixture
def stub(granola_server: GranolaStub) -> GranolaStub:
    granola_server.reset(NOTES)
    return granola_server


def api_settings(tmp_path: Path, stub: GranolaStub, *, key: str = KEY, name: str = "ws") -> MeetingsSettings:
    return MeetingsSettings(
        workspace=tmp_path / name, api_key=key, api_url=stub.url, api_sync_seconds=3600, timezone="UTC"
    )


def on_api(
    settings: MeetingsSettings, clock: ManualClock | None = None, *, rate: float = 1.0
) -> tuple[MeetingService, ApiSource]:
    """A service on the API whose syncs the test runs itself (`source.sync_once`), on a clock
    that records waits instead of sleeping them."""
    built: list[ApiSource] = []

    def source(service: MeetingService) -> ApiSource:
        built.append(
            ApiSource(service.settings, service.index, clock=clock or ManualClock(), rate=rate, background=False)
        )
        return built[0]

    return MeetingService(settings, source=source), built[0]


@pytest.fixture
def make_api(tmp_path: Path, stub: GranolaStub) -> Iterator[Any]:
    made: list[MeetingService] = []

    def build(*, key: str = KEY, name: str = "ws", rate: float = 1.0) -> tuple[MeetingService, ApiSource, ManualClock]:
        clock = ManualClock()
        service, source = on_api(api_settings(tmp_path, stub, key=key, name=name), clock, rate=rate)
        made.append(service)
        return service, source, clock

    yield build
    for service in made:
        service.close()


def cache_service(tmp_path: Path, notes: list[dict[str, Any]]) -> MeetingService:
    write(tmp_path / "granola", cache_state(notes))
    return MeetingService(
        MeetingsSettings(workspace=tmp_path / "cache-ws", cache_path=tmp_path / "granola", timezone="UTC")
    )


# -- the same answers ----------------------------------------------------------------------------


def _ranked(answer: dict[str, Any]) -> dict[str, Any]:
    """A search answer with hits of equal score in one order: which of two equal hits comes
    first (and so its `lexical_rank`) is the order meetings were indexed in, which differs
    between the sources. Each score's ranks are kept as a set."""
    items = sorted(answer.get("items", []), key=lambda hit: (-hit["score"], hit["id"]))
    ranks: dict[float, set[int]] = {}
    for hit in items:
        ranks.setdefault(hit["score"], set()).add(hit.pop("lexical_rank"))
    answer["items"] = items
    answer["ranks"] = ranks
    answer.pop("next_cursor", None)
    return answer


@pytest.mark.anyio
async def test_every_tool_answers_the_same_from_the_api_as_from_a_cache_of_the_same_meetings(
    tmp_path: Path, stub: GranolaStub, make_api: Any
):
    api, source, _ = make_api()
    assert source.sync_once()
    cache = cache_service(tmp_path, NOTES)
    first, other = NOTES[3], NOTES[10]
    calls: list[tuple[str, dict[str, Any]]] = [
        ("granola.meetings.list", {"limit": 100}),
        ("granola.meetings.list", {"limit": 7}),
        ("granola.meetings.list", {"q": "budget", "limit": 100}),
        ("granola.meetings.list", {"participants": ["zoe"], "limit": 100}),
        ("granola.meetings.list", {"participants": ["raisin.patel@example.com"], "limit": 100}),
        ("granola.meetings.list", {"folder": "café", "limit": 100}),
        ("granola.meetings.list", {"folder": "fol_4y6LduVdwSKC27", "limit": 100}),
        ("granola.meetings.list", {"from_ts": "2026-10-03", "to_ts": "2026-10-06", "limit": 100}),
        ("granola.meetings.get", {"id": first["id"]}),
        ("granola.meetings.get", {"id": other["id"], "include_notes": False}),
        ("granola.meetings.transcript", {"id": first["id"]}),
        ("granola.meetings.transcript", {"id": first["id"], "source": "me"}),
        ("granola.meetings.transcript", {"id": first["id"], "source": "them", "start_seconds": 20}),
        ("granola.meetings.transcript", {"id": first["id"], "end_seconds": 40}),
        ("granola.meetings.export_markdown", {"id": first["id"]}),
        ("granola.meetings.export_markdown", {"id": first["id"], "sections": ["header", "transcript", "notes"]}),
        ("granola.meetings.stats", {"group_by": "week"}),
        ("granola.meetings.stats", {"group_by": "day", "from_ts": "2026-10-02", "to_ts": "2026-10-09"}),
        ("granola.meetings.stats", {"group_by": "participant"}),
        ("granola.meetings.stats", {"group_by": "folder"}),
        ("granola.meetings.stats", {"group_by": "platform"}),
        ("granola.folders.list", {}),
        ("granola.participants.list", {}),
        ("granola.participants.list", {"q": "müller"}),
    ]
    searches: list[dict[str, Any]] = [
        {"q": "budget", "limit": 100},
        {"q": "hiring plan", "limit": 100},
        {"q": "yoghurt -budget", "limit": 100},
        {"q": '"search by meaning"', "limit": 100},
        {"q": "latency rollout", "participants": ["kofi"], "limit": 100},
        {"q": "churn", "folder": "Hiring", "limit": 100},
        {"q": "nothingmatcheszz budget", "limit": 100},
    ]
    async with (
        Client(create_server(api.settings, api)) as via_api,
        Client(create_server(cache.settings, cache)) as via_cache,
    ):
        for tool, args in calls:
            from_api, from_cache = await call(via_api, tool, args), await call(via_cache, tool, args)
            if tool == "granola.meetings.get":
                assert from_api.pop("web_url") == next(n["web_url"] for n in NOTES if n["id"] == args["id"])
                assert from_cache.pop("web_url", None) is None
            assert from_api == from_cache, (tool, args)
        for args in searches:
            from_api = await call(via_api, "granola.meetings.search", args)
            from_cache = await call(via_cache, "granola.meetings.search", args)
            assert _ranked(from_api) == _ranked(from_cache), args
        assert (await fail(via_api, "granola.meetings.get", {"id": "not_nosuchnote0000"}))["error"] == "not_found"
        status = await call(via_api, "granola.cache.status")
    cache.close()
    assert status["source"] == "api" and status["ok"] is True
    assert (status["meetings"], status["folders"]) == (40, 3)
    assert status["transcripts"] == sum(1 for n in NOTES if n["transcript"])


def test_a_note_becomes_the_meeting_the_reference_describes(stub: GranolaStub, make_api: Any):
    note = NOTES[1]
    api, source, _ = make_api()
    source.sync_once()
    meeting = api.get(note["id"])
    event = note["calendar_event"]
    assert meeting.title == note["title"]
    assert (meeting.start_ts, meeting.end_ts) == (event["scheduled_start_time"], event["scheduled_end_time"])
    assert meeting.participants[0].role == "creator"
    assert meeting.participants[0].email == note["owner"]["email"].lower()
    assert [p.email for p in meeting.participants] == [a["email"].lower() for a in note["attendees"]]
    assert sorted(f.id for f in meeting.folders) == sorted(f["id"] for f in note["folder_membership"])
    assert meeting.notes == note["summary_markdown"]
    assert meeting.web_url == note["web_url"]
    transcript = api.transcript(note["id"])
    assert [s.speaker for s in transcript.segments] == [
        "me" if s["speaker"]["source"] == "microphone" else "them" for s in note["transcript"]
    ]
    assert [s.text for s in transcript.segments] == [s["text"] for s in note["transcript"]]


def test_a_note_without_summary_markdown_keeps_its_summary_text_and_without_attendees_its_invitees(
    stub: GranolaStub, make_api: Any
):
    note = dict(NOTES[2], summary_markdown=None, attendees=[])
    stub.put(note)
    api, source, _ = make_api()
    source.sync_once()
    meeting = api.get(note["id"])
    assert meeting.notes == note["summary_text"]
    invitees = [i["email"].lower() for i in note["calendar_event"]["invitees"]]
    assert [p.email for p in meeting.participants] == [note["owner"]["email"].lower(), *invitees[1:]]


# -- syncing -------------------------------------------------------------------------------------


def test_the_first_sync_lists_every_note_thirty_a_page_and_fetches_each_once(stub: GranolaStub, make_api: Any):
    notes = make_notes(65, seed=3)
    stub.reset(notes)
    api, source, _ = make_api()
    assert source.sync_once()
    assert stub.hits["list"] == 3
    assert all(q["page_size"] == "30" and "updated_after" not in q for q in stub.listings)
    assert stub.hits["get"] == 65 and all(stub.hits[n["id"]] == 1 for n in notes)
    assert api.index.count() == 65
    assert api.list_meetings(api.filters(), q=None, limit=10, cursor=None).syncing is None


def test_a_later_sync_asks_after_the_high_water_mark_and_fetches_only_what_changed(stub: GranolaStub, make_api: Any):
    api, source, _ = make_api()
    source.sync_once()
    high = max(n["updated_at"] for n in NOTES)
    stub.hits.clear()
    stub.listings.clear()
    changed = dict(NOTES[5], title="Renamed: pricing council", updated_at="2026-11-20T10:00:00Z")
    added = make_notes(1, seed=99)[0] | {"updated_at": "2026-11-21T10:00:00Z"}
    stub.put(changed)
    stub.put(added)
    assert source.sync_once()
    assert [q.get("updated_after") for q in stub.listings] == [high]
    assert stub.hits["get"] == 2 and stub.hits[changed["id"]] == stub.hits[added["id"]] == 1
    assert api.get(changed["id"]).title == "Renamed: pricing council"
    found = api.search("pricing council", api.filters(), limit=5, cursor=None)
    assert found.items[0].id == changed["id"]
    assert api.status().sync is not None and api.status().sync.high_water == "2026-11-21T10:00:00Z"  # type: ignore[union-attr]


def test_notes_no_longer_listed_leave_the_index_at_the_next_full_listing(
    stub: GranolaStub, make_api: Any, monkeypatch: pytest.MonkeyPatch
):
    api, source, _ = make_api()
    source.sync_once()
    stub.remove(NOTES[0]["id"])
    stub.remove(NOTES[7]["id"])
    source.sync_once()  # an incremental listing does not see deletions
    assert api.index.count() == 40
    monkeypatch.setattr(source, "full_every", 1)
    stub.hits.clear()
    assert source.sync_once()
    assert api.index.count() == 38
    assert stub.hits["get"] == 0
    with pytest.raises(Exception, match="No meeting"):
        api.get(NOTES[0]["id"])
    folders = api.folders().folders
    assert sum(f.meeting_count for f in folders) == sum(
        len(n["folder_membership"]) for n in NOTES if n["id"] not in (NOTES[0]["id"], NOTES[7]["id"])
    )


def test_a_note_deleted_between_list_and_get_is_skipped_and_counted(stub: GranolaStub, make_api: Any):
    gone = NOTES[4]["id"]
    stub.delete_when_listed.add(gone)
    api, source, _ = make_api()
    assert source.sync_once()
    assert api.index.count() == 39
    status = api.status()
    assert status.sync is not None and (status.sync.vanished, status.sync.pending) == (1, 0)
    assert status.ok and status.sync.last_error is None


def test_a_429_is_waited_out_as_retry_after_says(stub: GranolaStub, make_api: Any):
    stub.faults.append(Fault("get", status=429, retry_after=7, skip=3))
    api, source, clock = make_api()
    assert source.sync_once()
    assert 7 in clock.sleeps
    assert api.index.count() == 40


def test_server_errors_are_retried_with_backoff(stub: GranolaStub, make_api: Any):
    stub.faults.append(Fault("list", status=503, times=2))
    stub.faults.append(Fault("get", status=500, times=1))
    api, source, _ = make_api()
    assert source.sync_once()
    assert (stub.hits["list"], stub.hits["get"]) == (2 + 2, 1 + 40)  # each failure asked again
    assert api.index.count() == 40


def test_the_client_keeps_to_the_published_rate_limits(tmp_path: Path, stub: GranolaStub):
    """The stub enforces 25 requests a burst and 5 a second (scaled 20 times so the test is
    quick): a client at the same scale is never answered 429."""
    stub.reset(NOTES, rate=20.0)
    service, source = on_api(api_settings(tmp_path, stub), clock=None, rate=20.0)
    source.api.throttle.clock = source.api.retry.clock = SYSTEM_CLOCK  # real time, as the stub's
    assert source.sync_once()
    assert stub.rate_limited == 0
    assert service.index.count() == 40
    service.close()


def test_a_page_that_is_not_json_stops_the_sync_and_the_next_resumes_at_that_page(stub: GranolaStub, make_api: Any):
    stub.faults.append(Fault("list", garbled=True, skip=1))
    api, source, _ = make_api()
    assert not source.sync_once()
    status = api.status()
    assert status.ok and status.sync is not None and status.sync.last_error is not None
    assert status.sync.last_error["error"] == "parse_error"
    assert api.index.count() == 0
    assert status.syncing is not None and status.syncing.total == 30  # the first page is kept
    assert source.sync_once()
    assert stub.hits["list"] == 3  # page 1, the bad answer, page 2 again
    assert api.index.count() == 40 and stub.hits["get"] == 40


def test_a_note_that_is_not_json_is_a_parse_error_naming_it_and_is_fetched_again(stub: GranolaStub, make_api: Any):
    bad = NOTES[6]["id"]
    stub.faults.append(Fault(bad, garbled=True))
    api, source, _ = make_api()
    source.sync_once()
    status = api.status()
    assert status.sync is not None and status.sync.last_error is not None
    assert status.sync.last_error["error"] == "parse_error" and bad in status.sync.last_error["message"]
    assert (api.index.count(), status.sync.pending) == (39, 1)
    listing = api.list_meetings(api.filters(), q=None, limit=5, cursor=None)
    assert listing.syncing is not None and listing.syncing.total == 1  # not served as complete
    assert source.sync_once()
    assert api.index.count() == 40 and api.status().sync.last_error is None  # type: ignore[union-attr]


def test_answers_come_from_what_is_synced_while_the_first_sync_runs(stub: GranolaStub, make_api: Any):
    api, source, _ = make_api()
    seen: list[Any] = []

    def look(note_id: str) -> None:
        if stub.hits["get"] == 30:  # the first 25 are written, the next batch is being fetched
            seen.append(api.search("budget", api.filters(), limit=50, cursor=None))
            seen.append(api.list_meetings(api.filters(), q=None, limit=50, cursor=None))
            seen.append(api.folders())
            seen.append(api.participants(None, 50))

    stub.on_get = look
    source.sync_once()
    searched, listed, folders, people = seen
    assert listed.syncing == searched.syncing == folders.syncing == people.syncing
    assert listed.syncing is not None and (listed.syncing.done, listed.syncing.total) == (25, 40)
    assert listed.total == 25 and {i.id for i in listed.items} == {n["id"] for n in NOTES[-25:]}
    assert api.list_meetings(api.filters(), q=None, limit=50, cursor=None).syncing is None
    assert api.folders().syncing is None and api.participants(None, 50).syncing is None


def test_a_sync_stopped_midway_continues_where_it_stopped(tmp_path: Path, stub: GranolaStub):
    settings = api_settings(tmp_path, stub)
    first, source = on_api(settings)

    def stop_after_17(note_id: str) -> None:
        if stub.hits["get"] == 17:
            source._closing.set()  # as the server ending does

    stub.on_get = stop_after_17
    assert not source.sync_once()
    first.close()
    stub.on_get = None
    assert stub.hits["get"] == 17
    again, resumed = on_api(settings)
    assert again.index.count() == 17
    assert resumed.sync_once()
    assert stub.hits["list"] == 2  # the listing was complete: not asked again
    assert stub.hits["get"] == 40 and all(stub.hits[n["id"]] == 1 for n in NOTES)
    assert again.index.count() == 40
    again.close()


# -- errors --------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_wrong_key_is_auth_required_naming_the_setting_and_never_the_key(
    tmp_path: Path, stub: GranolaStub, caplog: pytest.LogCaptureFixture
):
    wrong = "grn_wrongwrongwrong42"
    settings = api_settings(tmp_path, stub, key=wrong)
    with caplog.at_level(logging.DEBUG):
        async with Client(create_server(settings)) as client:
            for tool, args in [
                ("granola.meetings.search", {"q": "budget"}),
                ("granola.meetings.list", {}),
                ("granola.meetings.get", {"id": NOTES[0]["id"]}),
            ]:
                body = await fail(client, tool, args)
                assert body["error"] == "auth_required" and "GRANOLA_API_KEY" in body["message"]
                assert wrong not in str(body)
            status = await call(client, "granola.cache.status")
    assert status["ok"] is False and status["error"] == "auth_required" and wrong not in str(status)
    assert wrong not in caplog.text


def test_a_plan_without_api_access_is_permission_denied_saying_so(stub: GranolaStub, make_api: Any):
    stub.forbidden = True
    api, source, _ = make_api()
    assert not source.sync_once()
    with pytest.raises(Exception, match="Business and Enterprise") as raised:
        api.list_meetings(api.filters(), q=None, limit=5, cursor=None)
    assert getattr(raised.value, "code", None) == "permission_denied"
    assert api.status().error == "permission_denied"


def test_an_unreachable_api_answers_from_the_index_marked_stale(stub: GranolaStub, make_api: Any):
    api, source, _ = make_api()
    source.sync_once()
    stub.faults.append(Fault("list", status=503, times=100))
    assert not source.sync_once()
    found = api.search("budget", api.filters(), limit=50, cursor=None)
    assert found.items and found.stale_since is not None and found.syncing is None
    assert api.folders().stale_since == api.participants(None, 50).stale_since == found.stale_since
    status = api.status()
    assert status.ok and status.stale_since == found.stale_since
    assert status.sync is not None and status.sync.last_error is not None
    assert status.sync.last_error["error"] == "external_service_error"
    stub.faults.clear()
    assert source.sync_once()
    assert api.search("budget", api.filters(), limit=50, cursor=None).stale_since is None


def test_another_key_syncs_the_index_again_from_the_start(tmp_path: Path, stub: GranolaStub, make_api: Any):
    api, source, _ = make_api()
    source.sync_once()
    api.close()
    stub.key = "grn_anotherkey987654"
    try:
        again, resumed, _ = make_api(key="grn_anotherkey987654")
        assert again.index.count() == 0
        stub.reset(NOTES[:5])
        stub.key = "grn_anotherkey987654"
        assert resumed.sync_once()
        assert again.index.count() == 5
    finally:
        stub.key = KEY


def test_the_sync_loop_runs_in_the_background_and_close_stops_it(tmp_path: Path, stub: GranolaStub):
    service = MeetingService(api_settings(tmp_path, stub))
    done = threading.Event()
    stub.on_get = lambda _id: done.set() if stub.hits["get"] == 40 else None
    listing = service.list_meetings(service.filters(), q=None, limit=5, cursor=None)
    assert listing.syncing is not None or listing.total == 40
    assert done.wait(30)
    service.close()


SYNC_IN_A_PROCESS = """
from deskmcp.meetings.service import MeetingService
from deskmcp.meetings.settings import MeetingsSettings
service = MeetingService(MeetingsSettings())
service.source.sync_once()
"""


def test_a_killed_sync_continues_where_it_stopped(tmp_path: Path, stub: GranolaStub):
    env = {
        **os.environ,
        "GRANOLA_API_KEY": KEY,
        "GRANOLA_API_URL": stub.url,
        "DESKMCP_WORKSPACE": str(tmp_path / "ws"),
    }
    process = subprocess.Popen([sys.executable, "-c", SYNC_IN_A_PROCESS], env=env)

    def kill_at_30(note_id: str) -> None:
        if stub.hits["get"] == 30:  # the first 25 are written; the 30th is never answered
            process.kill()
            process.wait(timeout=60)

    stub.on_get = kill_at_30
    try:
        assert process.wait(timeout=120) != 0
    finally:
        process.kill()
    stub.on_get = None
    service, source = on_api(api_settings(tmp_path, stub))
    assert service.index.count() == 25
    assert source.sync_once()
    assert stub.hits["list"] == 2  # the listing had ended: not asked again
    assert stub.hits["get"] == 30 + 15
    assert all(stub.hits[n["id"]] == 1 for n in NOTES[-25:])
    assert service.index.count() == 40
    service.close()


def test_the_key_can_come_from_the_os_keyring_when_asked(
    tmp_path: Path, stub: GranolaStub, monkeypatch: pytest.MonkeyPatch
):
    asked = fake_keyring(monkeypatch, {"granola:api": KEY})
    plain = MeetingsSettings(workspace=tmp_path / "plain", cache_path=tmp_path / "none", api_url=stub.url)
    assert plain.granola_api_key() is None and asked == []  # only when GRANOLA_OS_KEYRING says so
    settings = plain.model_copy(update={"os_keyring": True, "workspace": tmp_path / "ws"})
    service = MeetingService(settings)
    assert service.source.name == "api"
    assert asked == ["deskmcp/granola:api"]
    service.close()


def test_deskmcp_call_says_an_answer_given_while_syncing_is_partial(
    tmp_path: Path, stub: GranolaStub, monkeypatch: pytest.MonkeyPatch
):
    """`deskmcp call` waits while the first sync moves; a note Granola keeps answering unreadably
    stays pending, so the sync stands still: the call prints the answer it has, says on stderr that
    it is partial, and exits 3 rather than 0 (or waiting for ever)."""
    from typer.testing import CliRunner

    from deskmcp.cli import app
    from deskmcp.cli import tools as tools_command

    monkeypatch.setattr(tools_command, "SYNC_STALL_SECONDS", 2.0)

    stub.reset(NOTES[:10])  # within one burst of Granola's rate limit
    stub.faults.append(Fault(NOTES[3]["id"], garbled=True, times=1000))
    monkeypatch.setenv("DESKMCP_WORKSPACE", str(tmp_path / "ws"))
    monkeypatch.setenv("GRANOLA_API_KEY", KEY)
    monkeypatch.setenv("GRANOLA_API_URL", stub.url)
    result = CliRunner().invoke(app, ["call", "granola_meetings_list", "limit=5"])
    assert result.exit_code == 3, result.output
    answer = orjson.loads(result.stdout)
    assert len(answer["items"]) == 5 and answer["total"] == 9  # every note but the unreadable one
    assert "partial" in result.stderr and "syncing in the background" in result.stderr
