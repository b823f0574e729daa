"""Reading a string cache with its transcripts left in the file gives what reading it whole gives."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from deskmcp.core.errors import ParseError
from deskmcp.demo.meetings import build_state
from deskmcp.meetings import cache_scan
from deskmcp.meetings.models import Meeting
from deskmcp.meetings.service import MeetingService
from deskmcp.meetings.settings import MeetingsSettings
from deskmcp.meetings.worker import changes
from tests.helpers.corpora import shared_corpus

from .fixtures import ALPHA, BETA, state
from .test_cache_file import TRICKY
from .test_qmsum_corpus import qmsum_state

Message = tuple[str, dict[str, Any]]


def tricky_state() -> dict[str, Any]:
    """A generated state whose texts hold escapes of every kind, plus orphan and empty transcripts."""
    data = build_state(12, seed=3, transcript_segments=(2, 6))
    for n, doc in enumerate(data["documents"].values()):
        doc["title"] = f"{TRICKY[n % len(TRICKY)]} #{n}"
        doc["notes_markdown"] = " | ".join(TRICKY)
    for n, segments in enumerate(data["transcripts"].values()):
        segments[0]["text"] = TRICKY[n % len(TRICKY)] + ' and {"not": ["json"]} [x] }] {'
    data["transcripts"]["orphan-without-document"] = [{"text": "nobody's 会议 😀", "is_final": True}]
    data["transcripts"][next(iter(data["documents"]))] = []
    return data


def write_cache(
    path: Path, data: dict[str, Any], version: int, *, ascii_only: bool = False, spaced: bool = False
) -> Path:
    """Compact UTF-8 JSON as Granola writes it; or `ascii_only` (every non-ASCII character and
    surrogate pair as `\\u` escapes, at both levels) and `spaced` (blanks after `:` and `,`)."""
    inner: Any = {"state": data, "version": version}
    separators = (", ", ": ") if spaced else (",", ":")
    if version == 3:
        inner = json.dumps(inner, ensure_ascii=ascii_only, separators=separators)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"cache": inner}, ensure_ascii=ascii_only, separators=separators), encoding="utf-8")
    return path


def comparable(messages: list[Message]) -> list[Message]:
    """The messages without fingerprints (the scan hashes escaped transcripts), with bytes as
    bytes, and without the layout a scan ends with (see `cache_layout`)."""
    out: list[Message] = []
    for kind, body in messages:
        if kind == "layout":
            continue
        if kind == "entry":
            columns = dict(body["columns"])
            raw = columns["transcript_json"]
            columns["transcript_json"] = bytes(raw) if raw is not None else None
            body = {**body, "columns": columns, "fingerprint": ""}
        out.append((kind, body))
    return out


def both(path: Path, known: dict[str, str] | None = None) -> tuple[list[Message], list[Message]]:
    scanned = list(changes(path, 1 << 30, known or {}))
    whole = list(changes(path, 1 << 30, known or {}, scan=False))
    return scanned, whole


@pytest.mark.parametrize("spaced", [False, True])
@pytest.mark.parametrize("ascii_only", [False, True])
@pytest.mark.parametrize("version", [3, 4, 6])
def test_the_scan_gives_the_same_entries_as_reading_the_cache_whole(
    tmp_path: Path, version: int, ascii_only: bool, spaced: bool
):
    path = tmp_path / f"cache-v{version}.json"
    write_cache(path, tricky_state(), version, ascii_only=ascii_only, spaced=spaced)
    scanned = cache_scan.scan(path, 1 << 30)
    # Only a compact string cache has its transcripts left in the file; any other is read whole.
    assert (scanned is not None) == (version == 3 and not spaced)
    if scanned is not None:
        scanned.close()
    fast, whole = both(path)
    assert comparable(fast) == comparable(whole)
    assert sum(kind == "entry" for kind, _ in fast) == 12


def test_the_scan_of_the_qmsum_corpus_gives_the_same_entries(tmp_path: Path):
    data, _ = qmsum_state(shared_corpus("qmsum"))
    path = write_cache(tmp_path / "cache-v3.json", data, 3, ascii_only=True)
    fast, whole = both(path)
    assert comparable(fast) == comparable(whole)
    assert sum(kind == "entry" for kind, _ in fast) == 40


def test_a_scanned_cache_read_again_yields_only_what_changed(tmp_path: Path):
    data = tricky_state()
    path = write_cache(tmp_path / "cache-v3.json", data, 3)
    first = list(changes(path, 1 << 30, {}))
    known = {body["key"]: body["fingerprint"] for kind, body in first if kind == "entry"}
    again = list(changes(path, 1 << 30, known))
    assert [kind for kind, _ in again] == ["head", "done", "layout"]
    doc_id = next(iter(data["documents"]))
    data["documents"][doc_id]["title"] = 'renamed "quoted" \\ 😀'
    write_cache(path, data, 3)
    fast, whole = both(path, known)
    assert [body["key"] for kind, body in fast if kind == "entry"] == [doc_id]
    # Reading whole hashes transcripts unescaped: every meeting is new to it.
    assert comparable(fast)[1] in comparable(whole)
    assert fast[0][1]["deletes"] == []


@pytest.mark.e2e
def test_a_transcript_the_scan_cannot_follow_is_read_whole_with_the_same_result(tmp_path: Path):
    # Segments holding arrays of objects end with "}]" inside the transcript.
    data = state()
    next(iter(data["transcripts"].values())).insert(
        0, {"text": "nested", "words": [{"w": "nested"}], "alternatives": ["nested"], "is_final": True}
    )
    path = write_cache(tmp_path / "g" / "cache-v3.json", data, 3)
    with pytest.raises(ParseError) as caught:
        list(changes(path, 1 << 30, {}))
    assert caught.value.details["reread"] is True
    service = MeetingService(MeetingsSettings(workspace=tmp_path / "ws", cache_path=tmp_path / "g", worker_min_mb=0))
    try:
        assert service.transcript(ALPHA).segments[0].text == "nested"
    finally:
        service.close()


def indexed(service: MeetingService) -> dict[str, str]:
    return {h.key: Meeting.model_validate_json(h.data or b"{}").title for h in service.index.select(limit=50)}


@pytest.mark.parametrize("in_worker", [False, pytest.param(True, marks=pytest.mark.e2e)])
@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda raw: raw[:-200], id="truncated"),
        pytest.param(lambda raw: raw.replace(b"cut ten percent", b"cut \\ud800 percent"), id="outer-surrogate"),
        pytest.param(lambda raw: raw.replace(b"cut ten percent", b"cut \\\\ud800 percent"), id="inner-surrogate"),
        pytest.param(lambda raw: raw.replace(b'\\"is_final\\":false', b'\\"is_final\\":fals'), id="bad-literal"),
    ],
)
def test_a_damaged_string_cache_is_the_same_parse_error_and_leaves_the_index_as_it_was(
    tmp_path: Path, damage: Any, in_worker: bool
):
    path = write_cache(tmp_path / "g" / "cache-v3.json", state(), 3)
    settings = MeetingsSettings(
        workspace=tmp_path / "ws", cache_path=tmp_path / "g", worker_min_mb=0 if in_worker else 1024
    )
    service = MeetingService(settings)
    try:
        service.refresh()
        before = indexed(service)
        source = service.index.get_meta("source")
        data = state()
        data["documents"][BETA]["title"] = "Renamed before the damage"
        damaged = damage(write_cache(path, data, 3).read_bytes())
        path.write_bytes(damaged)
        with pytest.raises(ParseError) as expected:
            list(changes(path, 1 << 30, {}, scan=False))
        with pytest.raises(ParseError) as caught:
            service.refresh()
        assert caught.value.code == expected.value.code == "parse_error"
        assert caught.value.message == expected.value.message
        assert caught.value.details == expected.value.details
        assert indexed(service) == before
        assert service.index.get_meta("source") == source
    finally:
        service.close()
