"""Shared fixtures of the vault tests: a vault in tmp_path and an MCP client over it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from deskmcp.vault.server import Settings, create_server
from tests.tool_calls import call as call
from tests.tool_calls import fail as fail

QUARTZ = Path(__file__).resolve().parents[2].parent / "shared" / "corpora" / "quartz-docs"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


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


Connect = Callable[..., Client]


@pytest.fixture
def connect(vault: Path, settings_for: Callable[..., Settings]) -> Connect:
    """An in-memory client over a fresh server on `vault` (enter it after writing the test data)."""

    def build(root: Path | None = None, **overrides: Any) -> Client:
        return Client(create_server(settings_for(root or vault, **overrides)))

    return build


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))
    return path


@pytest.fixture
async def client(connect: Connect) -> AsyncIterator[Client]:
    """A client over an empty vault, for tests that create their data through the tools."""
    async with connect() as c:
        yield c


def names(folder: Path) -> list[str]:
    """The entries of a folder, sorted (temp files included)."""
    return sorted(p.name for p in folder.iterdir())


def disk_fingerprints(root: Path) -> dict[str, str]:
    """`mtime_ns:size` of every visible note under `root`, as the index records them."""
    out: dict[str, str] = {}
    for path in root.rglob("*.md"):
        rel = path.relative_to(root).as_posix()
        if not any(part.startswith(".") for part in rel.split("/")):
            st = path.stat()
            out[rel] = f"{st.st_mtime_ns}:{st.st_size}"
    return out


def read(path: Path) -> bytes:
    return path.read_bytes()


def real(path: Path) -> str:
    return str(path.resolve())
