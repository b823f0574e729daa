"""`MCPClient` against a real stdio server process: timeouts, a killed server, fallbacks, tool errors."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest

from deskmcp.core.errors import MCPUnavailable, NotFound
from deskmcp.orchestrator.mcp_client import MCPClient
from tests.orchestrator import mail_stub

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

ROOT = Path(__file__).resolve().parents[2]


def stub_client(vault: Path, store: Path, monkeypatch: pytest.MonkeyPatch, timeout: float = 60) -> MCPClient:
    monkeypatch.setenv("STUB_MAIL_STORE", str(store))
    monkeypatch.chdir(ROOT)
    return MCPClient("mail", [sys.executable, "-m", "tests.orchestrator.mail_stub"], vault, timeout=timeout)


def set_flag(store: Path, **flags: bool) -> None:
    data = mail_stub.load(store)
    data.update(flags)
    mail_stub.save(store, data)


def events(vault: Path) -> list[dict]:
    return [json.loads(line) for p in (vault / "Logs").glob("orchestrator_*.jsonl") for line in p.open()]


async def test_a_killed_server_is_reported_then_started_again_on_the_next_call(
    vault: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with stub_client(vault, store, monkeypatch) as client:
        assert (await client.call_tool("list_emails", {}))["emails"] == []
        set_flag(store, die=True)
        with anyio.fail_after(120), pytest.raises(MCPUnavailable):
            await client.call_tool("list_emails", {})
        set_flag(store, die=False)
        assert (await client.call_tool("list_emails", {}))["emails"] == []
    [event] = [e for e in events(vault) if e["event"] == "mcp_unavailable"]
    assert event["server"] == "mail" and event["tool"] == "list_emails" and event["fallback"] is False


async def test_a_hung_server_times_out_and_the_fallback_answers(
    vault: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_flag(store, hang=True)
    async with stub_client(vault, store, monkeypatch, timeout=3) as client:
        with anyio.fail_after(120):
            result = await client.call_tool("list_emails", {}, fallback=lambda: {"emails": ["from the fallback"]})
    assert result == {"emails": ["from the fallback"]}
    assert [e["fallback"] for e in events(vault) if e["event"] == "mcp_unavailable"] == [True]


async def test_a_tool_error_is_raised_as_its_code_not_as_unavailable(
    vault: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with stub_client(vault, store, monkeypatch) as client:
        with pytest.raises(NotFound):
            await client.call_tool("get_email", {"message_id": "nope"})
    assert not (vault / "Logs").exists() or not events(vault)


async def test_a_server_that_cannot_start_runs_the_fallback(vault: Path) -> None:
    async with MCPClient("vault", ["/nonexistent/deskmcp"], vault, timeout=10) as client:
        result = await client.call_tool("read_note", {"path": "x"}, fallback=lambda: {"path": "x", "local": True})
    assert result == {"path": "x", "local": True}
