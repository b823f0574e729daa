"""A cache's records, kept as raw JSON until one is needed.

The state is decoded with every record left as `msgspec.Raw` bytes: validated, but not
built into Python objects. A record is then fingerprinted by hashing its bytes, so an
unchanged meeting costs a hash instead of a parse, and only changed ones are normalised.

This module and what it imports stay free of the MCP SDK: the worker process that reads
big caches imports it and should start in a fraction of a second.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

import msgspec
import orjson

from deskmcp.core.errors import ParseError
from deskmcp.meetings.cache_file import TranscriptSpan
from deskmcp.meetings.models import FolderRef, Meeting
from deskmcp.meetings.normalize import (
    Segment,
    TranscriptDigest,
    as_dict,
    as_list,
    build_meeting,
    norm_id,
    text_of,
    transcript_digest,
    transcript_segments,
)

PARSER_VERSION = "3"
"""Part of every meeting's fingerprint: bump it when normalisation changes."""


@dataclass
class FolderInfo:
    id: str
    name: str
    description: str | None
    meeting_ids: list[str]


class _LazyState(msgspec.Struct):
    """The parts of a cache state we read, with each record left as raw JSON bytes."""

    documents: dict[str, msgspec.Raw] = {}
    meetingsMetadata: dict[str, msgspec.Raw] = {}
    documentPanels: dict[str, msgspec.Raw] = {}
    transcripts: dict[str, msgspec.Raw] = {}
    documentLists: dict[str, Any] = {}
    documentListsMetadata: dict[str, Any] = {}


STATE_KEYS = frozenset(_LazyState.__struct_fields__)
"""The keys of a cache state this reader uses; a document with none of them is not a cache."""


class _LazyCache(msgspec.Struct):
    state: _LazyState | None = None


class _LazyFile(msgspec.Struct):
    cache: _LazyCache | str


def lazy_state(data: bytes | memoryview, *, inner: bool) -> tuple[dict[str, Any], str] | None:
    """The state with records as `msgspec.Raw`, and the format's name ("string" or "object").

    `inner` says `data` is already the inner document of a string cache. None when the
    document has a shape this fast path does not expect (the tolerant path then reads it).
    """
    try:
        if inner:
            cache, fmt = msgspec.json.decode(data, type=_LazyCache), "string"
        else:
            outer = msgspec.json.decode(data, type=_LazyFile)
            cache, fmt = outer.cache, "object"
            if isinstance(cache, str):
                cache, fmt = msgspec.json.decode(cache, type=_LazyCache), "string"
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    state = cache.state
    if state is None:
        return None
    return {f: getattr(state, f) for f in state.__struct_fields__}, fmt


def tolerant_state(data: bytes | memoryview, name: str, *, inner: bool) -> tuple[dict[str, Any], str]:
    """The state as plain JSON values, from any plain shape: every key optional."""
    try:
        outer = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        what = f"The inner cache JSON of {name}" if inner else name
        raise ParseError(
            f"{what} is not valid JSON ({exc}). It may be truncated; reopen Granola to rewrite it.",
            {"path": name},
        ) from exc
    if not isinstance(outer, dict):
        raise ParseError(f"{name} holds a JSON {type(outer).__name__}, not an object.")
    cache: Any = outer if inner else outer.get("cache", outer)
    fmt = "string" if inner else "object"
    if isinstance(cache, str):
        fmt = "string"
        try:
            cache = orjson.loads(cache)
        except orjson.JSONDecodeError as exc:
            raise ParseError(f"The inner cache JSON of {name} is not valid JSON ({exc}).", {"path": name}) from exc
    if not isinstance(cache, dict):
        raise ParseError(f"The cache in {name} is not an object.")
    state = cache.get("state", cache)
    if not isinstance(state, dict):
        raise ParseError(f"The cache state in {name} is not an object.")
    documents = state.get("documents")
    if documents is not None and not isinstance(documents, dict):
        # Read as none, every question would be answered "no meetings". (Other entries in an odd
        # shape are left out: the meetings are still there, less what those entries add.)
        raise ParseError(
            f"The cache state in {name} holds 'documents' as a JSON {type(documents).__name__}, not an "
            "object: this is not a layout of Granola's cache deskmcp reads. Reopen Granola to rewrite it, or "
            "report the Granola version.",
            {"path": name, "key": "documents"},
        )
    if "state" not in cache and not STATE_KEYS & state.keys():
        # Any JSON object would otherwise read as a cache of 0 meetings, hiding a wrong path.
        raise ParseError(
            f"{name} is not a Granola cache: it holds none of a cache's keys ('cache', 'state', "
            f"{', '.join(repr(k) for k in sorted(STATE_KEYS))}). Point GRANOLA_CACHE_PATH at Granola's "
            "cache-v*.json file or its folder.",
            {"path": name},
        )
    return state, fmt


