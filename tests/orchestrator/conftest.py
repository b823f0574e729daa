"""Fixtures of the orchestrator tests: a temp vault, a mail store, and an orchestrator over them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from deskmcp.orchestrator.access import MailAccess
from deskmcp.orchestrator.deciders import create_decider
from deskmcp.orchestrator.mcp_client import MCPClient
from deskmcp.orchestrator.mcp_vault import open_vault
from deskmcp.orchestrator.service import Orchestrator
from deskmcp.orchestrator.settings import OrchestratorSettings
from tests.orchestrator import mail_stub

ENV_NAMES = (
    "VAULT_PATH",
    "DESKMCP_INDEX_DIR",
    "ORCHESTRATOR_DECIDER",
    "ORCHESTRATOR_MCP_URL",
    "ORCHESTRATOR_MAIL_COMMAND",
    "ORCHESTRATOR_VAULT_COMMAND",
    "ORCHESTRATOR_LLM_BASE_URL",
    "ORCHESTRATOR_LLM_MODEL",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_MODEL",
    "DESKMCP_ORCHESTRATOR_FAULT",
    "VAULT_PROTECTED_FOLDERS",
    "MAIL_ALLOWED_RECIPIENTS",
    "ORCHESTRATOR_TRUSTED_RECIPIENTS",
)


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV_NAMES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    root.mkdir()
    return root


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "mail.json"
    mail_stub.save(path, mail_stub.load(path))
    return path


@pytest.fixture
def settings_for(tmp_path: Path, vault: Path) -> Callable[..., OrchestratorSettings]:
    def build(**overrides: Any) -> OrchestratorSettings:
        return OrchestratorSettings(workspace=tmp_path / "ws", vault_path=vault, **overrides)

    return build


OpenOrchestrator = Callable[..., Any]


@pytest.fixture
def orchestrator(settings_for: Callable[..., OrchestratorSettings], store: Path) -> Callable[..., Any]:
    """`async with orchestrator(**settings) as o:` an orchestrator on the vault (direct) and the mail stub."""
    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def build(*, dry_run: bool = False, **overrides: Any) -> AsyncIterator[Orchestrator]:
        settings = settings_for(**overrides)
        client = MCPClient("mail", ["unused"], settings.root, server=mail_stub.create_server(store))
        async with client:
            decider = create_decider(settings)
            yield Orchestrator(settings, open_vault(settings.root), MailAccess(client), decider, dry_run=dry_run)

    return build
