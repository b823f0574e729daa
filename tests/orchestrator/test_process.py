"""`deskmcp orchestrate` as a real process over real server subprocesses: crashes, restarts, watch, stop.

The vault server is `deskmcp serve vault`; the mail server is a stand-in speaking the mail
tools' contract over a JSON file, so what was sent can be counted across processes.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.helpers.orchestrator import add_mail, sent
from tests.helpers.processes import orchestrate

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
RULES = """rules:
  - match: {subject: meet}
    decision: draft_reply
    reason: Meeting
    reply: "Tuesday works."
"""


def environment(tmp_path: Path, vault: Path, store: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VAULT_", "ORCHESTRATOR_", "DESKMCP_"))}
    env.update(
        DESKMCP_WORKSPACE=str(tmp_path / "ws"),
        VAULT_PATH=str(vault),
        STUB_MAIL_STORE=str(store),
        ORCHESTRATOR_MAIL_COMMAND=f"{sys.executable} -m tests.orchestrator.mail_stub",
        ORCHESTRATOR_CALL_TIMEOUT="30",
        **extra,
    )
    return env


def prepare(tmp_path: Path, vault: Path, store: Path) -> tuple[dict[str, str], Path]:
    """Ingest and draft one reply in a first run, then approve it by moving the file."""
    (vault / "triage-rules.yaml").write_text(RULES, encoding="utf-8")
    add_mail(store, "m1", "ana@example.org", "Shall we meet?", "Tuesday?")
    env = environment(tmp_path, vault, store)
    first = orchestrate(env, "--once")
    assert first.returncode == 0, first.stderr
    assert "ingested 1, decided 1" in first.stdout
    [draft] = (vault / "Drafts").glob("*.md")
    approved = vault / "Approved" / draft.name
    draft.rename(approved)
    return env, approved


def test_a_dead_vault_server_falls_back_to_direct_file_operations(tmp_path: Path, vault: Path, store: Path) -> None:
    add_mail(store, "m1", "ana@example.org", "Hello", "Hi")
    env = environment(tmp_path, vault, store, ORCHESTRATOR_VAULT_COMMAND=f"{sys.executable} -c pass")
    result = orchestrate(env, "--once", "--decider", "assistant")
    assert result.returncode == 0, result.stderr
    assert "ingested 1" in result.stdout
    assert len(list((vault / "Needs_Action").glob("*.md"))) == 1
    events = [json.loads(line) for p in (vault / "Logs").glob("orchestrator_*.jsonl") for line in p.open()]
    unavailable = [e for e in events if e["event"] == "mcp_unavailable"]
    assert unavailable and unavailable[0]["server"] == "vault" and unavailable[0]["fallback"] is True


def test_a_second_orchestrator_on_the_same_vault_refuses_to_start(tmp_path: Path, vault: Path, store: Path) -> None:
    (vault / "Logs").mkdir()
    holder = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        lock = {"pid": holder.pid, "host": os.uname().nodename, "started": "now"}
        (vault / "Logs" / "orchestrator.lock").write_text(json.dumps(lock))
        result = orchestrate(environment(tmp_path, vault, store), "--once")
    finally:
        holder.communicate(b"")
    assert result.returncode == 2
    assert f"pid {holder.pid}" in result.stderr


def test_watch_sends_an_approval_at_once_and_stops_cleanly_on_sigterm(tmp_path: Path, vault: Path, store: Path) -> None:
    env, approved = prepare(tmp_path, vault, store)
    approved.rename(vault / "Drafts" / approved.name)  # not approved yet
    proc = subprocess.Popen(
        [sys.executable, "-m", "deskmcp.cli", "orchestrate", "--watch", "--poll", "3600"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stdout is not None
    stdout = proc.stdout
    threading.Thread(target=lambda: [lines.put(line) for line in stdout], daemon=True).start()

    def wait_for(text: str, seconds: float = 60) -> None:
        deadline = time.monotonic() + seconds
        while text not in lines.get(timeout=max(0.01, deadline - time.monotonic())):
            pass

    try:
        wait_for("ingested 0")  # the first full pass is over
        (vault / "Drafts" / approved.name).rename(approved)
        wait_for("sent 1")
        assert len(sent(store)) == 1
        proc.send_signal(signal.SIGTERM)
        wait_for("stopped")
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert (vault / "Done" / approved.name).exists()
