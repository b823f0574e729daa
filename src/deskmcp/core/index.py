"""The SQLite FTS5 search engine every indexed server uses.

One database file per index: a `docs` table (one row per record: key, fingerprint, payload,
typed columns), an FTS5 table over the record's text fields (porter stemming, bm25 ranking,
snippets), and side tables a server declares for its filters (`doc_id` first, rows deleted
with their record). WAL mode, one writer at a time, a small pool of readers.

User text never reaches FTS5 syntax: `fts_query` quotes every term. Updates are
incremental: `sync` compares fingerprints (content hash or mtime) and touches only
what changed. An index that cannot be opened is derived data: it is moved aside and rebuilt.
"""

from __future__ import annotations

import logging
import queue
import re
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deskmcp.core.errors import BadRequest, IOFailure

log = logging.getLogger(__name__)

_TERM = re.compile(r'"([^"]*)"|(\S+)')
_WORD = re.compile(r"\w", re.UNICODE)
SNIPPET_OPEN = "⟦"
SNIPPET_CLOSE = "⟧"
"""Every server's snippets mark matches as ⟦word⟧: brackets that do not occur in Markdown, so a model
never confuses a match with the author's **emphasis**."""


@dataclass(frozen=True)
class IndexSchema:
    """What one index holds. Bump `version` whenever any part changes: the index is rebuilt."""

    name: str
    version: int
    text_fields: tuple[str, ...]
    weights: tuple[float, ...] = ()
    columns: tuple[tuple[str, str], ...] = ()
    side_tables: tuple[str, ...] = ()
    """DDL run after the core tables: CREATE TABLE (first column doc_id) and CREATE INDEX."""

    def __post_init__(self) -> None:
        if self.weights and len(self.weights) != len(self.text_fields):
            raise ValueError("one weight per text field")
        for name in (*self.text_fields, *(c for c, _ in self.columns)):
            if not name.isidentifier():
                raise ValueError(f"bad column name {name!r}")


@dataclass
class IndexRecord:
    key: str
    fingerprint: str
    texts: Mapping[str, str]
    columns: Mapping[str, Any] = field(default_factory=dict)
    data: bytes | None = None
    side: Mapping[str, Sequence[tuple[Any, ...]]] = field(default_factory=dict)


@dataclass
class Hit:
    key: str
    score: float | None
    snippet: str | None
    data: bytes | None
    columns: dict[str, Any]


@dataclass
class ApplyStats:
    added: int = 0
    updated: int = 0
    deleted: int = 0
    unchanged: int = 0
    seconds: float = 0.0

    @property
    def changed(self) -> int:
        return self.added + self.updated + self.deleted


def fts_query(text: str) -> str:
    """Quote user text into an FTS5 query: every term (or "quoted phrase") must match.

    Operators, column filters and stray quotes in the user's text are treated as words.
    """
    phrases: list[str] = []
    for match in _TERM.finditer(text):
        chunk = match.group(1) if match.group(1) is not None else match.group(2)
        if not _WORD.search(chunk):
            continue
        phrases.append('"' + chunk.replace('"', '""') + '"')
    if not phrases:
        raise BadRequest(f"The search query {text!r} has no words to search for.", {"query": text})
    return " ".join(phrases)


def fts_any_prefix(column: str, values: Sequence[str]) -> str:
    """An FTS5 query matching records whose `column` contains any of `values`, each as a
    phrase whose last word may be a prefix ("ali" finds "Alice"). Values are quoted."""
    if not column.isidentifier():
        raise ValueError(f"bad column name {column!r}")
    phrases = []
    for value in values:
        words = " ".join(w for w in re.split(r"\W+", value) if w)
        if words:
            phrases.append('"' + words.replace('"', '""') + '"*')
    if not phrases:
        raise BadRequest("Nothing to match: the values have no letters or digits.", {"values": list(values)})
    return f"{column} : ({' OR '.join(phrases)})"


