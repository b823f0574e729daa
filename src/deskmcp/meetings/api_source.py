"""Granola's public API as a source of meetings, synced into the meetings index.

A sync lists notes (`GET /v1/notes`, 30 a page) and fetches each new or changed one with its
transcript (`GET /v1/notes/{id}?include=transcript`), within the published rate limits (see
`granola_api`). Its progress is kept in SQLite beside the index (`meetings-api.sync.sqlite3`):
the listing's cursor after each page, the notes listed and not fetched yet, the high-water mark
of `updated_at`. A sync that was stopped (the server ended, the process was killed) continues
where it stopped: the listing at its cursor, then the notes still pending.

- The first sync lists every note. Later ones list only those `updated_after` the high-water
  mark, every `GRANOLA_API_SYNC_SECONDS` and when `granola.cache.status` is called; every
  `FULL_LISTING_EVERY`-th sync lists every note again, and the notes no longer listed (deleted,
  or no longer shared) leave the index.
- A note listed but gone by the time it is fetched (404) is skipped and counted (`vanished`).
- A note sent as something other than the note's JSON is left pending, fetched again at the
  next sync, and named in the status's `last_error` (`parse_error`).
- Answers come at once from what is synced, flagged `syncing` while a sync runs (or has notes
  pending). When the API cannot be reached they come from the index, flagged `stale_since`; a
  wrong key or a plan without API access is the error every tool answers with.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from deskmcp.core.clock import Clock
from deskmcp.core.dates import iso
from deskmcp.core.errors import DeskError, ParseError
from deskmcp.core.search.index import IndexRecord, SearchIndex
from deskmcp.meetings import catalog
from deskmcp.meetings.api_notes import index_fields, listed_version
from deskmcp.meetings.granola_api import GranolaApi, NotePage, is_unreachable
from deskmcp.meetings.models import CacheStatus, IndexingProgress, SyncProgress, SyncStatus
from deskmcp.meetings.settings import MeetingsSettings
from deskmcp.meetings.sync_state import SyncState

if TYPE_CHECKING:
    import httpx2

log = logging.getLogger(__name__)

FULL_LISTING_EVERY = 12
"""Every this many syncs lists every note (at the default interval, hourly): the notes no
longer listed are removed."""
BATCH = 25
"""Notes fetched, then written to the index in one transaction."""
FIRST_CONTACT_WAIT = 10.0
"""Seconds the first call waits for the API's first answer, so a wrong key is said at once."""
FORMAT = "granola-api (v1)"


class NoteClient(Protocol):
    """What a sync asks of the service it syncs from (`GranolaApi`, `granola_mcp.GranolaMcp`)."""

    requests: int
    transcripts: str | None
    """Why transcripts are not synced (the plan has none), when the service said so."""

    def list_page(self, *, updated_after: str | None, cursor: str | None) -> NotePage: ...

    def prefetch(self, note_ids: list[str]) -> None: ...

    def get_note(self, note_id: str) -> dict[str, Any] | None: ...

    def session(self) -> AbstractContextManager[None]:
        """The requests of one sync, made inside it (one connection, one MCP session)."""
        ...

    def close(self) -> None: ...


class SyncStopped(Exception):
    """The source was closed while a sync waited: it stops, its progress kept."""


class _StoppableClock(Clock):
    """Real time whose sleeps end (raising `SyncStopped`) when the source closes."""

    def __init__(self, closing: threading.Event) -> None:
        self._closing = closing

    def sleep(self, seconds: float) -> None:
        if self._closing.wait(max(0.0, seconds)):
            raise SyncStopped


def _now() -> str:
    return iso(datetime.now(UTC)) or ""


