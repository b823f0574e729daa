"""Files the tests build in tmp_path and look at afterwards."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def write(root: Path, rel: str, data: str | bytes) -> Path:
    """Write `data` (text as UTF-8, bytes as they are) at `root/rel`, creating the folders; the path back."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def read(path: Path) -> bytes:
    return path.read_bytes()


def names(folder: Path) -> list[str]:
    """The entries of a folder, sorted (temp files included)."""
    return sorted(p.name for p in folder.iterdir())


def real(path: Path) -> str:
    """The path with symlinks resolved, as a server reports it."""
    return str(path.resolve())


def only(folder: Path) -> Path:
    """The one Markdown file in `folder` (fails when there are none or several)."""
    files = sorted(folder.glob("*.md"))
    assert len(files) == 1, files
    return files[0]


def disk_fingerprints(root: Path) -> dict[str, str]:
    """`mtime_ns:size` of every visible note under `root`, as the vault's index records them."""
    out: dict[str, str] = {}
    for path in root.rglob("*.md"):
        rel = path.relative_to(root).as_posix()
        if not any(part.startswith(".") for part in rel.split("/")):
            st = path.stat()
            out[rel] = f"{st.st_mtime_ns}:{st.st_size}"
    return out


def damage_a_page(database: Path) -> None:
    """Overwrite most of one page in the middle of a SQLite file (its WAL checkpointed into it
    first), as a disk fault would: the file still opens, and SQLite's check finds the damage."""
    with sqlite3.connect(database) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(database.read_bytes())
    middle = len(data) // 4096 // 2 * 4096
    data[middle + 100 : middle + 2000] = bytes(range(256)) * 7 + bytes(108)
    database.write_bytes(bytes(data))
    with sqlite3.connect(database) as conn:
        assert conn.execute("PRAGMA quick_check(1)").fetchone() != ("ok",), "the page was not damaged"


@contextmanager
def locked_by_another(database: Path) -> Iterator[None]:
    """`database` switched to a rollback journal and held under an exclusive lock by another
    connection: opening it in WAL mode must wait for that lock, and fails when it runs out."""
    holder = sqlite3.connect(database, isolation_level=None)
    try:
        holder.execute("PRAGMA journal_mode=DELETE")
        holder.execute("BEGIN EXCLUSIVE")
        try:
            yield
        finally:
            holder.execute("ROLLBACK")
    finally:
        holder.close()
