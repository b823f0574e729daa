"""Vectors for search by meaning, derived from a `SearchIndex`'s stored texts as its text index is.

Each record's stored text fields are cut into passages by a chunker its server chooses (sections
under headings for notes and documents, windows of turns for meetings, subject and body for
mail) and each passage is embedded. Vectors live in the index's own SQLite database
(`vec_docs`, `vec_chunks`), stamped with the model id (`vectors_model` in `meta`); a record's
vectors carry the fingerprint of what they were made from (its fingerprint and the size of its
stored text), so after any change (adds, edits, deletes, renames, a `clear`) `sync` embeds only
the records whose text moved on and drops the vectors of records that are gone. A model change
drops every vector and embeds again. Nothing is parsed from the sources again.

Searching is brute force over an in-memory float32 matrix (one row per passage, a record scoring
its best passage), the SQL filters of the lexical side resolved to record ids and applied as a
mask. At 384 dimensions a query over 50,000 passages is one matrix-vector product of ~20 M
multiply-adds (a few ms); an approximate index (HNSW, e.g. usearch) starts paying somewhere past
`BRUTE_FORCE_LIMIT` passages, where that product passes ~50 ms on a laptop core.
"""

from __future__ import annotations

import itertools
import logging
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from deskmcp.core.search.embedding import Embedder
from deskmcp.core.search.index import SearchIndex

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

log = logging.getLogger(__name__)

Chunker = Callable[[Mapping[str, str]], list[str]]
"""A record's stored text fields (by name) -> the passages to embed."""

MODEL_KEY = "vectors_model"
BATCH = 64
"""Records embedded and written per transaction."""
PASSAGE_WORDS = 150
"""Words per passage at most (longer sections are cut into windows of this many words)."""
BRUTE_FORCE_LIMIT = 500_000
"""Passages past which an approximate index would pay (see the module docstring); not built here."""
QUERY_BUDGET = 5.0
"""Seconds a search spends embedding records not embedded yet before answering with what is."""
_TABLES = (
    "CREATE TABLE IF NOT EXISTS vec_docs (doc_id INTEGER PRIMARY KEY, key TEXT NOT NULL,"
    " fingerprint TEXT NOT NULL, chunks INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS vec_chunks (doc_id INTEGER NOT NULL, n INTEGER NOT NULL,"
    " vector BLOB NOT NULL, PRIMARY KEY (doc_id, n)) WITHOUT ROWID",
)
_HEADING = re.compile(r"^#{1,6}\s+\S", re.MULTILINE)


# -- chunkers --------------------------------------------------------------------------------


def windows(text: str, words: int = PASSAGE_WORDS) -> list[str]:
    """`text` in pieces of at most `words` whitespace words (none for blank text)."""
    split = text.split()
    return [" ".join(split[i : i + words]) for i in range(0, len(split), words)]


def sections(title: str, body: str, words: int = PASSAGE_WORDS) -> list[str]:
    """A Markdown body cut at its headings, each section in windows of `words`, the title before
    each piece so a passage keeps what it is about."""
    starts = [m.start() for m in _HEADING.finditer(body)]
    bounds = [0, *starts, len(body)] if not starts or starts[0] != 0 else [*starts, len(body)]
    out: list[str] = []
    for a, b in itertools.pairwise(bounds):
        for piece in windows(body[a:b], words):
            out.append(f"{title}\n{piece}" if title else piece)
    if not out and title:
        out.append(title)
    return out


def turn_windows(text: str, words: int = PASSAGE_WORDS) -> list[str]:
    """A transcript (one turn a line) in runs of whole consecutive turns of at most `words`
    words; a longer turn is cut into windows of its own."""
    out: list[str] = []
    run: list[str] = []
    count = 0
    for line in text.splitlines():
        n = len(line.split())
        if not n:
            continue
        if run and count + n > words:
            out.append("\n".join(run))
            run, count = [], 0
        if n > words:
            out.extend(windows(line, words))
            continue
        run.append(line)
        count += n
    if run:
        out.append("\n".join(run))
    return out


# -- the index -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class VectorMatch:
    doc_id: int
    key: str
    score: float
    chunk: int
    """The passage that scored best (its number in the record's chunker output)."""


@dataclass(slots=True)
class _Doc:
    key: str
    fingerprint: str
    vectors: npt.NDArray[np.float32]