class ApiSource:
    """Meetings from Granola's public API, synced into `index` in a thread of its own."""

    name = "api"
    format = FORMAT
    full_every = FULL_LISTING_EVERY
    """Every this many syncs list every note (1: every sync lists all)."""

    def __init__(
        self,
        settings: MeetingsSettings,
        index: SearchIndex,
        *,
        key: str | None = None,
        clock: Clock | None = None,
        transport: httpx2.BaseTransport | None = None,
        rate: float = 1.0,
        background: bool = True,
    ) -> None:
        """`key`: the API key (default the settings'); `background` False: no sync runs unless
        `sync_once` is called (tests, benchmarks)."""
        key = key or settings.granola_api_key()
        if key is None:
            raise ValueError("an API source needs GRANOLA_API_KEY")
        self._setup(settings, index, url=settings.api_url.rstrip("/"), secret=key, background=background)
        self.api: NoteClient = GranolaApi(
            self.url, key, clock=clock or _StoppableClock(self._closing), rate=rate, transport=transport
        )

    def _setup(
        self, settings: MeetingsSettings, index: SearchIndex, *, url: str, secret: str, background: bool
    ) -> None:
        self.background = background
        self.url = url
        self.interval = settings.api_sync_seconds
        self.index = index
        self.state = SyncState(settings.index_folder / f"meetings-{self.name}.sync.sqlite3")
        # Another key or another service is another set of notes: start again rather than mix them.
        identity = hashlib.sha256(f"{self.url}\n{secret}".encode()).hexdigest()
        if self.state.get("identity") != identity:
            if self.state.get("identity") is not None or index.count():
                log.info("Granola's sign-in or URL changed: the meetings index is synced again from the start")
            index.clear()
            self.state.reset()
            self.state.set(identity=identity)
        self._closing = threading.Event()
        self._wake = threading.Event()
        self._contact = threading.Event()
        self._sync_lock = threading.Lock()
        self._start_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._progress: SyncProgress | None = None
        self.last_error: DeskError | None = None
        self._stale_since: str | None = self.state.get("stale_since")
        self.next_sync: float | None = None

    # -- the sync loop -----------------------------------------------------------------------

    def start(self) -> None:
        """Start the loop that syncs now and every `interval` seconds (once; later calls do nothing)."""
        with self._start_lock:
            if self._thread is not None or self._closing.is_set() or not self.background:
                return
            self._thread = threading.Thread(target=self._run, name="meetings-api-sync", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while not self._closing.is_set():
            try:
                self.sync_once()
            except Exception:  # the outermost handler of the thread: the next sync tries again
                log.exception("syncing meetings from Granola's API failed unexpectedly")
            self.next_sync = time.time() + self.interval
            self._wake.wait(self.interval)
            self._wake.clear()

    def poke(self) -> None:
        """Sync now (or as soon as the sync under way ends)."""
        self.start()
        self._wake.set()

    def close(self) -> None:
        self._closing.set()
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=30)
        with self._sync_lock:
            self.api.close()
            self.state.close()

    def sync_once(self) -> bool:
        """One sync (or the rest of one that was stopped). True when it completed."""
        with self._sync_lock:
            if self._closing.is_set():
                return False
            try:
                with self.api.session():
                    self._sync()
            except SyncStopped:
                return False
            except DeskError as exc:
                self.last_error = exc
                if is_unreachable(exc) and self._stale_since is None:
                    self._stale_since = _now()
                    self.state.set(stale_since=self._stale_since)
                log.warning("syncing meetings from Granola's API failed: %s", exc.message)
                return False
            finally:
                self._progress = None
                self._contact.set()
            return True

    def _stop_if_closing(self) -> None:
        if self._closing.is_set():
            raise SyncStopped

    def _sync(self) -> None:
        state = self.state
        sync_no = int(state.get("sync_no") or 0) + 1
        if state.get("phase") in (None, "idle"):
            full = state.get("high_water") is None or int(state.get("since_full") or 0) + 1 >= self.full_every
            state.begin_listing(full=full, since=None if full else state.get("high_water"), sync_no=sync_no)
        else:
            state.set(sync_no=sync_no)  # resumed: notes that failed before are tried again
        self._progress = SyncProgress(done=0, total=state.pending_count())
        if state.get("phase") == "listing":
            self._list()
        self._fetch(sync_no)
        failures = self.last_error if isinstance(self.last_error, ParseError) else None
        full = state.get("list_full") == "1"
        high = max(state.get("high_water") or "", state.get("list_high") or "")
        state.set(
            phase="idle",
            high_water=high,
            since_full=0 if full else int(state.get("since_full") or 0) + 1,
            last_sync=_now(),
            stale_since="",
        )
        self._stale_since = None
        self.last_error = failures if state.pending_count() else None

    def _list(self) -> None:
        state = self.state
        full = state.get("list_full") == "1"
        since = state.get("list_since")
        cursor = state.get("list_cursor")
        high = state.get("list_high") or ""
        known = self.index.fingerprints()
        while True:
            self._stop_if_closing()
            page = self.api.list_page(updated_after=since, cursor=cursor)
            changed = [n for n in page.notes if not n.updated_at or listed_version(known.get(n.id)) != n.updated_at]
            high = max([high, *(n.updated_at for n in page.notes)])
            state.page_listed(changed, [n.id for n in page.notes] if full else [], cursor=page.cursor, high=high)
            if self._progress is not None:
                self._progress.total = state.pending_count()
            self._contact.set()
            if not page.has_more:
                break
            cursor = page.cursor
        if full:
            seen = state.seen()
            gone = [key for key in known if key not in seen]
            if gone:
                self.index.apply((), gone)
                self._write_meta()
                log.info("%d meetings no longer listed by Granola's API were removed", len(gone))
        state.set(phase="fetching")

    def _fetch(self, sync_no: int) -> None:
        state = self.state
        vanished = written = 0
        while batch := state.pending(BATCH, sync_no):
            self.api.prefetch([note_id for note_id, _ in batch])
            records: list[IndexRecord] = []
            gone: list[str] = []
            done: list[str] = []
            try:
                for note_id, updated_at in batch:
                    self._stop_if_closing()
                    try:
                        note = self.api.get_note(note_id)
                    except ParseError as exc:
                        self.last_error = exc
                        state.failed(note_id, sync_no)
                        log.warning("%s", exc.message)
                        continue
                    self._contact.set()
                    done.append(note_id)
                    fields = index_fields(note, updated_at) if note is not None else None
                    if fields is None:
                        gone.append(note_id)
                        if note is None:
                            vanished += 1
                        continue
                    records.append(IndexRecord(**fields))
            finally:  # stopped or failed midway: what was fetched is kept
                if records or gone:
                    self.index.apply(records, gone, deferred=True)
                    self._write_meta()
                state.fetched(done)
                if vanished:
                    state.set(vanished=int(state.get("vanished") or 0) + vanished)
                    vanished = 0
            written += len(done)
            if self._progress is not None:
                self._progress.done += len(done)
                self._progress.total = max(self._progress.total, self._progress.done + state.pending_count())
        self.index.flush()
        if written > BATCH:
            # Many small transactions leave many small text segments: merged now (and the
            # writer's memory released), searches are as fast as on an index built in one go.
            self.index.settle()

    def _write_meta(self) -> None:
        import orjson

        folders = catalog.folder_listing(self.index)
        self.index.apply(
            meta={
                "source": self.url,
                "format": self.format,
                "indexed_at": _now(),
                "folders": orjson.dumps(folders).decode(),
                "folder_count": str(len(folders)),
                "transcripts": str(catalog.transcript_count(self.index)),
            }
        )

    # -- what answers say --------------------------------------------------------------------

    def refresh(self, *, partial: bool = False) -> None:
        """Make sure the sync runs; on the very first call, wait briefly for the API's first
        answer. A wrong key or a plan without access is raised: no answer would be true."""
        del partial  # answers always come from what is synced; `syncing` says how far it is
        self._first_contact()
        error = self.last_error
        if error is not None and not is_unreachable(error):
            raise error

    def _first_contact(self) -> None:
        """Start the sync loop; the first time, with nothing synced yet, wait briefly for the
        API's first answer (so a wrong key is said at once)."""
        first = self._thread is None and self.background
        self.start()
        if first and self.state.get("last_sync") is None:
            self._contact.wait(FIRST_CONTACT_WAIT)

    def stale_since(self) -> str | None:
        return self._stale_since

    def transcripts_missing(self) -> str | None:
        return self.api.transcripts

    def indexing(self) -> IndexingProgress | None:
        return None  # a cache's first index: the API's progress is `syncing`

    def syncing(self) -> SyncProgress | None:
        progress = self._progress
        if progress is not None:
            return progress.model_copy()
        pending = self.state.pending_count()
        if pending or self.state.get("last_sync") is None:
            return SyncProgress(done=0, total=pending)
        return None

    def status(self) -> CacheStatus:
        self._first_contact()
        self.poke()
        error = self.last_error
        status = CacheStatus(
            source="mcp" if self.name == "mcp" else "api",
            ok=error is None or is_unreachable(error),
            error=error.code if error is not None and not is_unreachable(error) else None,
            message=error.message if error is not None and not is_unreachable(error) else None,
            format=self.format,
            meetings=self.index.count(),
            index_path=str(self.index.path),
            indexed_at=self.index.get_meta("indexed_at"),
            syncing=self.syncing(),
            stale_since=self._stale_since,
            sync=SyncStatus(
                url=self.url,
                last_sync=self.state.get("last_sync"),
                next_sync=iso(datetime.fromtimestamp(self.next_sync, UTC)) if self.next_sync else None,
                high_water=self.state.get("high_water"),
                notes=self.index.count(),
                vanished=int(self.state.get("vanished") or 0),
                pending=self.state.pending_count(),
                last_error=error.to_dict() if error is not None else None,
                transcripts=self.api.transcripts,
            ),
        )
        counted = self.index.get_meta("folder_count")
        status.folders = int(counted) if counted else 0
        status.transcripts = int(self.index.get_meta("transcripts") or 0)
        return status
