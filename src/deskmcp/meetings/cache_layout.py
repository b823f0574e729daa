"""Reading a new version of a string cache by comparing it, record by record, with the last.

Granola rewrites its whole cache file whenever anything in it changes, but from one version
to the next nearly every record stays byte for byte the same, only moved. A version's
`Layout` lists, for each collection of the state (documents, transcripts, metadata, panels),
its records in file order: key, length of the escaped value and a SHA-256 of those bytes;
for every `GROUP` records in a row, the same of all their bytes; and for the state's other
entries, the same of their whole value. The next version is then walked in order: where a
group or a record of the same key starts, the bytes its old length covers are hashed, and
when they hash the same (and a separator follows) the group or the record is the one the
index was built from: nothing of it is unescaped, parsed or fingerprinted again. A record
that differs, or is new, is unescaped from where it starts and parsed up to where its JSON
value ends. Only the meetings one of whose pieces changed are then built, exactly as a scan
of the whole file builds them (`cache_records.raw_meetings`); the others are what the index
holds already.

A layout describes one version of the file, and is used only while the index holds that
version. What this reader does not follow (another shape of inner document, blanks between
tokens, duplicate keys, a value that does not end where JSON says) makes it give up: the
caller then scans the file as before, and that scan's result stands.

A first layout is made from a scan (`predicted`): when the scan found every escape as short
as it can be, each record's escaped length follows from its raw JSON, and the walk checks
that a key and a separator stand where each record should start and end.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from io import BufferedReader
from pathlib import Path
from typing import Any, Protocol

import msgspec
import orjson

from deskmcp.core.errors import DeskError
from deskmcp.meetings import cache_file, cache_records
from deskmcp.meetings.cache_file import CHUNK_BYTES, TranscriptSpan, safe_cut
from deskmcp.meetings.cache_records import FolderInfo, RawMeeting, folder_list, folders_of, raw_meetings
from deskmcp.meetings.cache_scan import ScannedCache, Window, escaped_length, key_text
from deskmcp.meetings.normalize import norm_id

COLLECTIONS = ("documents", "transcripts", "meetingsMetadata", "documentPanels")
"""The state's entries whose records are compared one by one."""
FOLDER_ENTRIES = ("documentLists", "documentListsMetadata")
_OPEN = b'{\\"state\\":{'
_NAME = re.compile(rb'\\"([^"\\]{1,512})\\":')
_NAME_BYTES = 600
_TRAILER_MAX = 4096
_FIRST_PARSE = 64 * 1024
PARSE_MAX = 16 * 1024 * 1024
"""The largest changed record parsed here: Python's parser builds the value's objects, so a
bigger one (none of Granola's come near) is left to the scan, which keeps it as bytes."""
_DECODER = json.JSONDecoder()
GROUP = 64
"""Records per group (see `Records.groups`)."""
_VALUE_STARTS = frozenset('{["-0123456789tfn')


class Unfollowed(Exception):
    """The file is not shaped as this reader expects: scan it instead."""


@dataclass
class Records:
    """One collection of a version: its records in file order."""

    keys: list[str] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    """The length of each escaped value."""
    digests: list[bytes] = field(default_factory=list)
    """The SHA-256 of each escaped value (for a transcript, its `TranscriptSpan.digest`)."""
    groups: list[tuple[int, bytes]] = field(default_factory=list)
    """Every `GROUP` records in a row, from the first one's key to the last one's value: the
    length and SHA-256 of those bytes. A group that hashes the same is taken whole."""


