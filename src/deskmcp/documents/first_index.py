"""Indexing a configured folder nothing was ever indexed from, the first time it is searched.

A root is "known" once the first indexing went through it, or once the person indexed, noted or
removed anything in it by hand (from then on they decide what is indexed, and a removed document
stays removed). The index's metadata keeps the known roots with the folder each was known at, so
a root pointed at another folder is new again.

The first search over unknown roots walks them (names only) and indexes their files in a thread
of its own. When there are fewer than `wait_below` files, the search waits for it and answers
complete; otherwise it answers at once from what is indexed so far, saying how far indexing is.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import orjson

from deskmcp.core.search.index import SearchIndex
from deskmcp.documents import catalog
from deskmcp.documents.models import IndexingProgress
from deskmcp.documents.roots import Root, Roots

log = logging.getLogger(__name__)

KNOWN_META = "known_roots"
"""Index metadata: the roots indexed once or by hand, with the folder each was known at (JSON)."""

WAIT_BELOW = 200
"""A first indexing of fewer files than this is waited for (a few seconds at most)."""


@dataclass
class Progress:
    done: int = 0
    total: int = 0


IndexRoot = Callable[[Root, list[Path], Callable[[int], None], threading.Event], None]
"""Indexes `files` of a root, calling back with how many more are in the index, stopping when the
event is set."""


class FirstIndex:
    """The roots not yet known, indexed in a background thread on first use. Thread-safe."""

    def __init__(self, index: SearchIndex, roots: Roots, walk: Callable[[Path], list[Path]]) -> None:
        self.index = index
        self.roots = roots
        self.walk = walk
        self.wait_below = WAIT_BELOW
        self._lock = threading.Lock()
        self._cancel = threading.Event()
        self._thread: threading.Thread | None = None
        self._progress: Progress | None = None
        stored = index.get_meta(KNOWN_META)
        if stored is None:  # an index from before: a root it holds documents of was indexed by hand
            counts = catalog.root_counts(index)
            self._save({r.name: str(r.path) for r in roots.all() if counts.get(r.name)})

    def _known(self) -> dict[str, str]:
        stored = self.index.get_meta(KNOWN_META)
        return orjson.loads(stored) if stored else {}

    def _save(self, known: dict[str, str]) -> None:
        self.index.set_meta(KNOWN_META, orjson.dumps(known).decode())

    def mark(self, root: Root) -> None:
        """Record that `root` is indexed, or indexed by hand: no first indexing for it."""
        with self._lock:
            known = self._known()
            if known.get(root.name) != str(root.path):
                self._save({**known, root.name: str(root.path)})

    def progress(self) -> IndexingProgress | None:
        """How far the first indexing is, or None when none runs."""
        current = self._progress
        return None if current is None else IndexingProgress(done=current.done, total=current.total)

    def ensure(self, index_root: IndexRoot) -> IndexingProgress | None:
        """Start indexing the unknown roots whose folders exist (once), wait for it when they hold
        few files, and answer how far it is (None when every root is indexed)."""
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                known = self._known()
                pending = [r for r in self.roots.all() if known.get(r.name) != str(r.path) and r.path.is_dir()]
                if pending:
                    self._start(pending, index_root)
            thread = self._thread
        progress = self._progress
        if thread is not None and progress is not None and progress.total < self.wait_below:
            thread.join()
        return self.progress()

    def _start(self, pending: list[Root], index_root: IndexRoot) -> None:
        work = [(root, self.walk(root.path)) for root in pending]
        progress = Progress(total=sum(len(files) for _, files in work))
        self._progress = progress

        def step(count: int) -> None:
            progress.done += count

        def run() -> None:
            try:
                for root, files in work:
                    index_root(root, files, step, self._cancel)
                    if self._cancel.is_set():
                        return
                    self.mark(root)
                    log.info("indexed the documents folder %s for the first time (%d files)", root.path, len(files))
            except Exception:  # the outermost handler of the thread: the next search tries again
                log.exception("the first indexing of the documents folders failed; the next search tries again")
            finally:
                self._progress = None

        self._thread = threading.Thread(target=run, name="documents-first-index", daemon=True)
        self._thread.start()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the first indexing to finish; False if it still runs after `timeout`."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
            return not thread.is_alive()
        return True

    def close(self) -> None:
        self._cancel.set()
        self.wait()