class VectorIndex:
    """The vectors of one `SearchIndex`'s records for one model. Thread-safe."""

    def __init__(self, index: SearchIndex, embedder: Embedder, chunker: Chunker, *, batch: int = BATCH) -> None:
        import numpy as np

        self._np = np
        self.index = index
        self.embedder = embedder
        self.chunker = chunker
        self.batch = batch
        self._lock = threading.RLock()
        self._stamp: str | None = None
        self._docs: dict[int, _Doc] = {}
        self._arrays: tuple[Any, Any, Any, list[str]] | None = None
        self.embedded = 0
        """Passages embedded by this process (for status and benchmarks)."""

    # -- keeping in step -------------------------------------------------------------------

    def _records_stamp(self) -> str:
        with self.index.reader() as conn:
            rows = dict(conn.execute("SELECT key, value FROM meta WHERE key LIKE '\\_index\\_%' ESCAPE '\\'"))
        return f"{rows.get('_index_epoch')}:{rows.get('_index_generation')}"

    def _prepare(self) -> None:
        """Create the tables (a recreated index drops them) and drop vectors of another model."""
        with self.index.transaction() as conn:
            for ddl in _TABLES:
                conn.execute(ddl)
            row = conn.execute("SELECT value FROM meta WHERE key=?", (MODEL_KEY,)).fetchone()
            if row is None or row[0] != self.embedder.model_id:
                if row is not None:
                    log.info("vectors of %s were made by %s: embedding again", self.index.path, row[0])
                conn.execute("DELETE FROM vec_chunks")
                conn.execute("DELETE FROM vec_docs")
                self.index.set_meta(MODEL_KEY, self.embedder.model_id, conn)
                self._docs.clear()
                self._arrays = None

    def sync(self, budget: float | None = QUERY_BUDGET) -> int:
        """Bring the vectors in step with the records; returns how many records are still to embed
        (more than `budget` seconds of embedding is left for the next call; None: no limit)."""
        with self._lock:
            stamp = self._records_stamp()
            if stamp == self._stamp:
                return 0
            started = time.perf_counter()
            self._prepare()
            with self.index.reader() as conn:
                current = {
                    int(i): (k, f)
                    for i, k, f in conn.execute(
                        "SELECT d.id, d.key, d.fingerprint || ':' || length(t.body)"
                        " FROM docs d JOIN texts t ON t.id = d.id"
                    )
                }
                stored = {int(i): (k, f) for i, k, f in conn.execute("SELECT doc_id, key, fingerprint FROM vec_docs")}
            for doc_id in [i for i, d in self._docs.items() if current.get(i) != (d.key, d.fingerprint)]:
                del self._docs[doc_id]
                self._arrays = None
            stale = [i for i, kf in stored.items() if current.get(i) != kf]
            todo = [i for i, kf in current.items() if stored.get(i) != kf]
            load = [i for i, kf in current.items() if stored.get(i) == kf and i not in self._docs]
            if stale:
                self._delete(stale)
            if load:
                self._load(load, current)
            done = 0
            for at in range(0, len(todo), self.batch):
                if budget is not None and done and time.perf_counter() - started > budget:
                    break
                part = todo[at : at + self.batch]
                self._embed(part, current)
                done += len(part)
            pending = len(todo) - done
            if pending == 0:
                self._stamp = stamp
            elif done:
                log.info("vectors of %s: %d records embedded, %d to go", self.index.path, done, pending)
            return pending

    def _delete(self, ids: Sequence[int]) -> None:
        with self.index.transaction() as conn:
            conn.executemany("DELETE FROM vec_chunks WHERE doc_id=?", [(i,) for i in ids])
            conn.executemany("DELETE FROM vec_docs WHERE doc_id=?", [(i,) for i in ids])

    def _load(self, ids: Sequence[int], current: Mapping[int, tuple[str, str]]) -> None:
        np = self._np
        dim = self.embedder.dimension
        rows: dict[int, list[bytes]] = {i: [] for i in ids}
        with self.index.reader() as conn:
            for start in range(0, len(ids), 500):
                part = ids[start : start + 500]
                marks = ", ".join("?" * len(part))
                for doc_id, blob in conn.execute(
                    f"SELECT doc_id, vector FROM vec_chunks WHERE doc_id IN ({marks}) ORDER BY doc_id, n", part
                ):
                    rows[int(doc_id)].append(blob)
        for doc_id, blobs in rows.items():
            key, fingerprint = current[doc_id]
            matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), dim)
            self._docs[doc_id] = _Doc(key, fingerprint, matrix)
        self._arrays = None

    def passages(self, ids: Sequence[int]) -> dict[int, list[str]]:
        """The passages the chunker makes of each record's stored texts."""
        with self.index.reader() as conn:
            texts = self.index.stored_fields(conn, ids)
        return {i: self.chunker(texts.get(i, {})) for i in ids}

    def _embed(self, ids: Sequence[int], current: Mapping[int, tuple[str, str]]) -> None:
        np = self._np
        chunked = self.passages(ids)
        flat = [text for i in ids for text in chunked[i]]
        encoded = self.embedder.encode(flat) if flat else np.zeros((0, self.embedder.dimension), np.float32)
        encoded = np.ascontiguousarray(encoded, dtype=np.float32)
        at = 0
        docs: list[tuple[int, str, str, int]] = []
        chunks: list[tuple[int, int, bytes]] = []
        for doc_id in ids:
            n = len(chunked[doc_id])
            matrix = encoded[at : at + n]
            at += n
            key, fingerprint = current[doc_id]
            docs.append((doc_id, key, fingerprint, n))
            chunks.extend((doc_id, j, matrix[j].tobytes()) for j in range(n))
            self._docs[doc_id] = _Doc(key, fingerprint, matrix)
        with self.index.transaction() as conn:
            conn.executemany("DELETE FROM vec_chunks WHERE doc_id=?", [(i,) for i in ids])
            conn.executemany("INSERT OR REPLACE INTO vec_docs VALUES (?, ?, ?, ?)", docs)
            conn.executemany("INSERT INTO vec_chunks VALUES (?, ?, ?)", chunks)
        self.embedded += len(flat)
        self._arrays = None

    # -- searching -------------------------------------------------------------------------

    def _matrix(self) -> tuple[Any, Any, Any, list[str]]:
        """(passage matrix, first row of each record, record ids, record keys), records by id."""
        np = self._np
        if self._arrays is None:
            docs = [(i, d) for i, d in sorted(self._docs.items()) if len(d.vectors)]
            dim = self.embedder.dimension
            matrix = np.concatenate([d.vectors for _, d in docs]) if docs else np.zeros((0, dim), np.float32)
            sizes = np.array([len(d.vectors) for _, d in docs], dtype=np.int64)
            starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64) if docs else sizes
            self._arrays = (matrix, starts, np.array([i for i, _ in docs], dtype=np.int64), [d.key for _, d in docs])
        return self._arrays

    def _allowed(self, where: str, params: Sequence[Any]) -> Any:
        with self.index.reader() as conn:
            ids = [int(r[0]) for r in conn.execute(f"SELECT d.id FROM docs d WHERE {where}", tuple(params))]
        np = self._np
        return np.array(ids, dtype=np.int64)

    def nearest(
        self,
        vector: npt.NDArray[np.float32],
        *,
        where: str = "",
        params: Sequence[Any] = (),
        limit: int = 20,
        exclude: int | None = None,
    ) -> list[VectorMatch]:
        """The records whose best passage is closest to `vector`, best first, among those passing
        SQL `where` (over `docs d`)."""
        np = self._np
        with self._lock:
            matrix, starts, doc_ids, keys = self._matrix()
        if not len(doc_ids) or limit <= 0:
            return []
        scores = matrix @ vector.astype(np.float32)
        best = np.maximum.reduceat(scores, starts)
        if where:
            best = np.where(np.isin(doc_ids, self._allowed(where, params)), best, -np.inf)
        if exclude is not None:
            best = np.where(doc_ids == exclude, -np.inf, best)
        k = min(limit, len(best))
        top = np.argpartition(-best, k - 1)[:k] if k < len(best) else np.arange(len(best))
        top = top[np.argsort(-best[top], kind="stable")]
        out: list[VectorMatch] = []
        ends = np.append(starts[1:], len(scores))
        for row in top:
            if not np.isfinite(best[row]):
                break
            chunk = int(np.argmax(scores[starts[row] : ends[row]]))
            out.append(VectorMatch(int(doc_ids[row]), keys[row], float(best[row]), chunk))
        return out

    def search(self, query: str, *, where: str = "", params: Sequence[Any] = (), limit: int = 20) -> list[VectorMatch]:
        """The records closest in meaning to the text `query` (call `sync` first)."""
        vector = self.embedder.encode([query])[0]
        return self.nearest(vector, where=where, params=params, limit=limit)

    def related(self, key: str, *, where: str = "", params: Sequence[Any] = (), limit: int = 10) -> list[VectorMatch]:
        """The records closest to record `key` (the mean of its passages), itself left out; [] for
        a record with no vectors."""
        np = self._np
        with self._lock:
            found = next(((i, d) for i, d in self._docs.items() if d.key == key), None)
        if found is None or not len(found[1].vectors):
            return []
        mean = found[1].vectors.mean(axis=0)
        norm = float(np.linalg.norm(mean))
        return self.nearest(mean / (norm or 1.0), where=where, params=params, limit=limit, exclude=found[0])

    def passage(self, match: VectorMatch, chars: int = 160) -> str:
        """The start of the passage that made `match`, as a snippet."""
        texts = self.passages([match.doc_id]).get(match.doc_id, [])
        text = " ".join(texts[match.chunk].split()) if match.chunk < len(texts) else ""
        return text[:chars] + ("…" if len(text) > chars else "")

    def count(self) -> tuple[int, int]:
        """(records, passages) held in memory."""
        with self._lock:
            return len(self._docs), sum(len(d.vectors) for d in self._docs.values())
