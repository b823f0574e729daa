"""Meetings from Granola's hosted MCP server: deskmcp signs in to a loopback stand-in of it as an
OAuth client of the tests' oidc-provider (registration, PKCE, consent over HTTP), syncs through
its tools into the index, and every tool then answers as it does from the public API for the
same meetings; a plan without transcripts, an answer deskmcp cannot read and a missing sign-in
are each said, not guessed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
import pytest
from mcp import Client

from deskmcp.meetings.granola_mcp import sign_in, signed_in_at, token_file_for
from deskmcp.meetings.mcp_source import McpSource
from deskmcp.meetings.server import create_server, unavailable
from deskmcp.meetings.service import MeetingService
from deskmcp.meetings.settings import MeetingsSettings
from tests.helpers.authorization_server import AuthorizationServer, Person
from tests.helpers.clock import ManualClock
from tests.helpers.granola_api import GranolaStub, granola_api
from tests.helpers.granola_mcp import HostedGranola, hosted_granola
from tests.helpers.tool_calls import call, fail

from .test_api_source import NOTES, _ranked, api_settings, on_api

pytestmark = pytest.mark.e2e

SOME = NOTES[:12]


@pytest.fixture(scope="module")
def hosted_server(issuer: AuthorizationServer) -> Iterator[HostedGranola]:
    with hosted_granola(issuer) as hosted:
        yield hosted


@pytest.fixture
def hosted(hosted_server: HostedGranola) -> HostedGranola:
    hosted_server.notes = [dict(n) for n in SOME]
    hosted_server.free_plan = False
    hosted_server.garbled = set()
    hosted_server.structured = False
    hosted_server.calls.clear()
    hosted_server.handshakes = 0
    return hosted_server


def browser_of(person: Person):
    """The person's browser: sign-in and consent at the provider, then the redirect back."""

    async def browse(authorization_url: str) -> None:
        redirect_uri = parse_qs(urlsplit(authorization_url).query)["redirect_uri"][0]
        params = await person.authorize(authorization_url, redirect_uri)
        async with httpx2.AsyncClient(timeout=30) as http:
            await http.get(redirect_uri, params=params)

    return browse


