"""The SQLite side of the Maildir backend: the label table, and the reads and updates the backend
makes on its index's `docs` table beyond what `core.search.index.SearchIndex` offers.

The backend itself holds no SQL: it calls these typed functions, passing the index (for a read)
or the connection of a transaction it opened (so several updates commit together).
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

from deskmcp.core.files import PRIVATE_FOLDER, private_database
from deskmcp.core.search.index import TEXT_MATCH, IndexSchema, SearchIndex, text_match
from deskmcp.mail import mailstore
from deskmcp.mail.backends.maildir_query import exact_words

SCHEMA = IndexSchema(
    name="mail",
    version=2,
    text_fields=("subject", "sender", "tos", "ccs", "bccs", "body", "filenames", "grams"),
    weights=(5.0, 3.0, 2.0, 2.0, 1.0, 1.0, 2.0, 1.0),
    columns=(
        ("folder", "TEXT"),
        ("sub", "TEXT"),
        ("fname", "TEXT"),
        ("ts", "REAL"),
        ("date", "TEXT"),
        ("unread", "INTEGER"),
        ("starred", "INTEGER"),
        ("has_att", "INTEGER"),
        ("size", "INTEGER"),
        ("thread", "TEXT"),
        ("rfc", "TEXT"),
        ("subject", "TEXT"),
        ("sender", "TEXT"),
        ("tos", "TEXT"),
        ("ccs", "TEXT"),
        ("snippet", "TEXT"),
        ("labels", "TEXT"),
    ),
    side_tables=(
        "CREATE INDEX docs_ts ON docs(ts)",
        "CREATE INDEX docs_thread ON docs(thread)",
        "CREATE INDEX docs_rfc ON docs(rfc)",
        "CREATE INDEX docs_folder ON docs(folder, sub)",
    ),
)

_KEYS_PER_QUERY = 500  # well under SQLite's limit on bound parameters


def thread_id_for(root: str, fallback: str) -> str:
    return hashlib.blake2b(root.encode(), digest_size=8).hexdigest() if root else fallback


class LabelTable:
    """Labels that are not folders, per message key, in a small SQLite file."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True, mode=PRIVATE_FOLDER)
        private_database(path)
        self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._lock = threading.Lock()
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("CREATE TABLE IF NOT EXISTS labels (mkey TEXT, label TEXT, PRIMARY KEY(mkey, label))")
        self._conn.execute("CREATE TABLE IF NOT EXISTS known (label TEXT PRIMARY KEY)")

    def of(self, key: str) -> list[str]:
        with self._lock:
            return [r[0] for r in self._conn.execute("SELECT label FROM labels WHERE mkey=? ORDER BY label", (key,))]

    def all(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        with self._lock:
            for key, label in self._conn.execute("SELECT mkey, label FROM labels ORDER BY label"):
                out.setdefault(key, []).append(label)
        return out

    def known(self) -> list[str]:
        with self._lock:
            rows = self._conn.execute("SELECT label FROM known UNION SELECT DISTINCT label FROM labels ORDER BY 1")
            return [r[0] for r in rows]

    def add(self, key: str, label: str) -> None:
        with self._lock:
            self._conn.execute("INSERT OR IGNORE INTO labels VALUES(?, ?)", (key, label))
            self._conn.execute("INSERT OR IGNORE INTO known VALUES(?)", (label,))

    def remove(self, key: str, label: str) -> bool:
        with self._lock:
            cur = self._conn.execute("DELETE FROM labels WHERE mkey=? AND lower(label)=lower(?)", (key, label))
            return cur.rowcount > 0

    def close(self) -> None:
        with self._lock:
            self._conn.close()


# -- reads of the index ----------------------------------------------------------------------


def indexed_names(index: SearchIndex, directory: str, sub: str) -> set[str]:
    """The file names the index holds for one Maildir directory (`folder/sub`)."""
    with index.reader() as conn:
        rows = conn.execute("SELECT fname FROM docs WHERE folder=? AND sub=?", (directory, sub))
        return {row[0] for row in rows}


def phrase_rows(index: SearchIndex, value: str, fields: tuple[str, ...]) -> list[int]:
    """The rows whose `fields` (subject, body) hold the words of the quoted `value` as written
    (`maildir_query.exact_words`). The index matches stems, so its phrase match over those fields
    gives the candidates, and each candidate's stored subject or body is read and checked."""
    specs = [text_match(f'"{value}"', field) for field in fields]  # bad_request when it holds no words
    pattern = exact_words(value)
    if pattern is None:
        return []
    either = " OR ".join(TEXT_MATCH for _ in specs)
    with index.reader() as conn:
        rows = conn.execute(f"SELECT d.id, d.subject FROM docs d WHERE {either}", specs).fetchall()
        found = {int(i) for i, subject in rows if "subject" in fields and pattern.search(subject or "")}
        rest = [int(i) for i, _ in rows if int(i) not in found]
        if "body" in fields and rest:
            found.update(i for i, text in index.stored_texts(conn, rest, "body").items() if pattern.search(text))
    return sorted(found)


def indexed_keys(index: SearchIndex, keys: list[str]) -> set[str]:
    """Those of `keys` the index holds."""
    found: set[str] = set()
    with index.reader() as conn:
        for start in range(0, len(keys), _KEYS_PER_QUERY):
            chunk = keys[start : start + _KEYS_PER_QUERY]
            marks = ",".join("?" * len(chunk))
            found.update(r[0] for r in conn.execute(f"SELECT key FROM docs WHERE key IN ({marks})", chunk))
    return found


def row_of(index: SearchIndex, key: str) -> int | None:
    """The row number of a message (its place among messages of the same date), or None."""
    with index.reader() as conn:
        row = conn.execute("SELECT id FROM docs WHERE key=?", (key,)).fetchone()
    return None if row is None else int(row[0])


def thread_of(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT thread FROM docs WHERE key=?", (key,)).fetchone()
    return None if row is None else str(row[0])


def label_counts(
    index: SearchIndex, markers: Sequence[str]
) -> tuple[dict[str, tuple[int, int]], dict[str, tuple[int, int]]]:
    """(messages, unread) per folder directory, and per label marker (a label between
    separators, as stored in the `labels` column), read together."""
    with index.reader() as conn:
        folders = {
            folder: (int(total), int(unread or 0))
            for folder, total, unread in conn.execute("SELECT folder, count(*), sum(unread) FROM docs GROUP BY folder")
        }
        labels: dict[str, tuple[int, int]] = {}
        for marker in markers:
            row = conn.execute(
                "SELECT count(*), sum(unread) FROM docs WHERE instr(labels, ?) > 0", (marker,)
            ).fetchone()
            labels[marker] = (int(row[0]), int(row[1] or 0))
    return folders, labels


# -- updates inside a transaction of the index -----------------------------------------------


def update_location(conn: sqlite3.Connection, key: str, entry: mailstore.Entry) -> None:
    """Record where a message's file now is and the flags its name carries."""
    flags = entry.flags
    conn.execute(
        "UPDATE docs SET folder=?, sub=?, fname=?, unread=?, starred=? WHERE key=?",
        (entry.folder, entry.sub, entry.name, int("S" not in flags), int("F" in flags), key),
    )


def set_labels(conn: sqlite3.Connection, key: str, label_text: str) -> None:
    conn.execute("UPDATE docs SET labels=? WHERE key=?", (label_text, key))


def join_threads(conn: sqlite3.Connection, links: Sequence[tuple[str, str, str]]) -> None:
    """Put new messages and the conversations they connect under one thread id.

    A message's thread is keyed by its root (first References id, else In-Reply-To). A reply
    carrying only In-Reply-To names its parent, not the root: it takes the thread of that
    parent when the parent is indexed, and a message arriving after its replies gathers
    the replies that were keyed by its own Message-ID. Mail can arrive in any order, so
    each step moves every message of the thread it replaces along with it. `links` are
    (key, Message-ID, root) of the new messages.
    """
    for key, rfc, root in links:
        current = thread_of(conn, key)
        if current is None:
            continue
        if root and root != rfc:
            parent = conn.execute("SELECT thread FROM docs WHERE rfc=? AND key<>? LIMIT 1", (root, key)).fetchone()
            if parent is not None and parent[0] != current:
                conn.execute("UPDATE docs SET thread=? WHERE thread=?", (parent[0], current))
                current = str(parent[0])
        own = thread_id_for(rfc, key) if rfc else current
        if own != current:
            conn.execute("UPDATE docs SET thread=? WHERE thread=?", (current, own))
