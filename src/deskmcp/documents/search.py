"""Finding indexed documents: ranked search, listings, tags and roots.

Every result is checked against the disk: a hit whose file has gone is pruned from the index
and the page is fetched again until every hit on it is there, so deleted files never come back
as results. Listings, tag counts and root counts check the whole index first (see presence.py).
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deskmcp.core.errors import BadRequest, DeskError
from deskmcp.core.pagination import decode_cursor, page, query_key
from deskmcp.core.paths import safe_join
from deskmcp.core.search import fusion
from deskmcp.core.search.embedding import Embedder
from deskmcp.core.search.index import Hit, SearchIndex
from deskmcp.core.search.vectors import VectorIndex, sections
from deskmcp.documents import catalog
from deskmcp.documents import extract as formats
from deskmcp.documents.models import (
    DocumentSummary,
    ListDocumentsOutput,
    RootInfo,
    RootList,
    SearchHit,
    SearchOutput,
    TagCount,
    TagList,
)
from deskmcp.documents.notes import clean_tags
from deskmcp.documents.presence import Presence
from deskmcp.documents.roots import Roots

log = logging.getLogger(__name__)

_GLOB = frozenset("*?[")
MAX_WINDOW = 1024
"""Most hits fetched and checked at once while a page is refilled after pruning."""


def summary_of(data: bytes | None) -> DocumentSummary:
    return DocumentSummary.model_validate_json(data or b"{}")


def passages(texts: Mapping[str, str]) -> list[str]:
    """A document's passages to embed: its sections under Markdown headings, each with its title."""
    return sections(texts.get("title", ""), texts.get("body", ""))


@dataclass
class _Page:
    """Hits checked against the disk: their files' states, and the entries pruned on the way."""

    hits: list[Hit]
    states: dict[str, os.stat_result | None]
    pruned: int


def check_limit(limit: int) -> None:
    if not 1 <= limit <= 200:
        raise BadRequest("limit must be between 1 and 200.", {"limit": limit})


