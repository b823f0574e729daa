"""Describing and dry runs write nothing: `orchestrate --once --dry-run`, `triage_status`,
`triage_list` and `triage_run dry_run=true` leave the vault byte for byte as it was."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client

from deskmcp.orchestrator.server import create_server
from deskmcp.orchestrator.settings import OrchestratorSettings
from tests.helpers.orchestrator import add_mail, sent
from tests.helpers.processes import orchestrate as run_orchestrate
from tests.helpers.tool_calls import call

ROOT = Path(__file__).resolve().parents[2]
STUB = f"{sys.executable} -m tests.orchestrator.mail_stub"


def tree(root: Path) -> dict[str, bytes | None]:
    """Every file (with its bytes) and folder (None) under `root`, hidden ones included."""
    return {p.relative_to(root).as_posix(): None if p.is_dir() else p.read_bytes() for p in sorted(root.rglob("*"))}


def lived_in(vault: Path) -> None:
    """A vault the flow has used: notes, a rules file of the person's, a corrupt state file."""
    (vault / "Projects").mkdir()
    (vault / "Projects" / "Plan.md").write_text("# Plan\n", encoding="utf-8")
    (vault / "Needs_Action").mkdir()
    (vault / "Needs_Action" / "a.md").write_text("---\nstatus: pending\nsubject: Can we meet?\n---\n> Hi\n")
    (vault / "Logs").mkdir()
    (vault / "Logs" / "orchestrator_state.json").write_text("{not json", encoding="utf-8")


def orchestrate(tmp_path: Path, store: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("VAULT_", "ORCHESTRATOR_", "DESKMCP_", "MAIL_"))}
    base.update(
        DESKMCP_WORKSPACE=str(tmp_path / "ws"),
        STUB_MAIL_STORE=str(store),
        ORCHESTRATOR_MAIL_COMMAND=STUB,
        ORCHESTRATOR_CALL_TIMEOUT="30",
        **env,
    )
    return run_orchestrate(base, *args, timeout=120)


@pytest.mark.e2e
def test_the_documented_dry_run_on_a_fresh_machine_succeeds_and_creates_no_vault(tmp_path: Path, store: Path) -> None:
    add_mail(store, "m1", "Ana <ana@example.org>", "Can we meet?", "Tuesday?")
    done = orchestrate(tmp_path, store, "--once", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("dry run: would have ingested 1"), done.stdout
    assert "Could not write" not in done.stderr
    assert not (tmp_path / "ws" / "vault").exists()
    assert sent(store) == []


@pytest.mark.e2e
def test_a_dry_run_leaves_a_lived_in_vault_byte_identical(tmp_path: Path, vault: Path, store: Path) -> None:
    lived_in(vault)
    add_mail(store, "m1", "Ana <ana@example.org>", "Can we meet?", "Tuesday?")
    before = tree(vault)
    done = orchestrate(tmp_path, store, "--once", "--dry-run", VAULT_PATH=str(vault))
    assert done.returncode == 0, done.stderr
    assert "would ingest: Can we meet?" in done.stdout
    assert "would decide draft_reply: Can we meet?" in done.stdout  # the example rules, read in memory
    assert tree(vault) == before
    assert "AI_PROCESSED" not in str(store.read_bytes())


@pytest.mark.anyio
@pytest.mark.e2e
@pytest.mark.parametrize("contents", ["empty", "lived_in"])
async def test_triage_status_list_and_a_dry_run_write_nothing_in_the_vault(
    tmp_path: Path, vault: Path, store: Path, monkeypatch: pytest.MonkeyPatch, contents: str
) -> None:
    monkeypatch.setenv("STUB_MAIL_STORE", str(store))
    monkeypatch.chdir(ROOT)
    if contents == "lived_in":
        lived_in(vault)
    add_mail(store, "m1", "Ana <ana@example.org>", "Can we meet?", "Tuesday?")
    before = tree(vault)
    settings = OrchestratorSettings(workspace=tmp_path / "ws", vault_path=vault, mail_command=STUB)
    async with Client(create_server(settings)) as client:
        status = await call(client, "triage_status")
        await call(client, "triage_list", {"stage": "decision"})
        await call(client, "triage_list", {"stage": "approval"})
        summary = await call(client, "triage_run", {"dry_run": True})
    assert tree(vault) == before
    assert status["problem"] is None
    assert summary["dry_run"] is True
    assert summary["ingested"] == 1
    assert sent(store) == []


@pytest.mark.anyio
async def test_triage_status_reports_a_missing_vault_without_creating_it(tmp_path: Path, store: Path) -> None:
    missing = tmp_path / "gone"
    settings = OrchestratorSettings(workspace=tmp_path / "ws", vault_path=missing, mail_command=STUB)
    async with Client(create_server(settings)) as client:
        status = await call(client, "triage_status")
        summary = await call(client, "triage_run", {"dry_run": True})
    assert "does not exist" in status["problem"]
    assert "does not exist" in summary["skipped"]
    assert not missing.exists()
