"""Shared fixtures of the sheets tests: a workbook folder in tmp_path and an MCP client over it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from deskmcp.sheets.server import Settings, create_server
from tests.helpers.google import GOOGLE_ENVIRONMENT
from tests.helpers.tool_calls import Connect

ENVIRONMENT = (
    "SHEETS_BACKEND",
    "SHEETS_PATH",
    "SHEETS_FOLDERS",
    "SHEETS_READ_ONLY",
    "DESKMCP_TOOLSETS",
    "SHEETS_REQUESTS_PER_MINUTE",
    "SHEETS_MAX_CELLS",
    "SHEETS_FAST_WRITES",
    "SHEETS_FORMULA_BUDGET_CELLS",
    "SHEETS_CSV_ESCAPE_FORMULAS",
    *GOOGLE_ENVIRONMENT,
)


@pytest.fixture(autouse=True)
def _no_sheets_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings come from the tests alone, not from the environment of whoever runs them."""
    for name in ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "sheets"
    folder.mkdir()
    return folder


@pytest.fixture
def settings_for(tmp_path: Path) -> Callable[..., Settings]:
    def build(root: Path, **overrides: Any) -> Settings:
        return Settings(workspace=tmp_path / "ws", sheets_path=root, **overrides)

    return build


@pytest.fixture
def connect(root: Path, settings_for: Callable[..., Settings]) -> Connect:
    def build(folder: Path | None = None, **overrides: Any) -> Client:
        return Client(create_server(settings_for(folder or root, **overrides)))

    return build


@pytest.fixture
async def client(connect: Connect) -> AsyncIterator[Client]:
    async with connect() as c:
        yield c
