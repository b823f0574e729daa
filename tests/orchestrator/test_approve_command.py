"""`deskmcp orchestrate approve NOTE`: a person approves a draft at a terminal. It shows the draft,
reads y/N from the terminal, and refuses to read the answer from a pipe (a program, the assistant's
shell tool, cannot answer for the person)."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client

from deskmcp.orchestrator.server import create_server
from deskmcp.orchestrator.settings import OrchestratorSettings
from tests.helpers.orchestrator import drafted
from tests.helpers.processes import REPO, environment

pytestmark = pytest.mark.e2e


def make_draft(tmp_path: Path, vault: Path) -> str:
    settings = OrchestratorSettings(workspace=tmp_path / "ws", vault_path=vault, decider="assistant")

    async def main() -> str:
        async with Client(create_server(settings)) as client:
            return await drafted(client, vault)

    return anyio.run(main)


def on_terminal(args: list[str], env: dict[str, str], answer: bytes) -> tuple[int, str]:
    """Run `deskmcp ARGS` on a pseudo-terminal, type `answer` once it asks; its exit code and screen."""
    leader, follower = os.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "deskmcp.cli", *args],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env=env,
        cwd=REPO,
    )
    os.close(follower)
    screen = b""
    answered = False
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the terminal closed: the process ended
                break
            screen += chunk
        if not answered and b"[y/N]" in screen:
            os.write(leader, answer)
            answered = True
        if proc.poll() is not None and not ready:
            break
    os.close(leader)
    return proc.wait(timeout=30), screen.decode("utf-8", "replace")


def test_a_person_approves_a_draft_at_the_terminal_after_seeing_it(tmp_path: Path, vault: Path) -> None:
    draft = make_draft(tmp_path, vault)
    env = environment(tmp_path / "ws", VAULT_PATH=str(vault))
    code, screen = on_terminal(["orchestrate", "approve", draft], env, b"y\n")
    assert code == 0, screen
    assert "To: Ana <ana@example.org>" in screen
    assert "Friday works!" in screen
    assert (vault / draft.replace("Drafts/", "Approved/")).is_file()


def test_answering_no_at_the_terminal_leaves_the_draft(tmp_path: Path, vault: Path) -> None:
    draft = make_draft(tmp_path, vault)
    env = environment(tmp_path / "ws", VAULT_PATH=str(vault))
    code, screen = on_terminal(["orchestrate", "approve", draft], env, b"n\n")
    assert code == 1, screen
    assert "Not approved" in screen
    assert (vault / draft).is_file()


def test_security_orchestrate_approve_does_not_take_its_answer_from_a_pipe(tmp_path: Path, vault: Path) -> None:
    draft = make_draft(tmp_path, vault)
    env = environment(tmp_path / "ws", VAULT_PATH=str(vault))
    done = subprocess.run(
        [sys.executable, "-m", "deskmcp.cli", "orchestrate", "approve", draft],
        input="y\n",
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=60,
    )
    assert done.returncode == 2
    assert "needs you at a terminal" in done.stderr
    assert (vault / draft).is_file()
    assert not (vault / "Approved").exists() or list((vault / "Approved").iterdir()) == []
