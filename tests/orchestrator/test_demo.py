"""The orchestrator's demo: one whole cycle on the generated offline mailbox and vault."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from deskmcp.demo import orchestrator as demo
from deskmcp.demo.tour import resolve
from deskmcp.orchestrator.server import Settings, create_server

pytestmark = pytest.mark.anyio


@pytest.mark.e2e
async def test_every_demo_step_runs_one_whole_cycle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    demo.generate(tmp_path / "triage", random.Random(2026))
    for name, value in demo.environment(tmp_path).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("DESKMCP_WORKSPACE", str(tmp_path))
    results: list[dict[str, Any]] = []
    last: Any = None
    async with Client(create_server(Settings())) as client:
        for _caption, tool, arguments in demo.STEPS:
            if tool in demo.PERSON_STEPS:  # the person's own move, outside the assistant
                last = demo.PERSON_STEPS[tool](tmp_path, resolve(arguments, last))
                results.append(last)
                continue
            result = await client.call_tool(tool, resolve(arguments, last))
            assert not result.is_error, (tool, result.content)
            last = result.structured_content
            results.append(last)
    first, _drafts, approved, second, status = results
    inbox = len(list((tmp_path / "triage" / "mail").glob("[cn][ue][rw]/*")))
    assert first["ingested"] == inbox > 0
    assert first["decided"] == inbox
    assert approved["path"].startswith("Approved/")
    assert second["sent"] == 1
    assert status["folders"]["Approved"] == 0
    assert status["sent"] == 1
    assert status["send_audit"]
    vault = tmp_path / "triage" / "vault"
    assert (vault / "triage-rules.yaml").exists()
    assert json.loads((vault / "Logs" / "orchestrator_state.json").read_text())["sent"]
