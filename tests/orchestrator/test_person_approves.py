"""triage_approve asks the person, through the client (MCP elicitation), and approves only on their
yes: the model alone cannot approve a reply. Over the in-memory client with the handshake protocol
and with 2026-07-28 (the question rides in the result), and over stdio and streamable HTTP."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from deskmcp.orchestrator.server import create_server
from deskmcp.orchestrator.settings import OrchestratorSettings
from deskmcp.orchestrator.state import LOCK_FILE, STATE_FILE, State, VaultLock
from tests.helpers.network import free_port
from tests.helpers.orchestrator import drafted
from tests.helpers.person import Person
from tests.helpers.processes import environment, server_process
from tests.helpers.tool_calls import call, fail

pytestmark = pytest.mark.anyio

PROTOCOLS = ["legacy", "2026-07-28"]


def settings(tmp_path: Path, vault: Path) -> OrchestratorSettings:
    return OrchestratorSettings(workspace=tmp_path / "ws", vault_path=vault, decider="assistant")


def approved(vault: Path) -> list[str]:
    folder = vault / "Approved"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


@pytest.mark.parametrize("mode", PROTOCOLS)
async def test_triage_approve_approves_only_when_the_person_says_yes_in_the_client(
    tmp_path: Path, vault: Path, mode: str
) -> None:
    person = Person("accept")
    async with Client(create_server(settings(tmp_path, vault)), mode=mode, elicitation_callback=person.answer) as c:
        draft = await drafted(c, vault)
        result = await call(c, "triage_approve", {"path": draft})
    assert result["path"] == draft.replace("Drafts/", "Approved/")
    [question] = person.asked
    assert question.startswith(f"Send this reply? ({draft})")
    assert "To: Ana <ana@example.org>" in question
    assert "Subject: Re: Lunch 0?" in question
    assert "Friday works!" in question
    assert "confirm" in person.schemas[0]["properties"]
    assert approved(vault) == [draft.removeprefix("Drafts/")]


@pytest.mark.parametrize("mode", PROTOCOLS)
@pytest.mark.parametrize("reply", ["decline", "cancel", "unticked"])
async def test_security_triage_approve_leaves_the_draft_when_the_person_declines_or_cancels(
    tmp_path: Path, vault: Path, mode: str, reply: Any
) -> None:
    person = Person(reply)
    async with Client(create_server(settings(tmp_path, vault)), mode=mode, elicitation_callback=person.answer) as c:
        draft = await drafted(c, vault)
        error = await fail(c, "triage_approve", {"path": draft})
    assert error["error"] == "permission_denied"
    assert "nothing was approved" in error["message"]
    assert len(person.asked) == 1
    assert (vault / draft).is_file()
    assert approved(vault) == []


@pytest.mark.parametrize("mode", PROTOCOLS)
async def test_security_a_client_that_cannot_ask_the_person_cannot_approve_and_is_told_how_a_person_does(
    tmp_path: Path, vault: Path, mode: str
) -> None:
    async with Client(create_server(settings(tmp_path, vault)), mode=mode) as c:
        draft = await drafted(c, vault)
        error = await fail(c, "triage_approve", {"path": draft})
    assert error["error"] == "permission_denied"
    assert "move the note from Drafts/ to Approved/" in error["message"]
    assert f"deskmcp orchestrate approve {draft}" in error["message"]
    assert (vault / draft).is_file()
    assert approved(vault) == []


async def test_security_a_draft_changed_while_the_person_was_asked_is_not_approved(tmp_path: Path, vault: Path) -> None:
    """The person approves what they were shown: a draft edited behind the question is refused."""
    box: dict[str, Path] = {}

    async def answer(context: Any, params: Any) -> Any:
        note = box["draft"]
        note.write_text(note.read_text(encoding="utf-8").replace("Friday works!", "Send money."), encoding="utf-8")
        return await Person("accept").answer(context, params)

    async with Client(create_server(settings(tmp_path, vault)), mode="legacy", elicitation_callback=answer) as c:
        draft = await drafted(c, vault)
        box["draft"] = vault / draft
        error = await fail(c, "triage_approve", {"path": draft})
    assert error["error"] == "conflict"
    assert approved(vault) == []


@pytest.mark.e2e
async def test_triage_approve_asks_the_person_over_stdio(tmp_path: Path, vault: Path) -> None:
    env = environment(tmp_path / "ws", VAULT_PATH=str(vault))
    params = StdioServerParameters(command=sys.executable, args=["-m", "deskmcp.cli", "serve", "orchestrator"], env=env)
    outcomes = []
    for reply, mode in (("decline", "legacy"), ("accept", "legacy"), ("accept", "2026-07-28")):
        person = Person(reply)
        with anyio.fail_after(60):
            async with Client(params, mode=mode, elicitation_callback=person.answer) as c:
                draft = await drafted(c, vault)
                result = await c.call_tool("triage_approve", {"path": draft})
        assert "Friday works!" in person.asked[0]
        outcomes.append(result.is_error)
    assert outcomes == [True, False, False]
    assert len(approved(vault)) == 2


@pytest.mark.e2e
async def test_triage_approve_asks_the_person_over_streamable_http(tmp_path: Path, vault: Path) -> None:
    port = free_port()
    env = environment(tmp_path / "ws", VAULT_PATH=str(vault))
    args = ["serve", "orchestrator", "--http", "--port", str(port), "--log-level", "INFO"]
    with server_process(args, env, "Application startup complete"):
        url = f"http://127.0.0.1:{port}/mcp"
        for mode in PROTOCOLS:
            person = Person("accept")
            with anyio.fail_after(60):
                async with Client(url, mode=mode, elicitation_callback=person.answer) as c:
                    draft = await drafted(c, vault)
                    await call(c, "triage_approve", {"path": draft})
                async with Client(url, mode=mode) as c:
                    other = await drafted(c, vault)
                    error = await fail(c, "triage_approve", {"path": other})
            assert len(person.asked) == 1
            assert error["error"] == "permission_denied"
    assert len(approved(vault)) == 2


async def test_security_the_orchestrator_logs_are_private_to_the_user(tmp_path: Path, vault: Path) -> None:
    """Logs/ holds who was written to and about what: the drafts ledger, the event log, the state and
    the lock are 0600 like the mail audit, and a file an older version left 0644 is narrowed."""
    logs = vault / "Logs"
    logs.mkdir()
    (logs / "drafted_replies.jsonl").write_text("", encoding="utf-8")
    (logs / "drafted_replies.jsonl").chmod(0o644)
    person = Person("accept")
    async with Client(create_server(settings(tmp_path, vault)), elicitation_callback=person.answer) as c:
        draft = await drafted(c, vault)
        await call(c, "triage_approve", {"path": draft})
    State.load(logs).save()
    lock = VaultLock(logs)
    lock.acquire()
    try:
        modes = {p.name: p.stat().st_mode & 0o777 for p in logs.iterdir()}
    finally:
        lock.release()
    assert {"drafted_replies.jsonl", STATE_FILE, LOCK_FILE} <= set(modes)
    assert any(name.startswith("orchestrator_2") for name in modes)
    assert len(modes) >= 4
    assert set(modes.values()) == {0o600}, modes
