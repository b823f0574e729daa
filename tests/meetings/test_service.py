import logging
import os
import time
from pathlib import Path

import pytest

from deskmcp.meetings.service import MeetingService
from deskmcp.meetings.settings import MeetingsSettings

from .fixtures import BETA, state, write


def test_changing_one_meeting_rewrites_only_that_meeting(tmp_path: Path, caplog: pytest.LogCaptureFixture):
    write(tmp_path / "g")
    service = MeetingService(MeetingsSettings(workspace=tmp_path / "ws", cache_path=tmp_path / "g"))
    service.refresh()
    data = state()
    data["documents"][BETA]["title"] = "Hiring sync (moved)"
    path = write(tmp_path / "g", data)
    os.utime(path, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
    with caplog.at_level(logging.INFO, logger="deskmcp.meetings.service"):
        service.refresh()
    assert "0 added, 1 updated, 0 removed, 2 unchanged" in caplog.text
    assert service.get(BETA).title == "Hiring sync (moved)"
    service.close()


def test_a_restarted_service_does_not_reparse_an_unchanged_cache(tmp_path: Path, caplog: pytest.LogCaptureFixture):
    write(tmp_path / "g")
    settings = MeetingsSettings(workspace=tmp_path / "ws", cache_path=tmp_path / "g")
    first = MeetingService(settings)
    first.refresh()
    first.close()
    with caplog.at_level(logging.INFO, logger="deskmcp.meetings.service"):
        second = MeetingService(settings)
        second.refresh()
        assert second.get(BETA).title == "Hiring sync"
    assert "indexed" not in caplog.text
    second.close()


def test_a_removed_meeting_disappears_from_the_index(tmp_path: Path):
    write(tmp_path / "g")
    service = MeetingService(MeetingsSettings(workspace=tmp_path / "ws", cache_path=tmp_path / "g"))
    service.refresh()
    data = state()
    data["documents"][BETA]["deleted_at"] = "2024-06-01T00:00:00Z"
    path = write(tmp_path / "g", data)
    os.utime(path, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
    assert service.list_meetings(service.filters(), q=None, limit=10, cursor=None).total == 2
    service.close()
