"""The documents service: files under the roots, extracted and mirrored into the core search index.

The index is keyed by a document's address (`reports/q3.pdf`, `archive:2019/plan.docx`). A
file is read and extracted before the index is touched, and each change is one transaction,
so a file that cannot be parsed leaves the index exactly as it was. Results are checked
against the disk: a hit whose file has gone is pruned from the index on the spot.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import orjson

from deskmcp.core.dates import iso
from deskmcp.core.errors import BadRequest, DeskError, IOFailure, NotFound, PermissionDenied
from deskmcp.core.files import read_bytes_limited
from deskmcp.core.paths import is_hidden, is_within, relative_posix, split_relative
from deskmcp.core.protected_folders import protected_denied, protected_folder
from deskmcp.core.search.index import IndexRecord, SearchIndex
from deskmcp.documents import catalog
from deskmcp.documents import extract as formats
from deskmcp.documents.catalog import SCHEMA
from deskmcp.documents.first_index import FirstIndex
from deskmcp.documents.frontmatter import frontmatter_tags
from deskmcp.documents.models import (
    DocumentMetadata,
    DocumentSummary,
    DocumentText,
    IndexDocumentOutput,
    IndexFailure,
    IndexFolderOutput,
    ListDocumentsOutput,
    NoteCreated,
    RemovedDocument,
    SearchOutput,
)
from deskmcp.documents.notes import check_title, clean_tags, write_note
from deskmcp.documents.roots import Located, Root, Roots
from deskmcp.documents.search import Catalog
from deskmcp.documents.settings import DocumentsSettings

log = logging.getLogger(__name__)

BATCH = 200
ROOTS_META = "roots"
"""Index metadata: the folder of each root the entries were indexed from, by root name (JSON)."""
MAX_NOTE_CHARS = 1_000_000


def _time(ts: float | None) -> str | None:
    return None if ts is None else iso(datetime.fromtimestamp(ts, UTC))


def _fingerprint(st: os.stat_result) -> str:
    return f"{st.st_size}:{st.st_mtime_ns}"


@dataclass
class _Read:
    located: Located
    extracted: formats.Extracted
    stat: os.stat_result


class DocumentService:
    """Index, search and describe the documents under the configured roots. Thread-safe."""

    def __init__(self, settings: DocumentsSettings) -> None:
        self.settings = settings
        self.roots = Roots(
            settings.root,
            settings.extra_roots,
            create_main=settings.documents_path is None,
            shown_root=settings.shown_root,
        )
        self.index_path = settings.index_folder / "documents.sqlite3"
        self.index = SearchIndex(self.index_path, SCHEMA)
        self.catalog = Catalog(self.index, self.roots)
        # Tags are read, merged and written back: one writer at a time, so that an index_document
        # and a folder walk (a first indexing in the background) never undo each other's tags.
        self._writing = threading.Lock()
        self._forget_other_roots()
        self.first_index = FirstIndex(self.index, self.roots, self._supported_files)

    def close(self) -> None:
        self.first_index.close()
        self.index.close()

    def wait_indexed(self, timeout: float | None = None) -> bool:
        """Wait for the first indexing of the folders to finish; False if it still runs after `timeout`."""
        return self.first_index.wait(timeout)

    def _forget_other_roots(self) -> None:
        """Drop the entries of roots no longer configured, or configured at another folder now: their
        addresses name other files, or none, so search must not answer with them. A configured root
        whose folder is missing (an unplugged drive) keeps its entries."""
        configured = {root.name: str(root.path) for root in self.roots.all()}
        stored = self.index.get_meta(ROOTS_META)
        folders: dict[str, str] = orjson.loads(stored) if stored else {}
        for name in catalog.root_counts(self.index):
            # An index written before the folders were recorded knows its roots by name only.
            if configured.get(name) is None or (stored and folders.get(name) != configured[name]):
                dropped = self.index.apply(deletes=catalog.keys_under(self.index, name, "")).deleted
                log.info("dropped %d documents of root %r, whose folder is no longer configured", dropped, name)
        if folders != configured:
            self.index.set_meta(ROOTS_META, orjson.dumps(configured).decode())

    # -- reading files ---------------------------------------------------------------------

    def _stat(self, located: Located) -> os.stat_result:
        try:
            st = located.path.stat()
        except FileNotFoundError as exc:
            raise NotFound(
                f"No file {located.address!r}. Call list_documents or search_documents for indexed paths.",
                {"path": located.address},
            ) from exc
        except OSError as exc:
            raise IOFailure(f"{located.address} cannot be read: {exc.strerror}.", {"path": located.address}) from exc
        if located.path.is_dir():
            raise BadRequest(
                f"{located.address or 'The root'} is a folder. Use index_folder for folders.",
                {"path": located.address},
            )
        return st

    def _read(self, address: str) -> _Read:
        located = self.roots.locate(address)
        return self._read_located(located)

    def _read_located(self, located: Located) -> _Read:
        formats.kind_of(located.path)  # an unsupported type is refused before reading
        st = self._stat(located)
        limit = self.settings.max_file_bytes
        if st.st_size > limit:
            raise IOFailure(
                f"{located.address} is {st.st_size:,} bytes, over the {limit:,}-byte limit "
                "(DOCUMENTS_MAX_FILE_MB). It was not read.",
                {"path": located.address, "size": st.st_size, "limit": limit},
            )
        data = read_bytes_limited(located.path, limit, label=located.address)
        return _Read(located, formats.extract(located.path, data, limit=limit), st)

    # -- index records ---------------------------------------------------------------------

    def _record(self, read: _Read, given: list[str]) -> tuple[IndexRecord, DocumentSummary]:
        """The index record of a file read: its tags are those `given` by callers and its frontmatter's."""
        ex, st, loc = read.extracted, read.stat, read.located
        tags = clean_tags([*given, *frontmatter_tags(ex.frontmatter)])
        summary = DocumentSummary(
            path=loc.address,
            title=ex.title,
            kind=ex.kind,
            tags=tags,
            size=st.st_size,
            modified_at=_time(st.st_mtime),
            indexed_at=iso(datetime.now(UTC).replace(microsecond=0)),
            word_count=ex.word_count,
            pages=ex.pages,
        )
        body = ex.text[: self.settings.max_index_chars]
        record = IndexRecord(
            key=loc.address,
            fingerprint=_fingerprint(st),
            texts={"title": ex.title, "tags": " ".join(tags), "path": loc.address.replace("/", " "), "body": body},
            columns={"root": loc.root.name, "name_lc": loc.path.name.lower(), "kind": ex.kind, "mtime": st.st_mtime},
            data=catalog.stored_summary(summary, given),
            side={"tags": [(t,) for t in tags]},
        )
        return record, summary

    def index_document(self, path: str, tags: list[str] | None = None) -> IndexDocumentOutput:
        wanted = clean_tags(tags) if tags is not None else None
        read = self._read(path)
        self.first_index.mark(read.located.root)
        key = read.located.address
        with self._writing:
            previous = catalog.indexed(self.index, key)
            given = wanted if wanted is not None else (list(previous[0].given) if previous else [])
            record, summary = self._record(read, given)
            if previous and previous[0] == catalog.Tagged(record.fingerprint, tuple(summary.tags), tuple(given)):
                return IndexDocumentOutput(**previous[1].model_dump(), status="unchanged")
            self.index.apply([record])
        return IndexDocumentOutput(**summary.model_dump(), status="updated" if previous else "added")

    def index_folder(
        self, path: str = "", tags: list[str] | None = None, *, recursive: bool = True, max_files: int | None = None
    ) -> IndexFolderOutput:
        """Index every supported file in a folder; one bad file is reported, the rest indexed.

        At most `max_files` files (default DOCUMENTS_INDEX_MAX_FILES) are read and indexed per call;
        unchanged files cost a stat and failing ones are reported, and neither counts, so calling
        again continues where this call stopped until `remaining` is 0.
        """
        limit = max_files or self.settings.index_max_files
        extra = clean_tags(tags)
        folder = self.roots.locate(path, allow_root=True)
        if folder.path.is_file():
            raise BadRequest(f"{folder.address} is a file. Use index_document for one file.", {"path": path})
        if not folder.path.is_dir():
            raise NotFound(
                f"No folder {folder.address or path!r}. Give a folder path relative to a root, or '' for the root.",
                {"path": path},
            )
        self.first_index.mark(folder.root)
        out = IndexFolderOutput(folder=folder.address, added=0, updated=0, unchanged=0, skipped=0)
        files = self._walk(folder.path, recursive)
        supported = [file for file in files if formats.is_supported(file)]
        out.skipped = len(files) - len(supported)
        done = self._index_files(folder, supported, extra, out, limit=limit)
        if done < len(supported):
            out.truncated = True
            out.remaining = len(supported) - done
        out.removed = self._prune_folder(folder, recursive)
        return out

    def _index_files(
        self,
        folder: Located,
        files: list[Path],
        extra: list[str],
        out: IndexFolderOutput,
        *,
        limit: int | None = None,
        applied: Callable[[int], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> int:
        """Index `files` of `folder` in batches until `limit` of them were read (unchanged and failing
        files do not count) or `cancel` is set; how many files were gone through."""
        known = self._known_tags()
        batch: list[IndexRecord] = []
        read = done = pending = 0
        for file in files:
            if (limit is not None and read >= limit) or (cancel is not None and cancel.is_set()):
                break
            read += self._index_one(file, folder, extra, known, batch, out)
            done += 1
            pending += 1
            if len(batch) >= BATCH:
                self._apply_walked(batch, known)
                batch.clear()
            if not batch and applied is not None:
                applied(pending)
                pending = 0
        if batch:
            self._apply_walked(batch, known)
        if applied is not None and pending:
            applied(pending)
        return done

    def _apply_walked(self, batch: list[IndexRecord], known: dict[str, catalog.Tagged]) -> None:
        """Write records a walk made from the `known` snapshot, leaving out each document written
        since (by index_document, or another walk): that newer write stands, with its tags."""
        with self._writing:
            now = catalog.fingerprints_and_tags(self.index, [r.key for r in batch])
            fresh = [r for r in batch if now.get(r.key) == known.get(r.key)]
            if fresh:
                self.index.apply(fresh)

    def _index_root(
        self, root: Root, files: list[Path], applied: Callable[[int], None], cancel: threading.Event
    ) -> None:
        """The first indexing of a root (see first_index.py)."""
        out = IndexFolderOutput(folder=root.prefix(""), added=0, updated=0, unchanged=0, skipped=0)
        self._index_files(Located(root, root.path, ""), files, [], out, applied=applied, cancel=cancel)

    def _supported_files(self, folder: Path) -> list[Path]:
        return [file for file in self._walk(folder, True) if formats.is_supported(file)]

    def _prune_folder(self, folder: Located, recursive: bool) -> int:
        """Drop index entries under `folder` whose file no longer exists."""
        prefix = folder.root.prefix(f"{folder.rel}/" if folder.rel else "")
        keys = [
            key
            for key in catalog.keys_under(self.index, folder.root.name, prefix)
            if recursive or "/" not in key[len(prefix) :]
        ]
        gone = [key for key, st in self.catalog.disk_state(keys).items() if st is None]
        return self.index.apply(deletes=gone).deleted if gone else 0

    def _index_one(
        self,
        file: Path,
        folder: Located,
        extra: list[str],
        known: dict[str, catalog.Tagged],
        batch: list[IndexRecord],
        out: IndexFolderOutput,
    ) -> bool:
        """Index one file of a folder's walk; True when it was read (added or updated)."""
        resolved = file.resolve()
        if not is_within(folder.root.path, resolved):
            shown = folder.root.prefix(file.relative_to(folder.root.path).as_posix())
            out.failed.append(IndexFailure(path=shown, error="permission_denied", message="links outside the root"))
            return False
        located = Located(folder.root, resolved, resolved.relative_to(folder.root.path).as_posix())
        try:
            st = located.path.stat()
            previous = known.get(located.address)
            if previous and previous.fingerprint == _fingerprint(st) and set(extra) <= set(previous.given):
                out.unchanged += 1
                return False
            read = self._read_located(located)
        except DeskError as exc:
            out.failed.append(IndexFailure(path=located.address, error=exc.code, message=exc.message))
            return False
        except OSError as exc:
            out.failed.append(IndexFailure(path=located.address, error="io_error", message=str(exc.strerror)))
            return False
        batch.append(self._record(read, clean_tags([*(previous.given if previous else ()), *extra]))[0])
        if previous:
            out.updated += 1
        else:
            out.added += 1
        return True

    @staticmethod
    def _walk(folder: Path, recursive: bool) -> list[Path]:
        files: list[Path] = []
        for current, dirs, names in os.walk(folder, followlinks=False):
            dirs[:] = sorted(d for d in dirs if not is_hidden(d)) if recursive else []
            files.extend(Path(current, n) for n in sorted(names) if not is_hidden(n))
        return files

    def _known_tags(self) -> dict[str, catalog.Tagged]:
        return catalog.fingerprints_and_tags(self.index)

    def remove_document(self, path: str) -> RemovedDocument:
        root, rel = self.roots.split(path.strip())
        located = self.roots.locate(path) if root.path.is_dir() else None
        key = located.address if located else root.prefix(rel)
        self.first_index.mark(root)
        stats = self.index.apply(deletes=[key])
        if not stats.deleted:
            raise NotFound(f"{key!r} is not in the index. Call list_documents for indexed paths.", {"path": key})
        return RemovedDocument(path=key)

    # -- finding ---------------------------------------------------------------------------

    def search(
        self,
        query: str | None = None,
        *,
        tags: list[str] | None = None,
        filename: str | None = None,
        kind: str | None = None,
        limit: int = 20,
        cursor: str | None = None,
        mode: str | None = None,
    ) -> SearchOutput:
        """`Catalog.search`, after indexing the folders never indexed (or saying how far that is)."""
        progress = self.first_index.ensure(self._index_root)
        out = self.catalog.search(query, tags=tags, filename=filename, kind=kind, limit=limit, cursor=cursor, mode=mode)
        return out.model_copy(update={"indexing": progress, "partial": progress is not None})

    def list_documents(
        self,
        *,
        tags: list[str] | None = None,
        kind: str | None = None,
        root: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> ListDocumentsOutput:
        """`Catalog.list_documents`, after indexing the folders never indexed (or saying how far that is)."""
        progress = self.first_index.ensure(self._index_root)
        out = self.catalog.list_documents(tags=tags, kind=kind, root=root, limit=limit, cursor=cursor)
        return out.model_copy(update={"indexing": progress, "partial": progress is not None})

    # -- notes -----------------------------------------------------------------------------

    def create_note(self, title: str, content: str, tags: list[str] | None = None, folder: str = "") -> NoteCreated:
        clean_title = check_title(title)
        if len(content) > MAX_NOTE_CHARS:
            raise BadRequest(f"The note is longer than {MAX_NOTE_CHARS:,} characters; split it.")
        clean = clean_tags(tags)
        target = self.roots.locate(folder, allow_root=True)
        if target.root.path in self.settings.read_only_folders:
            raise PermissionDenied(
                f"{target.root.name} is a read-only folder (DOCUMENTS_READ_ONLY_ROOTS); write the note into "
                f"your own documents folder instead (leave folder out, or name a folder inside it).",
                {"folder": folder, "root": target.root.name},
            )
        if target.path.exists() and not target.path.is_dir():
            raise BadRequest(f"{target.address} is a file, not a folder.", {"folder": folder})
        self._refuse_protected(folder, target)
        self.first_index.mark(target.root)
        written = write_note(target.path, clean_title, content, clean)
        address = target.root.prefix(relative_posix(target.root.path, written.path))
        self.index_document(address)  # its tags are in its frontmatter: edited there, they follow
        return NoteCreated(
            path=address, title=written.title, tags=clean, created=written.created, renamed=written.renamed
        )

    def _refuse_protected(self, address: str, target: Located) -> None:
        """Refuse a write into the vault's protected folders when the vault is, or lies in, a root:
        the protection belongs to the folder, whichever server writes."""
        root, rel = self.roots.split(address.strip())
        as_written = root.path.joinpath(*split_relative(rel))  # protected_folder also follows its symlinks
        folder = protected_folder(self.settings.vault, as_written, self.settings.protected)
        if folder is not None:
            raise protected_denied(folder, target.address, self.settings.protected, tools="the documents tools")

    # -- one document ----------------------------------------------------------------------

    def extract_metadata(self, path: str) -> DocumentMetadata:
        read = self._read(path)
        ex, st, loc = read.extracted, read.stat, read.located
        indexed = catalog.indexed(self.index, loc.address)
        birth = getattr(st, "st_birthtime", None)
        return DocumentMetadata(
            path=loc.address,
            root=loc.root.name,
            name=loc.path.name,
            kind=ex.kind,
            mime_type=formats.MIME_TYPES[ex.kind],
            size=st.st_size,
            modified_at=_time(st.st_mtime),
            created_at=_time(birth),
            accessed_at=_time(st.st_atime),
            title=ex.title,
            word_count=ex.word_count,
            char_count=len(ex.text),
            pages=ex.pages,
            frontmatter=ex.frontmatter,
            properties=ex.properties,
            indexed=indexed is not None,
            tags=indexed[1].tags if indexed else [],
            indexed_at=indexed[1].indexed_at if indexed else None,
        )

    def get_document(self, path: str, *, offset: int = 0, max_chars: int | None = None) -> DocumentText:
        if offset < 0:
            raise BadRequest("offset must be 0 or more.", {"offset": offset})
        read = self._read(path)
        budget = min(max_chars or self.settings.max_chars, self.settings.max_chars)
        text = read.extracted.text
        chunk = text[offset : offset + budget]
        end = offset + len(chunk)
        more = end < len(text)
        return DocumentText(
            path=read.located.address,
            title=read.extracted.title,
            kind=read.extracted.kind,
            text=chunk,
            offset=offset,
            total_chars=len(text),
            truncated=more,
            next_offset=end if more else None,
        )