@dataclass
class Layout:
    """Where each record of one version of a string cache stands (see the module's docstring)."""

    source: str
    """The fingerprint of the version described (`cache_file.fingerprint_of`)."""
    collections: dict[str, Records]
    others: dict[str, tuple[int, bytes]]
    """The state's other entries: length and SHA-256 of each escaped value."""
    trailer: bytes
    """What follows the state in the inner document (`,"version":3}`), escaped."""
    folders: list[FolderInfo]
    parser: str = field(default_factory=lambda: cache_records.PARSER_VERSION)
    """The version of the meetings' normalisation the index was built with: a layout made
    by another lets every meeting be built again, as its fingerprint would."""

    def encode(self) -> bytes:
        return msgspec.msgpack.encode(
            {
                "source": self.source,
                "collections": {
                    n: [r.keys, r.lengths, r.digests, [list(g) for g in r.groups]] for n, r in self.collections.items()
                },
                "others": {n: list(v) for n, v in self.others.items()},
                "trailer": self.trailer,
                "folders": [[f.id, f.name, f.description, f.meeting_ids] for f in self.folders],
                "parser": self.parser,
            }
        )

    @classmethod
    def decode(cls, data: bytes) -> Layout:
        body = msgspec.msgpack.decode(data)
        return cls(
            source=body["source"],
            collections={
                n: Records(k, ln, d, [(int(g[0]), bytes(g[1])) for g in gs])
                for n, (k, ln, d, gs) in body["collections"].items()
            },
            others={n: (int(v[0]), bytes(v[1])) for n, v in body["others"].items()},
            trailer=bytes(body["trailer"]),
            folders=[FolderInfo(*f) for f in body["folders"]],
            parser=body["parser"],
        )


class _Expected(Protocol):
    """What a collection held before: per record, how long its value was and whether the
    value at `start` is the same now (its SHA-256 when it is, else None)."""

    keys: list[str]

    def length(self, i: int) -> int: ...

    def same(self, i: int, start: int, value: memoryview) -> bytes | None: ...


class _Known:
    """A collection as the last version's layout has it."""

    def __init__(self, records: Records) -> None:
        self.keys = records.keys
        self.records = records

    def length(self, i: int) -> int:
        return self.records.lengths[i]

    def same(self, i: int, start: int, value: memoryview) -> bytes | None:
        digest = hashlib.sha256(value).digest()
        return digest if digest == self.records.digests[i] else None


class _Scanned:
    """A collection as a scan read it: raw JSON, or transcript spans. The scan found every
    escape outside the transcripts as short as can be (`ScannedCache.minimal`), so a record's
    escaped length follows from its raw JSON, and the walk checks that a key and a separator
    stand at each end."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        self.keys = list(values)
        self._values = list(values.values())

    def length(self, i: int) -> int:
        value = self._values[i]
        return value.length if isinstance(value, TranscriptSpan) else escaped_length(bytes(value))

    def same(self, i: int, start: int, value: memoryview) -> bytes | None:
        expected = self._values[i]
        if isinstance(expected, TranscriptSpan):
            # The very bytes the scan hashed, in the version it read.
            return expected.digest if (start, len(value)) == (expected.offset, expected.length) else None
        return hashlib.sha256(value).digest()


@dataclass
class _Seen:
    """One collection as walked in the new version."""

    records: Records = field(default_factory=Records)
    starts: list[int] = field(default_factory=list)
    """Each value's file offset."""
    changed: dict[str, bytes | None] = field(default_factory=dict)
    """Records new or different: their unescaped value (None for transcripts, read when needed)."""
    whole: dict[int, tuple[int, int, bytes]] = field(default_factory=dict)
    """Groups of the last version taken whole, by the position of their first record now:
    how many records, and the group's length and SHA-256."""


@dataclass
class _Version:
    names: set[str] = field(default_factory=set)
    collections: dict[str, _Seen] = field(default_factory=dict)
    others: dict[str, tuple[int, bytes]] = field(default_factory=dict)
    other_starts: dict[str, int] = field(default_factory=dict)
    changed_others: dict[str, bytes] = field(default_factory=dict)
    trailer: bytes = b""


