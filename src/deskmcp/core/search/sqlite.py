"""SQLite helpers of the index: private database files and statements over many ids."""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TypeVar

import orjson

_CHUNK = 5000
"""Values bound in one `IN (...)` list (SQLite allows 32,766 parameters a statement)."""
_T = TypeVar("_T")


_CHECKED = 20
"""Problems `check_pages` reads at most."""
_NOT_DAMAGE = re.compile(r"NULL value in |CHECK constraint failed")
"""What the check also reports that is about values, not pages. SQLite 3.40 reports a NULL in
every row of a WITHOUT ROWID table whose NOT NULL column comes before a key column, though the
rows hold none; and SQLite itself never writes a value a constraint refuses."""


def check_pages(conn: sqlite3.Connection) -> None:
    """SQLite's own check of every page (`PRAGMA quick_check`): `sqlite3.DatabaseError` naming the
    first problem when the file is damaged (a disk fault, another program's write)."""
    problems = [row[0] for row in conn.execute(f"PRAGMA quick_check({_CHECKED})")]
    damage = [p for p in problems if p != "ok" and not _NOT_DAMAGE.match(p)]
    if not problems or damage:
        raise sqlite3.DatabaseError(f"integrity check: {damage[0] if damage else 'no answer'}")


def set_aside(path: Path) -> Path:
    """Move a damaged database (with its -wal and -shm files) to `<name>.corrupt-<time>` (or
    `-<time>-2`, ...: one set aside earlier in the same second is kept), where a new one will
    not be confused with it; the new name."""
    stamp = int(time.time())
    aside = path.with_name(f"{path.name}.corrupt-{stamp}")
    taken = 1
    while any(Path(f"{aside}{suffix}").exists() for suffix in ("", "-wal", "-shm")):
        taken += 1
        aside = path.with_name(f"{path.name}.corrupt-{stamp}-{taken}")
    for suffix in ("", "-wal", "-shm"):
        file = Path(f"{path}{suffix}")
        if file.exists():
            file.replace(Path(f"{aside}{suffix}"))
    return aside


def chunks(items: Sequence[_T]) -> Iterator[Sequence[_T]]:
    """`items` in slices short enough for one `IN (...)` list."""
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]


def id_runs(ids: Sequence[int]) -> list[tuple[int, int]]:
    """Sorted ids as inclusive runs of consecutive values."""
    runs: list[list[int]] = []
    for i in ids:
        if runs and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return [(a, b) for a, b in runs]


def ids_json(ids: Sequence[int]) -> str:
    return orjson.dumps(list(ids)).decode()


def table_name(ddl: str) -> str | None:
    """The table a CREATE TABLE statement makes; None for other DDL (indexes)."""
    match = re.match(r"\s*CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)", ddl, re.IGNORECASE)
    return match.group(1) if match else None
