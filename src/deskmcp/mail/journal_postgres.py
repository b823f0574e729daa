"""The send journal in PostgreSQL, for deskmcp processes that share one database (`DESKMCP_DATABASE_URL`).

The same rows as the SQLite journal (`deskmcp.mail.journal`), one table for every user and
account, each row under its owner (the principal's key and the account name), so one user's
idempotency keys never answer another's. `claim(key)` holds a transaction-scoped advisory lock
on (owner, key) for the whole keyed send: a retry of the same key arriving at another process
meanwhile waits, then finds the first send journalled and answers from it instead of sending
again.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any

import orjson

from deskmcp.core.dates import utc_stamp
from deskmcp.core.postgres import connection
from deskmcp.mail.journal import JournalRow

if TYPE_CHECKING:
    from psycopg import Connection

TABLE = "deskmcp_mail_sends"

SCHEMA = (
    f"CREATE TABLE IF NOT EXISTS {TABLE} (owner TEXT NOT NULL, key TEXT NOT NULL, request TEXT,"
    " rfc TEXT, status TEXT, raw BYTEA, thread_hint TEXT, result TEXT, created TEXT, updated TEXT,"
    " PRIMARY KEY (owner, key))"
)


class PostgresSendJournal:
    """`SendJournal`'s operations on the shared database, for one owner."""

    def __init__(self, url: str, owner: str) -> None:
        self.url = url
        self.owner = owner

    def _connection(self) -> AbstractContextManager[Connection[Any]]:
        return connection(
            self.url,
            SCHEMA,
            unreachable="The send journal's database could not be reached ({exc}); nothing was sent. "
            "Check DESKMCP_DATABASE_URL and try again.",
        )

    @contextmanager
    def claim(self, key: str) -> Iterator[None]:
        """Hold (owner, key) for one keyed send, against every process using this database."""
        with self._connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"{self.owner}\n{key}",))
            yield

    def get(self, key: str) -> JournalRow | None:
        with self._connection() as conn:
            row = conn.execute(
                f"SELECT key, request, rfc, status, raw, thread_hint, result FROM {TABLE} WHERE owner=%s AND key=%s",
                (self.owner, key),
            ).fetchone()
        if row is None:
            return None
        result = orjson.loads(row[6]) if row[6] else None
        return JournalRow(row[0], row[1], row[2], row[3], bytes(row[4]), row[5], result)

    def begin(self, key: str, request: str, rfc_message_id: str, raw: bytes, thread_hint: str | None) -> None:
        now = utc_stamp()
        with self._connection() as conn:
            conn.execute(
                f"INSERT INTO {TABLE} VALUES (%s, %s, %s, %s, 'pending', %s, %s, NULL, %s, %s)"
                " ON CONFLICT (owner, key) DO UPDATE SET status='pending', rfc=excluded.rfc, raw=excluded.raw,"
                " updated=excluded.updated",
                (self.owner, key, request, rfc_message_id, raw, thread_hint, now, now),
            )

    def finish(self, key: str, result: dict[str, Any]) -> None:
        with self._connection() as conn:
            conn.execute(
                f"UPDATE {TABLE} SET status='sent', result=%s, updated=%s WHERE owner=%s AND key=%s",
                (orjson.dumps(result).decode(), utc_stamp(), self.owner, key),
            )

    def fail(self, key: str) -> None:
        """A definite failure: nothing was sent, so a retry may build and send afresh."""
        with self._connection() as conn:
            conn.execute(
                f"UPDATE {TABLE} SET status='failed', updated=%s WHERE owner=%s AND key=%s",
                (utc_stamp(), self.owner, key),
            )

    def close(self) -> None:
        """Nothing of its own to close: the pool is the process's (`close_pools`)."""
