"""Reading and writing files without ever leaving a half-written one behind."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import sys
import tempfile
from pathlib import Path

from deskmcp.core.errors import IOFailure, NotFound, PermissionDenied

# What deskmcp writes of the user's (indexes, mail, tokens, audit lines) is the user's alone.
PRIVATE_FILE = 0o600
PRIVATE_FOLDER = 0o700


def private_folder(folder: Path) -> None:
    """Create `folder` (and missing parents) readable by the user only; an existing one is narrowed
    to 0700 too (an index folder made by an older version, or under a wide umask)."""
    folder.mkdir(parents=True, exist_ok=True, mode=PRIVATE_FOLDER)
    if folder.stat().st_mode & 0o777 != PRIVATE_FOLDER:
        folder.chmod(PRIVATE_FOLDER)


def private_files(folder: Path) -> None:
    """Narrow the files directly in `folder` to 0600 (tantivy creates its files under the umask;
    the 0700 folder already keeps others out, this keeps a copied folder private too)."""
    with contextlib.suppress(FileNotFoundError):
        for entry in folder.iterdir():
            with contextlib.suppress(FileNotFoundError):
                if entry.is_file() and entry.stat().st_mode & 0o777 != PRIVATE_FILE:
                    entry.chmod(PRIVATE_FILE)


def private_database(path: Path) -> None:
    """Create a SQLite database file 0600 before SQLite does (it would make it 0644, and its -wal and
    -shm files copy the database's mode), and narrow the files an older version left wider."""
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY, PRIVATE_FILE))  # an existing file is left as it is
    for suffix in ("", "-wal", "-shm"):
        file = Path(f"{path}{suffix}")
        try:
            if file.stat().st_mode & 0o777 != PRIVATE_FILE:
                file.chmod(PRIVATE_FILE)
        except FileNotFoundError:
            continue


DISK_FULL = "the disk is full (no space left on the device); free some room and try again"

_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
# How SQLite (SQLITE_FULL) and tantivy (Rust's io::ErrorKind::StorageFull) say it.
_FULL_WORDS = ("database or disk is full", "No space left on device", "StorageFull")


def disk_full(exc: BaseException) -> bool:
    """Whether `exc` (an OSError, or SQLite's or tantivy's error) says the disk or the quota is full."""
    if isinstance(exc, OSError) and exc.errno is not None:
        return exc.errno in _FULL_ERRNOS
    return any(words in str(exc) for words in _FULL_WORDS)


def failure_text(exc: OSError) -> str:
    """What went wrong with a file, in words for the person: a full disk says so and what to do."""
    return DISK_FULL if disk_full(exc) else exc.strerror or str(exc)


TEMP_SUFFIX = ".deskmcp.tmp"
"""How the temporary file of an atomic write ends (`.NAME.XXXXXXXX.deskmcp.tmp` beside NAME):
hidden, never a note's or a workbook's suffix, and marked as deskmcp's own."""

_LEFTOVER = re.compile(r"\..+\.[a-z0-9_]{8}" + re.escape(TEMP_SUFFIX))


def temporary_beside(path: Path) -> tuple[int, Path]:
    """A new temporary file beside `path` for an atomic write of it: its descriptor (open for
    writing, and locked until it is closed) and its path.

    First removes the leftovers of writes into that folder that were killed (`remove_leftovers`).
    The lock tells a live write's temporary file from a dead one's: keep the descriptor open
    until the file has been renamed into place."""
    folder = path.parent
    remove_leftovers(folder)
    while True:
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TEMP_SUFFIX, dir=folder)
        try:
            lock_exclusively(fd, wait=True)
            if os.fstat(fd).st_nlink:
                return fd, Path(name)
        except BaseException:
            os.close(fd)
            raise
        # Another writer's sweep found it between its creation and the lock: make another.
        os.close(fd)


def remove_leftovers(folder: Path) -> int:
    """Remove the temporary files that atomic writes into `folder` left when their process was
    killed (or the machine lost power): deskmcp's own (`TEMP_SUFFIX`) that no process holds
    locked. A live write, in this process or another, holds its temporary file locked, so it is
    never removed. How many were removed; a file that cannot be checked is left alone."""
    removed = 0
    try:
        with os.scandir(folder) as listing:
            entries = [e for e in listing if _LEFTOVER.fullmatch(e.name)]
    except OSError:
        return 0
    for entry in entries:
        leftover = Path(entry.path)
        with contextlib.suppress(OSError):
            if not entry.is_file(follow_symlinks=False):
                continue
            if os.name == "nt":
                # Windows refuses to remove a file another process holds open: that is the check.
                leftover.unlink()
                removed += 1
                continue
            fd = os.open(entry.path, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK)
            try:
                # Still the file listed (not one renamed over it since), and no writer holds it.
                if os.path.samestat(os.fstat(fd), leftover.lstat()) and lock_exclusively(fd, wait=False):
                    leftover.unlink()
                    removed += 1
            finally:
                os.close(fd)
    return removed