class _DocFlags(msgspec.Struct):
    deleted_at: Any = None
    deleted: Any = None
    type: Any = None


_EMPTY_OBJECT = re.compile(rb"\s*\{\s*\}\s*")


def _raw_bytes(value: Any) -> bytes | memoryview | None:
    """A record's JSON bytes (a view of the cache's own when read lazily), None when absent."""
    if value is None:
        return None
    return memoryview(value) if isinstance(value, msgspec.Raw) else orjson.dumps(value)


@dataclass
class RawMeeting:
    """One document's raw pieces from the cache, before normalisation.

    Pieces are JSON values, or `msgspec.Raw` bytes when the cache was read lazily; a
    transcript may be a `TranscriptSpan` (see `cache_scan`), which must be read into
    `msgspec.Raw` before the meeting is built.
    """

    id: str
    doc: Any
    meta: Any
    panels: Any
    transcript: Any
    folders: list[FolderRef]

    def fingerprint(self) -> str:
        """A hash of everything the meeting is built from: unchanged input, unchanged meeting."""
        # SHA-256 runs in hardware on current CPUs: several times faster than blake2b here.
        digest = hashlib.sha256(PARSER_VERSION.encode())
        for part in (self.doc, self.meta, self.panels, self.transcript):
            digest.update(b"\x1e")
            if isinstance(part, TranscriptSpan):
                # The hash of the escaped bytes: never confused with JSON, which cannot start with NUL.
                digest.update(b"\x00escaped:" + part.digest)
            else:
                digest.update(part if isinstance(part, msgspec.Raw) else orjson.dumps(part))
        digest.update(orjson.dumps([(f.id, f.name) for f in self.folders]))
        return digest.hexdigest()[:32]

    def is_meeting(self) -> bool:
        """What `normalize` would say (None or not), from the document's flags alone."""
        if isinstance(self.doc, msgspec.Raw):
            if len(self.doc) < 64 and _EMPTY_OBJECT.fullmatch(bytes(self.doc)):
                return False
            try:
                flags = msgspec.json.decode(self.doc, type=_DocFlags)
            except (msgspec.ValidationError, msgspec.DecodeError):
                return False
            deleted_at, deleted, kind = flags.deleted_at, flags.deleted, flags.type
        else:
            doc = as_dict(self.doc)
            if not doc:
                return False
            deleted_at, deleted, kind = doc.get("deleted_at"), doc.get("deleted"), doc.get("type")
        return not deleted_at and deleted is not True and kind in (None, "meeting")

    def _document(self) -> dict[str, Any] | None:
        doc = as_dict(_decoded(self.doc))
        if not doc or doc.get("deleted_at") or doc.get("deleted") is True:
            return None
        if doc.get("type") not in (None, "meeting"):
            return None
        return doc

    def normalize(self) -> tuple[Meeting, list[Segment]] | None:
        """The meeting and its transcript; None for a deleted, non-meeting or malformed document."""
        doc = self._document()
        if doc is None:
            return None
        segments = transcript_segments(_decoded(self.transcript))
        end = segments[-1]["end"] if segments else None
        meeting = build_meeting(
            self.id, doc, as_dict(_decoded(self.meta)), as_dict(_decoded(self.panels)), len(segments), end, self.folders
        )
        return meeting, segments

    def for_index(self) -> tuple[Meeting, bytes | memoryview | None, TranscriptDigest] | None:
        """The meeting, its transcript's raw JSON (None without final segments) and the
        transcript's digest; the segments are normalised only when someone reads them."""
        doc = self._document()
        if doc is None:
            return None
        raw = _raw_bytes(self.transcript)
        digest = transcript_digest(raw) if raw is not None else TranscriptDigest("", 0, None)
        meeting = build_meeting(
            self.id,
            doc,
            as_dict(_decoded(self.meta)),
            as_dict(_decoded(self.panels)),
            digest.segments,
            digest.end,
            self.folders,
        )
        return meeting, raw if digest.segments else None, digest


