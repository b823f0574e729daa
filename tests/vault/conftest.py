"""Shared fixtures of the vault tests: a vault in tmp_path and an MCP client over it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from deskmcp.vault.server import Settings, create_server
from tests.helpers.tool_calls import Connect


@pytest.fixture(autouse=True)
def _no_vault_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings come from the tests alone, not from the environment of whoever runs them."""
    for name in (
        "VAULT_PATH",
        "VAULT_READ_ONLY",
        "VAULT_MAX_NOTE_BYTES",
        "VAULT_WATCH",
        "VAULT_INDEX_WORKERS",
        "VAULT_PROTECTED_FOLDERS",
        "DESKMCP_INDEX_DIR",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    root.mkdir()
    return root


@pytest.fixture
def settings_for(tmp_path: Path) -> Callable[..., Settings]:
    def build(root: Path, **overrides: Any) -> Settings:
        return Settings(workspace=tmp_path / "ws", vault_path=root, **overrides)

    return build


@pytest.fixture
def connect(vault: Path, settings_for: Callable[..., Settings]) -> Connect:
    """An in-memory client over a fresh server on `vault` (enter it after writing the test data)."""

    def build(root: Path | None = None, **overrides: Any) -> Client:
        return Client(create_server(settings_for(root or vault, **overrides)))

    return build


@pytest.fixture
async def client(connect: Connect) -> AsyncIterator[Client]:
    """A client over an empty vault, for tests that create their data through the tools."""
    async with connect() as c:
        yield c
