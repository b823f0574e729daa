"""A new version of a string cache compared record by record with the last one gives what a
scan of the whole file gives, and the layout it ends with is the one a scan would make."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from deskmcp.core.errors import ParseError
from deskmcp.meetings import cache_layout, cache_records, cache_scan
from deskmcp.meetings.cache_layout import Layout
from deskmcp.meetings.service import MeetingService
from deskmcp.meetings.settings import MeetingsSettings
from deskmcp.meetings.worker import changes

from .test_cache_scan import Message, tricky_state, write_cache

BIG = 1 << 30
State = dict[str, Any]


def scanned(path: Path, known: dict[str, str]) -> tuple[list[Message], Layout | None]:
    """What a scan gives (no layout to compare with), and the layout it ends with."""
    return split(list(changes(path, BIG, known)))


def compared(path: Path, known: dict[str, str], layout: Layout) -> tuple[list[Message], Layout | None]:
    return split(list(changes(path, BIG, known, layout=layout)))


def split(messages: list[Message]) -> tuple[list[Message], Layout | None]:
    """The messages up to `done`, and the layout sent after it, if any."""
    kinds = [kind for kind, _ in messages]
    done = kinds.index("done")
    assert kinds[done + 1 :] in ([], ["layout"])
    layout = Layout.decode(messages[-1][1]["layout"]) if kinds[-1] == "layout" else None
    return messages[: done + 1], layout


def indexed(messages: list[Message], known: dict[str, str]) -> dict[str, str]:
    """`known` after the messages were applied, as the index would hold it."""
    after = {key: value for key, value in known.items() if key not in messages[0][1]["deletes"]}
    after.update({body["key"]: body["fingerprint"] for kind, body in messages if kind == "entry"})
    return after


def start(tmp_path: Path) -> tuple[Path, State, dict[str, str], Layout]:
    data = tricky_state()
    data["documentPanels"] = {key: {"summary": {"text": f"panel {n}"}} for n, key in enumerate(data["documents"])}
    data["people"] = {"count": 3, "names": ["a", "b"]}
    path = write_cache(tmp_path / "cache-v3.json", data, 3)
    messages, layout = scanned(path, {})
    assert layout is not None
    return path, data, indexed(messages, {}), layout


def ids(data: State) -> list[str]:
    return list(data["documents"])


def retitle(data: State) -> None:
    data["documents"][ids(data)[0]]["title"] = 'renamed "quoted" \\ 😀'


def same_length_title(data: State) -> None:
    doc = data["documents"][ids(data)[3]]
    doc["title"] = doc["title"][:-1] + ("x" if doc["title"][-1] != "x" else "y")


def with_transcripts(data: State) -> list[str]:
    return [key for key, segments in data["transcripts"].items() if segments and key in data["documents"]]


def grow_transcript(data: State) -> None:
    data["transcripts"][with_transcripts(data)[2]].append({"text": "one more 'line' }] {", "is_final": True})


def add_meeting(data: State) -> None:
    new = str(uuid.UUID(int=42))
    first = data["documents"][ids(data)[1]]
    data["documents"][new] = {**copy.deepcopy(first), "id": new, "title": "A brand new meeting"}
    data["transcripts"][new] = [{"text": "hello there", "is_final": True}]
    data["meetingsMetadata"][new] = {"attendees": [{"name": "Ann New", "email": "ann@new.test"}]}


def insert_meeting_first(data: State) -> None:
    new = str(uuid.UUID(int=43))
    first = data["documents"][ids(data)[2]]
    data["documents"] = {new: {**copy.deepcopy(first), "id": new, "title": "Inserted first"}, **data["documents"]}


def delete_meeting(data: State) -> None:
    del data["documents"][ids(data)[4]]


def flag_deleted(data: State) -> None:
    data["documents"][ids(data)[6]]["deleted_at"] = "2026-01-01T00:00:00Z"


def remove_transcript(data: State) -> None:
    del data["transcripts"][with_transcripts(data)[3]]


def change_metadata(data: State) -> None:
    data["meetingsMetadata"][ids(data)[8]] = {"attendees": [{"name": "Zed Changed", "email": "zed@x.test"}]}


def change_panel(data: State) -> None:
    data["documentPanels"][ids(data)[9]] = {"summary": {"text": "a new summary"}}


def drop_panels(data: State) -> None:
    del data["documentPanels"]


def move_to_folder(data: State) -> None:
    lists = data["documentLists"]
    first, second = list(lists)[:2]
    lists[second] = [*lists[second], ids(data)[10]]
    lists[first] = [m for m in lists[first] if m != ids(data)[10]]


def rename_folder(data: State) -> None:
    meta = data["documentListsMetadata"]
    meta[next(iter(meta))]["title"] = "Renamed folder"


def reorder(data: State) -> None:
    data["documents"] = dict(reversed(data["documents"].items()))
    data["transcripts"] = dict(reversed(data["transcripts"].items()))


def metadata_by_other_spelling(data: State) -> None:
    # Metadata under the id in capitals without dashes: paired by the normalised id.
    key = ids(data)[2]
    data["meetingsMetadata"][key.replace("-", "").upper()] = {"attendees": [{"name": "Norm Al", "email": "n@a.test"}]}
    del data["meetingsMetadata"][key]


def other_entry(data: State) -> None:
    data["people"]["count"] = 4
    data["settings"] = {"theme": "dark"}


def nothing(data: State) -> None:
    pass


MUTATIONS: list[Callable[[State], None]] = [
    retitle,
    same_length_title,
    grow_transcript,
    add_meeting,
    insert_meeting_first,
    delete_meeting,
    flag_deleted,
    remove_transcript,
    change_metadata,
    change_panel,
    drop_panels,
    move_to_folder,
    rename_folder,
    reorder,
    metadata_by_other_spelling,
    other_entry,
    nothing,
]


@pytest.fixture(params=[cache_layout.GROUP, 2, 3], ids=lambda n: f"groups-of-{n}")
def group(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    """Records per group: the cache's few records make one group at the default size."""
    monkeypatch.setattr(cache_layout, "GROUP", request.param)
    return request.param


