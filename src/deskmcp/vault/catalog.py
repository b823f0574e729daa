"""The vault's search index: every note mirrored into the core search index, kept true incrementally.

A note's fingerprint is `mtime_ns:size`. A scan stats every note (no reads) and reads only
the ones whose fingerprint changed, so a start-up over 50,000 unchanged notes touches no
file contents. Single paths (from the watcher, or after the server's own writes) are
refreshed the same way. Side tables hold tags, frontmatter key/values and links for filters.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import posixpath
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path
from typing import Any

import orjson

from deskmcp.core.errors import BadRequest
from deskmcp.core.search.index import ApplyStats, IndexRecord, IndexSchema, SearchIndex
from deskmcp.core.search.terms import fold
from deskmcp.vault import links as md
from deskmcp.vault.notes import NOTE_SUFFIX, is_hidden, parse_note, read_for_index, walk

log = logging.getLogger(__name__)

SET = "\0"
"""The `props` value of a field whose value has nothing a `field:value` filter compares with (a
map, an empty list): the row says the field is set, for `field:`."""

SCHEMA = IndexSchema(
    name="vault",
    version=4,
    text_fields=("title", "path", "headings", "tags", "properties", "body"),
    weights=(10.0, 6.0, 4.0, 4.0, 2.0, 1.0),
    columns=(
        ("name_lc", "TEXT"),
        ("folder", "TEXT"),
        ("title", "TEXT"),
        ("mtime_ns", "INTEGER"),
        ("size", "INTEGER"),
        ("hash", "TEXT"),
    ),
    side_tables=(
        # `tag` without NOT NULL: SQLite 3.40's check reports a NOT NULL column placed before a
        # key column as NULL in every row of a WITHOUT ROWID table (the tag is always written)
        "CREATE TABLE tags (doc_id INTEGER NOT NULL REFERENCES docs(id) ON DELETE CASCADE,"
        " tag TEXT, tag_lc TEXT NOT NULL, PRIMARY KEY (doc_id, tag_lc)) WITHOUT ROWID",
        "CREATE INDEX tags_tag ON tags(tag_lc)",
        "CREATE TABLE props (doc_id INTEGER NOT NULL REFERENCES docs(id) ON DELETE CASCADE,"
        " key_lc TEXT NOT NULL, value_lc TEXT NOT NULL, PRIMARY KEY (doc_id, key_lc, value_lc)) WITHOUT ROWID",
        "CREATE INDEX props_kv ON props(key_lc, value_lc)",
        # a link's context line is not stored: it is read back from the note's stored body
        "CREATE TABLE links (doc_id INTEGER NOT NULL REFERENCES docs(id) ON DELETE CASCADE,"
        " target_lc TEXT NOT NULL, target TEXT NOT NULL, heading TEXT, alias TEXT, embed INTEGER,"
        " line INTEGER)",
        "CREATE INDEX links_target ON links(target_lc)",
        "CREATE INDEX links_doc ON links(doc_id)",
        "CREATE INDEX docs_name ON docs(name_lc)",
        "CREATE INDEX docs_mtime ON docs(mtime_ns)",
    ),
)

BATCH = 1000
"""Notes written per transaction during a scan (each batch is searchable once written)."""
CHUNK = 100
"""Notes a worker process reads and parses per task."""
PARALLEL_MIN = 2000
"""Fewer notes than this to index are parsed in the scanning thread: starting processes costs more."""


@dataclass
class ScanProgress:
    done: int = 0
    total: int = 0


@dataclass
class ScanStats:
    seen: int = 0
    indexed: int = 0
    removed: int = 0
    seconds: float = 0.0


def folder_of(rel: str) -> str:
    return posixpath.dirname(rel)


def name_key(rel: str) -> str:
    name = posixpath.basename(rel)
    return fold(name[: -len(NOTE_SUFFIX)] if name.lower().endswith(NOTE_SUFFIX) else name)


def prefix_range(folder: str) -> tuple[str, str]:
    """Key bounds of everything under `folder` ('/' + 1 is '0'), so the key index is used."""
    return f"{folder}/", f"{folder}0"


def build_record(rel: str, data: bytes | None, mtime_ns: int, size: int) -> IndexRecord:
    """The index record of one note; a note over the size limit is indexed by name only."""
    fingerprint = f"{mtime_ns}:{size}"
    columns: dict[str, Any] = {
        "name_lc": name_key(rel),
        "folder": folder_of(rel),
        "mtime_ns": mtime_ns,
        "size": size,
    }
    if data is None:
        title = md.title({}, rel)
        columns.update(title=title, hash=None)
        return IndexRecord(rel, fingerprint, {"title": title, "path": rel}, columns, orjson.dumps([]))
    note = parse_note(rel, data, mtime_ns, strict_text=False)
    lines = md.blank_code(note.parts.body)
    tags = md.note_tags(note.frontmatter, lines)
    found = md.links(lines, folder_of(rel))
    title = md.title(note.frontmatter, rel)
    props = sorted(
        {(fold(key), value) for key, raw in note.frontmatter.items() for value in md.scalar_values(raw) or [SET]}
    )
    columns.update(title=title, hash=note.hash)
    return IndexRecord(
        key=rel,
        fingerprint=fingerprint,
        texts={
            "title": title,
            "path": rel.replace("/", " ")[: -len(NOTE_SUFFIX)],
            "headings": "\n".join(md.headings(lines)),
            "tags": " ".join(t.replace("/", " ") for t in tags),
            "properties": "\n".join(s for raw in note.frontmatter.values() for s in md.text_values(raw)),
            "body": note.parts.body,
        },
        columns=columns,
        data=orjson.dumps(tags),
        side={
            "tags": [(t, fold(t)) for t in tags],
            "props": props,
            "links": [
                (link.target_key, link.target, link.heading, link.alias, int(link.embed), link.line) for link in found
            ],
        },
    )


def read_record(root: Path, rel: str, max_bytes: int) -> IndexRecord | None:
    """The record of the note at `rel`, None when it is gone or unreadable."""
    try:
        data, mtime_ns, size = read_for_index(root / rel, max_bytes)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    except OSError as exc:
        log.warning("cannot read %s for the index: %s", rel, exc)
        return None
    return build_record(rel, data, mtime_ns, size)


def read_records(root: Path, max_bytes: int, rels: list[str]) -> list[IndexRecord]:
    """`read_record` for several notes: one task of a worker process."""
    return [r for rel in rels if (r := read_record(root, rel, max_bytes)) is not None]


def parse_filter(text: str | None) -> tuple[str, str] | None:
    """`field:value` (split at the first colon); `field:` matches notes that have the field."""
    if text is None or not text.strip():
        return None
    field, sep, value = text.partition(":")
    if not sep or not field.strip() or SET in text:
        raise BadRequest(
            f"The filter {text!r} is not 'field:value' (e.g. 'status:pending').",
            {"filter": text},
        )
    return fold(field.strip()), fold(value.strip())


def filter_sql(
    folder: str, tag: str | None, field_value: tuple[str, str] | None, *, recursive: bool = True
) -> tuple[str, list[Any]]:
    """SQL over `docs d` for a folder ("" is the whole vault), a tag (nested tags included)
    and a frontmatter `field:value` (case-insensitive; any list item matches)."""
    clauses: list[str] = []
    params: list[Any] = []
    if folder and recursive:
        clauses.append("d.key >= ? AND d.key < ?")
        params.extend(prefix_range(folder))
    elif not recursive:
        clauses.append("d.folder = ?")
        params.append(folder)
    wanted = fold((tag or "").strip().lstrip("#"))
    if wanted:
        clauses.append(
            "EXISTS (SELECT 1 FROM tags t WHERE t.doc_id = d.id AND (t.tag_lc = ? OR substr(t.tag_lc, 1, ?) = ?))"
        )
        params.extend([wanted, len(wanted) + 1, wanted + "/"])
    if field_value is not None:
        field, value = field_value
        if value:
            clauses.append("EXISTS (SELECT 1 FROM props p WHERE p.doc_id = d.id AND p.key_lc = ? AND p.value_lc = ?)")
            params.extend([field, value])
        else:
            clauses.append("EXISTS (SELECT 1 FROM props p WHERE p.doc_id = d.id AND p.key_lc = ?)")
            params.append(field)
    return " AND ".join(clauses), params


class Catalog:
    """The index of one vault. Thread-safe: one writer at a time, readers in parallel."""

    def __init__(self, root: Path, index_path: Path, max_bytes: int, *, workers: int = 1) -> None:
        self.root = root
        self.index = SearchIndex(index_path, SCHEMA)
        self.max_bytes = max_bytes
        self.workers = workers
        """Processes that read and parse notes when many need indexing (1: in this thread)."""
        self.parallel_min = PARALLEL_MIN
        self._lock = threading.RLock()  # one scan at a time
        self._apply_lock = threading.Lock()  # one write to the index at a time, and `_touched`
        self._touched: set[str] | None = None
        self._cancelled = threading.Event()
        self.progress: ScanProgress | None = None
        """Set while a full scan runs: notes up to date so far, and notes found."""
        self.last_scan: ScanStats | None = None
        self.last_scan_at: float | None = None

    def cancel(self) -> None:
        """Make a running scan stop after its current batch (the server is closing)."""
        self._cancelled.set()

    def close(self) -> None:
        self.index.close()

    def _record(self, rel: str) -> IndexRecord | None:
        return read_record(self.root, rel, self.max_bytes)

    def scan(
        self, folder: str = "", *, on_walked: Callable[[int], None] | None = None, deferred: bool = False
    ) -> ScanStats:
        """Make the index match the notes under `folder` (the whole vault by default).

        The folder is walked first (stat only), then the new and changed notes are read and
        parsed, in worker processes when there are many, and written in batches: what is
        indexed is searchable at once. A note refreshed on its own meanwhile (a write, a
        watcher event) is not overwritten by the scan's older reading of it. `on_walked` is
        told how many notes need reading once the walk is done. `deferred` (the start-up
        scan): text searches during the scan see its batches up to a few seconds late, all of
        them once it returns.

        A full scan shows its `progress` once its walk has found notes to read or remove, until
        they are: a scan that finds the index true (the catch-up scan once the watcher is live)
        never makes answers say they are partial.
        """
        started = time.perf_counter()
        stats = ScanStats()
        with self._lock:
            progress = ScanProgress()
            with self._apply_lock:
                self._touched = set()
            try:
                known = self._fingerprints(folder)
                todo: list[str] = []
                for rel, mtime_ns, size in walk(self.root, folder):
                    progress.total += 1
                    if known.pop(rel, None) == f"{mtime_ns}:{size}":
                        progress.done += 1
                    else:
                        todo.append(rel)
                stats.seen = progress.total
                if not folder and (todo or known):
                    self.progress = progress
                if on_walked is not None:
                    on_walked(len(todo))
                # A first index (nothing known yet) builds the side tables' indexes once, at the end.
                with self.index.bulk() if todo and not known and not folder else contextlib.nullcontext():
                    for rels, records in self._parsed(todo):
                        if self._cancelled.is_set():
                            return stats  # closing: what is written stays, the next start resumes
                        applied = self._apply(records, (), deferred=deferred)
                        stats.indexed += applied.added + applied.updated
                        progress.done += len(rels)
                applied = self._apply((), list(known))
                self.index.flush()
                stats.removed = applied.deleted
            finally:
                with self._apply_lock:
                    self._touched = None
                if not folder:
                    self.progress = None
        stats.seconds = time.perf_counter() - started
        if not folder:
            self.last_scan, self.last_scan_at = stats, time.monotonic()
        if stats.indexed or stats.removed:
            log.info(
                "vault scan: %d notes, %d indexed, %d removed in %.2fs",
                stats.seen,
                stats.indexed,
                stats.removed,
                stats.seconds,
            )
        return stats

    def _apply(self, records: Sequence[IndexRecord], deletes: Sequence[str], *, deferred: bool = False) -> ApplyStats:
        with self._apply_lock:
            touched = self._touched or set()
            return self.index.apply(
                [r for r in records if r.key not in touched],
                [k for k in deletes if k not in touched],
                deferred=deferred,
            )

    def _parsed(self, todo: list[str]) -> Iterator[tuple[list[str], list[IndexRecord]]]:
        """(paths, their records) batch by batch, parsed in worker processes when it pays."""
        batches = [todo[i : i + BATCH] for i in range(0, len(todo), BATCH)]
        if self.workers <= 1 or len(todo) < self.parallel_min:
            for rels in batches:
                yield rels, [r for rel in rels if (r := self._record(rel)) is not None]
            return
        # Spawned, not forked: the server has threads, and a fork copies their locks.
        yielded = 0
        try:
            pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=multiprocessing.get_context("spawn"))
        except (OSError, ValueError) as exc:
            log.warning("cannot start processes to parse notes (%s); parsing them here", exc)
            pool = None
        if pool is not None:
            try:
                parts = [todo[i : i + CHUNK] for i in range(0, len(todo), CHUNK)]
                pending: list[IndexRecord] = []
                done: list[str] = []
                for rels, records in zip(
                    parts, pool.map(read_records, repeat(self.root), repeat(self.max_bytes), parts), strict=True
                ):
                    pending.extend(records)
                    done.extend(rels)
                    if len(done) >= BATCH:
                        yield done, pending
                        yielded += len(done)
                        pending, done = [], []
                if done:
                    yield done, pending
                return
            except (BrokenProcessPool, OSError) as exc:
                log.warning("the processes parsing notes failed (%s); parsing the rest here", exc)
            finally:  # also when the scan stops early: queued tasks are dropped, not waited for
                pool.shutdown(wait=True, cancel_futures=True)
        rest = todo[yielded:]
        for i in range(0, len(rest), BATCH):
            rels = rest[i : i + BATCH]
            yield rels, [r for rel in rels if (r := self._record(rel)) is not None]

    def scan_if_stale(self, max_age: float) -> None:
        """Scan unless a full scan finished less than `max_age` seconds ago (checked under the lock,
        so callers arriving together share one scan)."""
        with self._lock:
            last = self.last_scan_at
            if last is None or time.monotonic() - last >= max_age:
                self.scan()

    def _fingerprints(self, folder: str) -> dict[str, str]:
        if not folder:
            return self.index.fingerprints()
        low, high = prefix_range(folder)
        with self.index.reader() as conn:
            return dict(conn.execute("SELECT key, fingerprint FROM docs WHERE key >= ? AND key < ?", (low, high)))

    def refresh(self, rel: str) -> None:
        """Re-index one note path: added, changed, or gone."""
        if is_hidden(rel) or not rel.lower().endswith(NOTE_SUFFIX):
            return
        # Not under the scan lock: a write answers at once even during a first index; the
        # running scan then leaves this path alone (see `_touched`).
        with self._apply_lock:
            if self._touched is not None:
                self._touched.add(rel)
            full = self.root / rel
            try:
                st = full.lstat()
            except OSError:
                st = None
            if st is None or not full.is_file() or full.is_symlink() or _linked(self.root, rel):
                self.index.apply((), [rel])
                return
            hit = self.index.get(rel)
            if hit is not None and hit.columns["mtime_ns"] == st.st_mtime_ns and hit.columns["size"] == st.st_size:
                return
            record = self._record(rel)
            self.index.apply([record] if record else [], [] if record else [rel])

    def refresh_path(self, rel: str) -> None:
        """A path the watcher reported: a note, a folder (created, moved in) or a folder gone."""
        if not rel or is_hidden(rel):
            return
        full = self.root / rel
        if full.is_dir() and not full.is_symlink() and not _linked(self.root, rel):
            self.scan(rel)
        elif rel.lower().endswith(NOTE_SUFFIX):
            self.refresh(rel)
        elif not full.exists():
            low, high = prefix_range(rel)
            with self.index.reader() as conn:
                gone = [r[0] for r in conn.execute("SELECT key FROM docs WHERE key >= ? AND key < ?", (low, high))]
            if gone:
                with self._lock:
                    self._apply((), gone)

    def tag_counts(self, prefix: str, limit: int) -> list[tuple[str, int]]:
        """(tag, notes carrying it), most used first; `prefix` is lower case ("" for all)."""
        where = "WHERE substr(tag_lc, 1, ?) = ?" if prefix else ""
        params: list[Any] = [len(prefix), prefix] if prefix else []
        with self.index.reader() as conn:
            rows = conn.execute(
                f"SELECT min(tag), count(DISTINCT doc_id) AS n FROM tags {where}"
                " GROUP BY tag_lc ORDER BY n DESC, tag_lc LIMIT ?",
                (*params, limit),
            ).fetchall()
        return [(str(r[0]), int(r[1])) for r in rows]

    # -- link resolution -------------------------------------------------------------------

    def notes_named(self, name: str) -> list[str]:
        """The vault paths of the notes whose file name (lowercased, without `.md`) is `name`."""
        with self.index.reader() as conn:
            return [str(r[0]) for r in conn.execute("SELECT key FROM docs WHERE name_lc = ?", (name,))]

    def resolve(
        self, target_key: str, source: str, cache: dict[tuple[str, str], str | None] | None = None
    ) -> str | None:
        """The note a link resolves to, Obsidian-style, or None.

        An exact vault path wins; then a note with that name in the linking note's folder;
        then the note whose path ends with the link text and is shortest (fewest folders,
        then alphabetical).
        """
        source_folder = folder_of(source)
        memo = (target_key, source_folder)
        if cache is not None and memo in cache:
            return cache[memo]
        candidates = self.notes_named(target_key.rsplit("/", 1)[-1])
        result: str | None = None
        lowered = {fold(c[: -len(NOTE_SUFFIX)]): c for c in candidates}
        if target_key in lowered:
            result = lowered[target_key]
        else:
            local = fold(f"{source_folder}/{target_key}") if source_folder else target_key
            if local in lowered:
                result = lowered[local]
            else:
                tail = "/" + target_key
                matches = [c for low, c in lowered.items() if low.endswith(tail) or low == target_key]
                if matches:
                    result = min(matches, key=lambda c: (c.count("/"), len(c), c))
        if cache is not None:
            cache[memo] = result
        return result

    def outgoing(self, rel: str) -> list[dict[str, Any]]:
        with self.index.reader() as conn:
            rows = conn.execute(
                "SELECT l.target_lc, l.target, l.heading, l.alias, l.embed, l.line FROM links l"
                " JOIN docs d ON d.id = l.doc_id WHERE d.key = ? ORDER BY l.line, l.rowid",
                (rel,),
            ).fetchall()
        cache: dict[tuple[str, str], str | None] = {}
        return [
            {
                "target": row[1],
                "resolved_path": self.resolve(row[0], rel, cache),
                "heading": row[2],
                "alias": row[3],
                "embed": bool(row[4]),
                "line": row[5],
            }
            for row in rows
        ]

    def incoming(self, rel: str) -> list[dict[str, Any]]:
        """Links from other notes that resolve to `rel`, each with its line's text as `context`
        (taken from the linking note's stored body, code blanked out as when it was indexed)."""
        stem = fold(rel[: -len(NOTE_SUFFIX)])
        parts = stem.split("/")
        forms = ["/".join(parts[i:]) for i in range(len(parts))]
        marks = ", ".join("?" * len(forms))
        with self.index.reader() as conn:
            rows = conn.execute(
                f"SELECT d.key, l.target_lc, l.heading, l.alias, l.embed, l.line, d.id FROM links l"
                f" JOIN docs d ON d.id = l.doc_id WHERE l.target_lc IN ({marks}) ORDER BY d.key, l.line",
                forms,
            ).fetchall()
        cache: dict[tuple[str, str], str | None] = {}
        rows = [row for row in rows if self.resolve(row[1], row[0], cache) == rel]
        with self.index.reader() as conn:
            bodies = self.index.stored_texts(conn, sorted({row[6] for row in rows}), "body")
        lines = {doc_id: md.blank_code(body) for doc_id, body in bodies.items()}
        return [
            {
                "source": row[0],
                "heading": row[2],
                "alias": row[3],
                "embed": bool(row[4]),
                "line": row[5],
                "context": md.line_context(lines.get(row[6], []), row[5]),
            }
            for row in rows
        ]


def _linked(root: Path, rel: str) -> bool:
    """Whether `rel` leads through a linked folder (its folders are not its own path)."""
    folder = posixpath.dirname(rel)
    if not folder:
        return False
    try:
        return (root / folder).resolve() != root.resolve() / folder
    except OSError:
        return True
