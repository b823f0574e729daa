"""The search engine every indexed server uses: SQLite for records, tantivy for ranking.

One SQLite database per index holds the truth: a `docs` table (one row per record: key,
fingerprint, payload, typed columns), the record's text fields (compressed, in `texts`), side
tables a server declares for its filters (`doc_id` first, rows deleted with their record), and
a generation counter bumped by every change. WAL mode, one writer at a time, many readers.

Ranking is done by a tantivy index beside the database (`<name>.text/`, see `textindex.py`):
bm25 with per-field weights, English stemming, diacritics folded, phrases, top-k without
scoring every match. It is derived data, stamped with the generation it reflects: on open a
stamp that differs from SQLite's (a crash between the two commits) or an unreadable index is
rebuilt from SQLite's texts, without going back to the sources.

Filters stay SQL over `docs d` and the side tables, exact as ever. A filtered search first
ranks a few more than a page and keeps those passing the filter; when too few pass, SQLite
resolves the filter to its record ids and tantivy ranks the top k among those only.

User text never reaches a query parser: it is analysed into words and phrases (`index_terms.py`).
A search ranks the records holding any of its words, those holding all of them higher; stop
words are never needed, `+word` is, `-word` excludes. Updates are
incremental: `sync` compares fingerprints (content hash or mtime) and touches only what
changed. A database that cannot be opened is derived data too: moved aside and rebuilt.

This module is the engine (`SearchIndex`); beside it are what it stores and answers
(`index_records.py`), how servers ask for text matches (`index_query.py`), how texts are
compressed (`index_codec.py`) and its SQLite helpers (`index_sqlite.py`). Their public names
are importable from here too.
"""

from __future__ import annotations

import logging
import queue
import re
import secrets
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from deskmcp.core.errors import BadRequest, IOFailure
from deskmcp.core.files import DISK_FULL, disk_full, private_database, private_folder, write_back
from deskmcp.core.search.codec import TRAIN_AT, TextCodec
from deskmcp.core.search.query import (
    QUERY_WORDS,
    SNIPPET_CLOSE,
    SNIPPET_OPEN,
    TEXT_MATCH,
    fts_any_prefix,
    text_match,
)
from deskmcp.core.search.records import ApplyStats, Hit, IndexRecord, IndexSchema
from deskmcp.core.search.sqlite import (
    check_pages,
    chunks,
    id_runs,
    ids_json,
    set_aside,
    table_name,
)
from deskmcp.core.search.terms import nfc
from deskmcp.core.search.textindex import ENGINE, TextIndex

if TYPE_CHECKING:
    import tantivy

__all__ = [
    "QUERY_WORDS",
    "SNIPPET_CLOSE",
    "SNIPPET_OPEN",
    "TEXT_MATCH",
    "ApplyStats",
    "Hit",
    "IndexRecord",
    "IndexSchema",
    "SearchIndex",
    "fts_any_prefix",
    "text_match",
]

log = logging.getLogger(__name__)

STORAGE = "tantivy2"
"""Part of the schema id in SQLite: a database laid out for another engine is recreated."""
_REACH = 64
"""Best matches a filtered search checks against its filter before resolving the filter itself."""
BUSY_WAIT = 30.0
"""Seconds a statement waits for another connection's lock on the database before it fails."""
_CREATE_INDEX = re.compile(r"CREATE INDEX (\w+) ")
_EPOCH = "_index_epoch"
_GENERATION = "_index_generation"


