"""The vault service: reading, writing and finding notes in one folder of Markdown files.

Reads come from disk (the truth); listing, search, tags and links come from the catalog
(the index), which is refreshed for every path the service writes and, while the server
runs, for every path the watcher reports. Without a running watcher the service re-scans
by mtime (stat only) before answering, at most once per `rescan_seconds`.

Writes are atomic and never clobber an edit the caller has not seen: `read_note` returns
a `content_hash`; replacing an existing note requires that hash (`expected_hash`) or an
explicit `overwrite=true`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from deskmcp.core import frontmatter
from deskmcp.core.errors import BadRequest, Conflict, IOFailure, NotFound, ParseError, PermissionDenied
from deskmcp.core.files import atomic_write_bytes, failure_text
from deskmcp.core.pagination import decode_cursor, page, query_key
from deskmcp.core.paths import relative_posix, shown_path
from deskmcp.core.protected_folders import protected_denied, protected_folder
from deskmcp.core.search import fusion
from deskmcp.core.search.embedding import Embedder
from deskmcp.core.search.index import Hit
from deskmcp.core.search.terms import fold
from deskmcp.core.search.vectors import VectorIndex, sections
from deskmcp.vault.catalog import Catalog, filter_sql, name_key, parse_filter
from deskmcp.vault.models import (
    Backlink,
    BacklinkList,
    IndexingProgress,
    LinkList,
    MoveResult,
    NoteContent,
    NoteList,
    NoteMatch,
    OutgoingLink,
    TagCount,
    TagList,
    VaultStatus,
)
from deskmcp.vault.notes import (
    NOTE_SUFFIX,
    NoteFile,
    ensure_size,
    folder_path,
    modified,
    note_content,
    note_path,
    parse_note,
    read_note_file,
    rename_no_replace,
    store_note,
    with_frontmatter,
)
from deskmcp.vault.relink import relink
from deskmcp.vault.settings import VaultSettings
from deskmcp.vault.watcher import VaultWatcher

log = logging.getLogger("deskmcp.vault")

WAIT_BELOW = 500
"""A start-up scan with fewer notes than this to read is waited for (well under a second)."""


class VaultService:
    """One vault: notes on disk plus their index. Thread-safe."""

    def __init__(self, settings: VaultSettings, *, embedder: Embedder | None = None) -> None:
        self.settings = settings
        if settings.vault_path is None:
            settings.root.mkdir(parents=True, exist_ok=True)
        self.root = settings.root.resolve()
        self.shown_root = shown_path(self.root, settings.shown_root)
        """The vault folder as answers name it (`core.paths.shown_path`)."""
        self.read_only = settings.read_only
        self.protected = settings.protected
        self.limit = settings.max_note_bytes
        self.catalog = Catalog(self.root, settings.index_path, self.limit, workers=settings.index_workers)
        if self.catalog.index.get_meta("root") != str(self.root):
            self.catalog.index.clear()  # an index built for another folder
            self.catalog.index.set_meta("root", str(self.root))
        self.vectors = VectorIndex(self.catalog.index, embedder, _passages) if embedder is not None else None
        self.watcher: VaultWatcher | None = None
        self.rescan_seconds = 0.5
        self._write_lock = threading.RLock()
        self._first_index = threading.Event()  # set while the start-up scan runs
        self._indexer: threading.Thread | None = None

    def close(self) -> None:
        self.stop_watching()
        if self._indexer is not None:
            self.catalog.cancel()
            self._indexer.join()
        self.catalog.close()

    # -- keeping the index true ------------------------------------------------------------

    def start_watching(self) -> None:
        """Start the start-up scan in a thread of its own, and the watcher.

        Nothing waits for the scan: on a first start over a large vault, every tool answers
        meanwhile from what is indexed so far, and says how far indexing is (`indexing`).
        The watcher's thread scans again once it is live, to catch edits made meanwhile.
        """
        if (problem := self.problem()) is not None:
            log.warning("%s", problem)
            return
        self.start_indexing()
        if self.settings.watch and self.watcher is None:
            self.watcher = VaultWatcher(self.root, self.catalog.refresh_path, self._rescan)
            self.watcher.start()

    def start_indexing(self, *, wait_below: int = WAIT_BELOW) -> None:
        """Bring the index up to date in a background thread.

        Returns once the vault is walked (stat only), and, when fewer than `wait_below`
        notes need reading, once they are indexed too: a small vault is answered complete
        from the first call, a large one at once with what is indexed so far.
        """
        if self._indexer is not None:
            return
        self._first_index.set()
        walked = threading.Event()
        pending: list[int] = []

        def on_walked(count: int) -> None:
            pending.append(count)
            walked.set()

        def run() -> None:
            try:
                self.catalog.scan(on_walked=on_walked, deferred=True)
                self.catalog.index.settle()  # the writer's memory back now, not after a pause
            except Exception:  # the outermost handler of the thread: later scans retry
                log.exception("the start-up scan of the vault failed; the next call scans again")
            finally:
                self._first_index.clear()
                walked.set()
            self.catalog.index.write_back()  # once the index is complete for every call

        self._indexer = threading.Thread(target=run, name="vault-indexer", daemon=True)
        self._indexer.start()
        walked.wait()
        if not pending or pending[0] < wait_below:
            self._indexer.join()

    def wait_indexed(self, timeout: float | None = None) -> bool:
        """Wait for the start-up scan to finish; False if it is still running after `timeout`."""
        if self._indexer is not None:
            self._indexer.join(timeout)
            return not self._indexer.is_alive()
        return True

    def indexing(self) -> IndexingProgress | None:
        """How far the start-up scan (or any full scan) is, or None when none is running."""
        progress = self.catalog.progress
        if progress is not None:
            return IndexingProgress(done=progress.done, total=progress.total)
        if self._first_index.is_set():  # started, still walking the folder
            return IndexingProgress(done=0, total=0)
        return None

    def _rescan(self) -> None:
        self.catalog.scan()

    def stop_watching(self) -> None:
        if self.watcher is not None:
            self.watcher.stop()
            self.watcher = None

    def problem(self) -> str | None:
        """Why the vault cannot be used (its folder is missing), or None."""
        if not self.root.is_dir():
            return f"The vault folder {self.shown_root} does not exist; create it or set VAULT_PATH to your vault."
        return None

    def ensure_fresh(self) -> None:
        """Re-scan by mtime unless the watcher keeps the index true (or a scan just ran).

        While the start-up scan runs, nothing waits for it: answers come from what is
        indexed so far.
        """
        if (problem := self.problem()) is not None:
            raise NotFound(problem, {"root": self.shown_root})
        if self._first_index.is_set() or self.catalog.progress is not None:
            return
        if self.watcher is not None and self.watcher.running:
            return
        self.catalog.scan_if_stale(self.rescan_seconds)

    def _require_writable(self) -> None:
        if (problem := self.problem()) is not None:
            raise NotFound(problem, {"root": self.shown_root})
        if self.read_only:
            raise PermissionDenied(
                "The vault is read-only (VAULT_READ_ONLY=1): notes cannot be written, moved or patched.",
                {"read_only": True},
            )

    def _refuse_protected(self, rel: str, *, linking: bool = False) -> None:
        """Refuse a write to a note in a protected folder, named directly or reached through a symlink."""
        folder = protected_folder(self.root, rel, self.protected)
        if folder is not None:
            raise protected_denied(
                folder, rel, self.protected, tools="the vault tools", linking_note=rel if linking else None
            )

    # -- reading ---------------------------------------------------------------------------

    def _read(self, user_path: str) -> NoteFile:
        rel, full = note_path(self.root, user_path)
        if not full.exists():
            raise NotFound(
                f"No note {rel!r}. Use list_notes or search_notes to find notes and their paths.", {"path": rel}
            )
        return read_note_file(full, rel, self.limit)

    def read_note(self, path: str, *, strict: bool = False) -> NoteContent:
        note = self._read(path)
        if strict and note.frontmatter_error is not None:
            raise note.frontmatter_error
        return note_content(note)

    # -- writing ---------------------------------------------------------------------------

    def _written_path(self, user_path: str, *, role: str = "path") -> tuple[str, Path]:
        """`note_path` for a note about to be written or moved, outside the protected folders and
        at its own path. A path through
        a symbolic link (a linked note or folder, which are never listed or indexed) would change
        the note it points to under another name; a folder that is a file, or a new name with
        blanks at either end, would not make the note asked for."""
        rel, full = note_path(self.root, user_path)
        self._refuse_protected(rel)
        real = relative_posix(self.root, full)
        if real != rel:
            raise BadRequest(
                f"{rel!r} leads through a symbolic link to {real!r}: deskmcp writes and moves a note "
                f"only at its own path. Use {real!r}.",
                {role: rel, "real_path": real},
            )
        folder = self.root
        for part in rel.split("/")[:-1]:
            folder = folder / part
            if folder.exists() and not folder.is_dir():
                raise BadRequest(
                    f"{relative_posix(self.root, folder)!r} is a file, not a folder: {rel!r} cannot be made there.",
                    {role: rel},
                )
        *folders, name = rel.split("/")
        if not full.exists() and any(part != part.strip() for part in (*folders, name[: -len(NOTE_SUFFIX)])):
            raise BadRequest(
                f"The name {rel!r} begins or ends with a blank; names of new notes and folders cannot "
                "(most systems and Obsidian would not find them). Remove the blanks.",
                {role: rel},
            )
        return rel, full

    def _current(self, rel: str, full: Path) -> NoteFile | None:
        if full.is_dir():
            raise BadRequest(f"{rel!r} is a folder, not a note.", {"path": rel})
        if not full.exists():
            return None
        return read_note_file(full, rel, self.limit)

    def _replaced(self, rel: str, full: Path, *, expected_hash: str | None, whole: bool) -> NoteFile | None:
        """The note a write replaces (`_current`). One that cannot be read as a note (not UTF-8)
        is replaced unseen when the write gives the whole note (`overwrite` with frontmatter):
        nothing of it is kept, so nothing of it needs reading."""
        try:
            return self._current(rel, full)
        except ParseError as exc:
            if not whole or expected_hash:
                raise ParseError(
                    f"{exc.message} Or replace it whole: write_note with overwrite=true and its frontmatter "
                    "({} for none).",
                    exc.details,
                ) from exc
            return None

    def _check_hash(self, rel: str, current: NoteFile | None, expected_hash: str | None, overwrite: bool) -> None:
        if current is None:
            if expected_hash:
                raise Conflict(
                    f"The note {rel!r} no longer exists (moved or deleted since it was read). "
                    "Search for it again, or write without expected_hash to create it.",
                    {"path": rel},
                )
            return
        if expected_hash:
            if expected_hash != current.hash:
                raise Conflict(
                    f"The note {rel!r} changed since it was read. Call read_note again, merge your change "
                    "into what it returns and pass its new content_hash as expected_hash.",
                    {"path": rel, "expected_hash": expected_hash, "content_hash": current.hash},
                )
        elif not overwrite:
            raise Conflict(
                f"The note {rel!r} already exists. Read it first and pass its content_hash as expected_hash "
                "to replace it, or pass overwrite=true to replace it unseen.",
                {"path": rel, "content_hash": current.hash},
            )

    def _store(self, rel: str, full: Path, text: str, current: NoteFile | None) -> NoteContent:
        data = text.encode("utf-8")
        ensure_size(data, self.limit, rel)
        if not self.root.is_dir():
            raise NotFound(
                f"The vault folder {self.shown_root} does not exist. Create it or set VAULT_PATH to your vault.",
                {"root": self.shown_root},
            )
        if current is None or current.data != data:
            store_note(full, rel, data)
        self.catalog.refresh(rel)
        return note_content(parse_note(rel, data, full.stat().st_mtime_ns))

    def write_note(
        self,
        path: str,
        body: str,
        frontmatter_values: dict[str, Any] | None = None,
        *,
        expected_hash: str | None = None,
        overwrite: bool = False,
    ) -> NoteContent:
        self._require_writable()
        rel, full = self._written_path(path)
        with self._write_lock:
            current = self._replaced(
                rel, full, expected_hash=expected_hash, whole=overwrite and frontmatter_values is not None
            )
            self._check_hash(rel, current, expected_hash, overwrite)
            if frontmatter_values is None:
                parts = current.parts if current is not None else frontmatter.split("")
            else:
                parts = with_frontmatter(current, _json_values(frontmatter_values), rel)
            return self._store(rel, full, parts.with_body(body).text(), current)

    def append_note(
        self, path: str, text: str, *, create: bool = False, expected_hash: str | None = None
    ) -> NoteContent:
        self._require_writable()
        rel, full = self._written_path(path)
        with self._write_lock:
            current = self._current(rel, full)
            if current is None and not create:
                raise NotFound(f"No note {rel!r} to append to. Pass create=true to start it.", {"path": rel})
            self._check_hash(rel, current, expected_hash, overwrite=True)
            old = current.text if current is not None else ""
            joiner = "\n" if old and not old.endswith("\n") else ""
            addition = text if text.endswith("\n") else text + "\n"
            return self._store(rel, full, old + joiner + addition, current)

    def patch_frontmatter(
        self, path: str, key: str, value: Any = None, *, remove: bool = False, expected_hash: str | None = None
    ) -> NoteContent:
        self._require_writable()
        if not key.strip():
            raise BadRequest("A frontmatter key is required.", {"key": key})
        rel, full = self._written_path(path)
        with self._write_lock:
            current = self._current(rel, full)
            if current is None:
                raise NotFound(f"No note {rel!r}. Use write_note to create it.", {"path": rel})
            self._check_hash(rel, current, expected_hash, overwrite=True)
            if current.frontmatter_error is not None:
                raise current.frontmatter_error
            wanted = dict(current.frontmatter)
            if remove:
                if key not in wanted:
                    return note_content(current)
                del wanted[key]
            else:
                wanted[key] = _json_values(value)
            return self._store(rel, full, with_frontmatter(current, wanted, rel).text(), current)

    def move_note(self, source: str, destination: str, *, update_links: bool = False) -> MoveResult:
        """Move a note; with `update_links`, rewrite every link to it in the vault, all or nothing."""
        self._require_writable()
        with self._write_lock:
            plan = self.plan_move(source, destination, update_links=update_links)
            return self.apply_move(plan)

    def plan_move(self, source: str, destination: str, *, update_links: bool = False) -> MovePlan:
        """Check a move and prepare the rewritten notes (nothing is written yet)."""
        src_rel, src = self._written_path(source, role="source")
        dst_rel, dst = self._written_path(destination, role="destination")
        if src_rel == dst_rel:
            raise BadRequest("The source and destination are the same note.", {"source": src_rel})
        if not src.is_file():
            raise NotFound(f"No note {src_rel!r} to move.", {"source": src_rel})
        if dst.exists():
            raise Conflict(
                f"{dst_rel!r} already exists; move_note never overwrites. Choose another destination.",
                {"source": src_rel, "destination": dst_rel},
            )
        plan = MovePlan(src_rel, src, dst_rel, dst)
        if not update_links:
            return plan
        self.ensure_fresh()
        self.catalog.refresh(src_rel)
        linking = {link["source"] for link in self.catalog.incoming(src_rel)}
        for rel in linking:
            self.catalog.refresh(rel)  # the index may lag behind an edit on disk
        linking = {link["source"] for link in self.catalog.incoming(src_rel)} | {src_rel}
        new_name = name_key(dst_rel)
        bare_ok = not [key for key in self.catalog.notes_named(new_name) if key != src_rel]
        cache: dict[tuple[str, str], str | None] = {}

        def resolve(key: str, note: str) -> str | None:
            return self.catalog.resolve(key, note, cache)

        for rel in sorted(linking):
            rel_path, full = note_path(self.root, rel)
            current = self._current(rel_path, full)
            if current is None:
                continue
            body = relink(current.parts.body, rel, src_rel, dst_rel, resolve, bare_ok=bare_ok)
            if body != current.parts.body:
                self._refuse_protected(rel_path, linking=True)
                plan.rewrites.append(LinkRewrite(rel, full, current, current.parts.with_body(body).text()))
        return plan

    def apply_move(self, plan: MovePlan) -> MoveResult:
        """Write the rewritten notes and move the note. Each note goes through the same check as
        write_note (unchanged since it was read); on any failure every note already rewritten
        is restored and the note is not moved."""
        self._require_writable()
        written: list[LinkRewrite] = []
        with self._write_lock:
            try:
                for rewrite in plan.rewrites:
                    current = self._current(rewrite.rel, rewrite.full)
                    self._check_hash(rewrite.rel, current, rewrite.original.hash, overwrite=False)
                    data = rewrite.text.encode("utf-8")
                    ensure_size(data, self.limit, rewrite.rel)
                    self._write_file(rewrite.rel, rewrite.full, data)
                    written.append(rewrite)
                if plan.destination_path.exists():
                    raise Conflict(f"{plan.destination!r} already exists.", {"destination": plan.destination})
                try:
                    plan.destination_path.parent.mkdir(parents=True, exist_ok=True)
                    rename_no_replace(plan.source_path, plan.destination_path)
                except FileExistsError as exc:
                    raise Conflict(f"{plan.destination!r} already exists.", {"destination": plan.destination}) from exc
                except OSError as exc:
                    raise IOFailure(
                        f"Could not move {plan.source!r}: {exc.strerror}. Nothing was changed.", {"source": plan.source}
                    ) from exc
            except BaseException:
                for rewrite in reversed(written):
                    self._write_file(rewrite.rel, rewrite.full, rewrite.original.data)
                raise
            finally:
                for rel in {plan.source, plan.destination, *(r.rel for r in written)}:
                    self.catalog.refresh(rel)
        updated = sorted(plan.destination if r.rel == plan.source else r.rel for r in written)
        return MoveResult(moved=True, source=plan.source, destination=plan.destination, updated=updated)

    def _write_file(self, rel: str, full: Path, data: bytes) -> None:
        try:
            atomic_write_bytes(full, data)
        except PermissionError as exc:
            raise PermissionDenied(f"{rel} cannot be written: permission denied.", {"path": rel}) from exc
        except OSError as exc:
            raise IOFailure(f"{rel} could not be written: {failure_text(exc)}.", {"path": rel}) from exc

    # -- finding ---------------------------------------------------------------------------

    def _match(self, hit: Hit, ranks: tuple[int | None, int | None] = (None, None)) -> NoteMatch:
        return NoteMatch(
            path=hit.key,
            title=hit.columns.get("title") or "",
            snippet=hit.snippet,
            score=round(hit.score, 4) if hit.score is not None else None,
            tags=orjson.loads(hit.data) if hit.data else [],
            modified=modified(hit.columns.get("mtime_ns")),
            lexical_rank=ranks[0],
            semantic_rank=ranks[1],
        )

    def _filters(
        self, folder: str | None, tag: str | None, filter: str | None, *, recursive: bool = True
    ) -> tuple[str, list[Any]]:
        rel = folder_path(self.root, folder)[0] if folder and folder.strip() else ""
        return filter_sql(rel, tag, parse_filter(filter), recursive=recursive)

    def list_notes(
        self,
        directory: str | None = None,
        filter: str | None = None,
        *,
        tag: str | None = None,
        recursive: bool = True,
        limit: int = 100,
        cursor: str | None = None,
    ) -> NoteList:
        self.ensure_fresh()
        where, params = self._filters(directory, tag, filter, recursive=recursive)
        key = query_key("list", directory, filter, tag, recursive)
        offset = decode_cursor(cursor, key)
        hits = self.catalog.index.select(where=where, params=params, order_by="d.key", limit=limit + 1, offset=offset)
        total = self.catalog.index.count(where=where, params=params)
        return NoteList(
            notes=[self._match(h) for h in hits[:limit]],
            total=total,
            next_cursor=page(offset, limit, len(hits), key),
            indexing=self.indexing(),
        )

    def search_notes(
        self,
        query: str,
        *,
        folder: str | None = None,
        tag: str | None = None,
        filter: str | None = None,
        limit: int = 20,
        cursor: str | None = None,
        mode: str | None = None,
    ) -> NoteList:
        """Notes for `query` by words, by meaning or both (`fusion.pick_mode` chooses from `mode`)."""
        chosen = fusion.pick_mode(mode, self.vectors is not None)
        self.ensure_fresh()
        where, params = self._filters(folder, tag, filter)
        key = query_key("search", query, folder, tag, filter, chosen)
        offset = decode_cursor(cursor, key)
        index = self.catalog.index
        found = fusion.search(
            index, self.vectors, query, mode=chosen, where=where, params=params, limit=limit + 1, offset=offset
        )
        return NoteList(
            notes=[self._match(r.hit, (r.lexical_rank, r.semantic_rank)) for r in found.hits[:limit]],
            total=index.count(where=where, params=params, query=query) if chosen == "lexical" else None,
            next_cursor=page(offset, limit, len(found.hits), key),
            indexing=self.indexing(),
            unmatched_terms=index.unmatched_terms(query, where=where, params=params) if chosen != "semantic" else [],
            mode=found.mode,
            semantic_pending=found.pending or None,
        )

    def related_notes(self, path: str, *, folder: str | None = None, limit: int = 10) -> NoteList:
        """The notes nearest in meaning to the note at `path` (the note itself left out)."""
        if self.vectors is None:
            raise BadRequest(fusion.NO_MODEL.replace(", or search with mode='lexical'", ""), {"path": path})
        self.ensure_fresh()
        rel = self._indexed(path)
        pending = self.vectors.sync()
        where, params = self._filters(folder, None, None)
        matches = self.vectors.related(rel, where=where, params=params, limit=limit)
        notes: list[NoteMatch] = []
        for rank, match in enumerate(matches, 1):
            hit = self.catalog.index.get(match.key)
            if hit is not None:
                hit.score, hit.snippet = match.score, self.vectors.passage(match)
                notes.append(self._match(hit, (None, rank)))
        return NoteList(notes=notes, indexing=self.indexing(), mode="semantic", semantic_pending=pending or None)

    def recent_notes(self, *, folder: str | None = None, limit: int = 20) -> NoteList:
        self.ensure_fresh()
        where, params = self._filters(folder, None, None)
        hits = self.catalog.index.select(where=where, params=params, order_by="d.mtime_ns DESC, d.key", limit=limit)
        return NoteList(notes=[self._match(h) for h in hits], indexing=self.indexing())

    def list_note_tags(self, *, prefix: str | None = None, limit: int = 200) -> TagList:
        self.ensure_fresh()
        counts = self.catalog.tag_counts(fold((prefix or "").strip().lstrip("#")), limit)
        return TagList(tags=[TagCount(tag=tag, count=count) for tag, count in counts])

    def _indexed(self, path: str) -> str:
        rel, full = note_path(self.root, path)
        self.catalog.refresh(rel)
        if not full.is_file() or self.catalog.index.get(rel) is None:
            raise NotFound(f"No note {rel!r}. Use list_notes or search_notes to find notes.", {"path": rel})
        return rel

    def get_links(self, path: str) -> LinkList:
        self.ensure_fresh()
        rel = self._indexed(path)
        return LinkList(path=rel, links=[OutgoingLink(**link) for link in self.catalog.outgoing(rel)])

    def get_backlinks(self, path: str) -> BacklinkList:
        self.ensure_fresh()
        rel = self._indexed(path)
        return BacklinkList(path=rel, backlinks=[Backlink(**link) for link in self.catalog.incoming(rel)])

    def status(self) -> VaultStatus:
        problem = self.problem()
        if problem is None:
            self.ensure_fresh()
        scan = self.catalog.last_scan
        return VaultStatus(
            root=self.shown_root,
            notes=self.catalog.index.count(),
            read_only=self.read_only,
            watching=self.watcher is not None and self.watcher.running,
            index_path=shown_path(self.catalog.index.path, self.settings.shown_root),
            last_scan_seconds=round(scan.seconds, 3) if scan else None,
            max_note_bytes=self.limit,
            indexing=self.indexing(),
            problem=problem,
            protected_folders=sorted(self.protected),
        )


@dataclass
class LinkRewrite:
    rel: str
    full: Path
    original: NoteFile
    text: str


@dataclass
class MovePlan:
    """A checked move and the notes whose links it rewrites (see `VaultService.plan_move`)."""

    source: str
    source_path: Path
    destination: str
    destination_path: Path
    rewrites: list[LinkRewrite] = field(default_factory=list)


def _passages(texts: Mapping[str, str]) -> list[str]:
    """A note's passages to embed: its sections under headings, each with the note's title."""
    return sections(texts.get("title", ""), texts.get("body", ""))


def _json_values(value: Any) -> Any:
    """Values a client sent, checked to be plain JSON (what frontmatter can hold). A whole number
    beyond 64 bits is kept as its digits, a string, as frontmatter is read (`jsonable`)."""
    try:
        return orjson.loads(orjson.dumps(value))
    except (TypeError, orjson.JSONEncodeError):
        pass
    try:
        return orjson.loads(orjson.dumps(frontmatter.jsonable(value)))
    except (TypeError, ValueError, RecursionError) as exc:
        raise BadRequest("Frontmatter values must be JSON values.") from exc
