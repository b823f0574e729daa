import json
import os
import time
from pathlib import Path

import pytest

from deskmcp.core.errors import IOFailure, NotFound, ParseError
from deskmcp.meetings import granola_cache
from deskmcp.meetings.granola_cache import locate, parse, parse_state, require_location

from .fixtures import ALPHA, BETA, DELETED, GAMMA, state, write

MB = 1024 * 1024


def by_id(path: Path) -> dict:
    return {m.id: m for m in parse(path, MB).meetings}


@pytest.mark.parametrize("version", [3, 4, 6])
def test_every_plain_cache_format_yields_the_same_meetings(tmp_path: Path, version: int):
    meetings = by_id(write(tmp_path, version=version))
    assert set(meetings) == {ALPHA, BETA, GAMMA}


def test_deleted_documents_and_non_meeting_documents_are_excluded(tmp_path: Path):
    meetings = by_id(write(tmp_path))
    assert DELETED not in meetings
    assert "note-1" not in meetings


def test_people_object_gives_creator_and_attendees_with_names_from_details(tmp_path: Path):
    alpha = by_id(write(tmp_path))[ALPHA]
    assert [(p.name, p.email, p.role) for p in alpha.participants] == [
        ("Sam Rivera", "sam@example.com", "creator"),
        ("Alice Okafor", "alice@example.com", "attendee"),
        ("Bob Stone", "bob@example.com", "attendee"),
    ]


def test_people_as_a_list_and_metadata_attendees_are_fallbacks(tmp_path: Path):
    meetings = by_id(write(tmp_path))
    assert [p.name for p in meetings[BETA].participants] == ["Carol Diaz"]
    assert [p.email for p in meetings[GAMMA].participants] == ["dana@example.com"]


def test_the_calendar_attendees_count_when_the_people_hold_only_the_creator(tmp_path: Path):
    doc = {
        "id": "m1",
        "title": "Sync",
        "created_at": "2024-05-06T09:00:00Z",
        "people": {"creator": {"name": "Me Myself", "email": "me@corp.com"}},
        "google_calendar_event": {
            "attendees": [{"email": "zelda@partner.io", "displayName": "Zelda Quux"}, {"email": "ME@corp.com"}]
        },
    }
    path = tmp_path / "cache-v6.json"
    path.write_text(json.dumps({"cache": {"state": {"documents": {"m1": doc}}}}), encoding="utf-8")
    [meeting] = parse(path, MB).meetings
    assert [(p.name, p.email, p.role) for p in meeting.participants] == [
        ("Me Myself", "me@corp.com", "creator"),
        ("Zelda Quux", "zelda@partner.io", "attendee"),
    ]


def test_start_comes_from_the_calendar_event_else_creation_time_in_any_epoch_unit(tmp_path: Path):
    meetings = by_id(write(tmp_path))
    assert meetings[ALPHA].start_ts == "2024-05-06T09:00:00Z"
    assert meetings[ALPHA].duration_minutes == 60
    assert meetings[BETA].start_ts == "2024-05-08T09:00:00Z"


def test_notes_come_from_markdown_then_prosemirror_then_panels(tmp_path: Path):
    meetings = by_id(write(tmp_path))
    assert meetings[BETA].notes == "Discussed the **backend** opening."
    assert meetings[ALPHA].notes == "## Decisions\n\n- Cut cloud spend by **ten percent**"
    assert meetings[GAMMA].notes == "## Summary\n\nNavigation & empty states"


def test_platform_is_detected_from_metadata_and_calendar_links(tmp_path: Path):
    meetings = by_id(write(tmp_path))
    assert meetings[ALPHA].platform == "meet"
    assert meetings[BETA].platform == "zoom"
    assert meetings[GAMMA].platform is None
    assert "https://zoom.us/j/123" in meetings[BETA].links


def test_transcripts_match_documents_keyed_without_dashes_and_drop_partial_segments(tmp_path: Path):
    parsed = parse(write(tmp_path), MB)
    segments = parsed.transcripts[ALPHA]
    assert [s["text"] for s in segments] == [
        "Welcome to the budget review.",
        "Cloud costs rose in April.",
        "Let's cut ten percent.",
    ]
    assert [s["speaker"] for s in segments] == ["me", "them", "me"]
    assert segments[2]["offset_seconds"] == 55.0


def test_folders_come_from_document_lists_and_their_metadata(tmp_path: Path):
    parsed = parse(write(tmp_path), MB)
    assert [(f.name, f.description) for f in parsed.folders] == [("Finance", "Money matters"), ("Hiring", None)]
    meetings = {m.id: m for m in parsed.meetings}
    assert [f.name for f in meetings[ALPHA].folders] == ["Finance"]


