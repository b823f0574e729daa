"""The state file and the lock that keeps one orchestrator per vault."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from deskmcp.core.errors import Conflict
from deskmcp.orchestrator.state import LOCK_FILE, State, VaultLock, lock_holder


def test_state_round_trips_and_is_written_atomically(tmp_path: Path) -> None:
    state = State.load(tmp_path)
    state.ingested["m1"] = {"note": "Needs_Action/a.md", "labelled": True}
    state.save()
    assert [p.name for p in tmp_path.iterdir()] == ["orchestrator_state.json"]
    assert State.load(tmp_path).ingested == {"m1": {"note": "Needs_Action/a.md", "labelled": True}}


def test_a_corrupt_state_file_is_set_aside_not_overwritten(tmp_path: Path) -> None:
    (tmp_path / "orchestrator_state.json").write_text("{half", encoding="utf-8")
    state = State.load(tmp_path)
    assert state.ingested == {}
    [aside] = list(tmp_path.glob("orchestrator_state.json.corrupt-*"))
    assert aside.read_text(encoding="utf-8") == "{half"


def test_a_second_orchestrator_on_the_same_vault_is_refused(tmp_path: Path) -> None:
    with VaultLock(tmp_path):
        with pytest.raises(Conflict) as caught:
            VaultLock(tmp_path).acquire()
        assert caught.value.details["pid"] == os.getpid()
        assert lock_holder(tmp_path)["pid"] == os.getpid()  # type: ignore[index]
    assert not (tmp_path / LOCK_FILE).exists()


@pytest.mark.e2e
def test_a_stale_lock_of_a_dead_process_is_taken_over(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(dead.stdout)
    (tmp_path / LOCK_FILE).write_text(json.dumps({"pid": pid, "host": socket.gethostname(), "started": "x"}))
    assert lock_holder(tmp_path) is None
    lock = VaultLock(tmp_path)
    lock.acquire()
    assert json.loads((tmp_path / LOCK_FILE).read_text())["pid"] == os.getpid()
    lock.release()


def test_a_garbled_lock_file_counts_as_stale(tmp_path: Path) -> None:
    (tmp_path / LOCK_FILE).write_text("garbage")
    with VaultLock(tmp_path) as lock:
        assert lock.held
