"""The local copy of an IMAP account's searchable text: one SQLite file, one row per message
(folder, UID, sort time, flags) and its text in an FTS5 trigram table, so a word is found as
the server's SEARCH TEXT finds it (a case-insensitive substring) without asking the server,
and what a summary FETCH of it returns (the summary headers, the start of its text, the
server's preview, its attachments, its arrival), so a page of results is shown without
selecting its folders.

Each folder's row records the server state the copy was last made true for (UIDVALIDITY,
UIDNEXT, message count, HIGHESTMODSEQ). Messages are written in batches, each batch one
transaction, and the folder's state only after its last batch: a sync cut short leaves fewer
messages and the old state, which no longer matches the server, so that folder is not answered
from here until a later sync completes it.
"""

from __future__ import annotations

import itertools
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from deskmcp.core.files import private_database
from deskmcp.core.search.sqlite import check_pages, chunks, set_aside

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS folders (
    name TEXT PRIMARY KEY, validity INTEGER NOT NULL, uidnext INTEGER NOT NULL,
    messages INTEGER NOT NULL, modseq INTEGER NOT NULL, synced REAL NOT NULL);
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY, folder TEXT NOT NULL, uid INTEGER NOT NULL, time REAL NOT NULL,
    flags TEXT NOT NULL, UNIQUE (folder, uid));
CREATE VIRTUAL TABLE IF NOT EXISTS texts USING fts5(body, tokenize = 'trigram');
CREATE TABLE IF NOT EXISTS summaries (
    id INTEGER PRIMARY KEY, headers BLOB NOT NULL, text BLOB NOT NULL, preview BLOB,
    attachments TEXT NOT NULL, arrived REAL NOT NULL);
"""
VERSION = 2
"""The layout's version (SQLite's user_version). A copy made by an older one is read again."""
_OLD_TABLES = ("folders", "messages", "texts", "summaries")
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
class Kept:
    """What a summary FETCH of a message returns, kept: `headers` as HEADER.FIELDS gives them,
    `text` the first bytes of its text, `preview` the server's PREVIEW (None: not asked, the
    server has none), `attachments` (file name, content type, size) as BODYSTRUCTURE says."""

    headers: bytes
    text: bytes
    preview: bytes | None
    attachments: tuple[tuple[str, str, int], ...]
    arrived: float


@dataclass(frozen=True)
class _Order:
    """A folder's messages newest first: parallel lists."""

    ids: list[int]
    uids: list[int]
    times: list[float]
    flags: list[frozenset[str]]


@dataclass(frozen=True)
class Stored:
    uid: int
    time: float
    flags: tuple[bytes, ...]
    text: str
    kept: Kept | None = None