@pytest.mark.parametrize("ascii_only", [False, True], ids=["utf8", "ascii"])
@pytest.mark.parametrize("mutate", MUTATIONS, ids=lambda f: f.__name__)
def test_a_changed_version_compared_gives_what_a_scan_gives(
    tmp_path: Path, mutate: Callable[[State], None], ascii_only: bool, group: int
):
    path, data, known, layout = start(tmp_path)
    mutate(data)
    write_cache(path, data, 3, ascii_only=ascii_only)
    assert cache_layout.compare(path, BIG, layout) is not None  # followed, not scanned
    fast, fast_layout = compared(path, known, layout)
    slow, slow_layout = scanned(path, known)
    assert fast == slow
    assert fast_layout is not None and slow_layout is not None
    assert fast_layout == slow_layout


def test_records_swapped_with_a_twin_of_the_same_meeting_change_it(tmp_path: Path, group: int):
    # A meeting without metadata under its own id takes the last of those under its id
    # spelled otherwise: swapping two of them changes it, though neither record changed.
    path, data, known, _ = start(tmp_path)
    key = ids(data)[1]
    metadata = data["meetingsMetadata"]
    del metadata[key]
    metadata[key.upper()] = {"attendees": [{"name": "Upper Case", "email": "u@c.test"}]}
    metadata[key.replace("-", "")] = {"attendees": [{"name": "No Dashes", "email": "n@d.test"}]}
    write_cache(path, data, 3)
    messages, layout = scanned(path, known)
    known = indexed(messages, known)
    assert layout is not None
    metadata[key.upper()] = metadata.pop(key.upper())
    write_cache(path, data, 3)
    fast, _ = compared(path, known, layout)
    slow, _ = scanned(path, known)
    assert fast == slow
    assert [body["key"] for kind, body in fast if kind == "entry"] == [key]


def test_versions_compared_one_after_another_stay_what_a_scan_gives(tmp_path: Path, group: int):
    path, data, known, layout = start(tmp_path)
    for mutate in MUTATIONS:
        mutate(data)
        write_cache(path, data, 3)
        fast, next_layout = compared(path, known, layout)
        slow, _ = scanned(path, known)
        assert fast == slow, mutate.__name__
        assert next_layout is not None
        layout, known = next_layout, indexed(fast, known)


@pytest.mark.parametrize(
    "rewrite",
    [
        lambda path, data: write_cache(path, data, 3, spaced=True),
        lambda path, data: path.write_text(path.read_text().replace('\\"version\\":3', '\\"version\\":4')),
        lambda path, data: path.write_text(path.read_text()[:-40]),
        lambda path, data: path.write_text('{"cache":"{\\"other\\":1}"}'),
        lambda path, data: path.write_bytes(path.read_bytes().replace(b'\\":{\\"id\\"', b'\\": {\\"id\\"', 1)),
    ],
    ids=["spaced", "trailer", "truncated", "another-shape", "blank-before-a-record"],
)
def test_a_version_this_reader_does_not_follow_is_scanned(tmp_path: Path, rewrite: Callable[[Path, State], None]):
    path, data, _, layout = start(tmp_path)
    retitle(data)
    rewrite(path, data)
    assert cache_layout.compare(path, BIG, layout) is None


