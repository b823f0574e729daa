"""One PostgreSQL connection pool per database for the whole process (`DESKMCP_DATABASE_URL`),
shared by the stores kept there: the sealed Google tokens and the send journal. psycopg and its
pool are the `remote` extra, imported on first use.

A database that cannot be reached (down, refusing, or silent: a host that takes the connection and
never answers) is an io_error within `ANSWER_WAIT` seconds, naming the database (never its
password): a new connection and the check of an idle one are each given that long.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, LiteralString

from deskmcp.core.errors import IOFailure
from deskmcp.core.extras import needs_extra

if TYPE_CHECKING:
    from psycopg import Connection
    from psycopg_pool import ConnectionPool

MAX_CONNECTIONS = 8
"""Connections a process keeps open to one database at most."""
POOL_WAIT = 30
"""Seconds a call waits for one of the pool's connections while all are in use."""
CONNECT_WAIT = 2
"""Seconds a connection attempt may take (libpq's `connect_timeout`; 2 is its least)."""
ANSWER_WAIT = 1.5
"""Seconds a call waits for a new connection, or for an idle one's check, before it answers that
the database cannot be reached (a slower attempt ends by itself within `CONNECT_WAIT`)."""

_POOLS: dict[str, ConnectionPool[Any]] = {}
_SCHEMAS: set[tuple[str, str]] = set()
_REACHED: set[str] = set()
"""Databases whose pool handed out a connection since the last connection failure."""
_LOCK = threading.Lock()


def shared_pool(url: str, schema: LiteralString) -> ConnectionPool[Any]:
    """The process's pool for `url`, opened on first use, with `schema` (a `CREATE ... IF NOT EXISTS`
    statement) run once per pool. A pool whose first statement fails is closed and forgotten, so the
    next call tries again.

    Until the pool has handed out a connection (and again after a connection failed), a call
    finding no idle connection tries one itself first: when the database is down, unreachable or
    refusing us, waiting for the pool would only wait out `POOL_WAIT`, and this raises the
    connection's own error (`psycopg.OperationalError`) at once."""
    with _LOCK:
        pool = _POOLS.get(url)
        if pool is None:
            from psycopg_pool import ConnectionPool

            pool = ConnectionPool(
                url,
                min_size=1,
                max_size=MAX_CONNECTIONS,
                open=True,
                timeout=POOL_WAIT,
                kwargs={"connect_timeout": CONNECT_WAIT},
                name="deskmcp",
            )
            _POOLS[url] = pool
    if url not in _REACHED and not pool.get_stats().get("pool_available"):
        try:
            _try_connecting(url)
        except Exception:
            with _LOCK:
                _forget_unused(url, pool)
            raise
    with _LOCK:
        if (url, schema) not in _SCHEMAS:
            try:
                with pool.connection() as conn:
                    conn.execute(schema)
            except Exception:
                _forget_unused(url, pool)
                raise
            _SCHEMAS.add((url, schema))
        return pool


def _forget_unused(url: str, pool: ConnectionPool[Any]) -> None:
    """Close `pool` and forget it when no statement has run on it yet (so it stops retrying in the
    background, and the next call opens a new one). Called holding `_LOCK`."""
    if not any(each == url for each, _ in _SCHEMAS):
        # Closing waits for the pool's own connection attempt, which a silent database makes last
        # `CONNECT_WAIT`: the call that found the database unreachable answers without waiting.
        threading.Thread(target=pool.close, name="deskmcp-postgres-close", daemon=True).start()
        if _POOLS.get(url) is pool:
            del _POOLS[url]


def _try_connecting(url: str) -> None:
    """Open and close one connection to `url`: psycopg's error if that fails or takes longer than
    `ANSWER_WAIT`. The attempt runs in a thread of its own, so a database that never answers is
    reported before libpq gives up on it (its least `connect_timeout` is 2 s); a connection that
    comes too late is closed."""
    import psycopg

    outcome: list[BaseException | None] = []
    done = threading.Event()
    lock = threading.Lock()

    def attempt() -> None:
        try:
            conn = psycopg.connect(url, connect_timeout=CONNECT_WAIT)
        except Exception as exc:  # handed to the caller below, whatever psycopg raised
            with lock:
                outcome.append(exc)
        else:
            conn.close()
            with lock:
                outcome.append(None)
        done.set()

    threading.Thread(target=attempt, name="deskmcp-postgres-connect", daemon=True).start()
    if not done.wait(ANSWER_WAIT):
        raise psycopg.OperationalError(f"no answer within {ANSWER_WAIT:g} s")
    with lock:
        failure = outcome[0]
    if failure is not None:
        raise failure