class ImapStore:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        try:
            self._db = self._open(path)
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError):  # locked, or cannot be opened: not damage
                raise
            # Only a copy of what the server holds: a damaged one is set aside and read again.
            aside = set_aside(path)
            log.warning(
                "the local copy %s is unreadable (%s); moved it to %s, reading the mail again", path, exc, aside
            )
            self._db = self._open(path)
        self._lock = threading.Lock()
        self._writes = 0  # messages or flags written, or messages removed, through this connection
        self._orders: dict[str, _Order] = {}
        self._order_stamp: tuple[int, int] | None = None

    @staticmethod
    def _open(path: Path) -> sqlite3.Connection:
        private_database(path)
        db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            check_pages(db)
            if db.execute("PRAGMA user_version").fetchone()[0] != VERSION:
                # made by another version: forgotten (each folder is read again at the next sync)
                db.executescript("".join(f"DROP TABLE IF EXISTS {t};" for t in _OLD_TABLES))
                db.execute(f"PRAGMA user_version = {VERSION}")
            db.executescript(_SCHEMA)
        except BaseException:
            db.close()
            raise
        return db

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
        return {uid: _parse_flags(flags) for uid, flags in rows}

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
        self._writes += 1
        for part in chunks(ids):
            marks = ",".join("?" * len(part))
            self._db.execute(f"DELETE FROM texts WHERE rowid IN ({marks})", tuple(part))
            self._db.execute(f"DELETE FROM summaries WHERE id IN ({marks})", tuple(part))
            self._db.execute(f"DELETE FROM messages WHERE id IN ({marks})", tuple(part))

    def add(self, folder: str, messages: Sequence[Stored]) -> None:
        """Store a batch of messages (one transaction; a message stored before is replaced)."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._delete_ids(self._ids(folder, (m.uid for m in messages)))  # (counts the write)
                for m in messages:
                    cur = self._db.execute(
                        "INSERT INTO messages (folder, uid, time, flags) VALUES (?, ?, ?, ?)",
                        (folder, m.uid, m.time, _flags(m.flags)),
                    )
                    self._db.execute("INSERT INTO texts (rowid, body) VALUES (?, ?)", (cur.lastrowid, m.text))
                    if m.kept is not None:
                        k = m.kept
                        self._db.execute(
                            "INSERT INTO summaries (id, headers, text, preview, attachments, arrived)"
                            " VALUES (?, ?, ?, ?, ?, ?)",
                            (cur.lastrowid, k.headers, k.text, k.preview, json.dumps(k.attachments), k.arrived),
                        )
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
        if not flags:
            return
        with self._lock:
            self._writes += 1
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
        return self.search_all(words, folder).get(folder, [])

    def search_all(
        self,
        words: Sequence[str],
        folder: str | None = None,
        *,
        first: int | None = None,
        flags: Mapping[str, bool] | None = None,
    ) -> dict[str, list[tuple[int, float]]]:
        """`search` of every folder (or only `folder`) in one pass of the text index: the ids it
        matches (every message when `words` is empty), picked out of each folder's messages held
        here newest first, those with each of `flags` set (True) or not (False) only, and the
        `first` of each folder only, when given."""
        with self._lock:
            ids: set[int] | None = None
            if words:
                match = " AND ".join('"' + w.replace('"', '""') + '"' for w in words)
                row = self._db.execute("SELECT group_concat(rowid) FROM texts WHERE texts MATCH ?", (match,)).fetchone()
                ids = set(map(int, row[0].split(","))) if row and row[0] else set()
            orders = self._newest_first() if ids is None or ids else {}
        wanted = list((flags or {}).items())
        found: dict[str, list[tuple[int, float]]] = {}
        for name, order in orders.items():
            if folder is not None and name != folder:
                continue
            if wanted:
                rows = zip(order.ids, order.uids, order.times, order.flags, strict=True)
                kept = (r for r in rows if all((flag in r[3]) == on for flag, on in wanted))
                matching = ((uid, when) for i, uid, when, _f in kept if ids is None or i in ids)
            elif ids is None:
                matching = zip(order.uids, order.times, strict=True)
            else:
                matching = (
                    (uid, when) for i, uid, when in zip(order.ids, order.uids, order.times, strict=True) if i in ids
                )
            hits = list(itertools.islice(matching, first))
            if hits:
                found[name] = hits
        return found

    def _newest_first(self) -> dict[str, _Order]:
        """Each folder's message ids, uids, sort times and flags, newest first (ties: the newer
        uid), read again only after messages or flags were written (here, or by another
        connection)."""
        stamp = (self._writes, self._db.execute("PRAGMA data_version").fetchone()[0])
        if self._order_stamp != stamp:
            orders: dict[str, _Order] = {}
            for i, name, uid, when, flags in self._db.execute(
                "SELECT id, folder, uid, time, flags FROM messages ORDER BY folder, time DESC, uid DESC"
            ):
                order = orders.get(name)
                if order is None:
                    order = orders[name] = _Order([], [], [], [])
                order.ids.append(i)
                order.uids.append(uid)
                order.times.append(when)
                order.flags.append(frozenset(flags.split()))
            self._orders, self._order_stamp = orders, stamp
        return self._orders

    def kept(self, folder: str, uids: Sequence[int]) -> dict[int, tuple[tuple[bytes, ...], Kept]]:
        """The flags and kept summary of those of the folder's messages `uids` that have one."""
        out: dict[int, tuple[tuple[bytes, ...], Kept]] = {}
        with self._lock:
            for part in chunks(list(uids)):
                marks = ",".join("?" * len(part))
                rows = self._db.execute(
                    "SELECT m.uid, m.flags, s.headers, s.text, s.preview, s.attachments, s.arrived"
                    " FROM messages m JOIN summaries s ON s.id = m.id"
                    f" WHERE m.folder = ? AND m.uid IN ({marks})",
                    (folder, *part),
                ).fetchall()
                for uid, flags, headers, text, preview, found, arrived in rows:
                    attachments = tuple((str(n), str(t), int(z)) for n, t, z in json.loads(found))
                    out[uid] = (_parse_flags(flags), Kept(headers, text, preview, attachments, arrived))
        return out


def _parse_flags(flags: str) -> tuple[bytes, ...]:
    return tuple(f.encode() for f in flags.split())


def _flags(flags: tuple[bytes, ...]) -> str:
    return " ".join(f.decode("utf-8", "replace") for f in flags)