class _Walk:
    """The escaped state read forward once, in a window of the file."""

    def __init__(self, handle: BufferedReader, start: int, end: int) -> None:
        self._window = Window(handle, start, end, CHUNK_BYTES)
        self.start = start
        self.end = end

    def _at(self, pos: int, size: int) -> tuple[bytearray, int, int]:
        """The window's buffer, where `pos` is in it, and how many of `size` bytes it holds."""
        window = self._window
        rel = window.want(pos - window.base, size)
        return window.buf, rel, min(size, window.filled - rel)

    def byte(self, pos: int) -> int:
        buf, rel, n = self._at(pos, 1)
        if not n:
            raise Unfollowed
        return buf[rel]

    def name(self, pos: int) -> tuple[str, int]:
        """The key at `pos` and where its value starts."""
        buf, rel, n = self._at(pos, _NAME_BYTES)
        found = _NAME.match(buf, rel, rel + n)
        if found is None:
            raise Unfollowed
        return key_text(bytes(found.group(1))), pos + found.end() - rel

    def value(self, pos: int, hint: int) -> tuple[int, bytes]:
        """Where the JSON value at `pos` ends, and the value unescaped (UTF-8)."""
        size = max(2 * hint, _FIRST_PARSE)
        while True:
            if size > 2 * PARSE_MAX:
                raise Unfollowed
            buf, rel, n = self._at(pos, size)
            piece = bytes(buf[rel : rel + n])
            last = pos + n >= self.end
            cut = n if last else safe_cut(piece, n)
            try:
                text = orjson.loads(b'"' + piece[:cut] + b'"')
            except orjson.JSONDecodeError as exc:
                raise Unfollowed from exc
            if not text or text[0] not in _VALUE_STARTS:  # blanks, or not JSON at all
                raise Unfollowed
            try:
                _, stop = _DECODER.raw_decode(text)
            except json.JSONDecodeError:
                if last:
                    raise Unfollowed from None
                size *= 2
                continue
            try:
                unescaped = text[:stop].encode("utf-8")
            except UnicodeEncodeError as exc:
                raise Unfollowed from exc
            if len(unescaped) > PARSE_MAX:
                raise Unfollowed
            length = escaped_length(unescaped)
            # Escaped with nothing but \" and \\, and followed by a separator: else not followed.
            if length >= cut or piece[length] not in b",}":
                if last or length < cut:
                    raise Unfollowed
                size *= 2
                continue
            try:
                if orjson.loads(b'"' + piece[:length] + b'"').encode("utf-8") != unescaped:
                    raise Unfollowed
                msgspec.json.decode(unescaped, type=msgspec.Raw)  # strictly JSON (no NaN)
            except (orjson.JSONDecodeError, msgspec.DecodeError) as exc:
                raise Unfollowed from exc
            return pos + length, unescaped

    def _stands(self, pos: int, length: int, digest: bytes) -> bool:
        """Whether the `length` bytes at `pos` hash to `digest` and a separator follows them."""
        buf, rel, n = self._at(pos, length + 1)
        if n <= length or buf[rel + length] not in b",}":
            return False
        with memoryview(buf) as view, view[rel : rel + length] as value:
            return hashlib.sha256(value).digest() == digest

    def digest(self, pos: int, length: int) -> bytes:
        buf, rel, n = self._at(pos, length)
        if n < length:
            raise Unfollowed
        with memoryview(buf) as view:
            return hashlib.sha256(view[rel : rel + length]).digest()

    def state(
        self, collections: Mapping[str, _Expected], others: Mapping[str, tuple[int, bytes]], *, exact: bool
    ) -> _Version:
        """Walk the whole state. With `exact`, every record must be what was expected (a
        layout made from a scan); else records that differ are parsed."""
        buf, rel, n = self._at(self.start, len(_OPEN))
        if bytes(buf[rel : rel + n]) != _OPEN:
            raise Unfollowed
        version = _Version()
        pos = self.start + len(_OPEN)
        if self.byte(pos) == 0x7D:  # "}": an empty state
            pos += 1
        else:
            while True:
                name, pos = self.name(pos)
                if name in version.names:
                    raise Unfollowed
                version.names.add(name)
                if name in COLLECTIONS:
                    if self.byte(pos) != 0x7B:  # "{"
                        raise Unfollowed
                    pos = self._records(pos + 1, name, collections.get(name), version, exact=exact)
                else:
                    pos = self._other(pos, name, others.get(name), version)
                separator = self.byte(pos)
                pos += 1
                if separator == 0x7D:
                    break
                if separator != 0x2C:  # ","
                    raise Unfollowed
        if self.end - pos > _TRAILER_MAX:
            raise Unfollowed
        buf, rel, n = self._at(pos, self.end - pos)
        version.trailer = bytes(buf[rel : rel + n])
        return version

    def _records(self, pos: int, name: str, expected: _Expected | None, version: _Version, *, exact: bool) -> int:
        """Walk one collection's records from `pos` (after its `{`) to after its `}`.

        A record that hashes as before but now stands before one it used to follow counts as
        changed all the same: which of two records a document is paired with can depend on
        their order (see `raw_meetings`)."""
        seen = _Seen()
        version.collections[name] = seen
        records = seen.records
        keys = expected.keys if expected is not None else []
        known = expected.records if isinstance(expected, _Known) else None
        where: dict[str, int] | None = None
        taken: set[str] = set()
        following = 0
        last = -1
        if self.byte(pos) == 0x7D:
            if exact and keys:
                raise Unfollowed
            return pos + 1
        # The loop runs once per record or group of the cache (tens of thousands): the window
        # is used directly rather than through the helpers above.
        window = self._window
        buf = window.buf  # grown and shifted in place: the same object throughout
        while True:
            rel = window.want(pos - window.base, _NAME_BYTES)
            i: int | None = None
            key, start = "", pos
            if following < len(keys):
                # Most often the record that followed the last one before still does.
                key = keys[following]
                name_bytes = b'\\"' + key.encode() + b'\\":'
                if buf.startswith(name_bytes, rel):
                    i = following
                    start = pos + len(name_bytes)
            if (
                i is not None
                and known is not None
                and i > last
                and i % GROUP == 0
                and (end := self._whole(pos, i, known, seen, taken)) is not None
            ):
                # A whole group as it was: its records are the last version's.
                following = min(i + GROUP, len(keys))
                last = following - 1
                separator = self.byte(end)
            else:
                if i is None:
                    found = _NAME.match(buf, rel, min(rel + _NAME_BYTES, window.filled))
                    if found is None:
                        raise Unfollowed
                    start = pos + found.end() - rel
                    try:
                        key = found.group(1).decode("utf-8")
                    except UnicodeDecodeError as exc:
                        raise Unfollowed from exc
                    if where is None:
                        where = {k: n for n, k in enumerate(keys)}
                    i = where.get(key)
                    if i is None:
                        key = key_text(bytes(found.group(1)))  # a new key: checked as a scan checks it
                if key in taken:
                    raise Unfollowed
                taken.add(key)
                digest = None
                length = 0
                if i is not None and expected is not None:
                    length = expected.length(i)
                    following = i + 1
                    rel = window.want(start - window.base, length + 1)
                    if window.filled - rel > length and buf[rel + length] in b",}":
                        with memoryview(buf) as view, view[rel : rel + length] as value:
                            digest = expected.same(i, start, value)
                if digest is not None and i is not None:
                    end = start + length
                    separator = buf[rel + length]
                    if i <= last:
                        seen.changed[key] = None  # moved: read again if a meeting needs it
                    else:
                        last = i
                elif exact:
                    raise Unfollowed
                else:
                    end, unescaped = self.value(start, length)
                    length = end - start
                    digest = self.digest(start, length)
                    seen.changed[key] = None if name == "transcripts" else unescaped
                    separator = self.byte(end)
                records.keys.append(key)
                records.lengths.append(length)
                records.digests.append(digest)
                seen.starts.append(start)
            pos = end + 1
            if separator == 0x7D:
                if exact and len(records.keys) != len(keys):
                    raise Unfollowed
                return pos
            if separator != 0x2C:
                raise Unfollowed

    def _whole(self, pos: int, first: int, known: Records, seen: _Seen, taken: set[str]) -> int | None:
        """When the group of the last version starting with record `first` stands at `pos` as
        it was (followed by a separator), take its records and return where it ends."""
        group = first // GROUP
        if group >= len(known.groups):
            return None
        length, digest = known.groups[group]
        if not self._stands(pos, length, digest):
            return None
        stop = min(first + GROUP, len(known.keys))
        keys = known.keys[first:stop]
        if not taken.isdisjoint(keys):
            raise Unfollowed
        taken.update(keys)
        seen.whole[len(seen.records.keys)] = (len(keys), length, digest)
        lengths = known.lengths[first:stop]
        seen.records.keys.extend(keys)
        seen.records.lengths.extend(lengths)
        seen.records.digests.extend(known.digests[first:stop])
        at = pos
        for key, value_length in zip(keys, lengths, strict=True):
            at += len(key.encode()) + 5  # \"key\":
            seen.starts.append(at)
            at += value_length + 1  # and a comma
        return pos + length

    def _other(self, pos: int, name: str, before: tuple[int, bytes] | None, version: _Version) -> int:
        version.other_starts[name] = pos
        if before is not None and self._stands(pos, *before):
            version.others[name] = before
            return pos + before[0]
        end, unescaped = self.value(pos, before[0] if before is not None else 0)
        version.others[name] = (end - pos, self.digest(pos, end - pos))
        version.changed_others[name] = unescaped
        return end