class SearchIndex:
    """A persistent FTS5 index. Safe to use from several threads."""

    def __init__(self, path: Path, schema: IndexSchema, *, readers: int = 4) -> None:
        self.path = path
        self.schema = schema
        self._write_lock = threading.RLock()
        self._readers: queue.LifoQueue[sqlite3.Connection] = queue.LifoQueue()
        self._max_readers = readers
        self._all: list[sqlite3.Connection] = []
        self._closed = False
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._writer = self._open_writer()
        except sqlite3.DatabaseError as exc:
            self._quarantine(exc)
            self._writer = self._open_writer()
        self._columns = [name for name, _ in schema.columns]
        weights = ", ".join(str(float(w)) for w in schema.weights)
        self._bm25 = f"bm25(fts, {weights})" if weights else "bm25(fts)"
        self._side_names = [name for ddl in schema.side_tables if (name := _table_name(ddl))]

    # -- opening ---------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=30, check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA busy_timeout=30000")
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
        wanted = f"{self.schema.name}:{self.schema.version}"
        if row is None or row[0] != wanted:
            self._create(conn, wanted)
        conn.execute("PRAGMA quick_check(1)").fetchone()
        return conn

    def _create(self, conn: sqlite3.Connection, schema_id: str) -> None:
        s = self.schema
        extra = "".join(f", {name} {sqltype}" for name, sqltype in s.columns)
        tables = [
            row[0]
            for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'"
                " AND name NOT LIKE 'fts_%'"
            )
        ]
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute("PRAGMA defer_foreign_keys=ON")
            for table in tables:
                conn.execute(f'DROP TABLE IF EXISTS "{table}"')
            conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
            conn.execute(
                "CREATE TABLE docs (id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE,"
                f" fingerprint TEXT NOT NULL, data BLOB{extra})"
            )
            fields = ", ".join(s.text_fields)
            conn.execute(
                f"CREATE VIRTUAL TABLE fts USING fts5({fields}, tokenize='porter unicode61 remove_diacritics 2')"
            )
            for ddl in s.side_tables:
                conn.execute(ddl)
            conn.execute("INSERT INTO meta(key, value) VALUES('schema', ?)", (schema_id,))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _quarantine(self, exc: Exception) -> None:
        aside = self.path.with_name(f"{self.path.name}.corrupt-{int(time.time())}")
        log.warning("index %s is unreadable (%s); moving it to %s and rebuilding", self.path, exc, aside)
        for conn in self._all:
            conn.close()
        self._all.clear()
        for suffix in ("", "-wal", "-shm"):
            src = Path(f"{self.path}{suffix}")
            if src.exists():
                src.replace(Path(f"{aside}{suffix}"))

    def close(self) -> None:
        with self._write_lock:
            self._closed = True
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
        """The writer connection inside BEGIN IMMEDIATE ... COMMIT (rolled back on error)."""
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

    def _write_record(self, conn: sqlite3.Connection, record: IndexRecord, doc_id: int | None) -> None:
        cols = self._columns
        values = [record.columns.get(c) for c in cols]
        if doc_id is None:
            names = ", ".join(["key", "fingerprint", "data", *cols])
            marks = ", ".join("?" * (3 + len(cols)))
            cur = conn.execute(
                f"INSERT INTO docs({names}) VALUES({marks})",
                (record.key, record.fingerprint, record.data, *values),
            )
            doc_id = int(cur.lastrowid or 0)
        else:
            sets = ", ".join(f"{c}=?" for c in ["fingerprint", "data", *cols])
            conn.execute(f"UPDATE docs SET {sets} WHERE id=?", (record.fingerprint, record.data, *values, doc_id))
            conn.execute("DELETE FROM fts WHERE rowid=?", (doc_id,))
            for table in self._side_names:
                conn.execute(f"DELETE FROM {table} WHERE doc_id=?", (doc_id,))
        fields = self.schema.text_fields
        conn.execute(
            f"INSERT INTO fts(rowid, {', '.join(fields)}) VALUES(?{', ?' * len(fields)})",
            (doc_id, *(record.texts.get(f, "") or "" for f in fields)),
        )
        for table, rows in record.side.items():
            if table not in self._side_names:
                raise ValueError(f"unknown side table {table!r}")
            for row in rows:
                marks = ", ".join("?" * (len(row) + 1))
                conn.execute(f"INSERT INTO {table} VALUES({marks})", (doc_id, *row))

    def _delete(self, conn: sqlite3.Connection, doc_id: int) -> None:
        conn.execute("DELETE FROM fts WHERE rowid=?", (doc_id,))
        conn.execute("DELETE FROM docs WHERE id=?", (doc_id,))

    def apply(
        self,
        upserts: Iterable[IndexRecord] = (),
        deletes: Iterable[str] = (),
        *,
        meta: Mapping[str, str] | None = None,
    ) -> ApplyStats:
        """Insert or replace `upserts` and remove `deletes` in one transaction."""
        started = time.perf_counter()
        stats = ApplyStats()
        with self.transaction() as conn:
            for record in upserts:
                row = conn.execute("SELECT id FROM docs WHERE key=?", (record.key,)).fetchone()
                self._write_record(conn, record, None if row is None else int(row[0]))
                if row is None:
                    stats.added += 1
                else:
                    stats.updated += 1
            for key in deletes:
                row = conn.execute("SELECT id FROM docs WHERE key=?", (key,)).fetchone()
                if row is not None:
                    self._delete(conn, int(row[0]))
                    stats.deleted += 1
            for k, v in (meta or {}).items():
                self.set_meta(k, v, conn)
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
        with self.transaction() as conn:
            conn.execute("DELETE FROM fts")
            for table in self._side_names:
                conn.execute(f"DELETE FROM {table}")
            conn.execute("DELETE FROM docs")

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
            rows = conn.execute(sql, (*params, limit, offset)).fetchall()
        return [self._hit(r, None, None) for r in rows]

    def count(self, *, where: str = "", params: Sequence[Any] = (), query: str | None = None) -> int:
        clause = f"AND ({where})" if where else ""
        with self.reader() as conn:
            if query is None:
                sql = f"SELECT count(*) FROM docs d WHERE 1=1 {clause}"
                return int(conn.execute(sql, tuple(params)).fetchone()[0])
            sql = f"SELECT count(*) FROM fts JOIN docs d ON d.id=fts.rowid WHERE fts MATCH ? {clause}"
            return int(conn.execute(sql, (fts_query(query), *params)).fetchone()[0])

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
    ) -> list[Hit]:
        """Records whose text matches every term of `query`, best bm25 first (or `order_by`).

        `where` filters over `docs d` with `params`; snippets mark matches with ⟦...⟧.
        """
        match = fts_query(query)
        # bm25() with the weights spelled out is cheaper than FTS5's configured `rank`; with
        # another order the score is not needed, so it is not computed. Without filters the
        # FTS table is ranked alone: joining `docs` first would cost a lookup per match.
        score = self._bm25 if order_by is None else "NULL"
        if where or order_by:
            sql = (
                f"SELECT d.id, {score} AS score FROM fts JOIN docs d ON d.id = fts.rowid"
                f" WHERE fts MATCH ? AND ({where or '1'}) ORDER BY {order_by or 'score'}, d.id LIMIT ? OFFSET ?"
            )
        else:
            sql = f"SELECT rowid, {score} AS score FROM fts WHERE fts MATCH ? ORDER BY score, rowid LIMIT ? OFFSET ?"
        with self.reader() as conn:
            try:
                ranked = conn.execute(sql, (match, *params, limit, offset)).fetchall()
            except sqlite3.OperationalError as exc:
                raise BadRequest(f"The search query {query!r} could not be run: {exc}.", {"query": query}) from exc
            if not ranked:
                return []
            ids = [int(r[0]) for r in ranked]
            marks = ", ".join("?" * len(ids))
            snippets = dict(
                conn.execute(
                    f"SELECT rowid, snippet(fts, -1, ?, ?, '…', ?) FROM fts WHERE fts MATCH ? AND rowid IN ({marks})",
                    (SNIPPET_OPEN, SNIPPET_CLOSE, snippet_tokens, match, *ids),
                )
            )
            rows = {
                int(r[0]): r[1:]
                for r in conn.execute(f"SELECT d.id, {self._select_cols()} FROM docs d WHERE d.id IN ({marks})", ids)
            }
        return [
            self._hit(rows[i], None if raw is None else -float(raw), snippets.get(i)) for i, raw in ranked if i in rows
        ]


def _table_name(ddl: str) -> str | None:
    """The table a CREATE TABLE statement makes; None for other DDL (indexes)."""
    match = re.match(r"\s*CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)", ddl, re.IGNORECASE)
    return match.group(1) if match else None
