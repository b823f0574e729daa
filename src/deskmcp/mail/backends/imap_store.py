"""The local copy of an IMAP account's searchable text: one SQLite file, one row per message
(folder, UID, sort time, flags) and its text in an FTS5 trigram table, so a word is found as
the server's SEARCH TEXT finds it (a case-insensitive substring) without asking the server.

Each folder's row records the server state the copy was last made true for (UIDVALIDITY,
UIDNEXT, message count, HIGHESTMODSEQ). Messages are written in batches, each batch one
transaction, and the folder's state only after its last batch: a sync cut short leaves fewer
messages and the old state, which no longer matches the server, so that folder is not answered
from here until a later sync completes it.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from deskmcp.core.index_sqlite import chunks, private_database

_SCHEMA = """
CREATE TABLE IF NOT EXISTS folders (
    name TEXT PRIMARY KEY, validity INTEGER NOT NULL, uidnext INTEGER NOT NULL,
    messages INTEGER NOT NULL, modseq INTEGER NOT NULL, synced REAL NOT NULL);
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY, folder TEXT NOT NULL, uid INTEGER NOT NULL, time REAL NOT NULL,
    flags TEXT NOT NULL, UNIQUE (folder, uid));
CREATE VIRTUAL TABLE IF NOT EXISTS texts USING fts5(body, tokenize = 'trigram');
"""
MIN_WORD = 3
"""A trigram index finds substrings of three characters or more; shorter words go to the server."""


@dataclass(frozen=True)
class FolderState:
    """What the server says of a folder: a copy made for this state is exact."""

    validity: int
    uidnext: int
    messages: int
    modseq: int = 0  # HIGHESTMODSEQ (0: the server has no CONDSTORE)

    def same_messages(self, other: FolderState | None) -> bool:
        """Whether `other` holds the same messages (flags aside, which no word search reads): the
        same UIDVALIDITY, no message added (UIDNEXT) and none expunged (the count)."""
        return other is not None and (self.validity, self.uidnext, self.messages) == (
            other.validity,
            other.uidnext,
            other.messages,
        )


@dataclass(frozen=True)
class Stored:
    uid: int
    time: float
    flags: tuple[bytes, ...]
    text: str


class ImapStore:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        private_database(path)
        self.path = path
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- state -------------------------------------------------------------------------------

    def state(self, folder: str) -> FolderState | None:
        with self._lock:
            row = self._db.execute(
                "SELECT validity, uidnext, messages, modseq FROM folders WHERE name = ?", (folder,)
            ).fetchone()
        return FolderState(*row) if row else None

    def synced_at(self) -> float | None:
        """When the least recently synced folder was synced (None: none yet)."""
        with self._lock:
            row = self._db.execute("SELECT min(synced) FROM folders").fetchone()
        return row[0] if row else None

    def folders(self) -> list[str]:
        with self._lock:
            return [r[0] for r in self._db.execute("SELECT name FROM folders ORDER BY name")]

    def uids(self, folder: str) -> set[int]:
        with self._lock:
            return {r[0] for r in self._db.execute("SELECT uid FROM messages WHERE folder = ?", (folder,))}

    def flags(self, folder: str) -> dict[int, tuple[bytes, ...]]:
        with self._lock:
            rows = self._db.execute("SELECT uid, flags FROM messages WHERE folder = ?", (folder,)).fetchall()
        return {uid: tuple(f.encode() for f in flags.split()) for uid, flags in rows}

    def count(self, folder: str) -> int:
        with self._lock:
            return self._db.execute("SELECT count(*) FROM messages WHERE folder = ?", (folder,)).fetchone()[0]

    # -- writing -----------------------------------------------------------------------------

    def _ids(self, folder: str, uids: Iterable[int]) -> list[int]:
        out: list[int] = []
        wanted = list(uids)
        for part in chunks(wanted):
            marks = ",".join("?" * len(part))
            out.extend(
                r[0]
                for r in self._db.execute(
                    f"SELECT id FROM messages WHERE folder = ? AND uid IN ({marks})",
                    (folder, *part),
                )
            )
        return out

    def _delete_ids(self, ids: Sequence[int]) -> None:
        for part in chunks(ids):
            marks = ",".join("?" * len(part))
            self._db.execute(f"DELETE FROM texts WHERE rowid IN ({marks})", tuple(part))
            self._db.execute(f"DELETE FROM messages WHERE id IN ({marks})", tuple(part))

    def add(self, folder: str, messages: Sequence[Stored]) -> None:
        """Store a batch of messages (one transaction; a message stored before is replaced)."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._delete_ids(self._ids(folder, (m.uid for m in messages)))
                for m in messages:
                    cur = self._db.execute(
                        "INSERT INTO messages (folder, uid, time, flags) VALUES (?, ?, ?, ?)",
                        (folder, m.uid, m.time, _flags(m.flags)),
                    )
                    self._db.execute("INSERT INTO texts (rowid, body) VALUES (?, ?)", (cur.lastrowid, m.text))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def remove(self, folder: str, uids: Iterable[int]) -> None:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._delete_ids(self._ids(folder, uids))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def set_flags(self, folder: str, flags: dict[int, tuple[bytes, ...]]) -> None:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.executemany(
                "UPDATE messages SET flags = ? WHERE folder = ? AND uid = ?",
                [(_flags(f), folder, uid) for uid, f in flags.items()],
            )
            self._db.execute("COMMIT")

    def drop(self, folder: str) -> None:
        """Forget a folder (its UIDVALIDITY changed, or it is gone)."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                ids = [r[0] for r in self._db.execute("SELECT id FROM messages WHERE folder = ?", (folder,))]
                self._delete_ids(ids)
                self._db.execute("DELETE FROM folders WHERE name = ?", (folder,))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def mark(self, folder: str, state: FolderState) -> None:
        """Record that the folder's copy is now true for `state`."""
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO folders (name, validity, uidnext, messages, modseq, synced)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (folder, state.validity, state.uidnext, state.messages, state.modseq, time.time()),
            )

    # -- reading -----------------------------------------------------------------------------

    def search(self, folder: str, words: Sequence[str]) -> list[tuple[int, float]]:
        """(uid, sort time) of the folder's messages holding every word (case-insensitive
        substrings of three characters or more), newest first."""
        match = " AND ".join('"' + w.replace('"', '""') + '"' for w in words)
        with self._lock:
            rows = self._db.execute(
                # the text index first (a join could run the MATCH once per message)
                "SELECT uid, time FROM messages"
                " WHERE folder = ? AND id IN (SELECT rowid FROM texts WHERE texts MATCH ?)",
                (folder, match),
            ).fetchall()
        rows.sort(key=lambda r: (-r[1], -r[0]))
        return rows


def _flags(flags: tuple[bytes, ...]) -> str:
    return " ".join(f.decode("utf-8", "replace") for f in flags)