def test_every_key_is_optional(tmp_path: Path):
    assert parse_state({}).meetings == []
    assert parse_state({"documents": {"x": {}}}).meetings == []
    lone = parse_state({"documents": {"x": {"title": None, "people": "weird", "notes": 5}}}).meetings
    assert lone[0].id == "x" and lone[0].title == "(untitled meeting)"


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b"", "empty"),
        (b'{"cache": "{\\"state\\": {"}', "inner cache JSON"),
        (b'{"cache": {"state": {"documents": {"a": ', "not valid JSON"),
        (b"[1, 2, 3]", "not an object"),
        (b'{"cache": 42}', "not an object"),
        # A reader seeing no entries there would answer "no meetings" to every question.
        (b'{"cache": {"state": {"documents": [{"id": "a", "title": "A"}]}}}', "'documents' as a JSON list"),
        (b'{"cache": "{\\"state\\": {\\"documents\\": [1]}}"}', "'documents' as a JSON list"),
    ],
)
def test_malformed_or_truncated_caches_are_parse_errors(tmp_path: Path, content: bytes, fragment: str):
    path = tmp_path / "cache-v6.json"
    path.write_bytes(content)
    with pytest.raises(ParseError, match=fragment):
        parse(path, MB)


def test_a_cache_over_the_size_limit_is_refused_before_reading(tmp_path: Path):
    path = write(tmp_path)
    with pytest.raises(IOFailure, match="limit"):
        parse(path, 100)


def test_the_newest_plain_cache_is_chosen(tmp_path: Path):
    old = write(tmp_path, version=3)
    new = write(tmp_path, version=6)
    os.utime(old, (time.time() - 100, time.time() - 100))
    assert locate(tmp_path, []).path == new
    os.utime(new, (time.time() - 200, time.time() - 200))
    assert locate(tmp_path, []).path == old


def test_a_newer_encrypted_cache_is_reported_instead_of_serving_the_stale_plain_file(tmp_path: Path):
    plain = write(tmp_path)
    os.utime(plain, (time.time() - 60, time.time() - 60))
    (tmp_path / "cache-v6.json.enc").write_bytes(b"\x00ciphertext")
    location = locate(tmp_path, [])
    assert location.encrypted_newer is not None
    with pytest.raises(ParseError, match="encrypted"):
        require_location(location)


def test_an_older_encrypted_file_does_not_block_a_fresh_plain_cache(tmp_path: Path):
    enc = tmp_path / "cache-v6.json.enc"
    enc.write_bytes(b"x")
    os.utime(enc, (time.time() - 60, time.time() - 60))
    write(tmp_path)
    assert require_location(locate(tmp_path, [])).name == "cache-v6.json"


def test_missing_cache_is_not_found_and_names_the_places_searched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(granola_cache, "granola_folders", lambda: [tmp_path / "Granola"])
    location = locate(None, [tmp_path / "fallback"])
    with pytest.raises(NotFound, match="GRANOLA_CACHE_PATH") as info:
        require_location(location)
    assert str(tmp_path / "fallback") in info.value.details["searched"]


def test_a_configured_file_path_is_used_directly(tmp_path: Path):
    path = write(tmp_path / "elsewhere", version=4)
    assert locate(path, []).path == path


def test_the_cache_file_is_never_modified(tmp_path: Path):
    path = write(tmp_path)
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    parse(path, MB)
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
    assert state()  # the fixture itself is untouched data


@pytest.mark.parametrize("version", [3, 6])
def test_lazy_reading_keeps_records_as_raw_json_and_yields_the_same_meetings(tmp_path: Path, version: int):
    import msgspec

    path = write(tmp_path, version=version)
    lazy_state, fmt = granola_cache.load_state(path, MB, lazy=True)
    assert isinstance(lazy_state["documents"][ALPHA], msgspec.Raw)
    assert fmt == f"cache-v{version} ({'string' if version == 3 else 'object'})"
    eager = parse_state(granola_cache.load_state(path, MB)[0])
    lazy = parse_state(lazy_state)
    assert [m.model_dump() for m in lazy.meetings] == [m.model_dump() for m in eager.meetings]
    assert lazy.transcripts == eager.transcripts


def test_lazy_reading_falls_back_to_the_tolerant_reader_for_odd_shapes(tmp_path: Path):
    data = state()
    data["documentPanels"] = ["not", "an", "object"]
    path = write(tmp_path, data)
    lazy_state, _ = granola_cache.load_state(path, MB, lazy=True)
    assert isinstance(lazy_state["documentPanels"], list)
    assert {m.id for m in parse_state(lazy_state).meetings} == {ALPHA, BETA, GAMMA}