def _decoded(value: Any) -> Any:
    if isinstance(value, msgspec.Raw):
        try:
            return msgspec.json.decode(value)
        except msgspec.DecodeError:
            return None
    return value


def raw_meetings(
    state: dict[str, Any], *, folders: list[FolderInfo] | None = None
) -> tuple[list[RawMeeting], list[FolderInfo]]:
    """Every document of a cache state with its metadata, panels, transcript and folders
    (`folders`, when given, in place of the state's own lists)."""
    documents = as_dict(state.get("documents"))
    metadata = as_dict(state.get("meetingsMetadata"))
    panels = as_dict(state.get("documentPanels"))
    transcripts = as_dict(state.get("transcripts"))
    transcripts_by_norm = _ByNorm(transcripts)
    metadata_by_norm = _ByNorm(metadata)

    if folders is None:
        folders = folder_list(state)
    folders_by_meeting = folders_of(folders)

    raws: list[RawMeeting] = []
    for key, doc in documents.items():
        if not isinstance(key, str) or not key.strip():
            continue
        norm = norm_id(key)
        raws.append(
            RawMeeting(
                id=key,
                doc=doc,
                meta=metadata.get(key) or metadata_by_norm.get(norm),
                panels=panels.get(key),
                transcript=transcripts.get(key) or transcripts_by_norm.get(norm),
                folders=[FolderRef(id=i, name=name) for i, name in folders_by_meeting.get(norm, ())],
            )
        )
    return raws, folders


class _ByNorm:
    """A collection's records by normalised id (the last of a spelling wins), made the first
    time one is looked up that way: most documents find theirs under their own id."""

    def __init__(self, records: dict[str, Any]) -> None:
        self._records = records
        self._by_norm: dict[str, Any] | None = None

    def get(self, norm: str) -> Any:
        if self._by_norm is None:
            self._by_norm = {norm_id(str(k)): v for k, v in self._records.items()}
        return self._by_norm.get(norm)


def folders_of(folders: list[FolderInfo]) -> dict[str, list[tuple[str, str]]]:
    """Each meeting's folders (id and name), by its normalised id."""
    found: dict[str, list[tuple[str, str]]] = {}
    for info in folders:
        for mid in info.meeting_ids:
            found.setdefault(norm_id(mid), []).append((info.id, info.name))
    return found


def folder_list(state: dict[str, Any]) -> list[FolderInfo]:
    """The folders of a state's `documentLists` and `documentListsMetadata`, by name."""
    lists = as_dict(state.get("documentLists"))
    lists_meta = as_dict(state.get("documentListsMetadata"))
    out: list[FolderInfo] = []
    for list_id in {*lists.keys(), *lists_meta.keys()}:
        meta = as_dict(lists_meta.get(list_id))
        members = lists.get(list_id)
        ids: list[str] = []
        for member in as_list(members) or as_list(meta.get("documents")):
            if isinstance(member, str):
                ids.append(member)
            elif isinstance(member, dict) and text_of(member.get("id")):
                ids.append(str(member["id"]))
        name = text_of(meta.get("title")) or text_of(meta.get("name")) or str(list_id)
        out.append(FolderInfo(str(list_id), name, text_of(meta.get("description")), ids))
    out.sort(key=lambda f: f.name.lower())
    return out
