from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.authorization_server import AuthorizationServer, authorization_server, provider_missing
from tests.helpers.postgres import Postgres, fresh_database, session_cluster
from tests.helpers.tool_memo import remember_tools

if sys.dont_write_bytecode:
    # With PYTHONDONTWRITEBYTECODE set (as on many container images), every run would compile each
    # module and rewrite each test module's asserts again: about 10 CPU-seconds per process, paid
    # by every pytest-xdist worker. The suite keeps its compiled modules apart, in the git-ignored
    # .pytest_cache/pycache, and leaves no __pycache__ in the source tree.
    sys.pycache_prefix = str(Path(__file__).resolve().parent.parent / ".pytest_cache" / "pycache")
    sys.dont_write_bytecode = False

# Fixtures that start a process (an IMAP server, LibreOffice, the mermaid.js worker): every test that
# uses one, directly or through another fixture, is an e2e test, so `pytest -m "not e2e"` stays fast.
PROCESS_FIXTURES = frozenset({"dovecot", "dovecot_dot", "imap_server", "libreoffice_values", "renderer", "postgres"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        # A test may take its server by name as a parameter (`request.getfixturevalue(server)`).
        callspec = getattr(item, "callspec", None)
        if callspec is not None:
            used |= {value for value in callspec.params.values() if isinstance(value, str)}
        if used & PROCESS_FIXTURES:
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(autouse=True, scope="session")
def _tools_built_once() -> Iterator[None]:
    """Servers built by tests derive each tool's schemas once per session (tests/helpers/tool_memo.py)."""
    with remember_tools():
        yield


@pytest.fixture(scope="session")
def postgres() -> Postgres:
    """The test session's PostgreSQL cluster (tests/helpers/postgres.py), started on first use."""
    return session_cluster()


@pytest.fixture(scope="session")
def issuer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AuthorizationServer]:
    """oidc-provider on a free loopback port, started once per session for every test that signs in
    (skips, saying why, when node or the package is missing)."""
    if (reason := provider_missing()) is not None:
        pytest.skip(reason)
    with authorization_server(tmp_path_factory.mktemp("oidc")) as server:
        yield server


@pytest.fixture
def database(postgres: Postgres) -> Iterator[str]:
    """A database of its own for one test; the process's pools are closed after it."""
    from deskmcp.core.postgres import close_pools

    yield fresh_database(postgres)
    close_pools()


@pytest.fixture
def anyio_backend() -> str:
    """Async tests (`pytest.mark.anyio`) run on asyncio, the loop the servers run on in production."""
    return "asyncio"


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Keep tests away from the real user's data folders and settings."""
    for name in (
        "DESKMCP_WORKSPACE",
        "DESKMCP_INDEX_DIR",
        "DESKMCP_EMBEDDER",
        "DESKMCP_MODELS_DIR",
        "GRANOLA_CACHE_PATH",
        "VAULT_PATH",
        "DOCUMENTS_PATH",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home" / ".config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "home" / ".local" / "share"))
    monkeypatch.setenv("DESKMCP_TIMEZONE", "UTC")
