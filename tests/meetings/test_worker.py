import sys
from pathlib import Path

import pytest

from deskmcp.core.errors import IOFailure, ParseError, Timeout
from deskmcp.meetings.models import Meeting
from deskmcp.meetings.service import MeetingService
from deskmcp.meetings.settings import MeetingsSettings

from .fixtures import ALPHA, BETA, GAMMA, state, write

pytestmark = pytest.mark.e2e  # every test here starts a worker process

# A worker that sends the summary and one meeting, then dies as if killed.
DIES_MID_STREAM = """
import os, sys
from pathlib import Path
import msgspec
from deskmcp.meetings.worker import _write, changes
request = msgspec.msgpack.decode(sys.stdin.buffer.read())
encoder = msgspec.msgpack.Encoder()
stream = changes(Path(request["path"]), request["max_bytes"], request["known"])
for _ in range(2):
    kind, body = next(stream)
    _write(sys.stdout.buffer, encoder, kind, body)
sys.stdout.buffer.flush()
os._exit(9)
"""

# A worker that sends every meeting and `done`, then dies before the layout.
DIES_AFTER_DONE = """
import os, sys
from pathlib import Path
import msgspec
from deskmcp.meetings.worker import _write, changes
request = msgspec.msgpack.decode(sys.stdin.buffer.read())
encoder = msgspec.msgpack.Encoder()
for kind, body in changes(Path(request["path"]), request["max_bytes"], request["known"]):
    _write(sys.stdout.buffer, encoder, kind, body)
    if kind == "done":
        break
sys.stdout.buffer.flush()
os._exit(9)
"""


def service_for(tmp_path: Path, **settings: object) -> MeetingService:
    return MeetingService(
        MeetingsSettings(workspace=tmp_path / "ws", cache_path=tmp_path / "g", worker_min_mb=0, **settings)  # type: ignore[arg-type]
    )


def indexed_titles(service: MeetingService) -> dict[str, str]:
    """What the index holds, read without bringing it up to date first."""
    hits = service.index.select(limit=50)
    return {h.key: Meeting.model_validate_json(h.data or b"{}").title for h in hits}


def titles(service: MeetingService) -> dict[str, str]:
    page = service.list_meetings(service.filters(), q=None, limit=50, cursor=None)
    return {m.id: m.title for m in page.items}


@pytest.mark.parametrize("version", [3, 6])
def test_a_cache_read_by_the_worker_process_gives_the_same_meetings_as_in_process(tmp_path: Path, version: int):
    write(tmp_path / "g", version=version)
    in_worker = service_for(tmp_path)
    in_process = MeetingService(
        MeetingsSettings(workspace=tmp_path / "ws2", cache_path=tmp_path / "g", worker_min_mb=1024)
    )
    try:
        assert set(titles(in_worker)) == {ALPHA, BETA, GAMMA}
        assert in_worker.get(ALPHA) == in_process.get(ALPHA)
        assert in_worker.transcript(ALPHA) == in_process.transcript(ALPHA)
        assert in_worker.status().format == f"cache-v{version} ({'string' if version == 3 else 'object'})"
        hits = in_worker.search("cloud spend", in_worker.filters(), limit=5, cursor=None).items
        assert [h.id for h in hits] == [ALPHA]
    finally:
        in_worker.close()
        in_process.close()


def test_a_worker_that_dies_mid_stream_leaves_the_index_as_it_was(tmp_path: Path):
    write(tmp_path / "g")
    service = service_for(tmp_path)
    try:
        before = titles(service)
        source = service.index.get_meta("source")
        data = state()
        data["documents"][BETA]["title"] = "Renamed while the worker dies"
        data["documents"][GAMMA]["title"] = "Also renamed"
        write(tmp_path / "g", data)
        service.worker_command = [sys.executable, "-c", DIES_MID_STREAM]
        with pytest.raises(IOFailure, match="stopped unexpectedly") as caught:
            service.refresh()
        assert caught.value.details["exit_code"] == 9
        assert indexed_titles(service) == before  # nothing half-written
        assert service.index.get_meta("source") == source
        service.worker_command = None  # the next call tries again, and succeeds
        assert titles(service)[BETA] == "Renamed while the worker dies"
    finally:
        service.close()


def test_a_worker_that_dies_after_its_last_entry_leaves_the_index_complete_without_a_layout(tmp_path: Path):
    write(tmp_path / "g", version=3)
    service = service_for(tmp_path)
    service.worker_command = [sys.executable, "-c", DIES_AFTER_DONE]
    layout = service.settings.index_folder / "meetings.layout"
    try:
        assert set(titles(service)) == {ALPHA, BETA, GAMMA}
        assert not layout.exists()  # the next change is scanned
        service.worker_command = None
        data = state()
        data["documents"][BETA]["title"] = "Renamed after the worker died"
        write(tmp_path / "g", data, version=3)
        assert titles(service)[BETA] == "Renamed after the worker died"
        assert layout.exists()
    finally:
        service.close()


def test_a_worker_that_never_answers_is_stopped_after_its_time_limit(tmp_path: Path):
    write(tmp_path / "g")
    service = service_for(tmp_path)
    service.worker_command = [sys.executable, "-c", "import time; time.sleep(60)"]
    service.worker_timeout = 0.5
    try:
        with pytest.raises(Timeout, match="longer than"):
            service.refresh()
        assert service.index.count() == 0
    finally:
        service.close()


def test_a_worker_that_writes_garbage_is_an_error_not_an_index(tmp_path: Path):
    write(tmp_path / "g")
    service = service_for(tmp_path)
    service.worker_command = [sys.executable, "-c", "import sys; sys.stdout.buffer.write(b'\\0\\0\\0\\5hello')"]
    try:
        with pytest.raises(IOFailure):
            service.refresh()
        assert service.index.count() == 0
    finally:
        service.close()


def test_a_truncated_cache_read_by_the_worker_is_a_parse_error(tmp_path: Path):
    path = write(tmp_path / "g", version=3)
    path.write_bytes(path.read_bytes()[:-200])
    service = service_for(tmp_path)
    try:
        with pytest.raises(ParseError):
            service.refresh()
    finally:
        service.close()