class SearchIndex:
    """A persistent search index: SQLite records plus a tantivy text index. Safe to use from several threads."""

    def __init__(self, path: Path, schema: IndexSchema, *, readers: int = 4) -> None:
        self.path = path
        self.schema = schema
        self._write_lock = threading.RLock()
        self._text_behind = False
        """A full disk stopped a text-index commit: the next write brings it back to the records."""
        self._readers: queue.LifoQueue[sqlite3.Connection] = queue.LifoQueue()
        self._max_readers = readers
        self._all: list[sqlite3.Connection] = []
        self._closed = False
        self._columns = [name for name, _ in schema.columns]
        self._side_names = [name for ddl in schema.side_tables if (name := table_name(ddl))]
        private_folder(path.parent)
        try:
            self._writer = self._open_writer()
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError):  # locked, or cannot be opened: not damage
                raise
            self._quarantine(exc)
            self._writer = self._open_writer()
        self._codec = TextCodec()
        self._codec.load(self._writer)
        self.text_path = path.with_name(f"{path.name}.text")
        self._text = TextIndex(self.text_path, schema.text_fields, schema.weights)
        self._check_text()

    # -- opening ---------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        private_database(self.path)
        conn = sqlite3.connect(self.path, timeout=BUSY_WAIT, check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute(f"PRAGMA busy_timeout={int(BUSY_WAIT * 1000)}")
        conn.create_function("text_match", 1, self._text_match, deterministic=True)
        self._all.append(conn)
        return conn

    def _open_writer(self) -> sqlite3.Connection:
        conn = self._connect()
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        row = None
        try:
            row = conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        except sqlite3.OperationalError:
            row = None
        wanted = f"{self.schema.name}:{self.schema.version}:{STORAGE}"
        if row is None or row[0] != wanted:
            self._create(conn, wanted)
        check_pages(conn)  # a damaged file is rebuilt now, not served until some read trips on it
        self._ensure_indexes(conn)
        return conn

    def _secondary(self) -> list[tuple[str, str]]:
        """(name, statement) of each index the schema's side tables create."""
        return [(m.group(1), ddl) for ddl in self.schema.side_tables if (m := _CREATE_INDEX.match(ddl))]

    def _ensure_indexes(self, conn: sqlite3.Connection) -> None:
        """Create the schema's indexes that are missing: a first fill stopped before it built them."""
        present = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        missing = [ddl for name, ddl in self._secondary() if name not in present]
        if not missing:
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            for ddl in missing:
                conn.execute(_CREATE_INDEX.sub(r"CREATE INDEX IF NOT EXISTS \1 ", ddl, count=1))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    @contextmanager
    def bulk(self) -> Iterator[bool]:
        """A first fill: while the index holds no record, the side tables' indexes are dropped
        for the records written inside, and built once at the end (sorting every row once costs
        far less than keeping an index in order a row at a time). Searches meanwhile answer the
        same, those that filter on them more slowly. Yields whether the index was empty."""
        with self.transaction() as conn:
            empty = conn.execute("SELECT 1 FROM docs LIMIT 1").fetchone() is None
            if empty:
                for name, _ in self._secondary():
                    conn.execute(f'DROP INDEX IF EXISTS "{name}"')
        try:
            yield empty
        finally:
            if empty:
                with self._write_lock:
                    self._ensure_indexes(self._writer)

    def _create(self, conn: sqlite3.Connection, schema_id: str) -> None:
        """Make the tables of `schema_id`, dropping what an older schema left. Decided inside the
        write transaction: another process (a second replica opening the same new index) that
        made them first is found here, and its tables are kept."""
        s = self.schema
        extra = "".join(f", {name} {sqltype}" for name, sqltype in s.columns)
        conn.execute("BEGIN IMMEDIATE")
        try:
            tables = [
                row[0]
                for row in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'"
                    " AND name NOT LIKE 'fts_%'"
                )
            ]
            if "meta" in tables:
                made = conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
                if made is not None and made[0] == schema_id:
                    conn.execute("COMMIT")
                    return
            conn.execute("PRAGMA defer_foreign_keys=ON")
            for table in tables:
                conn.execute(f'DROP TABLE IF EXISTS "{table}"')
            conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
            conn.execute(
                "CREATE TABLE docs (id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE,"
                f" fingerprint TEXT NOT NULL, data BLOB{extra})"
            )
            # The text fields, compressed: what the text index is rebuilt from.
            conn.execute("CREATE TABLE texts (id INTEGER PRIMARY KEY, body BLOB NOT NULL)")
            conn.execute("CREATE TABLE zdicts (id INTEGER PRIMARY KEY, dict BLOB NOT NULL)")
            for ddl in s.side_tables:
                conn.execute(ddl)
            conn.execute("INSERT INTO meta(key, value) VALUES('schema', ?)", (schema_id,))
            conn.execute("INSERT INTO meta(key, value) VALUES(?, ?)", (_EPOCH, secrets.token_hex(8)))
            conn.execute("INSERT INTO meta(key, value) VALUES(?, '0')", (_GENERATION,))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _quarantine(self, exc: Exception) -> None:
        for conn in self._all:
            conn.close()
        self._all.clear()
        aside = set_aside(self.path)
        log.warning("index %s is unreadable (%s); moved it to %s and rebuilding", self.path, exc, aside)

    def _stamp(self, conn: sqlite3.Connection) -> str:
        """What the text index must say it reflects: this database's epoch and generation."""
        rows = dict(conn.execute("SELECT key, value FROM meta WHERE key IN (?, ?)", (_EPOCH, _GENERATION)))
        return f"{ENGINE}:{rows.get(_EPOCH)}:{rows.get(_GENERATION)}"

    def _bump(self, conn: sqlite3.Connection) -> str:
        conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = ?", (_GENERATION,))
        return self._stamp(conn)

    def _check_text(self) -> None:
        """Rebuild the text index from SQLite when it does not reflect the current generation."""
        with self._write_lock:
            if self._text.stamp() == self._stamp(self._writer):
                return
            if self._text.empty() and self._writer.execute("SELECT 1 FROM texts LIMIT 1").fetchone() is None:
                return  # nothing on either side to bring together (the first write stamps the text)
            self._text.begin()  # another process may be between its two commits: wait for it
            try:
                found, wanted = self._text.stamp(), self._stamp(self._writer)
                if found != wanted:
                    log.info("text index %s is at %s, the records at %s: rebuilding it", self.text_path, found, wanted)
                    try:
                        self.rebuild_text()
                    except ValueError as exc:  # tantivy cannot write what it has: start afresh
                        log.warning("text index %s cannot be rebuilt in place (%s); recreating it", self.text_path, exc)
                        self._text.reset()
                        self.rebuild_text()
            finally:
                self._text.end()

    def rebuild_text(self) -> int:
        """Rebuild the text index from the texts SQLite holds (no source is read again)."""
        started = time.perf_counter()
        with self._write_lock:
            self._text.begin()
            conn = self._writer
            conn.execute("BEGIN")
            try:
                stamp = self._stamp(conn)
                self._text.clear(stamp)
                count = 0
                batch: list[tuple[int, Sequence[str]]] = []
                # Texts stored by a version that kept them as written are indexed composed too.
                for doc_id, body in conn.execute("SELECT id, body FROM texts"):
                    batch.append((int(doc_id), [nfc(t) for t in self._codec.unpack(body, conn)]))
                    if len(batch) >= 1000:
                        self._text.write((), batch, stamp)
                        count += len(batch)
                        batch = []
                self._text.write((), batch, stamp)
                count += len(batch)
            finally:
                conn.execute("COMMIT")
            self._text.commit()
        log.info("text index %s rebuilt: %d records in %.2fs", self.text_path, count, time.perf_counter() - started)
        return count

    def close(self) -> None:
        with self._write_lock:
            if self._closed:
                return
            self._closed = True
            self._text.close()
            for conn in self._all:
                conn.close()
            self._all.clear()

    # -- connections -----------------------------------------------------------------------

    @contextmanager
    def reader(self) -> Iterator[sqlite3.Connection]:
        if self._closed:
            raise IOFailure("The index is closed.")
        try:
            conn = self._readers.get_nowait()
        except queue.Empty:
            conn = self._connect()
        try:
            yield conn
        finally:
            if self._readers.qsize() < self._max_readers and not self._closed:
                self._readers.put(conn)
            else:
                conn.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """The writer connection inside BEGIN IMMEDIATE ... COMMIT (rolled back on error).

        Records changed here directly bypass the text index; use `apply` for records."""
        with self._write_lock:
            conn = self._writer
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    # -- metadata --------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        with self.reader() as conn:
            row = conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if row is None else row[0]

    def set_meta(self, key: str, value: str, conn: sqlite3.Connection | None = None) -> None:
        sql = "INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value=excluded.value"
        if conn is not None:
            conn.execute(sql, (key, value))
            return
        with self.transaction() as tx:
            tx.execute(sql, (key, value))

    # -- writing ---------------------------------------------------------------------------

    def fingerprints(self) -> dict[str, str]:
        with self.reader() as conn:
            return dict(conn.execute("SELECT key, fingerprint FROM docs"))

    def _write_records(
        self, conn: sqlite3.Connection, records: Sequence[IndexRecord], stats: ApplyStats
    ) -> tuple[list[tuple[int, list[str]]], list[int]]:
        """Insert or update `records` (the last one of a key wins) with one statement per table.

        Returns (id, text fields) of each record written and the ids whose old text they replace."""
        cols = self._columns
        latest = {record.key: record for record in records}
        keys = list(latest)
        ids: dict[str, int] = {}
        for chunk in chunks(keys):
            marks = ", ".join("?" * len(chunk))
            ids.update(conn.execute(f"SELECT key, id FROM docs WHERE key IN ({marks})", chunk))
        next_id = int(conn.execute("SELECT coalesce(max(id), 0) FROM docs").fetchone()[0]) + 1
        inserts: list[tuple[Any, ...]] = []
        updates: list[tuple[Any, ...]] = []
        text_rows: list[tuple[int, bytes]] = []
        side_rows: dict[str, list[tuple[Any, ...]]] = {}
        written: list[tuple[int, list[str]]] = []
        for record in latest.values():
            values = [record.columns.get(c) for c in cols]
            doc_id = ids.get(record.key)
            if doc_id is None:
                doc_id, next_id = next_id, next_id + 1
                inserts.append((doc_id, record.key, record.fingerprint, record.data, *values))
            else:
                updates.append((record.fingerprint, record.data, *values, doc_id))
            # Composed (NFC) as searches are: a decomposed accent (macOS names, some copied text)
            # is found and marked like any other.
            texts = [nfc(record.texts.get(f, "") or "") for f in self.schema.text_fields]
            text_rows.append((doc_id, self._codec.pack(texts)))
            for table, rows in record.side.items():
                if table not in self._side_names:
                    raise ValueError(f"unknown side table {table!r}")
                side_rows.setdefault(table, []).extend((doc_id, *row) for row in rows)
            written.append((doc_id, texts))
        replaced = [row[-1] for row in updates]
        if updates:
            sets = ", ".join(f"{c}=?" for c in ["fingerprint", "data", *cols])
            conn.executemany(f"UPDATE docs SET {sets} WHERE id=?", updates)
            for table in self._side_names:
                conn.executemany(f"DELETE FROM {table} WHERE doc_id=?", [(i,) for i in replaced])
        if inserts:
            names = ", ".join(["id", "key", "fingerprint", "data", *cols])
            conn.executemany(f"INSERT INTO docs({names}) VALUES({', '.join('?' * (4 + len(cols)))})", inserts)
        conn.executemany("INSERT OR REPLACE INTO texts(id, body) VALUES(?, ?)", text_rows)
        for table, rows in side_rows.items():
            if rows:
                conn.executemany(f"INSERT INTO {table} VALUES({', '.join('?' * len(rows[0]))})", rows)
        stats.added += len(inserts)
        stats.updated += len(updates)
        return written, replaced

    def _delete(self, conn: sqlite3.Connection, doc_id: int) -> None:
        conn.execute("DELETE FROM texts WHERE id=?", (doc_id,))
        conn.execute("DELETE FROM docs WHERE id=?", (doc_id,))

    def apply(
        self,
        upserts: Iterable[IndexRecord] = (),
        deletes: Iterable[str] = (),
        *,
        meta: Mapping[str, str] | None = None,
        deferred: bool = False,
    ) -> ApplyStats:
        """Insert or replace `upserts` and remove `deletes` in one transaction.

        SQLite commits first; the text index follows (a crash in between is repaired on open).
        `deferred` (for bulk loads): text searches may see these records up to
        `textindex.DEFERRED_COMMIT` seconds later; everything else sees them at once.
        A full disk is `io_error`: SQLite keeps its last commit and the text index is brought back
        to it by the next write (`_disk_full`)."""
        with self._disk_full():
            return self._apply(upserts, deletes, meta=meta, deferred=deferred)

    @contextmanager
    def _disk_full(self) -> Iterator[None]:
        """Answer a full disk as `io_error` saying so. The text index's queued writes are dropped
        (its stamp stays behind the records'), and the next write or flush rebuilds what it lacks
        before going on, as a start after a crash between the two commits would."""
        with self._write_lock:
            try:
                if self._text_behind:
                    self._check_text()
                    self._text_behind = False
                yield
            except (sqlite3.OperationalError, ValueError, OSError) as exc:
                if not disk_full(exc):
                    raise
                self._text.discard()
                self._text_behind = True
                raise IOFailure(
                    f"The search index {self.path.name} could not be updated: {DISK_FULL}. It keeps what it"
                    " held before, and catches up on the next call once there is room.",
                    {"index": self.path.name},
                ) from exc

    def _apply(
        self,
        upserts: Iterable[IndexRecord],
        deletes: Iterable[str],
        *,
        meta: Mapping[str, str] | None,
        deferred: bool,
    ) -> ApplyStats:
        started = time.perf_counter()
        stats = ApplyStats()
        removed: list[int] = []
        added: list[tuple[int, list[str]]] = []
        upserts, deletes = list(upserts), list(deletes)
        with self._write_lock:
            if upserts or deletes:
                self._text.begin()
            stamp = ""
            with self.transaction() as conn:
                if self._codec.zdict is None and len(upserts) >= TRAIN_AT:
                    self._codec.train(conn, upserts, self.schema.text_fields)
                if upserts:
                    added, removed = self._write_records(conn, upserts, stats)
                for key in deletes:
                    row = conn.execute("SELECT id FROM docs WHERE key=?", (key,)).fetchone()
                    if row is not None:
                        self._delete(conn, int(row[0]))
                        removed.append(int(row[0]))
                        stats.deleted += 1
                for k, v in (meta or {}).items():
                    self.set_meta(k, v, conn)
                if stats.changed:
                    stamp = self._bump(conn)
            if stats.changed:
                self._text.write(removed, added, stamp, deferred=deferred)
            if upserts or deletes:
                self._text.end()
        stats.seconds = time.perf_counter() - started
        return stats

    def sync(
        self,
        records: Iterable[IndexRecord],
        *,
        meta: Mapping[str, str] | None = None,
    ) -> ApplyStats:
        """Make the index hold exactly `records`, writing only those whose fingerprint changed."""
        started = time.perf_counter()
        current = self.fingerprints()
        seen: set[str] = set()
        changed: list[IndexRecord] = []
        unchanged = 0
        for record in records:
            seen.add(record.key)
            if current.get(record.key) == record.fingerprint:
                unchanged += 1
            else:
                changed.append(record)
        stale = [key for key in current if key not in seen]
        stats = self.apply(changed, stale, meta=meta)
        stats.unchanged = unchanged
        stats.seconds = time.perf_counter() - started
        return stats

    def clear(self) -> None:
        with self._write_lock:
            self._text.begin()
            with self.transaction() as conn:
                for table in self._side_names:
                    conn.execute(f"DELETE FROM {table}")
                conn.execute("DELETE FROM texts")
                conn.execute("DELETE FROM docs")
                stamp = self._bump(conn)
            self._text.clear(stamp)
            self._text.end()

    def flush(self) -> None:
        """Commit pending text-index writes now (they are otherwise committed before the next search)."""
        with self._disk_full():
            self._text.commit()

    def settle(self) -> None:
        """After a bulk write (a first index): commit, finish merging and release the text
        index's writer and its memory now instead of after the usual idle pause."""
        with self._write_lock:
            self._text.settle()

    def write_back(self) -> None:
        """Wait until the database is on disk (after a first index, off the path of any answer).
        SQLite commits without syncing here (WAL, synchronous NORMAL), and on Linux's ext4 the
        next sync of any file (the text index syncs at each commit) would wait for those
        hundreds of megabytes: the next change would."""
        for path in (self.path, self.path.with_name(f"{self.path.name}-wal")):
            write_back(path)

    # -- reading ---------------------------------------------------------------------------

    def _select_cols(self) -> str:
        return ", ".join(["d.key", "d.data", *(f"d.{c}" for c in self._columns)])

    def _hit(self, row: Sequence[Any], score: float | None, snippet: str | None) -> Hit:
        return Hit(
            key=row[0],
            score=score,
            snippet=snippet,
            data=row[1],
            columns=dict(zip(self._columns, row[2:], strict=True)),
        )

    def get(self, key: str) -> Hit | None:
        with self.reader() as conn:
            row = conn.execute(f"SELECT {self._select_cols()} FROM docs d WHERE d.key=?", (key,)).fetchone()
        return None if row is None else self._hit(row, None, None)

    def select(
        self,
        *,
        where: str = "",
        params: Sequence[Any] = (),
        order_by: str = "d.key",
        limit: int = 50,
        offset: int = 0,
    ) -> list[Hit]:
        """Records matching SQL `where` over `docs d` (no text query), in `order_by` order."""
        clause = f"WHERE {where}" if where else ""
        sql = f"SELECT {self._select_cols()} FROM docs d {clause} ORDER BY {order_by} LIMIT ? OFFSET ?"
        with self.reader() as conn:
            if "text_match(" in clause:  # see what other processes committed to the text index
                self._text.refresh(self._stamp(conn))
            rows = conn.execute(sql, (*params, limit, offset)).fetchall()
        return [self._hit(r, None, None) for r in rows]

    def count(
        self, *, where: str = "", params: Sequence[Any] = (), query: str | None = None, every_word: bool = False
    ) -> int:
        """How many records pass `where` and, given a search text `query`, match it as `search` does."""
        clause = f"AND ({where})" if where else ""
        if query is None:
            with self.reader() as conn:
                sql = f"SELECT count(*) FROM docs d WHERE 1=1 {clause}"
                return int(conn.execute(sql, tuple(params)).fetchone()[0])
        parsed = self._text.user_query(query, every=every_word).query
        with self.reader() as conn:
            self._text.refresh(self._stamp(conn))
        if not where:
            return self._text.count(parsed)
        ids = self._text.ids(parsed)
        if not ids:
            return 0
        with self.reader() as conn:
            sql = f"SELECT count(*) FROM docs d WHERE d.id IN (SELECT value FROM json_each(?)) {clause}"
            return int(conn.execute(sql, (ids_json(ids), *params)).fetchone()[0])

    def search(
        self,
        query: str,
        *,
        where: str = "",
        params: Sequence[Any] = (),
        order_by: str | None = None,
        limit: int = 20,
        offset: int = 0,
        snippet_tokens: int = 16,
        every_word: bool = False,
    ) -> list[Hit]:
        """Records matching a person's search text `query` (`index_terms` says how it is read),
        best bm25 first (or in `order_by` order).

        Ranked: a record holding any word of `query` matches, one holding every word (stop words
        aside) scores more; `every_word` (a filter): each word but the stop words must match.
        `where` filters over `docs d` with `params`; snippets mark matches with ⟦...⟧
        (`snippet_tokens=0`: none, e.g. for candidates of which only a page is shown, whose
        snippets `search_snippets` then gives).
        """
        asked = self._text.user_query(query, every=every_word)
        parsed = asked.query
        if limit <= 0:
            return []
        with self.reader() as conn:
            self._text.refresh(self._stamp(conn))
            try:
                if order_by:
                    ranked = self._ordered(conn, parsed, where, params, order_by, limit, offset)
                elif where:
                    ranked = self._filtered(conn, parsed, where, params, limit, offset)
                else:
                    # counted: the total a search answer carries then costs no second pass
                    ranked = [(i, s) for i, s in self._text.top(parsed, limit, offset, counted=True)]
            except sqlite3.OperationalError as exc:
                raise BadRequest(f"The search query {query!r} could not be run: {exc}.", {"query": query}) from exc
            if not ranked:
                return []
            ids = [i for i, _ in ranked]
            marks = ", ".join("?" * len(ids))
            rows = {
                int(r[0]): r[1:]
                for r in conn.execute(f"SELECT d.id, {self._select_cols()} FROM docs d WHERE d.id IN ({marks})", ids)
            }
            texts = self._texts(conn, ids) if snippet_tokens > 0 else {}
        marks = (SNIPPET_OPEN, SNIPPET_CLOSE)
        snippets = self._text.snippets(asked.marked, texts, snippet_tokens, marks, asked.words) if texts else {}
        return [self._hit(rows[i], score, snippets.get(i)) for i, score in ranked if i in rows]

    def search_snippets(
        self, query: str, keys: Sequence[str], *, snippet_tokens: int = 16, every_word: bool = False
    ) -> dict[str, str]:
        """The snippets `search` gives the records `keys` for `query` (keys without one left out)."""
        if not keys:
            return {}
        asked = self._text.user_query(query, every=every_word)
        marks = ", ".join("?" * len(keys))
        with self.reader() as conn:
            ids = {int(i): k for i, k in conn.execute(f"SELECT id, key FROM docs WHERE key IN ({marks})", list(keys))}
            texts = self._texts(conn, list(ids))
        found = self._text.snippets(asked.marked, texts, snippet_tokens, (SNIPPET_OPEN, SNIPPET_CLOSE), asked.words)
        return {ids[i]: text for i, text in found.items()}

    def unmatched_terms(self, query: str, *, where: str = "", params: Sequence[Any] = ()) -> list[str]:
        """The terms of the search text `query` (as written; excluded ones aside) that no record
        passing `where` holds. An empty search answer names all of its terms here, or none when
        every term is held somewhere and only their combination (+, -) matched nothing."""
        asked = self._text.user_query(query)
        missing: list[str] = []
        with self.reader() as conn:
            self._text.refresh(self._stamp(conn))
            runs: list[tuple[int, int]] | None = None
            for text, alone in asked.terms:
                if not self._text.holds(alone, among=asked.query):
                    missing.append(text)
                    continue
                if not where:
                    continue
                # The term's best matches usually include one the filter keeps; only when none
                # does is the filter resolved to its records (once) and the term looked up there.
                candidates = [i for i, _ in self._text.top(alone, _REACH)]
                if self._passing(conn, candidates, where, params):
                    continue
                if len(candidates) < _REACH:
                    missing.append(text)
                    continue
                if runs is None:
                    runs = self._filter_runs(conn, where, params)
                if not runs or not self._text.top(self._text.restrict(alone, runs), 1):
                    missing.append(text)
        return missing

    def _ordered(
        self,
        conn: sqlite3.Connection,
        parsed: tantivy.Query,
        where: str,
        params: Sequence[Any],
        order_by: str,
        limit: int,
        offset: int,
    ) -> list[tuple[int, float | None]]:
        """Every text match, filtered and ordered by SQL (no score)."""
        ids = self._text.ids(parsed)
        if not ids:
            return []
        sql = (
            "SELECT d.id FROM docs d WHERE d.id IN (SELECT value FROM json_each(?))"
            f" AND ({where or '1'}) ORDER BY {order_by}, d.id LIMIT ? OFFSET ?"
        )
        return [(int(r[0]), None) for r in conn.execute(sql, (ids_json(ids), *params, limit, offset))]

    def _filtered(
        self,
        conn: sqlite3.Connection,
        parsed: tantivy.Query,
        where: str,
        params: Sequence[Any],
        limit: int,
        offset: int,
    ) -> list[tuple[int, float | None]]:
        """The top `limit` after `offset` among the records passing SQL `where`.

        The best few pages are ranked and checked against the filter, which is exact as soon
        as enough of them pass. When too few pass (a filter that keeps few of the matches),
        SQLite lists the records passing the filter and tantivy ranks the top k among those
        only, so the cost follows the filter's size, not the number of matches."""
        wanted = offset + limit
        reach = max(4 * wanted, wanted + _REACH)
        candidates = self._text.top(parsed, reach)
        if not candidates:
            return []
        passing = self._passing(conn, [i for i, _ in candidates], where, params)
        kept = [(i, s) for i, s in candidates if i in passing]
        if len(kept) >= wanted or len(candidates) < reach:
            return list(kept[offset:wanted])
        runs = self._filter_runs(conn, where, params)
        if not runs:
            return []
        return [(i, s) for i, s in self._text.top(self._text.restrict(parsed, runs), limit, offset)]

    def _passing(self, conn: sqlite3.Connection, ids: Sequence[int], where: str, params: Sequence[Any]) -> set[int]:
        """Those of the record `ids` that pass SQL `where`."""
        if not ids:
            return set()
        # CROSS JOIN makes the few candidate ids drive: SQLite looks each one up instead of
        # walking an index the filter could use.
        sql = f"SELECT d.id FROM json_each(?) AS j CROSS JOIN docs d ON d.id = j.value WHERE {where}"
        return {int(r[0]) for r in conn.execute(sql, (ids_json(ids), *params))}

    def _filter_runs(self, conn: sqlite3.Connection, where: str, params: Sequence[Any]) -> list[tuple[int, int]]:
        """The ids of the records passing SQL `where`, as runs of consecutive ids."""
        row = conn.execute(f"SELECT json_group_array(d.id) FROM docs d WHERE {where}", tuple(params)).fetchone()
        return id_runs(sorted(orjson.loads(row[0]))) if row and row[0] else []

    def _texts(self, conn: sqlite3.Connection, ids: Sequence[int]) -> dict[int, list[str]]:
        """The stored text fields of the records `ids`."""
        marks = ", ".join("?" * len(ids))
        rows = conn.execute(f"SELECT id, body FROM texts WHERE id IN ({marks})", list(ids))
        return {int(i): self._codec.unpack(body, conn) for i, body in rows}

    def stored_texts(self, conn: sqlite3.Connection, ids: Sequence[int], field: str) -> dict[int, str]:
        """One stored text field of the records `ids` (their `docs.id`), read on `conn`."""
        at = self.schema.text_fields.index(field)
        out: dict[int, str] = {}
        for chunk in chunks(ids):
            out.update((i, texts[at]) for i, texts in self._texts(conn, chunk).items())
        return out

    def stored_fields(self, conn: sqlite3.Connection, ids: Sequence[int]) -> dict[int, dict[str, str]]:
        """Every stored text field of the records `ids`, by field name, each record unpacked once."""
        fields = self.schema.text_fields
        out: dict[int, dict[str, str]] = {}
        for chunk in chunks(ids):
            out.update((i, dict(zip(fields, texts, strict=True))) for i, texts in self._texts(conn, chunk).items())
        return out

    def _text_match(self, spec: str | None) -> str:
        """SQL function `text_match(spec)`: the JSON array of record ids a text match selects."""
        if spec is None:
            return "[]"
        return ids_json(self._text.ids(self._spec_query(spec)))

    def _spec_query(self, spec: str) -> tantivy.Query:
        wanted = orjson.loads(spec)
        if "query" in wanted:
            return self._text.parse(wanted["query"], wanted.get("field"))
        return self._text.any_prefix(wanted["field"], wanted["any_prefix"])

    def match_count(self, spec: str) -> int:
        """How many records the `TEXT_MATCH` parameter `spec` selects (no SQL filter)."""
        query = self._spec_query(spec)
        with self.reader() as conn:
            self._text.refresh(self._stamp(conn))
        return self._text.count(query)

    def snippets(self, keys: Sequence[str], query: str, *, tokens: int = 16) -> dict[str, str]:
        """A snippet per record key for the user's `query` (matches marked ⟦...⟧), from the
        stored texts; records where nothing matches get their first text."""
        if not keys:
            return {}
        parsed = self._text.parse(query)
        marks = ", ".join("?" * len(keys))
        with self.reader() as conn:
            self._text.refresh(self._stamp(conn))
            ids = {int(i): k for i, k in conn.execute(f"SELECT id, key FROM docs WHERE key IN ({marks})", list(keys))}
            texts = self._texts(conn, list(ids))
        found = self._text.snippets(parsed, texts, tokens, (SNIPPET_OPEN, SNIPPET_CLOSE), self._text.words(query))
        return {ids[i]: text for i, text in found.items()}