def atomic_write_bytes(path: Path, data: bytes, *, mode: int | None = None) -> None:
    """Write `data` to `path` atomically: temp file in the same folder, fsync, `os.replace`.

    Readers see the old content or the new, never a mix; an interruption leaves the old file, and
    a kill leaves a temporary file the next write into the folder removes (`temporary_beside`).
    """
    folder = path.parent
    fd, tmp = temporary_beside(path)
    try:
        # The descriptor stays open (and the temporary file locked) until the rename.
        with os.fdopen(fd, "wb", closefd=False) as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            tmp.chmod(mode)
        elif path.exists():
            tmp.chmod(path.stat().st_mode & 0o7777)
        else:
            tmp.chmod(0o644)
        replace_file(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    finally:
        os.close(fd)
    fsync_dir(folder)


def replace_file(src: Path, dst: Path) -> None:
    """`os.replace`, as a seam the atomicity tests can interrupt."""
    src.replace(dst)


def atomic_write_text(path: Path, text: str, *, mode: int | None = None) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), mode=mode)


def append_durably(path: Path, data: bytes, mode: int) -> None:
    """Append `data` to `path` (created with `mode`, narrowed to it when an older file is wider) in
    one write, fsynced before returning: a log line that announces an action is on disk before the
    action starts."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, mode)
    try:
        if os.name == "posix" and os.fstat(fd).st_mode & 0o777 & ~mode:
            os.fchmod(fd, mode)
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def write_back(path: Path) -> None:
    """Wait until what was written to `path` is on disk. A file that cannot be opened or synced
    is left as it is: this only moves a wait, it guarantees nothing."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def fsync_dir(folder: Path) -> None:
    """Make a rename or a new file in `folder` durable (POSIX; directories cannot be opened on Windows)."""
    if os.name == "posix":
        write_back(folder)


def read_bytes_limited(path: Path, limit: int, *, label: str | None = None) -> bytes:
    """Read a whole file, refusing one larger than `limit` bytes before reading it."""
    name = label or path.name
    try:
        size = path.stat().st_size
        if size > limit:
            raise IOFailure(
                f"{name} is {size:,} bytes, over the {limit:,}-byte limit.",
                {"path": name, "size": size, "limit": limit},
            )
        with path.open("rb") as handle:
            data = handle.read(limit + 1)
    except FileNotFoundError as exc:
        raise NotFound(f"{name} does not exist.", {"path": name}) from exc
    except PermissionError as exc:
        raise PermissionDenied(f"{name} cannot be read: permission denied.", {"path": name}) from exc
    except IsADirectoryError as exc:
        raise NotFound(f"{name} is a folder, not a file.", {"path": name}) from exc
    except OSError as exc:
        raise IOFailure(f"{name} could not be read: {exc.strerror}.", {"path": name}) from exc
    if len(data) > limit:
        raise IOFailure(f"{name} grew past the {limit:,}-byte limit while being read.", {"path": name})
    return data


def lock_exclusively(fd: int, *, wait: bool) -> bool:
    """Take the exclusive OS lock of the open file `fd` (shared with every process that locks the
    same file): waiting for it, or (`wait=False`) only when it is free. Whether it was taken.
    Closing `fd` lets it go, as does the process ending."""
    if sys.platform == "win32":
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_LOCK if wait else msvcrt.LK_NBLCK, 1)
        except OSError:
            if wait:
                raise
            return False
        return True
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def unlock(fd: int) -> None:
    """Let go of the lock `lock_exclusively` took on `fd`, before closing it."""
    if sys.platform == "win32":
        import msvcrt

        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
        return
    import fcntl

    fcntl.flock(fd, fcntl.LOCK_UN)


def process_alive(pid: int) -> bool:
    """Whether process `pid` runs (on this machine): to tell a file a running process is using
    from one a process that ended left behind. POSIX (signal 0)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    except OSError:
        return False
    return True
