"""A throwaway PostgreSQL cluster on a free loopback port, for the tests that need a real database.

`postgres_cluster()` runs initdb into a temporary folder and starts the server there; as root it
runs both as the `postgres` OS user (PostgreSQL refuses to run as root), which then owns the
folder. The cluster is stopped and its folder removed at the end. Without PostgreSQL's programs
(Debian's `postgresql`, under /usr/lib/postgresql/*/bin) `pytest.skip` says so.

Tests share one cluster per test session through `session_cluster()`, which the root conftest's
`postgres` fixture returns (a test using it is e2e), and take a database of their own per test
with `fresh_database(cluster)` (the `database` fixture).
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers.network import free_port


def postgres_bin() -> Path | None:
    """The newest installed PostgreSQL's program folder, or None."""
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin"),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
    )
    found = [p for p in found if (p / "initdb").is_file() and (p / "pg_ctl").is_file()]
    return found[-1] if found else None


@dataclass(frozen=True)
class Postgres:
    host: str
    port: int
    user: str

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{self.user}@{self.host}:{self.port}/{database}"


def _as_owner(argv: list[str], root: bool) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *argv] if root else argv


_DATA_FOLDERS: dict[tuple[str, int], Path] = {}
"""The data folder of each running cluster this process started, by host and port."""


@contextmanager
def postgres_cluster() -> Iterator[Postgres]:
    """Start a cluster (trust authentication, loopback only); skip the test when PostgreSQL is missing."""
    bin_dir = postgres_bin()
    if bin_dir is None:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql); .ci/run installs it")
    root = os.geteuid() == 0
    if root and shutil.which("runuser") is None:
        pytest.skip("running as root without runuser: PostgreSQL cannot be started as the postgres user")
    folder = Path(tempfile.mkdtemp(prefix="deskmcp-pg-"))
    data, sockets = folder / "data", folder / "run"
    sockets.mkdir()
    if root:
        shutil.chown(folder, "postgres", "postgres")
        shutil.chown(sockets, "postgres", "postgres")
    user = "postgres" if root else os.environ.get("USER") or "postgres"
    env = {**os.environ, "LC_ALL": "C", "TZ": "UTC"}
    port = free_port()
    ctl = str(bin_dir / "pg_ctl")
    try:
        subprocess.run(
            _as_owner(
                [str(bin_dir / "initdb"), "-D", str(data), "-U", user, "-A", "trust", "-E", "UTF8", "--no-sync"], root
            ),
            check=True,
            capture_output=True,
            env=env,
            timeout=120,
        )
        options = f"-h 127.0.0.1 -p {port} -k {sockets} -c fsync=off -c full_page_writes=off -c max_connections=60"
        subprocess.run(
            _as_owner(
                [ctl, "-D", str(data), "-o", options, "-l", str(folder / "log"), "-w", "-t", "60", "start"], root
            ),
            check=True,
            capture_output=True,
            env=env,
            timeout=90,
        )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        log = (folder / "log").read_text(encoding="utf-8", errors="replace") if (folder / "log").exists() else ""
        shutil.rmtree(folder, ignore_errors=True)
        raise RuntimeError(f"PostgreSQL did not start: {exc}\n{getattr(exc, 'stderr', b'')!r}\n{log}") from exc
    _DATA_FOLDERS[("127.0.0.1", port)] = data
    try:
        yield Postgres("127.0.0.1", port, user)
    finally:
        _DATA_FOLDERS.pop(("127.0.0.1", port), None)
        subprocess.run(
            _as_owner([ctl, "-D", str(data), "-m", "immediate", "-w", "stop"], root),
            capture_output=True,
            env=env,
            timeout=60,
            check=False,
        )
        shutil.rmtree(folder, ignore_errors=True)


_shared: list[Postgres] = []
_shared_lock = threading.Lock()


def session_cluster() -> Postgres:
    """One cluster for the whole test session, started on first use and dropped when the session's
    process ends; skips (as `postgres_cluster`) when PostgreSQL is not installed."""
    with _shared_lock:
        if not _shared:
            running = postgres_cluster()
            _shared.append(running.__enter__())
            atexit.register(running.__exit__, None, None, None)
        return _shared[0]


def fresh_database(cluster: Postgres) -> str:
    """A new, empty database on `cluster`; its URL."""
    import psycopg
    from psycopg import sql

    name = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(cluster.url(), autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return cluster.url(name)


@dataclass
class StoppableCluster:
    """A cluster of a test's own, which the test may stop and start again (same port, same data)."""

    server: Postgres
    ctl: list[str]
    root: bool
    env: dict[str, str]

    def stop(self) -> None:
        """Stop the server (`pg_ctl stop -m fast`: sessions are ended, as a restart does)."""
        subprocess.run(
            _as_owner([*self.ctl, "-m", "fast", "-w", "stop"], self.root),
            check=True,
            capture_output=True,
            env=self.env,
            timeout=60,
        )

    def start(self) -> None:
        """Start it again, returning once it accepts connections."""
        subprocess.run(
            _as_owner([*self.ctl, "-w", "-t", "60", "start"], self.root),
            check=True,
            capture_output=True,
            env=self.env,
            timeout=90,
        )


@contextmanager
def stoppable_cluster() -> Iterator[StoppableCluster]:
    """A fresh cluster (as `postgres_cluster`) that the test may stop and start; skips likewise."""
    with postgres_cluster() as server:
        bin_dir = postgres_bin()
        assert bin_dir is not None
        root = os.geteuid() == 0
        data = _DATA_FOLDERS[(server.host, server.port)]
        env = {**os.environ, "LC_ALL": "C", "TZ": "UTC"}
        options = (
            f"-h 127.0.0.1 -p {server.port} -k {data.parent / 'run'} -c fsync=off -c full_page_writes=off "
            "-c max_connections=60"
        )
        ctl = [str(bin_dir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(data.parent / "log")]
        yield StoppableCluster(server, ctl, root, env)
