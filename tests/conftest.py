from __future__ import annotations

from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Keep tests away from the real user's data folders and settings."""
    for name in ("DESKMCP_WORKSPACE", "DESKMCP_INDEX_DIR", "GRANOLA_CACHE_PATH", "VAULT_PATH", "DOCUMENTS_PATH"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home" / ".config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "home" / ".local" / "share"))
    monkeypatch.setenv("DESKMCP_TIMEZONE", "UTC")


def shared_corpus(name: str) -> Path:
    """A folder of the shared test corpora (beside the checkout), or skip the test when they are absent."""
    path = SHARED / "corpora" / name
    if not path.is_dir():
        pytest.skip(f"the {name} corpus is not installed beside the checkout")
    return path