@pytest.fixture(scope="module")
def tokens(hosted_server: HostedGranola, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder where `sign_in` (what `deskmcp auth granola` runs) left a sign-in."""
    folder = tmp_path_factory.mktemp("tokens")
    person = Person(login="erin")

    async def signing_in() -> list[str]:
        with anyio.fail_after(120):
            return await sign_in(hosted_server.url, folder=folder, browser=browser_of(person))

    names = anyio.run(signing_in)
    assert sorted(names) == ["get_meeting_transcript", "get_meetings", "list_meetings"]
    assert person.consents == 1
    return folder


@pytest.fixture
def make_mcp(tmp_path: Path, hosted: HostedGranola) -> Iterator[Any]:
    made: list[MeetingService] = []

    def build(folder: Path) -> tuple[MeetingService, McpSource]:
        settings = MeetingsSettings(
            workspace=tmp_path / "mcp-ws", source="mcp", mcp_url=hosted.url, api_sync_seconds=3600, timezone="UTC"
        )
        built: list[McpSource] = []

        def source(service: MeetingService) -> McpSource:
            built.append(
                McpSource(service.settings, service.index, token_folder=folder, clock=ManualClock(), background=False)
            )
            return built[0]

        service = MeetingService(settings, source=source)
        made.append(service)
        return service, built[0]

    yield build
    for service in made:
        service.close()


@pytest.fixture(scope="module")
def api_stub() -> Iterator[GranolaStub]:
    with granola_api() as stub:
        yield stub


def test_the_sign_in_is_kept_in_a_0600_token_file(tokens: Path, hosted: HostedGranola):
    path = token_file_for(hosted.url, tokens)
    assert signed_in_at(path)
    assert path.stat().st_mode & 0o777 == 0o600


@pytest.mark.anyio
async def test_every_tool_answers_the_same_from_the_hosted_server_as_from_the_api(
    tmp_path: Path, tokens: Path, hosted: HostedGranola, make_mcp: Any, api_stub: GranolaStub
):
    service, source = make_mcp(tokens)
    assert await anyio.to_thread.run_sync(source.sync_once)
    api_stub.reset(SOME)
    api, api_source = on_api(api_settings(tmp_path, api_stub))
    assert api_source.sync_once()
    first, other = SOME[3], SOME[8]
    calls: list[tuple[str, dict[str, Any]]] = [
        ("granola.meetings.list", {"limit": 100}),
        ("granola.meetings.list", {"q": "budget", "limit": 100}),
        ("granola.meetings.list", {"participants": ["zoe"], "limit": 100}),
        ("granola.meetings.list", {"folder": "café", "limit": 100}),
        ("granola.meetings.get", {"id": first["id"]}),
        ("granola.meetings.get", {"id": other["id"], "include_notes": False}),
        ("granola.meetings.transcript", {"id": first["id"]}),
        ("granola.meetings.transcript", {"id": first["id"], "source": "them", "start_seconds": 20}),
        ("granola.meetings.export_markdown", {"id": first["id"]}),
        ("granola.meetings.stats", {"group_by": "week"}),
        ("granola.meetings.stats", {"group_by": "participant"}),
        ("granola.folders.list", {}),
        ("granola.participants.list", {}),
    ]
    async with (
        Client(create_server(service.settings, service)) as via_mcp,
        Client(create_server(api.settings, api)) as via_api,
    ):
        for tool, args in calls:
            assert await call(via_mcp, tool, args) == await call(via_api, tool, args), (tool, args)
        for args in ({"q": "budget", "limit": 100}, {"q": "hiring plan", "limit": 100}):
            from_mcp = await call(via_mcp, "granola.meetings.search", args)
            assert _ranked(from_mcp) == _ranked(await call(via_api, "granola.meetings.search", args))
        status = await call(via_mcp, "granola.cache.status")
    api.close()
    assert status["source"] == "mcp" and status["ok"] is True
    assert status["meetings"] == len(SOME)
    assert status["sync"]["transcripts"] is None
    assert status["transcripts"] == sum(1 for n in SOME if n["transcript"])
    gets = [ids for tool, ids in hosted.calls if tool == "get_meetings"]
    assert sorted(i for ids in gets for i in ids) == sorted(n["id"] for n in SOME)
    assert max(len(ids) for ids in gets) == 10, "meetings are asked for ten at a time"


def test_a_sync_is_one_mcp_session(tokens: Path, hosted: HostedGranola, make_mcp: Any):
    service, source = make_mcp(tokens)
    assert source.sync_once()
    assert service.index.count() == len(SOME)
    assert len(hosted.calls) == 1 + 2 + len(SOME)  # the listing, two batches, a transcript each
    assert hosted.handshakes == 1, "every call of a sync goes through one session"
    assert source.api.sessions == 1  # type: ignore[attr-defined]
    hosted.notes[0] = {**hosted.notes[0], "title": "Renamed", "updated_at": "2031-01-01T00:00:00Z"}
    assert source.sync_once()
    assert service.get(hosted.notes[0]["id"]).title == "Renamed"
    assert hosted.handshakes == 2, "the next sync opens a session of its own"


def test_a_sync_that_stops_ends_its_session_and_the_next_sync_opens_another(
    tokens: Path, hosted: HostedGranola, make_mcp: Any
):
    hosted.garbled = {"get_meetings"}
    service, source = make_mcp(tokens)
    assert not source.sync_once()
    assert service.index.count() == 0
    hosted.garbled = set()
    assert source.sync_once()
    assert service.index.count() == len(SOME)
    assert hosted.handshakes == 2


@pytest.mark.anyio
async def test_a_plan_without_transcripts_is_said_not_an_error(tokens: Path, hosted: HostedGranola, make_mcp: Any):
    hosted.free_plan = True
    service, source = make_mcp(tokens)
    assert await anyio.to_thread.run_sync(source.sync_once)
    async with Client(create_server(service.settings, service)) as client:
        status = await call(client, "granola.cache.status")
        transcript = await call(client, "granola.meetings.transcript", {"id": SOME[0]["id"]})
        meeting = await call(client, "granola.meetings.get", {"id": SOME[0]["id"]})
    assert status["ok"] is True and status["meetings"] == len(SOME) and status["transcripts"] == 0
    assert "plan" in status["sync"]["transcripts"]
    assert transcript["segments"] == [] and "plan" in transcript["note"]
    assert meeting["title"] == SOME[0]["title"]
    asked = [m for tool, m in hosted.calls if tool == "get_meeting_transcript"]
    assert len(asked) == 1, "once the plan said no, transcripts are not asked for again"


@pytest.mark.anyio
@pytest.mark.parametrize("tool", ["list_meetings", "get_meetings", "get_meeting_transcript"])
async def test_an_answer_in_an_unknown_shape_is_a_parse_error_naming_the_tool(
    tokens: Path, hosted: HostedGranola, make_mcp: Any, tool: str
):
    hosted.garbled = {tool}
    service, source = make_mcp(tokens)
    await anyio.to_thread.run_sync(source.sync_once)  # a listing or batch stops it; a transcript keeps its note pending
    async with Client(create_server(service.settings, service)) as client:
        status = await call(client, "granola.cache.status")
    error = status["sync"]["last_error"]
    assert error["error"] == "parse_error" and error["details"]["tool"] == tool
    assert status["meetings"] == 0, "no meeting is indexed from an answer deskmcp could not read"


@pytest.mark.anyio
async def test_without_a_sign_in_every_tool_says_how_to_sign_in(tmp_path: Path, hosted: HostedGranola, make_mcp: Any):
    service, source = make_mcp(tmp_path / "no-tokens")
    assert not await anyio.to_thread.run_sync(source.sync_once)
    async with Client(create_server(service.settings, service)) as client:
        failed = await fail(client, "granola.meetings.list", {})
    assert failed["error"] == "auth_required"
    assert "deskmcp auth granola" in failed["message"]
    assert hosted.calls == [], "nothing is asked of the server without a sign-in"


def test_the_hosted_source_is_chosen_by_setting_or_by_a_sign_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    url = "http://127.0.0.1:1/mcp"
    assert MeetingsSettings(workspace=tmp_path, mcp_url=url).remote_source(False) is None
    assert MeetingsSettings(workspace=tmp_path, mcp_url=url, source="mcp").remote_source(False) == "mcp"
    path = token_file_for(url)
    path.parent.mkdir(parents=True)
    path.write_text('{"redirect_port": 5000}', encoding="utf-8")
    assert MeetingsSettings(workspace=tmp_path, mcp_url=url).remote_source(False) is None, "no tokens yet"
    path.write_text('{"tokens": {"access_token": "a", "token_type": "Bearer"}}', encoding="utf-8")
    assert MeetingsSettings(workspace=tmp_path, mcp_url=url).remote_source(False) == "mcp"
    assert MeetingsSettings(workspace=tmp_path, mcp_url=url).remote_source(True) == "api", "a key comes first"
    assert MeetingsSettings(workspace=tmp_path, mcp_url=url, source="cache").remote_source(False) is None


def test_serve_all_keeps_the_meetings_of_a_person_with_only_a_granola_sign_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """No cache on this machine, only a sign-in to the hosted server: the meetings server runs;
    `GRANOLA_SOURCE=api` without a key says what is missing instead of reading a cache."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    url = "http://127.0.0.1:1/mcp"
    empty = tmp_path / "no-granola-here"
    settings = MeetingsSettings(workspace=tmp_path, mcp_url=url, cache_path=empty)
    assert unavailable(settings) is not None and "no Granola cache found" in str(unavailable(settings))
    path = token_file_for(url)
    path.parent.mkdir(parents=True)
    path.write_text('{"tokens": {"access_token": "a", "token_type": "Bearer"}}', encoding="utf-8")
    assert unavailable(MeetingsSettings(workspace=tmp_path, mcp_url=url, cache_path=empty)) is None
    assert unavailable(MeetingsSettings(workspace=tmp_path, mcp_url=url, cache_path=empty, source="mcp")) is None
    reason = unavailable(MeetingsSettings(workspace=tmp_path, cache_path=empty, source="api"))
    assert reason is not None and "GRANOLA_API_KEY" in reason


def test_structured_content_is_read_before_the_text(tokens: Path, hosted: HostedGranola, make_mcp: Any):
    hosted.structured = True
    service, source = make_mcp(tokens)
    assert source.sync_once()
    assert service.index.count() == len(SOME)
    assert service.get(SOME[2]["id"]).title == SOME[2]["title"]
    assert len(service.transcript(SOME[2]["id"]).segments) == len(SOME[2]["transcript"])


@pytest.mark.anyio
async def test_a_token_granola_no_longer_accepts_is_auth_required_and_opens_no_browser(
    tmp_path: Path, hosted: HostedGranola, make_mcp: Any
):
    folder = tmp_path / "stale"
    path = token_file_for(hosted.url, folder)
    path.parent.mkdir(parents=True)
    path.write_text('{"tokens": {"access_token": "revoked-token", "token_type": "Bearer"}}', encoding="utf-8")
    service, source = make_mcp(folder)
    assert not await anyio.to_thread.run_sync(source.sync_once)
    async with Client(create_server(service.settings, service)) as client:
        failed = await fail(client, "granola.meetings.search", {"q": "budget"})
    assert failed["error"] == "auth_required" and "deskmcp auth granola" in failed["message"]
    assert "revoked-token" not in failed["message"]
    assert hosted.calls == []