class Catalog:
    """Finding documents in the index, dropping entries whose file is gone. Thread-safe."""

    def __init__(self, index: SearchIndex, roots: Roots) -> None:
        self.index = index
        self.roots = roots
        self.vectors: VectorIndex | None = None
        self.presence = Presence(roots, self.disk_state)

    def use_embedder(self, embedder: Embedder | None) -> None:
        """Search by meaning too, with `embedder` (None: by words only)."""
        self.vectors = VectorIndex(self.index, embedder, passages) if embedder is not None else None

    def _filters(self, tags: list[str] | None, filename: str | None, kind: str | None) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        for tag in clean_tags(tags):
            clauses.append("EXISTS (SELECT 1 FROM tags t WHERE t.doc_id = d.id AND t.tag = ?)")
            params.append(tag)
        name = (filename or "").strip().lower()
        if name:
            if _GLOB & set(name):
                clauses.append("d.name_lc GLOB ?")
            else:
                clauses.append("instr(d.name_lc, ?) > 0")
            params.append(name)
        if kind:
            if kind not in formats.MIME_TYPES:
                raise BadRequest(f"kind must be one of {', '.join(formats.MIME_TYPES)} (got {kind!r}).", {"kind": kind})
            clauses.append("d.kind = ?")
            params.append(kind)
        return " AND ".join(clauses), params

    def disk_state(self, keys: Sequence[str]) -> dict[str, os.stat_result | None]:
        """Each key's file status now: its stat, or None when it is gone or no longer inside its root.

        Keys whose root folder is itself missing (an unmounted drive) are left out, so they are
        never pruned. Each folder is resolved once; a file that is a symlink is checked in full.
        """
        folders: dict[tuple[str, str], Path | None] = {}
        roots_present: dict[str, bool] = {}
        states: dict[str, os.stat_result | None] = {}
        for key in keys:
            root, rel = self.roots.split(key)
            if root.name not in roots_present:
                roots_present[root.name] = root.path.is_dir()
            if not roots_present[root.name]:
                continue
            head, _, leaf = rel.rpartition("/")
            if (root.name, head) not in folders:
                try:
                    folders[root.name, head] = safe_join(root.path, head, allow_root=True)
                except DeskError:
                    folders[root.name, head] = None
            folder = folders[root.name, head]
            states[key] = None if folder is None or not leaf else self._file_state(folder / leaf, key)
        return states

    def _file_state(self, path: Path, key: str) -> os.stat_result | None:
        try:
            st = path.lstat()
            if stat.S_ISLNK(st.st_mode):
                st = self.roots.locate(key).path.stat()
        except (DeskError, OSError):
            return None
        return st if stat.S_ISREG(st.st_mode) else None

    def prune_gone(self) -> int:
        """Drop the entries of every indexed file that is gone; how many were dropped."""
        gone = self.presence.gone(catalog.all_keys(self.index))
        if not gone:
            return 0
        log.info("pruned %d documents whose files are gone", len(gone))
        return self.index.apply(deletes=gone).deleted

    def _present(self, fetch: Callable[[int], list[Hit]], limit: int) -> _Page:
        """The first limit + 1 hits `fetch(n)` gives, every one on disk: hits whose file is gone
        are pruned and the page fetched again, more at once each round."""
        size, pruned = limit + 1, 0
        last: list[str] = []
        while True:
            hits = fetch(size)
            states = self.disk_state([h.key for h in hits])
            stale = [key for key, st in states.items() if st is None]
            if not stale:
                return _Page(hits[: limit + 1], states, pruned)
            deleted = self.index.apply(deletes=stale).deleted
            log.info("pruned %d documents whose files are gone", deleted)
            if not deleted and stale == last:  # found again, yet nothing to delete: leave them out, never show them
                return _Page([h for h in hits if h.key not in stale][: limit + 1], states, pruned)
            pruned, last = pruned + deleted, stale
            size = min(2 * size, MAX_WINDOW)

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
        """Hits for `query` by words, meaning or both (`fusion.pick_mode` reads `mode`; newest
        first without a query), narrowed by every filter given; words are read as
        `SearchIndex.search` reads them."""
        check_limit(limit)
        chosen = fusion.pick_mode(mode, self.vectors is not None)
        text = (query or "").strip()
        if not text and not tags and not (filename or "").strip() and not kind:
            raise BadRequest(
                "Give a query, tags, a filename or a kind to search by. Use list_documents to browse everything."
            )
        where, params = self._filters(tags, filename, kind)
        key = query_key("search", text, sorted(clean_tags(tags)), (filename or "").strip().lower(), kind, chosen)
        offset = decode_cursor(cursor, key)
        ranks: dict[str, tuple[int | None, int | None]] = {}
        pending = 0

        def fetch(size: int) -> list[Hit]:
            nonlocal pending
            if not text:
                return self.index.select(
                    where=where, params=params, order_by="d.mtime DESC, d.key", limit=size, offset=offset
                )
            found = fusion.search(
                self.index, self.vectors, text, mode=chosen, where=where, params=params, limit=size, offset=offset
            )
            pending = found.pending
            ranks.update((r.hit.key, (r.lexical_rank, r.semantic_rank)) for r in found.hits)
            return [r.hit for r in found.hits]

        shown = self._present(fetch, limit)
        items: list[SearchHit] = []
        for h in shown.hits[:limit]:
            summary = summary_of(h.data)
            st = shown.states.get(h.key)
            indexed_mtime = h.columns.get("mtime")
            changed = st is not None and indexed_mtime is not None and st.st_mtime != indexed_mtime
            score = round(h.score, 4) if h.score is not None else None
            lexical_rank, semantic_rank = ranks.get(h.key, (None, None))
            items.append(
                SearchHit(
                    **summary.model_dump(),
                    score=score,
                    snippet=h.snippet,
                    changed_since_indexed=changed,
                    lexical_rank=lexical_rank,
                    semantic_rank=semantic_rank,
                )
            )
        by_words = not text or chosen == "lexical"
        total = self.index.count(where=where, params=params, query=text or None) if by_words else None
        return SearchOutput(
            items=items,
            total=total,
            total_approximate=total is not None and (offset > 0 or total > len(shown.hits)),
            next_cursor=page(offset, limit, len(shown.hits), key),
            pruned=shown.pruned,
            unmatched_terms=self.index.unmatched_terms(text, where=where, params=params)
            if text and chosen != "semantic"
            else [],
            mode=chosen if text else None,
            semantic_pending=pending or None,
        )

    def list_documents(
        self,
        *,
        tags: list[str] | None = None,
        kind: str | None = None,
        root: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> ListDocumentsOutput:
        """Indexed documents, most recently modified first; files gone from disk are pruned first."""
        check_limit(limit)
        where, params = self._filters(tags, None, kind)
        if root:
            if root not in {r.name for r in self.roots.all()}:
                raise BadRequest(f"No root {root!r}. Call list_roots for root names.", {"root": root})
            where = " AND ".join(w for w in (where, "d.root = ?") if w)
            params.append(root)
        key = query_key("list", sorted(clean_tags(tags)), kind, root)
        offset = decode_cursor(cursor, key)
        self.prune_gone()
        hits = self.index.select(
            where=where, params=params, order_by="d.mtime DESC, d.key", limit=limit + 1, offset=offset
        )
        return ListDocumentsOutput(
            items=[summary_of(h.data) for h in hits[:limit]],
            total=self.index.count(where=where, params=params),
            next_cursor=page(offset, limit, len(hits), key),
        )

    def list_tags(self) -> TagList:
        """Every tag with its documents, after pruning files gone from disk."""
        self.prune_gone()
        return TagList(tags=[TagCount(tag=tag, count=n) for tag, n in catalog.tag_counts(self.index)])

    def list_roots(self) -> RootList:
        """The configured roots with their documents, after pruning files gone from disk."""
        self.prune_gone()
        counts = catalog.root_counts(self.index)
        return RootList(
            roots=[
                RootInfo(
                    name=r.name, path=r.shown, main=r.main, exists=r.path.is_dir(), documents=counts.get(r.name, 0)
                )
                for r in self.roots.all()
            ]
        )
