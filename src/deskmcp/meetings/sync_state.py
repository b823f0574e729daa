"""Where a sync from Granola's API stands, in SQLite beside the meetings index: it outlives the
process, so a sync that was stopped continues where it stopped (see `api_source`).

- `state`: key/value (the phase, the listing's cursor and filter, the high-water mark, counts).
- `pending`: the notes listed and not fetched yet, in listing order; `failed_in` is the sync in
  which fetching one failed (it is tried again in the next).
- `seen`: the ids a full listing saw, to find the notes no longer listed.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from deskmcp.core.files import PRIVATE_FILE
from deskmcp.meetings.granola_api import ListedNote


class SyncState:
    """A sync's progress, in SQLite: it outlives the process."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        path.chmod(PRIVATE_FILE)
        self._lock = threading.Lock()
        self._conn.execute("PRAGMA journal_mode=WAL")
        with self._tx() as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS state (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS pending (id TEXT PRIMARY KEY, updated_at TEXT NOT NULL,"
                " seq INTEGER NOT NULL, failed_in INTEGER NOT NULL DEFAULT 0)"
            )
            conn.execute("CREATE TABLE IF NOT EXISTS seen (id TEXT PRIMARY KEY)")

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def get(self, key: str) -> str | None:
        with self._lock:
            row = self._conn.execute("SELECT value FROM state WHERE key=?", (key,)).fetchone()
        return None if row is None or row[0] == "" else str(row[0])

    def set(self, conn: sqlite3.Connection | None = None, **values: str | int) -> None:
        sql = "INSERT INTO state(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value=excluded.value"
        if conn is not None:
            conn.executemany(sql, [(k, str(v)) for k, v in values.items()])
            return
        with self._tx() as tx:
            tx.executemany(sql, [(k, str(v)) for k, v in values.items()])

    def reset(self) -> None:
        with self._tx() as conn:
            for table in ("state", "pending", "seen"):
                conn.execute(f"DELETE FROM {table}")

    def begin_listing(self, *, full: bool, since: str | None, sync_no: int) -> None:
        with self._tx() as conn:
            conn.execute("DELETE FROM seen")
            self.set(
                conn,
                phase="listing",
                list_full=int(full),
                list_since=since or "",
                list_cursor="",
                list_high="",
                sync_no=sync_no,
            )

    def page_listed(self, changed: Iterable[ListedNote], seen: Iterable[str], *, cursor: str | None, high: str) -> None:
        """Record one listed page: its changed notes to fetch, the ids seen, where to go on."""
        with self._tx() as conn:
            base = int(conn.execute("SELECT coalesce(max(seq), 0) FROM pending").fetchone()[0])
            conn.executemany(
                "INSERT INTO pending(id, updated_at, seq) VALUES(?, ?, ?) ON CONFLICT(id) DO UPDATE SET"
                " updated_at=excluded.updated_at, failed_in=0",
                [(n.id, n.updated_at, base + i) for i, n in enumerate(changed, 1)],
            )
            conn.executemany("INSERT OR IGNORE INTO seen(id) VALUES(?)", [(i,) for i in seen])
            self.set(conn, list_cursor=cursor or "", list_high=high)

    def seen(self) -> set[str]:
        with self._lock:
            return {row[0] for row in self._conn.execute("SELECT id FROM seen")}

    def pending(self, limit: int, sync_no: int) -> list[tuple[str, str]]:
        """The next notes to fetch, leaving out those that failed in this sync."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT id, updated_at FROM pending WHERE failed_in != ? ORDER BY seq LIMIT ?", (sync_no, limit)
            ).fetchall()
        return [(str(a), str(b)) for a, b in rows]

    def fetched(self, ids: Iterable[str]) -> None:
        with self._tx() as conn:
            conn.executemany("DELETE FROM pending WHERE id=?", [(i,) for i in ids])

    def failed(self, note_id: str, sync_no: int) -> None:
        with self._tx() as conn:
            conn.execute("UPDATE pending SET failed_in=? WHERE id=?", (sync_no, note_id))

    def pending_count(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT count(*) FROM pending").fetchone()[0])
