"""Keeping the index true while the server runs: file system events via `watchfiles`.

A background thread receives batches of changed paths (debounced to a few tens of
milliseconds) and hands each one to the catalog. The first batch, or the first timeout,
means the watcher is live: a scan then catches anything changed between the start-up
scan and that moment. If the thread dies, `running` turns false and the service falls
back to cheap mtime re-scans before answering.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import watchfiles

from deskmcp.core.errors import DeskError
from deskmcp.core.paths import is_hidden

log = logging.getLogger(__name__)


class VaultWatcher:
    def __init__(
        self,
        root: Path,
        on_path: Callable[[str], None],
        on_ready: Callable[[], None],
        *,
        debounce_ms: int = 50,
    ) -> None:
        self.root = root.resolve()
        self._on_path = on_path
        self._on_ready = on_ready
        self._debounce_ms = debounce_ms
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and self._ready.is_set()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="vault-watcher", daemon=True)
        self._thread.start()

    def wait_ready(self, timeout: float) -> bool:
        return self._ready.wait(timeout)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _relative(self, path: str) -> str | None:
        """The vault path of what changed at `path`. Under a linked folder (`Sub` linking to
        `Projects`), that is the note's own path: events for a folder reachable both ways may
        come under either name, and links are never indexed. A link leading out of the vault
        reports nothing."""
        try:
            Path(path).relative_to(self.root)
            rel = Path(path).resolve().relative_to(self.root).as_posix()
        except (ValueError, OSError):
            return None
        if rel == "." or is_hidden(rel):
            return None
        return rel

    def _keep(self, _change: watchfiles.Change, path: str) -> bool:
        return self._relative(path) is not None

    def _run(self) -> None:
        try:
            for changes in watchfiles.watch(
                self.root,
                watch_filter=self._keep,
                debounce=self._debounce_ms,
                step=20,
                rust_timeout=250,
                yield_on_timeout=True,
                stop_event=self._stop,
                raise_interrupt=False,
            ):
                if not self._ready.is_set():
                    self._ready.set()
                    self._on_ready()
                for rel in sorted({r for _, p in changes if (r := self._relative(p))}):
                    try:
                        self._on_path(rel)
                    except (OSError, sqlite3.Error, DeskError):
                        log.exception("could not index %s; the next scan retries it", rel)
        except Exception:  # the outermost handler of the thread: log, and let rescans take over
            log.exception("the vault watcher stopped; falling back to re-scans")
        finally:
            self._ready.clear()