def _bounds(handle: BufferedReader, size: int) -> tuple[int, int]:
    opening = cache_file.string_cache_start(handle.read(4096))
    closing = cache_file.closing_quote(handle, size) if opening is not None else None
    if opening is None or closing is None:
        raise Unfollowed
    return opening, closing


def _layout(scanned: ScannedCache, version: _Version, folders: list[FolderInfo]) -> Layout:
    for seen in version.collections.values():
        seen.records.groups = _grouped(scanned, seen)
    return Layout(
        source=scanned.source,
        collections={name: seen.records for name, seen in version.collections.items()},
        others=version.others,
        trailer=version.trailer,
        folders=folders,
    )


def _grouped(scanned: ScannedCache, seen: _Seen) -> list[tuple[int, bytes]]:
    """The collection's groups: those taken whole as they were, the others hashed in the file."""
    records = seen.records
    groups: list[tuple[int, bytes]] = []
    for first in range(0, len(records.keys), GROUP):
        stop = min(first + GROUP, len(records.keys))
        whole = seen.whole.get(first)
        if whole is not None and whole[0] == stop - first:
            groups.append(whole[1:])
            continue
        start = seen.starts[first] - len(records.keys[first].encode()) - 5
        end = seen.starts[stop - 1] + records.lengths[stop - 1]
        groups.append((end - start, hashlib.sha256(scanned.read_escaped(start, end - start)).digest()))
    return groups


