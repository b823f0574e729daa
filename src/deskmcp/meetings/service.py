"""The meetings service: Granola's cache mirrored into the core search index.

The cache file is parsed only when it changes (path, size or mtime differ from what the
index was built from); every answer then comes from SQLite, so a server started on an
unchanged cache never parses it at all. Changes are applied incrementally: a meeting whose
content hash is unchanged is not rewritten.

The first index of a big cache (an empty index, a file of at least `background_min_mb`) runs
in a thread of its own: search and list answer meanwhile from the meetings indexed so far and
say how far indexing is (`indexing`); every other call waits for it, as it would for any change.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import itertools
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
import orjson

from deskmcp.core.dates import iso, parse_timestamp, resolve_zone, zone_label
from deskmcp.core.errors import BadRequest, DeskError, InternalError, IOFailure, NotFound
from deskmcp.core.files import PRIVATE_FILE, process_alive, write_back
from deskmcp.core.pagination import decode_cursor, page, query_key
from deskmcp.core.search import fusion
from deskmcp.core.search.embedding import Embedder
from deskmcp.core.search.index import ApplyStats, Hit, IndexRecord, SearchIndex
from deskmcp.core.search.vectors import VectorIndex, sections, turn_windows
from deskmcp.meetings import cache_file, catalog, granola_cache
from deskmcp.meetings.cache_layout import Layout
from deskmcp.meetings.catalog import SCHEMA
from deskmcp.meetings.entries import unpack_transcript
from deskmcp.meetings.filters import Filters
from deskmcp.meetings.markdown import DEFAULT_SECTIONS, render_markdown
from deskmcp.meetings.models import (
    CacheStatus,
    ExportMarkdownOutput,
    Folder,
    FolderList,
    IndexingProgress,
    ListMeetingsOutput,
    Meeting,
    MeetingSummary,
    ParticipantCount,
    ParticipantList,
    SearchHit,
    SearchMeetingsOutput,
    Section,
    StatsBucket,
    StatsOutput,
    TranscriptOutput,
    TranscriptSegment,
)
from deskmcp.meetings.normalize import transcript_segments
from deskmcp.meetings.settings import MeetingsSettings
from deskmcp.meetings.sources import CacheSource, MeetingSource
from deskmcp.meetings.worker import WorkerRun, changes

if TYPE_CHECKING:
    from deskmcp.meetings.unindexed import ScanResult, Unindexed

log = logging.getLogger(__name__)

IN_PROCESS_CHANGES = 200
"""Up to this many changed meetings of a big cache are built in the server itself: the scan
that found them took little memory, and a worker would take longer to start than they take."""
BATCH = 500
"""Entries per transaction when an empty index is filled."""
MIB = 1024 * 1024


def _summary_of(hit: Hit) -> MeetingSummary:
    return MeetingSummary.model_validate_json(hit.columns["summary"] or b"{}")


_SIDES = {"me": "microphone", "them": "system"}


def _from_source(segment: dict[str, Any], source: str) -> bool:
    """Whether a segment is from `source`: `microphone`/`me` (the user's microphone) or
    `system`/`them` (the other side), whatever speaker name the segment carries."""
    side = _SIDES.get(source, source)
    if segment.get("source") is not None:
        return segment.get("source") == side
    # No source recorded: the side the speaker's name says, if any.
    return segment.get("speaker") in {side, *(short for short, long in _SIDES.items() if long == side)}


def _segments(raw: bytes | None) -> list[dict[str, Any]]:
    """A stored transcript (the cache's raw JSON) as normalised segments."""
    return transcript_segments(orjson.loads(raw)) if raw else []


class MeetingService:
    """Read-only access to Granola meetings, indexed. Thread-safe."""

    def __init__(
        self,
        settings: MeetingsSettings,
        *,
        embedder: Embedder | None = None,
        source: Callable[[MeetingService], MeetingSource] | None = None,
    ) -> None:
        """`source` builds the source from the service (tests and benchmarks: an API source
        on their own clock); by default the settings choose it (`_default_source`)."""
        self.settings = settings
        # Meetings from the API are another index: never mixed with a cache's.
        self._api_key = settings.granola_api_key()
        self._remote = settings.remote_source(self._api_key is not None)
        name = f"meetings-{self._remote}.sqlite3" if self._remote else "meetings.sqlite3"
        self.index_path = settings.index_folder / name
        self.index = SearchIndex(self.index_path, SCHEMA)
        self.vectors = VectorIndex(self.index, embedder, _passages) if embedder is not None else None
        self._sync_lock = threading.Lock()
        self.worker_command: list[str] | None = None
        """How the worker process is started (default `python -m deskmcp.meetings.worker`)."""
        self.worker_timeout = 600.0
        """Seconds a worker may take before it is stopped."""
        self._source = self.index.get_meta("source")
        self._last_sync: float | None = None
        self.zone = resolve_zone(settings.timezone)
        self._indexer: threading.Thread | None = None
        self._indexer_lock = threading.Lock()
        self._progress: IndexingProgress | None = None
        self._complete = threading.Event()
        """Set once answers cover the whole cache (the first index holds every meeting)."""
        self._complete.set()
        self._unindexed: Unindexed | None = None
        """The texts of a first index's meetings not indexed yet, scanned by searches meanwhile."""
        self._scan_wanted = threading.Event()
        """Set by a search that scanned: the first index then makes what it wrote searchable at
        its next batch, and those meetings leave the scan."""
        self._closing = threading.Event()
        self._layout: Layout | None = None
        """Where each record of the version indexed stands in the file (see `cache_layout`)."""
        self._next_layout: Layout | None = None
        self.layout_path = settings.index_folder / "meetings.layout"
        """The layout, kept beside the index so that a server started again has it."""
        self._layout_read = False
        self.source: MeetingSource = source(self) if source is not None else self._default_source()

    def _default_source(self) -> MeetingSource:
        """The one place the source is chosen (`MeetingsSettings.remote_source`): Granola's API
        with a key, its hosted MCP server when chosen or signed in to, else the local cache."""
        if self._remote == "api" and self._api_key is not None:
            from deskmcp.meetings.api_source import ApiSource

            return ApiSource(self.settings, self.index, key=self._api_key)
        if self._remote == "mcp":
            from deskmcp.meetings.mcp_source import McpSource

            return McpSource(self.settings, self.index)
        return CacheSource(self)

    def close(self) -> None:
        self.source.close()
        self._closing.set()  # a first index under way stops after its current batch
        indexer = self._indexer
        if indexer is not None and indexer is not threading.current_thread():
            indexer.join()
        self.index.close()

    # -- keeping the index true ------------------------------------------------------------

    @staticmethod
    def locate(settings: MeetingsSettings) -> granola_cache.CacheLocation:
        return granola_cache.locate(settings.cache_path, settings.fallback_folders)

    def location(self) -> granola_cache.CacheLocation:
        return self.locate(self.settings)

    def refresh(self, *, partial: bool = False) -> None:
        """Bring the index up to date with the source (see `MeetingSource.refresh`)."""
        self.source.refresh(partial=partial)

    def indexing(self) -> IndexingProgress | None:
        """How far a first index of a cache running in the background is, or None when none is."""
        return self.source.indexing()

    def status(self) -> CacheStatus:
        """The source and index state. Never fails on what the other tools cannot read: it
        reports why instead (ok=false, the error code and message they answer with)."""
        return self.source.status()

    def _flags(self) -> dict[str, Any]:
        """What answers from the index say about a sync under way or a source out of reach."""
        return {"syncing": self.source.syncing(), "stale_since": self.source.stale_since()}

    def refresh_cache(self, *, partial: bool = False) -> None:
        """Bring the index up to date with the cache file, if the file changed.

        `partial` (search and list): a first index of a big cache is started in the background
        (or left running) and this returns at once; `indexing()` then says how far it is."""
        path = granola_cache.require_location(self.location())
        fingerprint = cache_file.fingerprint(path)
        if fingerprint == self._source:
            return
        if partial and self._in_background(path):
            return
        with self._sync_lock:
            if fingerprint == self._source:
                return
            self._reindex(path)

    def _in_background(self, path: Path) -> bool:
        """True while a first index runs in the background, started here when the index is
        empty and the cache big. Only the first one is: when it failed or stopped, the next
        call refreshes in its own thread and answers with the error, as any other call does."""
        with self._indexer_lock:
            if self._indexer is not None:
                return self._indexer.is_alive()
            try:
                big = path.stat().st_size >= self.settings.background_min_mb * MIB
            except OSError:
                return False
            if not big or self.index.count():
                return False
            self._progress = IndexingProgress(done=0, total=0)
            self._complete.clear()
            self._indexer = threading.Thread(target=self._index_first, name="meetings-indexer", daemon=True)
            self._indexer.start()
            return True

    def _index_first(self) -> None:
        try:
            self.refresh_cache()
            self.index.settle()  # the writer's memory (about 100 MB) back now, not after a pause
            self.index.write_back()  # answers are complete already (see _reindex)
        except Exception:  # the outermost handler of the thread: the next call refreshes again
            log.exception("the first index of the Granola cache failed; the next call reads it again")
        finally:
            self._done_indexing()

    def _done_indexing(self) -> None:
        """Answers are complete from now on: no longer flagged `indexing`."""
        self._progress = None
        self._unindexed = None  # answers are the index's alone
        self._complete.set()

    def wait_complete(self, timeout: float | None = None) -> bool:
        """Wait until answers cover the whole cache: a first index in the background holds every
        meeting (what it does after that, its side indexes and the cache's layout, answers need
        not wait for), or it stopped (the next call then reads the cache itself). False if
        neither happened within `timeout`."""
        return self._complete.wait(timeout)

    def wait_scannable(self, timeout: float | None = None) -> bool:
        """Wait until searches consider every meeting: a first index in the background holds
        every meeting's text for its scan (see `unindexed`), or answers are complete. False if
        neither happened within `timeout`."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._complete.is_set():
            pool = self._unindexed
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if pool is not None and pool.arrived.wait(min(left, 0.05) if left is not None else 0.05):
                return True
            if left == 0.0:
                return self._complete.is_set()
        return True

    def wait_indexed(self, timeout: float | None = None) -> bool:
        """Wait for a first index running in the background; False if it still runs after `timeout`."""
        indexer = self._indexer
        if indexer is None:
            return True
        indexer.join(timeout)
        return not indexer.is_alive()

    def cache_indexing(self) -> IndexingProgress | None:
        """How far a first index running in the background is, or None when none is."""
        indexer = self._indexer
        if indexer is None or not indexer.is_alive():
            return None
        return self._progress

    def _reindex(self, path: Path) -> None:
        started = time.perf_counter()
        start_writeback(path)
        max_bytes = self.settings.max_cache_mb * 1024 * 1024
        known = self.index.fingerprints()
        self._next_layout = None
        try:
            try:
                stats, head = self._take_in(path, max_bytes, known, scan=True)
            except DeskError as exc:
                if not exc.details.get("reread"):
                    raise
                log.info("%s: %s", path.name, exc.message)
                stats, head = self._take_in(path, max_bytes, known, scan=False)
        except OSError as exc:
            raise IOFailure(f"{path.name} could not be read: {exc.strerror}.", {"path": str(path)}) from exc
        # Counted once per change of the file, so the status call stays cheap.
        self.index.set_meta("transcripts", str(self.index.count(where="d.transcript_json IS NOT NULL")))
        self._source = head["source"]
        layout = self._next_layout
        self._layout = layout if layout is not None and layout.source == self._source else None
        self._keep_layout()
        self._done_indexing()  # whichever thread filled it
        self._last_sync = time.perf_counter() - started
        log.info(
            "indexed %s: %d added, %d updated, %d removed, %d unchanged in %.2fs",
            path.name,
            stats.added,
            stats.updated,
            stats.deleted,
            head["unchanged"],
            self._last_sync,
        )

    def _current_layout(self) -> Layout | None:
        """The layout of the version the index holds, if known (read from its file once)."""
        if self._layout is None and not self._layout_read:
            self._layout_read = True
            self._layout = read_layout(self.layout_path)
        layout = self._layout
        return layout if layout is not None and layout.source == self._source else None

    def _keep_layout(self) -> None:
        """Write the layout beside the index (or remove a stale one). A lost or damaged file
        only means the next change is scanned, so it is written without waiting for the disk."""
        self._layout_read = True
        try:
            if self._layout is None:
                self.layout_path.unlink(missing_ok=True)
                return
            payload = self._layout.encode()
            temporary = self.layout_path.with_name(f".{self.layout_path.name}.{os.getpid()}.tmp")
            temporary.write_bytes(hashlib.sha256(payload).digest() + payload)
            temporary.chmod(PRIVATE_FILE)
            temporary.replace(self.layout_path)
            _remove_left_behind(self.layout_path)
        except OSError as exc:
            log.warning("the cache's layout could not be kept in %s: %s", self.layout_path, exc)

    def _take_in(
        self, path: Path, max_bytes: int, known: dict[str, str], *, scan: bool
    ) -> tuple[ApplyStats, dict[str, Any]]:
        """Read the cache's changes and apply them: here when the file is small or only a few
        meetings changed (a string cache is scanned in little memory), else in a worker."""
        # Parsing creates many small objects; the cyclic GC would rescan them over and over
        # although none of them form cycles.
        layout = self._current_layout()
        # A first index in the background sends every meeting's text first: searches scan it
        # for the meetings not indexed yet (see `unindexed`).
        texts = not known and self._progress is not None and can_scan()
        self._unindexed = None
        if texts:
            from deskmcp.meetings.unindexed import Unindexed

            self._unindexed = Unindexed()
        if path.stat().st_size < self.settings.worker_min_mb * 1024 * 1024:
            with gc_paused():
                stream = changes(path, max_bytes, known, scan=scan, layout=layout, texts=texts)
                return self._apply(stream, batched=not known)
        if known and scan:
            with gc_paused():
                stream = changes(path, max_bytes, known, whole=False, layout=layout)
                try:
                    head = next(stream, None)
                    if head is not None and head[1]["changed"] <= IN_PROCESS_CHANGES:
                        return self._apply(itertools.chain([head], stream), batched=False)
                finally:
                    stream.close()
        with WorkerRun(
            path, max_bytes, known, command=self.worker_command, timeout=self.worker_timeout, scan=scan, texts=texts
        ) as run:
            return self._apply(run.messages(), batched=not known)

    def _apply(
        self, messages: Iterator[tuple[str, dict[str, Any]]], *, batched: bool
    ) -> tuple[ApplyStats, dict[str, Any]]:
        """Apply a stream of changes (see `worker.changes`) in one transaction; a stream that
        fails before `done` rolls everything back.

        `batched` (an empty index: nothing old to keep) writes every `BATCH` entries in a
        transaction of their own instead: memory stays bounded and the text index works on
        one batch while the next is read. A stream that fails then leaves some meetings in,
        but not the cache's fingerprint, so the next call reads the cache again and finds
        those meetings unchanged."""
        kind, head = next(messages)
        if kind != "head":
            raise InternalError(f"The cache reader sent {kind!r} before its summary.")

        def entries() -> Iterator[IndexRecord]:
            for kind, fields in messages:
                if kind == "entry":
                    yield IndexRecord(**fields)
                elif kind == "texts" and self._unindexed is not None:
                    self._unindexed.add(fields["items"])
                elif kind == "texts_done" and self._unindexed is not None:
                    self._unindexed.finish()
                elif kind == "done":
                    return
            raise InternalError("The cache reader stopped before its last entry.")

        with self.index.bulk() if batched else contextlib.nullcontext():
            stats, head = self._apply_entries(head, entries(), batched=batched)
        # The new version's layout, for comparing the next one with (see `cache_layout`): a
        # reader makes it while the entries are committed, and sends it after them.
        for kind, fields in messages:
            if kind == "layout":
                self._next_layout = Layout.decode(fields["layout"])
        return stats, head

    def _apply_entries(
        self, head: dict[str, Any], records: Iterator[IndexRecord], *, batched: bool
    ) -> tuple[ApplyStats, dict[str, Any]]:
        total = ApplyStats()
        if batched:
            progress = self._progress
            if progress is not None:
                progress.total = head["changed"]
            waiting: list[str] = []
            while batch := list(itertools.islice(records, BATCH)):
                if self._closing.is_set():
                    raise InternalError("The meetings index was closed while it was being filled.")
                # Deferred: a search meanwhile sees the text index as committed a moment ago
                # instead of committing a small segment of its own; the last apply is exact.
                stats = self.index.apply(batch, deferred=True)
                if self._unindexed is not None:
                    # Searches scan the meetings not indexed yet. After one did, what is applied is
                    # made searchable, then leaves the scan (a meeting found by both is answered
                    # by the index). Without searches the text index commits only at the end:
                    # a commit per batch would leave it in more pieces than an index made at once.
                    waiting.extend(record.key for record in batch)
                    if self._scan_wanted.is_set():
                        self._scan_wanted.clear()
                        self.index.flush()
                        self._unindexed.indexed(waiting)
                        waiting = []
                total.added += stats.added
                total.updated += stats.updated
                if progress is not None:
                    progress.done = total.added + total.updated
        stats = self.index.apply(
            records,
            head["deletes"],
            meta={
                "source": head["source"],
                "format": head["format"],
                "indexed_at": iso(datetime.now(UTC)) or "",
                "folders": orjson.dumps(head["folders"]).decode(),
                "folder_count": str(len(head["folders"])),  # so a status call need not parse them
            },
        )
        if batched:
            self.index.flush()  # the deferred batches too: the next answer is the whole cache's
            # Every meeting is searchable now: answers are complete, and need not wait for what
            # a first index does after this (the side indexes, the transcript count, the layout).
            self._done_indexing()
        stats.added += total.added
        stats.updated += total.updated
        return stats, head

    # -- reading ---------------------------------------------------------------------------

    def _meeting(self, meeting_id: str) -> tuple[Meeting, bytes | None]:
        self.refresh()
        if not meeting_id or not meeting_id.strip():
            raise BadRequest("id is required. Call granola.meetings.list for valid ids.")
        hit = self.index.get(meeting_id.strip())
        if hit is None or hit.data is None:
            syncing = self.source.syncing()
            under_way = (
                f" Meetings are still being synced from Granola ({syncing.done} of {syncing.total} notes so far)."
                if syncing is not None
                else ""
            )
            raise NotFound(
                f"No meeting {meeting_id!r}. Call granola.meetings.list or granola.meetings.search for valid ids."
                + under_way,
                {"id": meeting_id},
            )
        return Meeting.model_validate_json(hit.data), unpack_transcript(hit.columns.get("transcript_json"))

    def filters(self, **kwargs: Any) -> Filters:
        return Filters(zone=self.zone, **kwargs)

    def list_meetings(self, filters: Filters, *, q: str | None, limit: int, cursor: str | None) -> ListMeetingsOutput:
        _check_limit(limit)
        self.refresh(partial=True)
        progress = self.indexing()
        where, params = filters.sql()
        key = query_key("list", q, filters.key())
        offset = decode_cursor(cursor, key)
        if q and q.strip():
            hits = self.index.search(
                q,
                where=where,
                params=params,
                order_by="d.start_ts DESC",
                limit=limit + 1,
                offset=offset,
                every_word=True,
            )
            total = self.index.count(where=where, params=params, query=q, every_word=True)
        else:
            hits = self.index.select(
                where=where, params=params, order_by="d.start_ts DESC, d.key", limit=limit + 1, offset=offset
            )
            total = self.index.count(where=where, params=params)
        items = [_summary_of(h) for h in hits[:limit]]
        return ListMeetingsOutput(
            items=items,
            total=total,
            next_cursor=page(offset, limit, len(hits), key),
            indexing=progress,
            **self._flags(),
        )

    def search(
        self, q: str, filters: Filters, *, limit: int, cursor: str | None, mode: str | None = None
    ) -> SearchMeetingsOutput:
        """Meetings for `q` by words, by meaning or both (`fusion.pick_mode` reads `mode`)."""
        _check_limit(limit)
        if not q or not q.strip():
            raise BadRequest("q is required: the words to search for. Use granola.meetings.list to browse.")
        chosen = fusion.pick_mode(mode, self.vectors is not None)
        self.refresh(partial=True)
        progress = self.indexing()
        where, params = filters.sql()
        key = query_key("search", q, filters.key(), chosen)
        offset = decode_cursor(cursor, key)
        pool = self._scannable() if progress is not None and chosen == "lexical" else None
        if pool is not None:
            return self._search_with_scan(pool, q, filters, limit=limit, offset=offset, key=key)
        found = fusion.search(
            self.index, self.vectors, q, mode=chosen, where=where, params=params, limit=limit + 1, offset=offset
        )
        items = [_search_hit(r.hit, r.lexical_rank, r.semantic_rank) for r in found.hits[:limit]]
        return SearchMeetingsOutput(
            items=items,
            next_cursor=page(offset, limit, len(found.hits), key),
            unmatched_terms=self.index.unmatched_terms(q, where=where, params=params) if chosen != "semantic" else [],
            indexing=progress,
            mode=found.mode,
            semantic_pending=found.pending or None,
            **self._flags(),
        )

    def _scannable(self) -> Unindexed | None:
        """The meetings a first index has not made searchable yet, once all their texts are here."""
        pool = self._unindexed
        return pool if pool is not None and pool.ready else None

    def _search_with_scan(
        self, pool: Unindexed, q: str, filters: Filters, *, limit: int, offset: int, key: str
    ) -> SearchMeetingsOutput:
        """A lexical search during a first index: the index's hits for the meetings it holds
        and a scan's for the others (see `unindexed`), merged by score; the scan's hits are
        marked provisional, and the answer says how many meetings the scan covered."""
        where, params = filters.sql()
        wanted = offset + limit + 1
        # Every match the index holds, whatever the page: the index's scores are then those of
        # one ranking (a filtered search may score a short list by another way), so the merged
        # order is the same from page to page; and a meeting the index already answers for is
        # left out of the scan's hits. Snippets are made for the page only.
        self._scan_wanted.set()
        everything = self.index.count() + 1
        hits = self.index.search(q, where=where, params=params, limit=everything, snippet_tokens=0)
        from deskmcp.meetings.unindexed import admits

        scanned: ScanResult = pool.search(q, admits(filters))
        shown = {hit.key for hit in hits}
        merged: list[tuple[float, int, Any]] = [(hit.score or 0.0, 0, hit) for hit in hits]
        merged.extend((h.score, 1, h) for h in scanned.hits if h.pending.key not in shown)
        merged.sort(key=lambda each: -each[0])
        shown_page = merged[offset : offset + limit]
        snippets = self.index.search_snippets(q, [found.key for _, scan, found in shown_page if not scan])
        items: list[SearchHit] = []
        for rank, (score, scan, found) in enumerate(shown_page, offset + 1):
            if scan:
                items.append(
                    SearchHit(
                        **found.pending.summary(),
                        score=round(score, 4),
                        snippet=scanned.snippet(found),
                        lexical_rank=rank,
                        provisional=True,
                    )
                )
            else:
                found.snippet = snippets.get(found.key)
                items.append(_search_hit(found, rank, None))
        missing = [t for t in self.index.unmatched_terms(q, where=where, params=params) if t not in scanned.held]
        progress = self._progress
        return SearchMeetingsOutput(
            items=items,
            next_cursor=page(offset, limit, len(merged[offset:wanted]), key),
            unmatched_terms=missing,
            indexing=progress.model_copy(update={"scanned": scanned.scanned}) if progress is not None else None,
            mode="lexical",
            **self._flags(),
        )

    def related(self, meeting_id: str, filters: Filters, *, limit: int) -> SearchMeetingsOutput:
        """The meetings nearest in meaning to meeting `meeting_id` (itself left out)."""
        _check_limit(limit)
        if self.vectors is None:
            raise BadRequest(fusion.NO_MODEL.replace(", or search with mode='lexical'", ""), {"id": meeting_id})
        self._meeting(meeting_id)
        pending = self.vectors.sync()
        where, params = filters.sql()
        items: list[SearchHit] = []
        for rank, match in enumerate(self.vectors.related(meeting_id, where=where, params=params, limit=limit), 1):
            hit = self.index.get(match.key)
            if hit is not None:
                hit.score, hit.snippet = match.score, self.vectors.passage(match)
                items.append(_search_hit(hit, None, rank))
        return SearchMeetingsOutput(
            items=items, indexing=self.indexing(), mode="semantic", semantic_pending=pending or None
        )

    def get(self, meeting_id: str, *, include_notes: bool = True) -> Meeting:
        meeting, _ = self._meeting(meeting_id)
        if not include_notes:
            meeting.notes = ""
        return meeting

    def transcript(
        self,
        meeting_id: str,
        *,
        start_seconds: float | None = None,
        end_seconds: float | None = None,
        source: str | None = None,
        max_chars: int | None = None,
    ) -> TranscriptOutput:
        if start_seconds is not None and end_seconds is not None and end_seconds <= start_seconds:
            raise BadRequest("end_seconds must be after start_seconds.")
        meeting, raw = self._meeting(meeting_id)
        segments = _segments(raw)
        budget = min(max_chars or self.settings.max_chars, self.settings.max_chars)
        chosen: list[TranscriptSegment] = []
        used = 0
        truncated = False
        for seg in segments:
            offset = seg.get("offset_seconds")
            if start_seconds is not None and (offset is None or offset < start_seconds):
                continue
            if end_seconds is not None and (offset is None or offset >= end_seconds):
                continue
            if source and not _from_source(seg, source):
                continue
            used += len(seg["text"])
            if used > budget:
                truncated = True
                break
            chosen.append(TranscriptSegment.model_validate(seg))
        return TranscriptOutput(
            id=meeting.id,
            title=meeting.title,
            segments=chosen,
            total_segments=len(segments),
            truncated=truncated,
            note=self.source.transcripts_missing() if not segments else None,
        )

    def export_markdown(
        self, meeting_id: str, sections: list[Section] | None, *, max_chars: int | None = None
    ) -> ExportMarkdownOutput:
        meeting, raw = self._meeting(meeting_id)
        wanted = list(dict.fromkeys(sections or DEFAULT_SECTIONS))
        segments = _segments(raw) if "transcript" in wanted else []
        text = render_markdown(meeting, wanted, segments, self.zone)
        budget = min(max_chars or self.settings.max_chars, self.settings.max_chars)
        truncated = len(text) > budget
        if truncated:
            text = text[:budget].rstrip() + "\n\n…(truncated; ask for fewer sections or a larger max_chars)\n"
        return ExportMarkdownOutput(id=meeting.id, title=meeting.title, markdown=text, truncated=truncated)

    def stats(self, filters: Filters, group_by: str, *, limit: int = 50) -> StatsOutput:
        if group_by not in catalog.GROUP_BY:
            raise BadRequest(
                f"group_by must be one of {', '.join(catalog.GROUP_BY)} (got {group_by!r}).", {"group_by": group_by}
            )
        self.refresh()
        where, params = filters.sql()
        total, buckets = catalog.stats(self.index, where, params, group_by, self.zone)
        if group_by in catalog.TIME_GROUPS:
            ordered = sorted(buckets)
        else:
            ordered = sorted(buckets, key=lambda k: (-buckets[k].count, k))[:limit]
        return StatsOutput(
            group_by=group_by,  # type: ignore[arg-type]
            timezone=zone_label(self.zone),
            total=total,
            buckets=[StatsBucket(key=k, count=buckets[k].count, minutes=round(buckets[k].minutes, 1)) for k in ordered],
            **self._flags(),
        )

    def folders(self) -> FolderList:
        self.refresh()
        raw = orjson.loads(self.index.get_meta("folders") or "[]")
        present = set(self.index.fingerprints())
        return FolderList(
            folders=[
                Folder(
                    id=f["id"],
                    name=f["name"],
                    description=f.get("description"),
                    meeting_count=sum(1 for m in f["meetings"] if m in present),
                )
                for f in raw
            ],
            **self._flags(),
        )

    def folder_meetings(self, folder: str, limit: int = 500) -> tuple[Folder, list[MeetingSummary]]:
        listing = self.folders()
        match = next((f for f in listing.folders if folder in (f.id, f.name)), None)
        if match is None:
            raise NotFound(f"No folder {folder!r}. Call granola.folders.list for valid folders.", {"folder": folder})
        page_ = self.list_meetings(self.filters(folder=match.id), q=None, limit=limit, cursor=None)
        return match, page_.items

    def participants(self, q: str | None, limit: int) -> ParticipantList:
        _check_limit(limit)
        self.refresh()
        needle = q.strip().lower() if q else ""
        return ParticipantList(
            participants=[
                ParticipantCount(name=p.name, email=p.email, meeting_count=p.meetings, last_meeting=p.last_meeting)
                for p in catalog.participants(self.index, needle, limit)
            ],
            **self._flags(),
        )

    def cache_status(self) -> CacheStatus:
        """The cache and index state. Never fails on a cache the other tools cannot read: it
        reports why instead (ok=false, the error code and message they answer with, the path)."""
        location = self.location()
        index_path = str(self.index_path)
        searched = [str(p) for p in location.searched]
        if location.path is None:
            status = CacheStatus(path=None, exists=False, index_path=index_path, searched_locations=searched)
            _report(status, lambda: granola_cache.require_location(location))
            return status
        try:
            st = location.path.stat()
        except OSError as exc:
            return CacheStatus(
                ok=False,
                error=IOFailure.code,
                message=f"{location.path} cannot be read: {exc.strerror}.",
                path=str(location.path),
                exists=location.path.exists(),
                index_path=index_path,
                searched_locations=searched,
            )
        status = CacheStatus(
            path=str(location.path),
            exists=True,
            size_bytes=st.st_size,
            modified=iso(parse_timestamp(st.st_mtime)),
            encrypted_newer=str(location.encrypted_newer) if location.encrypted_newer else None,
            index_path=index_path,
            searched_locations=searched,
        )
        if not _report(status, lambda: self.refresh_cache(partial=True)):
            return status
        status.format = self.index.get_meta("format")
        status.meetings = self.index.count()
        counted = self.index.get_meta("folder_count")  # missing in an index made before it was kept
        status.folders = int(counted) if counted else len(orjson.loads(self.index.get_meta("folders") or "[]"))
        status.transcripts = int(self.index.get_meta("transcripts") or 0)
        status.indexed_at = self.index.get_meta("indexed_at")
        status.last_sync_seconds = round(self._last_sync, 3) if self._last_sync is not None else None
        status.indexing = self.cache_indexing()
        pool = self._unindexed
        if status.indexing is not None and pool is not None and pool.ready:
            status.indexing = status.indexing.model_copy(update={"scanned": pool.remaining()})
        return status


def start_writeback(path: Path) -> None:
    """Start writing the cache file's pages that are not on disk yet, in a thread of its own.

    On Linux's ext4 (an ordered journal) the index's sync as it commits waits until every file
    written before it is on disk, the cache Granola has just rewritten (hundreds of megabytes)
    included: up to 0.4 s on a 340 MB cache. Started now, that write-out runs while the cache
    is read, not after."""
    if sys.platform.startswith("linux"):
        threading.Thread(target=write_back, args=(path,), name="meetings-cache-writeback", daemon=True).start()


def _remove_left_behind(path: Path) -> None:
    """Remove the temporary copies of `path` that processes which ended while writing it left
    (`.<name>.<pid>.tmp`); another server's copy on the same index stays while it runs. (POSIX
    only: whether a process runs is asked with signal 0, which Windows would deliver.)"""
    if os.name != "posix":
        return
    for each in path.parent.glob(f".{path.name}.*.tmp"):
        pid = each.name[len(path.name) + 2 : -len(".tmp")]
        if pid.isdigit() and int(pid) != os.getpid() and not process_alive(int(pid)):
            each.unlink(missing_ok=True)


def read_layout(path: Path) -> Layout | None:
    """The layout kept in `path`; None when there is none, or it is damaged."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    payload = data[32:]
    if hashlib.sha256(payload).digest() != data[:32]:
        return None
    try:
        return Layout.decode(payload)
    except (msgspec.DecodeError, KeyError, TypeError, ValueError):
        return None


def _report(status: CacheStatus, check: Callable[[], object]) -> bool:
    """Run `check`; when it fails with a taxonomy error, record that error in `status`."""
    try:
        check()
    except DeskError as exc:
        status.ok, status.error, status.message = False, exc.code, exc.message
        return False
    return True


@contextmanager
def gc_paused() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _search_hit(hit: Hit, lexical_rank: int | None, semantic_rank: int | None) -> SearchHit:
    fields = orjson.loads(hit.columns["summary"] or b"{}")
    return SearchHit(
        **fields,
        score=round(hit.score or 0.0, 4),
        snippet=hit.snippet,
        lexical_rank=lexical_rank,
        semantic_rank=semantic_rank,
    )


def can_scan() -> bool:
    """Whether a first index's searches can scan the meetings not indexed yet: the scan counts
    with numpy, which comes with the `semantic` extra; without it those searches answer from
    what is indexed, flagged `indexing`, as before."""
    try:
        import numpy  # noqa: F401  (the scan imports it itself when it runs)
    except ImportError:
        return False
    return True


def _passages(texts: Mapping[str, str]) -> list[str]:
    """A meeting's passages to embed: its notes' sections, then windows of whole transcript turns,
    each with the meeting's title."""
    title = texts.get("title", "")
    turns = [f"{title}\n{window}" if title else window for window in turn_windows(texts.get("transcript", ""))]
    return [*sections(title, texts.get("notes", "")), *turns]


def _check_limit(limit: int) -> None:
    if not 1 <= limit <= 500:
        raise BadRequest(f"limit must be between 1 and 500 (got {limit}).", {"limit": limit})
