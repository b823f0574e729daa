"""`deskmcp` as a real process for the e2e tests: its environment, and a server started until ready."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def write_meeting_cache(folder: Path) -> None:
    """A Granola cache in `folder` holding one meeting, "Quarterly planning" (id m-1)."""
    folder.mkdir(parents=True)
    state = {"documents": {"m-1": {"id": "m-1", "title": "Quarterly planning", "created_at": "2026-11-02T09:00:00Z"}}}
    (folder / "cache-v4.json").write_text(json.dumps({"cache": {"state": state}}), encoding="utf-8")


def environment(workspace: Path, **extra: str) -> dict[str, str]:
    """This process's environment pointed at `workspace` (Granola cache in workspace/granola), no token."""
    env = {k: v for k, v in os.environ.items() if k != "DESKMCP_TOKEN"}
    env.update(DESKMCP_WORKSPACE=str(workspace), GRANOLA_CACHE_PATH=str(workspace / "granola"), **extra)
    return env


@contextmanager
def server_process(args: list[str], env: dict[str, str], ready: str, seconds: float = 60) -> Iterator[list[str]]:
    """Start `deskmcp ARGS`; yields once a stderr line contains `ready`, with the stderr lines so far."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "deskmcp.cli", *args],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
    )
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stderr is not None
    stderr = proc.stderr
    # A reader thread, so the wait below is bounded even when the process prints nothing.
    threading.Thread(target=lambda: [lines.put(line) for line in stderr], daemon=True).start()
    seen: list[str] = []
    try:
        deadline = time.monotonic() + seconds
        while not any(ready in line for line in seen):
            seen.append(lines.get(timeout=max(0.01, deadline - time.monotonic())))
        yield seen
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


def orchestrate(env: dict[str, str], *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run `deskmcp orchestrate ARGS` from the checkout to its end, its output captured as text
    (`timeout` only bounds a hung run)."""
    return subprocess.run(
        [sys.executable, "-m", "deskmcp.cli", "orchestrate", *args],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
