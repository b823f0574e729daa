"""Saving a workbook file safely when other processes write it too: one deskmcp writer of a file at
a time across processes (an OS lock), and no save over a version of the file it did not read.

A change reads the file, changes it and saves it with a rename. Two processes doing so at once,
or another program saving the file in between, would each replace the other's save and answer
success for a write that is gone. So each save holds an exclusive lock on a lock file named after
the workbook's real path (kept in a folder of the workspace, not beside the user's files), and the
rename is made only when the file is still the version read (`FileChanged` otherwise: the caller
reads it again and applies the change to it).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from deskmcp.core import files
from deskmcp.core.errors import IOFailure, Timeout

LOCK_WAIT_SECONDS = 30.0
"""How long a save waits for another process's save of the same file before giving up."""
_POLL_SECONDS = 0.05


NO_FILE: tuple[Any, ...] = ()
"""The `file_version` of a path where no file is."""


class FileChanged(Exception):
    """The file on disk is no longer the version the change read: nothing was written."""


def file_version(path: Path) -> tuple[Any, ...]:
    """What tells one version of a file from the next (`NO_FILE`: none). The change time is kept
    too: no program can set it back, so a rewrite of the same size within one mtime tick still
    counts unless the clock did not move."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return NO_FILE
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def write_atomically(
    path: Path, write: Callable[[BinaryIO], object], expect: tuple[Any, ...] | None = None
) -> os.stat_result:
    """`write(handle)` into a temporary file beside `path`, fsynced, then put in its place: readers
    see the old file or the new one, and an interruption leaves the old one. With `expect` (a
    `file_version`), the file is replaced only while it is still that version: `FileChanged`
    otherwise, and the file is left as the other writer left it. A kill leaves the temporary file,
    which the next write into the folder removes (`files.temporary_beside`). Returns the new file's status as
    written (what `path` shows until someone else writes it)."""
    fd, tmp = files.temporary_beside(path)
    try:
        # The descriptor stays open (and the temporary file locked) until the rename.
        with os.fdopen(fd, "wb", closefd=False) as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        tmp.chmod(path.stat().st_mode & 0o7777 if path.exists() else 0o644)
        written = tmp.stat()
        if expect is not None and file_version(path) != expect:
            raise FileChanged(str(path))
        files.replace_file(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    finally:
        os.close(fd)
    files.fsync_dir(path.parent)
    return written


def write_bytes_atomically(path: Path, data: bytes, expect: tuple[Any, ...] | None = None) -> None:
    """`write_atomically` of bytes already built."""
    write_atomically(path, lambda handle: handle.write(data), expect)


class FileLocks:
    """Exclusive locks on workbook files shared by every deskmcp process using `folder`."""

    def __init__(self, folder: Path, wait: float = LOCK_WAIT_SECONDS) -> None:
        self.folder = folder
        self.wait = wait
        """Seconds a save waits for another process's save of the same file (0: not at all)."""

    def lock_file(self, path: Path) -> Path:
        """The lock file of the workbook at `path` (one per real path, so two folder settings
        naming the same file share it)."""
        digest = hashlib.sha256(str(path.resolve()).encode("utf-8", "surrogatepass")).hexdigest()[:40]
        return self.folder / f"{digest}.lock"

    @contextlib.contextmanager
    def hold(self, path: Path) -> Iterator[None]:
        """Hold the lock of `path` for the block; `timeout` when another process holds it longer
        than `wait` seconds."""
        lock = self.lock_file(path)
        try:
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise IOFailure(
                f"The lock file for {path.name} could not be made in {self.folder}: {exc.strerror}.",
                {"file": path.name, "lock_folder": str(self.folder)},
            ) from exc
        try:
            deadline = time.monotonic() + self.wait
            while not files.lock_exclusively(fd, wait=False):
                if time.monotonic() >= deadline:
                    raise Timeout(
                        f"{path.name} is being saved by another deskmcp process, which has held it for over "
                        f"{self.wait:g} s. Nothing was written; try the call again in a moment.",
                        {"file": path.name, "waited_seconds": self.wait},
                    )
                time.sleep(_POLL_SECONDS)
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the lock
