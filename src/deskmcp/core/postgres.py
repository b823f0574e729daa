"""One PostgreSQL connection pool per database for the whole process (`DESKMCP_DATABASE_URL`),
shared by the stores kept there: the sealed Google tokens and the send journal. psycopg and its
pool are the `remote` extra, imported on first use.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, LiteralString

from deskmcp.core.errors import IOFailure

if TYPE_CHECKING:
    from psycopg import Connection
    from psycopg_pool import ConnectionPool

_POOLS: dict[str, ConnectionPool[Any]] = {}
_SCHEMAS: set[tuple[str, str]] = set()
_LOCK = threading.Lock()


def shared_pool(url: str, schema: LiteralString) -> ConnectionPool[Any]:
    """The process's pool for `url`, opened on first use, with `schema` (a `CREATE ... IF NOT EXISTS`
    statement) run once per pool. A pool whose first statement fails is closed and forgotten, so the
    next call tries again."""
    with _LOCK:
        pool = _POOLS.get(url)
        if pool is None:
            from psycopg_pool import ConnectionPool

            pool = ConnectionPool(url, min_size=1, max_size=8, open=True, timeout=30, name="deskmcp")
            _POOLS[url] = pool
        if (url, schema) not in _SCHEMAS:
            try:
                with pool.connection() as conn:
                    conn.execute(schema)
            except Exception:
                if not any(each == url for each, _ in _SCHEMAS):
                    pool.close()
                    del _POOLS[url]
                raise
            _SCHEMAS.add((url, schema))
        return pool


@contextmanager
def connection(url: str, schema: LiteralString, *, unreachable: str) -> Iterator[Connection[Any]]:
    """A connection from `url`'s shared pool (`shared_pool`). A database that cannot be reached
    is an io_error whose message is `unreachable` with `{exc}` standing for what psycopg said."""
    import psycopg

    try:
        with shared_pool(url, schema).connection() as conn:
            yield conn
    except psycopg.OperationalError as exc:
        raise IOFailure(unreachable.format(exc=exc)) from exc


def close_pools() -> None:
    """Close every pool this process opened (tests, shutdown)."""
    with _LOCK:
        for each in _POOLS.values():
            each.close()
        _POOLS.clear()
        _SCHEMAS.clear()