def _cut(conn: Connection[Any]) -> None:
    """End `conn`'s socket under a statement waiting on it (which then fails at once)."""
    try:
        with socket.socket(fileno=socket.dup(conn.fileno())) as sock:
            sock.shutdown(socket.SHUT_RDWR)
    except OSError:  # already closed: the statement has failed by itself
        pass


class NoAnswer(Exception):
    """The database holds the connection but did not answer within `ANSWER_WAIT`."""


def _check(conn: Connection[Any], check: Callable[[Connection[Any]], None]) -> None:
    """`check(conn)`, given `ANSWER_WAIT` seconds: a server that holds the connection but no longer
    answers (a host gone silent) gets it cut and closed, and `NoAnswer` is raised."""
    import psycopg

    late: list[bool] = []
    timer = threading.Timer(ANSWER_WAIT, lambda: (late.append(True), _cut(conn)))
    timer.daemon = True
    timer.start()
    try:
        check(conn)
    except psycopg.OperationalError:
        if not late:
            raise
    finally:
        timer.cancel()
    if late:  # also when cut just as it answered: not to be used
        conn.close()
        raise NoAnswer(f"no answer within {ANSWER_WAIT:g} s")


@contextmanager
def connection(url: str, schema: LiteralString, *, unreachable: str) -> Iterator[Connection[Any]]:
    """A connection from `url`'s shared pool (`shared_pool`). A database that cannot be reached
    is an io_error whose message is `unreachable` with `{exc}` standing for the database (host, port
    and name, never the user or password) and what psycopg said.
    Without the `remote` extra (psycopg) it is `MissingExtra`, naming the command that adds it."""
    with needs_extra("remote", "DESKMCP_DATABASE_URL (PostgreSQL)"):
        import psycopg
        import psycopg_pool  # noqa: F401  (the pool `shared_pool` opens)

    try:
        pool, conn = _live_connection(url, schema)
        try:
            with conn:
                _REACHED.add(url)
                yield conn
        finally:
            pool.putconn(conn)
    except psycopg.OperationalError as exc:
        _REACHED.discard(url)
        where = database_name(url)
        raise IOFailure(unreachable.format(exc=f"{where}: {exc}"), {"database": where}) from exc


def database_name(url: str) -> str:
    """`host:port/name` of a libpq URL or connection string, for messages: no user, no password."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        parts = conninfo_to_dict(url)
    except Exception:  # psycopg.ProgrammingError for a string it cannot read: say nothing of it
        return "the database"
    host = str(parts.get("host") or "localhost")
    port = f":{parts['port']}" if parts.get("port") else ""
    return f"{host}{port}/{parts.get('dbname') or ''}"


def _live_connection(url: str, schema: LiteralString) -> tuple[ConnectionPool[Any], Connection[Any]]:
    """A connection from the pool that still answers (one empty statement). One the server
    ended while it was idle (a restart, a failover, an idle timeout) goes back to the pool,
    which drops it, and the next is tried the way `shared_pool` says: when none is left idle,
    a connection made here, so a database that is gone is reported at once rather than waited
    for (the pool's own check would wait `POOL_WAIT` for a replacement)."""
    import psycopg
    from psycopg_pool import ConnectionPool

    for attempt in range(MAX_CONNECTIONS + 1):
        pool = shared_pool(url, schema)
        conn = pool.getconn()
        try:
            _check(conn, ConnectionPool.check_connection)
        except NoAnswer as exc:
            pool.putconn(conn)
            _REACHED.discard(url)
            # A silent database: asking its other connections would only wait again.
            raise psycopg.OperationalError(str(exc)) from None
        except psycopg.OperationalError:
            pool.putconn(conn)
            _REACHED.discard(url)
            if attempt == MAX_CONNECTIONS:
                raise
            continue
        return pool, conn
    raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises


def close_pools() -> None:
    """Close every pool this process opened (tests, shutdown)."""
    with _LOCK:
        for each in _POOLS.values():
            each.close()
        _POOLS.clear()
        _SCHEMAS.clear()
        _REACHED.clear()
