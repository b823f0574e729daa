"""Every meetings tool, resource and prompt through the SDK's in-memory client."""

from __future__ import annotations

import json
import os
import time
import unicodedata
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from deskmcp.meetings.server import create_server
from deskmcp.meetings.service import MeetingService
from deskmcp.meetings.settings import MeetingsSettings

from .fixtures import ALPHA, BETA, GAMMA, state, write

pytestmark = pytest.mark.anyio


@pytest.fixture
def settings(tmp_path: Path) -> MeetingsSettings:
    write(tmp_path / "granola")
    return MeetingsSettings(workspace=tmp_path / "ws", cache_path=tmp_path / "granola", timezone="UTC")


async def call(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def error(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert result.is_error
    body = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert set(body) == {"error", "message", "details"}
    return body


async def test_tools_are_listed_with_read_only_annotations(settings: MeetingsSettings):
    async with Client(create_server(settings)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    # Published with the names every client accepts (DESKMCP_TOOL_NAMES=safe, the default).
    assert set(tools) == {
        "granola_meetings_list",
        "granola_meetings_search",
        "granola_meetings_related",
        "granola_meetings_get",
        "granola_meetings_transcript",
        "granola_meetings_export_markdown",
        "granola_meetings_stats",
        "granola_folders_list",
        "granola_participants_list",
        "granola_cache_status",
    }
    for tool in tools.values():
        assert tool.annotations is not None and tool.annotations.read_only_hint is True
        assert tool.description


async def test_list_returns_newest_meeting_first_with_a_total(settings: MeetingsSettings):
    async with Client(create_server(settings)) as client:
        page = await call(client, "granola.meetings.list")
    assert [m["id"] for m in page["items"]] == [GAMMA, BETA, ALPHA]
    assert page["total"] == 3 and page["next_cursor"] is None


async def test_list_pages_with_an_opaque_cursor(settings: MeetingsSettings):
    async with Client(create_server(settings)) as client:
        first = await call(client, "granola.meetings.list", limit=2)
        second = await call(client, "granola.meetings.list", limit=2, cursor=first["next_cursor"])
    assert [m["id"] for m in first["items"] + second["items"]] == [GAMMA, BETA, ALPHA]
    assert second["next_cursor"] is None


async def test_list_filters_by_participant_platform_folder_and_dates(settings: MeetingsSettings):
    async with Client(create_server(settings)) as client:
        by_person = await call(client, "granola.meetings.list", participants=["alice"])
        by_email = await call(client, "granola.meetings.list", participants=["CAROL@example.com"])
        by_platform = await call(client, "granola.meetings.list", platform="zoom")
        by_folder = await call(client, "granola.meetings.list", folder="finance")
        by_dates = await call(client, "granola.meetings.list", from_ts="2024-05-07", to_ts="2024-05-08")
        combined = await call(client, "granola.meetings.list", q="budget", participants=["bob"])
    assert [m["id"] for m in by_person["items"]] == [ALPHA]
    assert [m["id"] for m in by_email["items"]] == [BETA]
    assert [m["id"] for m in by_platform["items"]] == [BETA]
    assert [m["id"] for m in by_folder["items"]] == [ALPHA]
    assert [m["id"] for m in by_dates["items"]] == [BETA]
    assert [m["id"] for m in combined["items"]] == [ALPHA]


async def test_days_counts_back_from_today_in_the_users_time_zone(tmp_path: Path):
    data = state()
    now = time.time()
    data["documents"][ALPHA]["google_calendar_event"]["start"]["dateTime"] = now - 3600
    data["documents"][BETA]["created_at"] = now - 10 * 86400
    write(tmp_path / "g", data)
    settings = MeetingsSettings(workspace=tmp_path / "ws", cache_path=tmp_path / "g", timezone="Pacific/Auckland")
    async with Client(create_server(settings)) as client:
        recent = await call(client, "granola.meetings.list", days=7)
    assert ALPHA in [m["id"] for m in recent["items"]]
    assert BETA not in [m["id"] for m in recent["items"]]


async def test_search_finds_words_in_transcripts_with_a_snippet(settings: MeetingsSettings):
    async with Client(create_server(settings)) as client:
        found = await call(client, "granola.meetings.search", q="cloud costs")
    assert [h["id"] for h in found["items"]] == [ALPHA]
    assert "⟦" in found["items"][0]["snippet"]
    assert found["items"][0]["score"] > 0


async def test_search_combines_the_query_with_filters(settings: MeetingsSettings):
    async with Client(create_server(settings)) as client:
        hit = await call(client, "granola.meetings.search", q="backend", platform="zoom")
        miss = await call(client, "granola.meetings.search", q="backend", platform="teams")
    assert [h["id"] for h in hit["items"]] == [BETA]
    assert miss["items"] == []


async def test_get_returns_the_whole_meeting(settings: MeetingsSettings):
    async with Client(create_server(settings)) as client:
        meeting = await call(client, "granola.meetings.get", id=ALPHA)
        bare = await call(client, "granola.meetings.get", id=ALPHA, include_notes=False)
    assert meeting["title"] == "Quarterly budget review"
    assert meeting["transcript_segments"] == 3
    assert "ten percent" in meeting["notes"]
    assert bare["notes"] == ""


async def test_transcript_by_time_range_and_speaker(settings: MeetingsSettings):
    async with Client(create_server(settings)) as client:
        whole = await call(client, "granola.meetings.transcript", id=ALPHA)
        window = await call(client, "granola.meetings.transcript", id=ALPHA, start_seconds=1, end_seconds=50)
        mine = await call(client, "granola.meetings.transcript", id=ALPHA, source="me")
        capped = await call(client, "granola.meetings.transcript", id=ALPHA, max_chars=100)
    assert len(whole["segments"]) == 3 and whole["total_segments"] == 3
    assert [s["text"] for s in window["segments"]] == ["Cloud costs rose in April."]
    assert [s["source"] for s in mine["segments"]] == ["microphone", "microphone"]
    assert capped["truncated"] is False
    assert capped["segments"][0]["speaker"] == "me"


async def test_transcript_answers_are_capped_by_max_chars(tmp_path: Path):
    data = state()
    segments = data["transcripts"][ALPHA.replace("-", "")]
    segments[1]["text"] = "long " * 100
    write(tmp_path / "g", data)
    settings = MeetingsSettings(workspace=tmp_path / "ws", cache_path=tmp_path / "g")
    async with Client(create_server(settings)) as client:
        capped = await call(client, "granola.meetings.transcript", id=ALPHA, max_chars=100)
    assert capped["truncated"] is True
    assert [s["speaker"] for s in capped["segments"]] == ["me"]


async def test_transcript_sides_include_segments_with_a_named_speaker(tmp_path: Path):
    data = state()
    segments = data["transcripts"][ALPHA.replace("-", "")]
    segments[0]["speaker"] = "Sam Rivera"  # the user's microphone, named
    segments[1]["speaker"] = "Alice Okafor"  # the other side, named
    data["documentListsMetadata"]["list-fin"]["title"] = "Équipe finance"
    write(tmp_path / "g", data)
    settings = MeetingsSettings(workspace=tmp_path / "ws", cache_path=tmp_path / "g")
    async with Client(create_server(settings)) as client:
        sides = {
            side: [
                s["text"]
                for s in (await call(client, "granola.meetings.transcript", id=ALPHA, source=side))["segments"]
            ]
            for side in ("me", "microphone", "them", "system")
        }
        decomposed = unicodedata.normalize("NFD", "équipe finance")
        by_folder = await call(client, "granola.meetings.list", folder=decomposed)
    assert sides["me"] == sides["microphone"] and len(sides["me"]) == 2
    assert sides["them"] == sides["system"] and len(sides["them"]) == 1
    assert [m["id"] for m in by_folder["items"]] == [ALPHA]


async def test_export_markdown_renders_the_requested_sections_in_order(settings: MeetingsSettings):
    async with Client(create_server(settings)) as client:
        full = await call(client, "granola.meetings.export_markdown", id=ALPHA)
        some = await call(client, "granola.meetings.export_markdown", id=ALPHA, sections=["transcript", "header"])
    text = full["markdown"]
    assert text.startswith("# Quarterly budget review\n")
    assert "- Sam Rivera <sam@example.com> (organiser)" in text
    assert "## Notes" in text and "## Links" in text and "## Transcript" not in text
    assert some["markdown"].index("## Transcript") < some["markdown"].index("# Quarterly")
    assert "**Me** [00:00]: Welcome to the budget review." in some["markdown"]


async def test_stats_group_by_day_week_participant_and_platform(settings: MeetingsSettings):
    async with Client(create_server(settings)) as client:
        days = await call(client, "granola.meetings.stats", group_by="day")
        weeks = await call(client, "granola.meetings.stats", group_by="week")
        people = await call(client, "granola.meetings.stats", group_by="participant")
        platforms = await call(client, "granola.meetings.stats", group_by="platform")
    assert [(b["key"], b["count"]) for b in days["buckets"]] == [
        ("2024-05-06", 1),
        ("2024-05-08", 1),
        ("2024-05-10", 1),
    ]
    assert weeks["buckets"] == [{"key": "2024-W19", "count": 3, "minutes": 60.0}]
    assert {b["key"] for b in people["buckets"]} >= {"Sam Rivera", "Alice Okafor", "Carol Diaz", "Dana Lee"}
    assert {b["key"]: b["count"] for b in platforms["buckets"]} == {"meet": 1, "zoom": 1, "unknown": 1}
    assert days["total"] == 3


async def test_folders_and_participants_are_listed_with_counts(settings: MeetingsSettings):
    async with Client(create_server(settings)) as client:
        folders = await call(client, "granola.folders.list")
        people = await call(client, "granola.participants.list", q="alice")
    assert [(f["name"], f["meeting_count"]) for f in folders["folders"]] == [("Finance", 1), ("Hiring", 1)]
    assert people["participants"] == [
        {
            "name": "Alice Okafor",
            "email": "alice@example.com",
            "meeting_count": 1,
            "last_meeting": "2024-05-06T09:00:00Z",
        }
    ]


async def test_cache_status_reports_the_file_format_and_counts(settings: MeetingsSettings):
    async with Client(create_server(settings)) as client:
        status = await call(client, "granola.cache.status")
    assert status["exists"] is True
    assert status["format"] == "cache-v6 (object)"
    assert (status["meetings"], status["folders"], status["transcripts"]) == (3, 2, 1)


async def test_cache_status_counts_the_folders_the_cache_has_now(settings: MeetingsSettings, tmp_path: Path):
    service = MeetingService(settings)
    try:
        assert service.status().folders == 2
        data = state()
        del data["documentLists"]["list-people"], data["documentListsMetadata"]["list-people"]
        cache = write(tmp_path / "granola", data)
        os.utime(cache, ns=(time.time_ns() + 10**9,) * 2)
        assert service.status().folders == 1
        with service.index.transaction() as conn:  # an index made before the count was kept
            conn.execute("DELETE FROM meta WHERE key = 'folder_count'")
        assert service.status().folders == 1
    finally:
        service.close()


@pytest.mark.parametrize(
    ("tool", "args", "code"),
    [
        ("granola.meetings.get", {"id": "nope"}, "not_found"),
        ("granola.meetings.list", {"from_ts": "last tuesday"}, "bad_request"),
        ("granola.meetings.list", {"from_ts": "2024-06-01", "to_ts": "2024-05-01"}, "bad_request"),
        ("granola.meetings.list", {"cursor": "garbage!"}, "bad_request"),
        ("granola.meetings.list", {"limit": 501}, "bad_request"),
        ("granola.meetings.list", {"limit": 0}, "bad_request"),
        ("granola.meetings.search", {"q": "   "}, "bad_request"),
        ("granola.meetings.stats", {"group_by": "month"}, "bad_request"),
        ("granola.meetings.transcript", {"id": ALPHA, "start_seconds": 50, "end_seconds": 10}, "bad_request"),
        ("granola.nope", {}, "not_found"),
    ],
)
async def test_bad_input_is_a_structured_error(settings: MeetingsSettings, tool: str, args: dict, code: str):
    async with Client(create_server(settings)) as client:
        body = await error(client, tool, **args)
    assert body["error"] == code
    assert "Traceback" not in body["message"]


async def test_a_cursor_from_another_query_is_refused(settings: MeetingsSettings):
    async with Client(create_server(settings)) as client:
        first = await call(client, "granola.meetings.list", limit=1)
        body = await error(client, "granola.meetings.list", limit=1, platform="zoom", cursor=first["next_cursor"])
    assert body["error"] == "bad_request"


async def test_a_changed_cache_file_is_picked_up_without_a_restart(settings: MeetingsSettings, tmp_path: Path):
    async with Client(create_server(settings)) as client:
        assert (await call(client, "granola.meetings.search", q="backend"))["items"]
        data = state()
        data["documents"][BETA]["notes_markdown"] = "Discussed the frontend opening."
        path = write(tmp_path / "granola", data)
        os.utime(path, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
        assert (await call(client, "granola.meetings.search", q="backend"))["items"] == []
        assert [h["id"] for h in (await call(client, "granola.meetings.search", q="frontend"))["items"]] == [BETA]


async def test_a_cache_turned_to_garbage_is_a_parse_error_and_recovers_when_fixed(
    settings: MeetingsSettings, tmp_path: Path
):
    async with Client(create_server(settings)) as client:
        await call(client, "granola.meetings.list")
        path = tmp_path / "granola" / "cache-v6.json"
        path.write_bytes(b'{"cache": {"state": {"docu')
        assert (await error(client, "granola.meetings.list"))["error"] == "parse_error"
        write(tmp_path / "granola")
        os.utime(path, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
        assert (await call(client, "granola.meetings.list"))["total"] == 3


async def test_an_encrypted_cache_is_a_clear_error_not_stale_data(settings: MeetingsSettings, tmp_path: Path):
    plain = tmp_path / "granola" / "cache-v6.json"
    os.utime(plain, (time.time() - 60, time.time() - 60))
    (tmp_path / "granola" / "cache-v6.json.enc").write_bytes(b"\x01\x02")
    async with Client(create_server(settings)) as client:
        body = await error(client, "granola.meetings.list")
        status = await call(client, "granola.cache.status")
    assert body["error"] == "parse_error" and "encrypted" in body["message"]
    assert "GRANOLA_API_KEY" in body["message"] and "Connect Granola" in body["message"]
    assert status["encrypted_newer"].endswith("cache-v6.json.enc")
    assert (status["ok"], status["error"], status["message"]) == (False, "parse_error", body["message"])


async def test_cache_status_reports_a_corrupt_cache_instead_of_failing(settings: MeetingsSettings, tmp_path: Path):
    path = tmp_path / "granola" / "cache-v6.json"
    path.write_bytes(b'{"cache": {"state": {"docu')
    async with Client(create_server(settings)) as client:
        body = await error(client, "granola.meetings.list")
        status = await call(client, "granola.cache.status")
    assert status["ok"] is False
    assert status["error"] == "parse_error"
    assert status["message"] == body["message"]
    assert status["path"] == str(path)
    assert status["exists"] is True
    assert status["size_bytes"] == path.stat().st_size


@pytest.mark.parametrize("document", [{"foo": 1}, {}, {"cache": {"foo": 1}}, {"cache": json.dumps({"foo": 1})}])
async def test_a_json_file_with_none_of_a_caches_keys_is_not_a_granola_cache(
    settings: MeetingsSettings, tmp_path: Path, document: dict[str, Any]
):
    path = tmp_path / "granola" / "cache-v6.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    async with Client(create_server(settings)) as client:
        body = await error(client, "granola.meetings.list")
        status = await call(client, "granola.cache.status")
    assert body["error"] == "parse_error"
    assert "not a Granola cache" in body["message"]
    assert "GRANOLA_CACHE_PATH" in body["message"]
    assert (status["ok"], status["error"], status["path"]) == (False, "parse_error", str(path))
    assert status["meetings"] == 0


async def test_an_empty_but_well_formed_cache_is_zero_meetings(settings: MeetingsSettings, tmp_path: Path):
    (tmp_path / "granola" / "cache-v6.json").write_text('{"cache": {"state": {}}}', encoding="utf-8")
    async with Client(create_server(settings)) as client:
        listed = await call(client, "granola.meetings.list")
        status = await call(client, "granola.cache.status")
    assert listed["total"] == 0
    assert (status["ok"], status["error"], status["meetings"]) == (True, None, 0)


async def test_cache_status_reports_a_missing_cache_with_the_places_searched(tmp_path: Path):
    settings = MeetingsSettings(workspace=tmp_path / "ws", cache_path=tmp_path / "nowhere", timezone="UTC")
    async with Client(create_server(settings)) as client:
        status = await call(client, "granola.cache.status")
    assert (status["ok"], status["error"], status["exists"]) == (False, "not_found", False)
    assert "GRANOLA_CACHE_PATH" in status["message"]


async def test_concurrent_calls_all_succeed(settings: MeetingsSettings):
    async with Client(create_server(settings)) as client:
        results: list[dict[str, Any]] = []

        async def one(i: int) -> None:
            tool = ["granola.meetings.list", "granola.meetings.search"][i % 2]
            args = {} if i % 2 == 0 else {"q": "budget"}
            results.append(await call(client, tool, **args))

        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                for i in range(40):
                    tg.start_soon(one, i)
    assert len(results) == 40


async def test_resources_render_folders_and_meetings_as_markdown(settings: MeetingsSettings):
    async with Client(create_server(settings)) as client:
        templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
        folders = await client.read_resource("granola://folders")
        meeting = await client.read_resource(f"granola://meetings/{ALPHA}")
        folder = await client.read_resource("granola://folders/list-fin")
    assert {"granola://meetings/{meeting_id}", "granola://folders/{folder_id}"} <= templates
    assert "[Finance](granola://folders/list-fin)" in folders.contents[0].text  # type: ignore[union-attr]
    assert meeting.contents[0].text.startswith("# Quarterly budget review")  # type: ignore[union-attr]
    assert f"granola://meetings/{ALPHA}" in folder.contents[0].text  # type: ignore[union-attr]


async def test_reading_a_missing_meeting_resource_is_an_error(settings: MeetingsSettings):
    from mcp.shared.exceptions import MCPError

    async with Client(create_server(settings)) as client:
        with pytest.raises(MCPError, match="No meeting"):
            await client.read_resource("granola://meetings/nope")


async def test_prompts_are_described_and_name_the_tools_to_call(settings: MeetingsSettings):
    async with Client(create_server(settings)) as client:
        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
        rendered = await client.get_prompt("action_items", {"meeting_id": ALPHA})
        person = await client.get_prompt("meetings_with", {"person": "Alice"})
    assert set(prompts) == {"summarize_week", "action_items", "meetings_with", "weekly_report"}
    assert all(p.description for p in prompts.values())
    assert "granola_meetings_get" in rendered.messages[0].content.text  # type: ignore[union-attr]
    assert "participants=['Alice']" in person.messages[0].content.text  # type: ignore[union-attr]


async def test_legacy_handshake_clients_get_the_same_answers(settings: MeetingsSettings):
    async with Client(create_server(settings), mode="legacy") as client:
        page = await call(client, "granola.meetings.list")
        body = await error(client, "granola.meetings.get", id="nope")
    assert page["total"] == 3
    assert body["error"] == "not_found"


async def test_a_cache_replaced_again_and_again_while_calls_run_never_gives_a_wrong_answer(
    settings: MeetingsSettings, tmp_path: Path
):
    import threading

    from deskmcp.core.files import atomic_write_bytes

    folder = tmp_path / "granola"
    version_a = (folder / "cache-v6.json").read_bytes()
    smaller = state()
    del smaller["documents"][GAMMA]
    version_b = json.dumps({"cache": {"state": smaller, "version": 6}}).encode()
    stop = threading.Event()

    def replace_forever() -> None:
        n = 0
        while not stop.is_set():
            atomic_write_bytes(folder / "cache-v6.json", version_a if n % 2 else version_b)
            n += 1

    writer = threading.Thread(target=replace_forever)
    writer.start()
    totals: list[int] = []
    try:
        async with Client(create_server(settings)) as client:
            with anyio.fail_after(60):
                for _ in range(60):
                    totals.append((await call(client, "granola.meetings.list"))["total"])
    finally:
        stop.set()
        writer.join(timeout=10)
    assert set(totals) <= {2, 3}
    assert len(totals) == 60
