"""The shared PostgreSQL pool when the database cannot be reached: the call says why, at once,
instead of waiting out the pool's timeout for a connection that is never coming."""

import socket
from collections.abc import Iterator

import pytest

pytest.importorskip("psycopg_pool")

from deskmcp.core import postgres as postgres_module
from deskmcp.core.errors import IOFailure
from deskmcp.core.postgres import close_pools, connection
from tests.helpers.postgres import Postgres, fresh_database

SCHEMA = "CREATE TABLE IF NOT EXISTS probe (id INTEGER)"


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A loopback port nothing listens on (bound, never listening: connecting is refused)."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield held.getsockname()[1]
    close_pools()


def test_a_database_refusing_connections_is_an_io_error_naming_the_refusal(closed_port: int) -> None:
    url = f"postgresql://deskmcp@127.0.0.1:{closed_port}/deskmcp"
    for _ in range(2):  # the first call opens the pool, the second finds it open and empty
        with pytest.raises(IOFailure) as caught, connection(url, SCHEMA, unreachable="unreachable: {exc}"):
            pass
        assert caught.value.code == "io_error"
        assert "refused" in caught.value.message.lower()
        assert url not in postgres_module._POOLS  # not left retrying in the background


def test_a_database_that_does_not_exist_is_an_io_error_saying_so(postgres: Postgres) -> None:
    url = postgres.url("no_such_database")
    try:
        with pytest.raises(IOFailure) as caught, connection(url, SCHEMA, unreachable="unreachable: {exc}"):
            pass
    finally:
        close_pools()
    assert 'database "no_such_database" does not exist' in caught.value.message


def test_a_database_reached_once_keeps_serving_from_the_pool(database: str) -> None:
    for n in range(3):
        with connection(database, SCHEMA, unreachable="unreachable: {exc}") as conn:
            conn.execute("INSERT INTO probe VALUES (%s)", (n,))
    with connection(database, SCHEMA, unreachable="unreachable: {exc}") as conn:
        assert conn.execute("SELECT count(*) FROM probe").fetchone() == (3,)


def _two_connections_used(url: str) -> None:
    """Leave the pool holding two idle connections to `url`, each used once."""
    with (
        connection(url, SCHEMA, unreachable="unreachable: {exc}") as first,
        connection(url, SCHEMA, unreachable="unreachable: {exc}") as second,
    ):
        first.execute("SELECT 1")
        second.execute("SELECT 1")


def test_connections_cut_by_the_server_are_replaced_without_failing_a_call(postgres: Postgres) -> None:
    """A restart (or an administrator) ends every session the pool holds: the next calls get new
    connections, none answers with the cut one's error."""
    import psycopg

    url = fresh_database(postgres)
    name = url.rsplit("/", 1)[1]
    try:
        _two_connections_used(url)
        with psycopg.connect(postgres.url(), autocommit=True) as admin:
            ended = admin.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = %s", (name,)
            ).fetchone()
        assert ended is not None and ended[0] >= 2
        for n in range(4):
            with connection(url, SCHEMA, unreachable="unreachable: {exc}") as conn:
                assert conn.execute("SELECT %s::int", (n,)).fetchone() == (n,)
    finally:
        close_pools()


def test_a_database_gone_while_in_use_is_reported_at_once_from_then_on(
    postgres: Postgres, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psycopg

    # A call that waited for the pool instead would answer with its timeout's message.
    monkeypatch.setattr(postgres_module, "POOL_WAIT", 2)
    url = fresh_database(postgres)
    gone = f'database "{url.rsplit("/", 1)[1]}" does not exist'
    try:
        _two_connections_used(url)
        with psycopg.connect(postgres.url(), autocommit=True) as admin:
            admin.execute(f'DROP DATABASE "{url.rsplit("/", 1)[1]}" WITH (FORCE)')
        # The connections the pool held were cut: each is dropped as it is handed out, and the
        # first call already says why no new one can be had, as does every call after it.
        for _ in range(3):
            with pytest.raises(IOFailure) as caught, connection(url, SCHEMA, unreachable="unreachable: {exc}") as conn:
                conn.execute("SELECT 1")
            assert gone in caught.value.message
    finally:
        close_pools()


@pytest.mark.anyio
async def test_a_database_gone_silent_after_serving_is_an_io_error_at_once(postgres: Postgres) -> None:
    """The host stops answering with the pool's connections still open (a network cut, a frozen
    server): each idle connection's check would wait forever for its answer."""
    import time

    import anyio

    from tests.helpers.silent import relay

    url = fresh_database(postgres)
    with relay(postgres.host, postgres.port) as quiet:
        through = url.replace(f":{postgres.port}/", f":{quiet.port}/")
        try:
            await anyio.to_thread.run_sync(_two_connections_used, through)
            quiet.silence()
            for attempt in range(2):
                began = time.monotonic()
                with anyio.fail_after(30), pytest.raises(IOFailure) as caught:  # a hang guard only
                    await anyio.to_thread.run_sync(_one_call, through, abandon_on_cancel=True)
                print(f"attempt {attempt + 1}: answered in {time.monotonic() - began:.2f} s")
                assert caught.value.code == "io_error"
                assert "no answer within" in caught.value.message
                assert caught.value.details == {"database": f"127.0.0.1:{quiet.port}/{url.rsplit('/', 1)[1]}"}
            quiet.speak()
            await anyio.to_thread.run_sync(_one_call, through)  # answering again: served again
        finally:
            close_pools()


def _one_call(url: str) -> None:
    with connection(url, SCHEMA, unreachable="unreachable: {exc}") as conn:
        conn.execute("SELECT 1")