def served(tmp_path: Path, data: State) -> tuple[Path, MeetingsSettings]:
    """A string cache of `data` and the settings of a service over it."""
    folder = tmp_path / "granola"
    path = write_cache(folder / "cache-v3.json", data, 3)
    return path, MeetingsSettings(workspace=tmp_path / "ws", cache_path=folder, worker_min_mb=0)


def retitled_twice(settings: MeetingsSettings, path: Path, data: State, key: str, title: str) -> None:
    """Start a service, then change one meeting's title twice, each change read and checked."""
    service = MeetingService(settings)
    try:
        service.refresh()  # a first index (in a worker) or nothing new
        for n in range(2):
            data["documents"][key]["title"] = f"{title} {n}"
            write_cache(path, data, 3)
            service.refresh()
            assert service.get(key).title == f"{title} {n}"
    finally:
        service.close()


def test_the_service_compares_each_new_version_with_the_one_it_indexed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    followed: list[bool] = []
    compare = cache_layout.compare

    def spy(path: Path, max_bytes: int, before: Layout) -> cache_layout.Delta | None:
        delta = compare(path, max_bytes, before)
        followed.append(delta is not None)
        return delta

    monkeypatch.setattr(cache_layout, "compare", spy)
    data = tricky_state()
    path, settings = served(tmp_path, data)
    first, second = ids(data)[:2]
    # The first index's layout comes back from its worker: both changes are compared.
    retitled_twice(settings, path, data, first, "version")
    assert followed == [True, True]
    # Started again: the layout kept beside the index serves the first change too.
    retitled_twice(settings, path, data, second, "again")
    assert followed == [True, True, True, True]
    # A damaged layout is not used: that change is scanned, and the next compared again.
    kept = settings.index_folder / "meetings.layout"
    damaged = bytearray(kept.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    kept.write_bytes(bytes(damaged))
    retitled_twice(settings, path, data, first, "damaged")
    assert followed == [True, True, True, True, True]


def test_a_layout_of_another_version_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    data = tricky_state()
    path, settings = served(tmp_path, data)
    service = MeetingService(settings)
    service.refresh()
    kept = (settings.index_folder / "meetings.layout").read_bytes()
    first = ids(data)[0]
    data["documents"][first]["title"] = "second version"
    write_cache(path, data, 3)
    service.refresh()
    service.close()
    # The layout of the first version, beside an index of the second: left aside.
    (settings.index_folder / "meetings.layout").write_bytes(kept)
    calls: list[Layout] = []
    monkeypatch.setattr(cache_layout, "compare", lambda path, max_bytes, before: calls.append(before))
    data["documents"][first]["title"] = "third version"
    write_cache(path, data, 3)
    service = MeetingService(settings)
    try:
        service.refresh()
        assert service.get(first).title == "third version"
        assert calls == []
    finally:
        service.close()


def test_a_layout_left_half_written_by_an_ended_server_is_removed(tmp_path: Path):
    data = tricky_state()
    _, settings = served(tmp_path, data)
    settings.index_folder.mkdir(parents=True, exist_ok=True)
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    left = settings.index_folder / f".meetings.layout.{ended.pid}.tmp"
    running = settings.index_folder / f".meetings.layout.{os.getppid()}.tmp"
    for each in (left, running):
        each.write_bytes(b"half a layout")
    service = MeetingService(settings)
    try:
        service.refresh()
    finally:
        service.close()
    assert (settings.index_folder / "meetings.layout").exists()
    assert not left.exists()
    assert running.read_bytes() == b"half a layout"


def test_a_cache_escaped_beyond_quotes_and_backslashes_gets_no_layout(tmp_path: Path):
    # Non-ASCII characters escaped as \u in the cache string: a record's escaped length no
    # longer follows from its raw JSON, so each change is scanned.
    data = tricky_state()
    inner = json.dumps({"state": data, "version": 3}, ensure_ascii=False, separators=(",", ":"))
    path = tmp_path / "cache-v3.json"
    path.write_text(json.dumps({"cache": inner}, separators=(",", ":")), encoding="ascii")
    scan = cache_scan.scan(path, BIG)
    assert scan is not None
    with scan:
        assert not scan.minimal
    messages, layout = scanned(path, {})
    assert layout is None
    assert sum(kind == "entry" for kind, _ in messages) == len(data["documents"])
    plain = write_cache(tmp_path / "plain" / "cache-v3.json", data, 3)
    scan = cache_scan.scan(plain, BIG)
    assert scan is not None
    with scan:
        assert scan.minimal


def test_a_changed_record_too_big_to_parse_here_is_left_to_the_scan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    path, data, known, layout = start(tmp_path)
    monkeypatch.setattr(cache_layout, "PARSE_MAX", 200)
    retitle(data)
    write_cache(path, data, 3)
    assert cache_layout.compare(path, BIG, layout) is None
    messages, _ = compared(path, known, layout)
    assert messages == scanned(path, known)[0]
    assert [body["key"] for kind, body in messages if kind == "entry"] == [ids(data)[0]]


def test_a_cache_rewritten_in_place_while_compared_is_read_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    data = tricky_state()
    path, settings = served(tmp_path, data)
    service = MeetingService(settings)
    compare = cache_layout.compare
    final = copy.deepcopy(data)
    final["documents"][ids(data)[0]]["title"] = "written while compared"

    def rewritten_meanwhile(path: Path, max_bytes: int, before: Layout) -> cache_layout.Delta | None:
        delta = compare(path, max_bytes, before)
        assert delta is not None
        write_cache(path, final, 3)  # the same file, written over in place
        return delta

    try:
        service.refresh()
        data["documents"][ids(data)[0]]["title"] = "first rewrite"
        write_cache(path, data, 3)
        monkeypatch.setattr(cache_layout, "compare", rewritten_meanwhile)
        with pytest.raises(ParseError) as caught:
            list(changes(path, BIG, service.index.fingerprints(), layout=service._current_layout()))
        assert caught.value.details["reread"] is True
        data["documents"][ids(data)[0]]["title"] = "second rewrite"
        write_cache(path, data, 3)
        service.refresh()  # compared, rewritten meanwhile, then read whole
        assert service.get(ids(data)[0]).title == "written while compared"
    finally:
        service.close()


def test_a_layout_made_by_another_normalisation_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # Every fingerprint changes with the normalisation's version, so every meeting is built
    # again: comparing records would keep the unchanged ones as the old code built them.
    path, data, known, layout = start(tmp_path)
    assert Layout.decode(layout.encode()) == layout
    monkeypatch.setattr(cache_records, "PARSER_VERSION", "next")
    retitle(data)
    write_cache(path, data, 3)
    assert cache_layout.compare(path, BIG, layout) is None
    messages, _ = compared(path, known, layout)
    assert sum(kind == "entry" for kind, _ in messages) == sum(kind == "entry" for kind, _ in scanned(path, {})[0])


def test_groups_that_did_not_change_are_taken_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(cache_layout, "GROUP", 2)
    path, data, known, layout = start(tmp_path)
    taken: list[int] = []
    whole = cache_layout._Walk._whole

    def spy(self: cache_layout._Walk, pos: int, first: int, *args: Any) -> int | None:
        end = whole(self, pos, first, *args)
        if end is not None:
            taken.append(first)
        return end

    monkeypatch.setattr(cache_layout._Walk, "_whole", spy)
    retitle(data)  # the first document: every other group of every collection is as it was
    write_cache(path, data, 3)
    fast, _ = compared(path, known, layout)
    assert fast == scanned(path, known)[0]
    groups = sum(len(records.groups) for records in layout.collections.values())
    assert len(taken) == groups - 1


def test_a_group_found_after_a_record_it_used_to_precede_counts_as_moved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # Twins of one meeting's metadata: X early (its group of two intact), Y last. Y moved to
    # the front now precedes X, so X wins the pairing: X's group, though whole, has moved.
    monkeypatch.setattr(cache_layout, "GROUP", 2)
    path, data, known, _ = start(tmp_path)
    key = ids(data)[4]
    metadata = data["meetingsMetadata"]
    del metadata[key]
    twin_x, twin_y = key.upper(), key.replace("-", "")
    items = list(metadata.items())
    items.insert(2, (twin_x, {"attendees": [{"name": "Twin X", "email": "x@t.test"}]}))
    items.append((twin_y, {"attendees": [{"name": "Twin Y", "email": "y@t.test"}]}))
    data["meetingsMetadata"] = dict(items)
    write_cache(path, data, 3)
    messages, layout = scanned(path, known)
    known = indexed(messages, known)
    assert layout is not None
    data["meetingsMetadata"] = {twin_y: data["meetingsMetadata"][twin_y], **data["meetingsMetadata"]}
    write_cache(path, data, 3)
    fast, _ = compared(path, known, layout)
    assert fast == scanned(path, known)[0]
    assert [body["key"] for kind, body in fast if kind == "entry"] == [key]
