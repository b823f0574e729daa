from __future__ import annotations

from pathlib import Path

import pytest

# Re-exported only for tests/mail/test_mail_dovecot.py until its import line moves to tests.helpers.
from tests.helpers.corpora import shared_corpus as shared_corpus


@pytest.fixture
def anyio_backend() -> str:
    """Async tests (`pytest.mark.anyio`) run on asyncio, the loop the servers run on in production."""
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
