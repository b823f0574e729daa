"""Shared fixtures of the diagrams tests: a project folder in tmp_path and an MCP client over it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from deskmcp.core.settings import environment_names
from deskmcp.diagrams.server import Settings, create_server
from deskmcp.diagrams.service import DiagramsService
from tests.helpers.tool_calls import Connect

ENVIRONMENT = tuple(name for field, info in Settings.model_fields.items() for name in environment_names(field, info))
"""Every name a diagrams setting is read by: the prefixed one, the conventional and the old ones."""


@pytest.fixture(autouse=True)
def _no_diagrams_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings come from the tests alone, not from the environment of whoever runs them."""
    for name in ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


@pytest.fixture
def settings_for(tmp_path: Path) -> Callable[..., Settings]:
    def build(root: Path, **overrides: Any) -> Settings:
        return Settings(workspace=tmp_path / "ws", project_root=root, **overrides)

    return build


@pytest.fixture
def connect(project: Path, settings_for: Callable[..., Settings]) -> Connect:
    """An in-memory client over a fresh server on `project` (enter it after writing the test data)."""

    def build(root: Path | None = None, service: DiagramsService | None = None, **overrides: Any) -> Client:
        settings = settings_for(root or project, **overrides)
        return Client(create_server(settings, service))

    return build