def predicted(scanned: ScannedCache, folders: list[FolderInfo]) -> Layout | None:
    """The layout of the version a scan read, each record checked against the file; None
    when the file does not follow (then each change is scanned)."""
    if not scanned.minimal:
        return None
    state = scanned.state
    handle = scanned.handle
    try:
        handle.seek(0)
        opening, closing = _bounds(handle, os.fstat(handle.fileno()).st_size)
        collections = {name: _Scanned(state.get(name) or {}) for name in COLLECTIONS}
        version = _Walk(handle, opening, closing).state(collections, {}, exact=True)
        layout = _layout(scanned, version, folders)
        scanned.check_unchanged()
    except (Unfollowed, OSError, DeskError):
        return None
    return layout


@dataclass
class Delta:
    """A new version compared with the last one."""

    layout: Layout
    """The new version's."""
    scanned: ScannedCache
    """The new version, open: transcripts are read from it."""
    raws: list[RawMeeting]
    """The documents one of whose pieces (record, metadata, panels, transcript, folders)
    differs, built as a scan builds them."""
    unchanged: list[str]
    """Every other document's key, in file order."""


def compare(path: Path, max_bytes: int, before: Layout) -> Delta | None:
    """The version of the file now compared with the one `before` describes; None when this
    reader does not follow it (then scan it)."""
    if before.parser != cache_records.PARSER_VERSION:
        return None
    try:
        handle = path.open("rb")
    except OSError:
        return None
    try:
        stat = os.fstat(handle.fileno())
        if stat.st_size > max_bytes:
            raise Unfollowed
        opening, closing = _bounds(handle, stat.st_size)
        expected = {name: _Known(records) for name, records in before.collections.items()}
        version = _Walk(handle, opening, closing).state(expected, before.others, exact=False)
        if version.trailer != before.trailer:
            raise Unfollowed
        scanned = ScannedCache(path, handle, stat, {})
        layout = _layout(scanned, version, _folders(scanned, version, before))
        raws = _affected(scanned, version, before, layout)
    except (Unfollowed, OSError, DeskError):
        handle.close()
        return None
    changed = {raw.id for raw in raws}
    documents = version.collections.get("documents") or _Seen()
    return Delta(layout, scanned, raws, [key for key in documents.records.keys if key not in changed])


