"""The send journal: idempotency keys and the exact bytes of every keyed send, in SQLite.

A row is written (synchronously, to disk) before the provider is called, so a retry after a
crash or an ambiguous failure finds it: `sent` returns the first result, `pending` means
"look in Sent for this Message-ID before sending these same bytes again".
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from deskmcp.core.dates import utc_stamp
from deskmcp.core.errors import IOFailure
from deskmcp.core.files import private_database, private_folder


@dataclass
class JournalRow:
    key: str
    request: str
    rfc_message_id: str
    status: str  # pending | sent | failed
    raw: bytes
    thread_hint: str | None
    result: dict[str, Any] | None


class SendJournal:
    def __init__(self, path: Path) -> None:
        try:
            # It holds every keyed message's raw bytes, Bcc included: the user's alone.
            private_folder(path.parent)
            private_database(path)
            self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=FULL")
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS sends (key TEXT PRIMARY KEY, request TEXT, rfc TEXT, status TEXT,"
                " raw BLOB, thread_hint TEXT, result TEXT, created TEXT, updated TEXT)"
            )
        except (sqlite3.Error, OSError) as exc:
            raise IOFailure(f"The send journal {path} could not be opened: {exc}.") from exc
        self._lock = threading.Lock()

    @contextmanager
    def claim(self, key: str) -> Iterator[None]:
        """Nothing to hold: one process owns this file, and the service serialises its sends.
        (The PostgreSQL journal, shared by processes, locks the key here.)"""
        yield

    def get(self, key: str) -> JournalRow | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT key, request, rfc, status, raw, thread_hint, result FROM sends WHERE key=?", (key,)
            ).fetchone()
        if row is None:
            return None
        return JournalRow(row[0], row[1], row[2], row[3], row[4], row[5], orjson.loads(row[6]) if row[6] else None)

    def begin(self, key: str, request: str, rfc_message_id: str, raw: bytes, thread_hint: str | None) -> None:
        now = utc_stamp()
        with self._lock:
            self._conn.execute(
                "INSERT INTO sends VALUES(?, ?, ?, 'pending', ?, ?, NULL, ?, ?) ON CONFLICT(key) DO UPDATE SET"
                " status='pending', rfc=excluded.rfc, raw=excluded.raw, updated=excluded.updated",
                (key, request, rfc_message_id, raw, thread_hint, now, now),
            )

    def finish(self, key: str, result: dict[str, Any]) -> None:
        with self._lock:
            self._conn.execute(
                "UPDATE sends SET status='sent', result=?, updated=? WHERE key=?",
                (orjson.dumps(result), utc_stamp(), key),
            )

    def fail(self, key: str) -> None:
        """A definite failure: nothing was sent, so a retry may build and send afresh."""
        with self._lock:
            self._conn.execute("UPDATE sends SET status='failed', updated=? WHERE key=?", (utc_stamp(), key))

    def close(self) -> None:
        with self._lock:
            self._conn.close()
