"""Which indexed files are gone from disk, for answers that cover the whole index.

Deleting or renaming a file changes its folder's modification time, so a folder whose mtime is
the one it had when its files were last found holds them still: only files indexed since are
looked at. Checking 50,000 files in 500 folders took a few seconds the first time (a stat and
a path check per file) and 0.1 s after (a stat per folder, the rest string work). A folder
changed within the last seconds is not remembered: a deletion in the same clock tick would
leave its mtime as it was.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from deskmcp.documents.roots import Roots

RECENT_NS = 2_000_000_000
"""A folder modified less than this long before a check is checked again next time (coarse clocks)."""

DiskState = Callable[[Sequence[str]], Mapping[str, os.stat_result | None]]
"""Each key's file status now (None: gone), leaving out keys whose root folder is missing."""


class Presence:
    """Finds the indexed files that are gone, remembering the folders found complete. Thread-safe."""

    def __init__(self, roots: Roots, disk_state: DiskState) -> None:
        self.roots = roots
        self._disk_state = disk_state
        self._complete: dict[Path, tuple[int, frozenset[str]]] = {}
        self._lock = threading.Lock()

    def gone(self, entries: Iterable[tuple[str, str]]) -> list[str]:
        """The keys, of (root name, key) `entries`, whose file is gone or no longer inside its
        root (never those of a missing root, nor of a root not configured)."""
        started = time.time_ns()
        gone: list[str] = []
        for folder, members in self._by_folder(entries).items():
            gone += self._gone_in(folder, members, started)
        return gone

    def _by_folder(self, entries: Iterable[tuple[str, str]]) -> dict[Path, list[str]]:
        """The keys grouped by the folder their file is in (string work only: this runs per file)."""
        roots = {root.name: root for root in self.roots.all()}
        by_head: dict[tuple[str, str], list[str]] = {}
        for name, key in entries:
            root = roots.get(name)
            if root is not None:
                rel = key[len(root.prefix("")) :]
                by_head.setdefault((name, rel.rpartition("/")[0]), []).append(key)
        return {roots[name].path / head: keys for (name, head), keys in by_head.items()}

    def _gone_in(self, folder: Path, keys: list[str], started: int) -> list[str]:
        """The gone files among `keys`, all in `folder`; those found are remembered with its mtime."""
        try:
            mtime: int | None = folder.stat().st_mtime_ns
        except OSError:
            mtime = None
        with self._lock:
            known = self._complete.get(folder)
        seen = known[1] if known is not None and known[0] == mtime else frozenset()
        unchecked = [key for key in keys if key not in seen]
        if not unchecked:
            return []
        states = self._disk_state(unchecked)
        if mtime is not None and mtime < started - RECENT_NS:
            present = frozenset(key for key in unchecked if states.get(key) is not None)
            with self._lock:
                self._complete[folder] = (mtime, seen | present)
        return [key for key in unchecked if key in states and states[key] is None]