def _folders(scanned: ScannedCache, version: _Version, before: Layout) -> list[FolderInfo]:
    """The new version's folders: the last version's while their entries are unchanged."""
    present = [name for name in FOLDER_ENTRIES if name in version.others]
    if present == [name for name in FOLDER_ENTRIES if name in before.others] and not any(
        name in version.changed_others for name in present
    ):
        return before.folders
    lists: dict[str, Any] = {}
    for name in present:
        unescaped = version.changed_others.get(name)
        if unescaped is None:
            unescaped = scanned.read_value(version.other_starts[name], version.others[name][0])
        try:
            lists[name] = msgspec.json.decode(unescaped, type=dict[str, Any])
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            raise Unfollowed from exc
    return folder_list(lists)


def _affected(scanned: ScannedCache, version: _Version, before: Layout, layout: Layout) -> list[RawMeeting]:
    seen = {name: version.collections.get(name) or _Seen() for name in COLLECTIONS}
    keys = seen["documents"].records.keys
    affected = set(seen["documents"].changed)
    ids: set[str] = set()
    for name in ("transcripts", "meetingsMetadata"):
        ids.update(_differing(seen[name], before.collections.get(name)))
    norms = {norm_id(key) for key in ids}
    if layout.folders is not before.folders:
        old_folders, new_folders = folders_of(before.folders), folders_of(layout.folders)
        norms.update(n for n in old_folders.keys() | new_folders.keys() if old_folders.get(n) != new_folders.get(n))
    if norms:
        affected.update(key for key in keys if norm_id(key) in norms)
    present = set(keys)
    affected.update(
        key for key in _differing(seen["documentPanels"], before.collections.get("documentPanels")) if key in present
    )
    if not affected:
        return []
    # The documents affected, with every other record as a reference: `raw_meetings` pairs
    # them as it pairs a whole state's, and only the records paired are read.
    # Each record stands for its position (from 1: `raw_meetings` takes a false value for none).
    state: dict[str, Any] = {
        name: dict(zip(seen[name].records.keys, range(1, len(seen[name].records.keys) + 1), strict=True))
        for name in COLLECTIONS
    }
    state["documents"] = {key: n for key, n in state["documents"].items() if key in affected}
    raws, _ = raw_meetings(state, folders=layout.folders)
    for raw in raws:
        raw.doc = _value(scanned, seen["documents"], raw.doc)
        raw.meta = _value(scanned, seen["meetingsMetadata"], raw.meta)
        raw.panels = _value(scanned, seen["documentPanels"], raw.panels)
        transcripts = seen["transcripts"]
        if raw.transcript is not None:
            n = raw.transcript - 1
            raw.transcript = TranscriptSpan(
                transcripts.starts[n], transcripts.records.lengths[n], transcripts.records.digests[n]
            )
    return raws


def _value(scanned: ScannedCache, seen: _Seen, position: int | None) -> msgspec.Raw | None:
    """The raw JSON of the record at `position` (from 1)."""
    if position is None:
        return None
    n = position - 1
    unescaped = seen.changed.get(seen.records.keys[n])
    if unescaped is None:
        return scanned.read_value(seen.starts[n], seen.records.lengths[n])
    return msgspec.Raw(unescaped)


def _differing(seen: _Seen, before: Records | None) -> Iterator[str]:
    """Keys of records new, changed or gone."""
    yield from seen.changed
    if before is not None:
        present = set(seen.records.keys)
        yield from (key for key in before.keys if key not in present)
