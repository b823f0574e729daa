"""Reading a string cache (`cache-v3.json`) without unescaping its transcripts.

The transcripts are most of a heavy user's cache, and unescaping them all takes longer than
everything else together. Here they stay as they are in the file: each transcript is found as
a span of escaped bytes (`\\"<id>\\":[ ... ]`), hashed there, and unescaped only when its
meeting changed. Everything else (documents, metadata, panels, folders) is unescaped as a
small skeleton document, with the transcripts replaced by a placeholder, and decoded as before.

A transcript's span ends at the first `}]` followed by `,` and the next key, or by the
closing brace. That is the end of its value unless the value is not what Granola writes
(segments holding arrays of objects, or text holding `}]}`), so every span is checked before
it is trusted: a span whose meeting's fingerprint is already in the index is byte for byte one
that was decoded whole before; any other span is decoded now. A span that does not decode as
exactly one JSON value means this reading went wrong, and `SpanError` sends the caller back
to reading the whole file (`cache_file`), which gives today's records or today's error. So
does anything else this reader does not expect: `scan` then returns None.
"""

from __future__ import annotations

import hashlib
import os
import re
from io import BufferedReader
from pathlib import Path
from types import TracebackType
from typing import Any

import msgspec
import orjson

from deskmcp.core.errors import DeskError, ParseError
from deskmcp.meetings import cache_file
from deskmcp.meetings.cache_file import CHUNK_BYTES, TranscriptSpan
from deskmcp.meetings.cache_records import lazy_state

_MEMBER = b'\\"transcripts\\":{'
"""How the state's `"transcripts":{` reads inside the escaped cache string."""
_PLACEHOLDER_KEY = "\x00deskmcp-transcripts"
_PLACEHOLDER = b'{"\\u0000deskmcp-transcripts":0}'
_KEY = re.compile(rb'\\"([^"\\]{1,512})\\":\[')
_END = re.compile(rb"\}\](?:,\\\"|\})")
_CONTROL = re.compile(r"[\x00-\x1f]")
_LOOKAHEAD = 600
"""Bytes a key with its separators may take: more are read before a key is matched."""


class SpanError(ParseError):
    """A transcript span is not one JSON value, or the file changed while its spans were read:
    read the whole file instead."""

    def __init__(self, path: Path, why: str) -> None:
        super().__init__(
            f"{path.name} changed or could not be read span by span ({why}); it is read whole instead.",
            {"path": str(path), "reread": True},
        )


class ScannedCache:
    """A string cache read with its transcripts left in the file. The file stays open until
    `close` so the spans are read from the version scanned."""

    def __init__(self, path: Path, handle: BufferedReader, before: os.stat_result, state: dict[str, Any]) -> None:
        self.path = path
        self.handle = handle
        self._before = before
        self.state = state
        """The cache state: records as `msgspec.Raw`, transcripts as `TranscriptSpan`."""
        self.source = cache_file.fingerprint_of(path, before)
        self.minimal = False
        """Whether everything but the transcripts was escaped with nothing but `\\"` and
        `\\\\`, so that each record's escaped length follows from its raw JSON."""

    def __enter__(self) -> ScannedCache:
        return self

    def __exit__(self, *_exc: tuple[type[BaseException] | None, BaseException | None, TracebackType | None]) -> None:
        self.close()

    def close(self) -> None:
        self.handle.close()

    def read_escaped(self, offset: int, length: int) -> bytes:
        """`length` bytes of the version scanned, from `offset`."""
        try:
            data = os.pread(self.handle.fileno(), length, offset)
        except OSError as exc:
            raise SpanError(self.path, exc.strerror or "read failed") from exc
        if len(data) != length:
            raise SpanError(self.path, "the file got shorter")
        return data

    def read(self, span: TranscriptSpan) -> msgspec.Raw:
        """The transcript's JSON, unescaped and checked to be one JSON value."""
        return self.read_value(span.offset, span.length)

    def read_value(self, offset: int, length: int) -> msgspec.Raw:
        """The JSON value of the `length` escaped bytes at `offset`, unescaped and checked to be
        one JSON value."""
        data = self.read_escaped(offset, length)
        try:
            raw = orjson.loads(b'"' + data + b'"').encode("utf-8", errors="replace")
            msgspec.json.decode(raw, type=msgspec.Raw)
        except (orjson.JSONDecodeError, msgspec.DecodeError) as exc:
            raise SpanError(self.path, f"the value at byte {offset} is not one JSON value") from exc
        return msgspec.Raw(raw)

    def read_text(self, span: TranscriptSpan) -> msgspec.Raw | None:
        """The transcript's JSON, unescaped but not checked (None when it does not even
        unescape): what a scan for searchable text needs; `read` checks it for the index."""
        data = self.read_escaped(span.offset, span.length)
        try:
            return msgspec.Raw(orjson.loads(b'"' + data + b'"').encode("utf-8", errors="replace"))
        except orjson.JSONDecodeError:
            return None

    def check_unchanged(self) -> None:
        """Raise `SpanError` when the file is no longer the version scanned."""
        after = os.fstat(self.handle.fileno())
        if cache_file.fingerprint_of(self.path, after) != self.source:
            raise SpanError(self.path, "it was rewritten meanwhile")


class _Unexpected(Exception):
    """The file is not shaped as this reader expects: read it whole."""


def scan(path: Path, max_bytes: int, *, chunk_bytes: int = CHUNK_BYTES) -> ScannedCache | None:
    """The cache with its transcripts as spans; None when it is not a string cache holding a
    `transcripts` object this reader can follow (or cannot be read at all: reading it whole
    then says why)."""
    try:
        handle = path.open("rb")
    except OSError:
        return None
    try:
        scanned = _scan(path, handle, max_bytes, chunk_bytes)
    except (OSError, DeskError, _Unexpected):
        scanned = None
    if scanned is None:
        handle.close()
    return scanned


def _scan(path: Path, handle: BufferedReader, max_bytes: int, chunk_bytes: int) -> ScannedCache | None:
    before = os.fstat(handle.fileno())
    if before.st_size > max_bytes:
        return None
    opening = cache_file.string_cache_start(handle.read(4096))
    closing = cache_file.closing_quote(handle, before.st_size) if opening is not None else None
    if opening is None or closing is None:
        return None
    member = _find(handle, opening, closing, _MEMBER, chunk_bytes)
    if member is None:
        return None
    first = member + len(_MEMBER)
    spans, after = _transcripts(handle, first, closing, chunk_bytes)
    # The skeleton: the string's content with the transcripts object replaced by a placeholder.
    handle.seek(opening)
    head = cache_file.unescape(handle, first - 1, path, chunk_bytes, None)
    handle.seek(after)
    tail = cache_file.unescape(handle, closing, path, chunk_bytes, None)
    skeleton = b"".join((head, _PLACEHOLDER, tail))
    middle = (len(head), len(head) + len(_PLACEHOLDER))
    del head, tail
    parsed = lazy_state(skeleton, inner=True)
    if parsed is None:
        return None
    state, _ = parsed
    # The placeholder must be what the state holds as its transcripts: the member found was
    # the state's own, and no later key of the same name replaced it.
    if list(state.get("transcripts") or ()) != [_PLACEHOLDER_KEY]:
        return None
    state["transcripts"] = spans
    scanned = ScannedCache(path, handle, before, state)
    scanned.minimal = (
        escaped_length(skeleton, 0, middle[0]) == first - 1 - opening
        and escaped_length(skeleton, middle[1], len(skeleton)) == closing - after
    )
    return scanned


def escaped_length(unescaped: bytes, start: int = 0, end: int | None = None) -> int:
    """How long `unescaped[start:end]` is once escaped again with `\\"` and `\\\\` alone: no
    escape of any other kind is shorter, so a text this long was escaped that way."""
    end = len(unescaped) if end is None else end
    return end - start + unescaped.count(b'"', start, end) + unescaped.count(b"\\", start, end)


def _find(handle: BufferedReader, start: int, end: int, needle: bytes, chunk_bytes: int) -> int | None:
    """The file offset of the first `needle` between `start` and `end`."""
    handle.seek(start)
    carried = b""
    at = start
    while at < end:
        piece = carried + handle.read(min(chunk_bytes, end - at))
        if len(piece) == len(carried):
            return None
        found = piece.find(needle)
        if found != -1:
            return at - len(carried) + found
        at += len(piece) - len(carried)
        carried = piece[-(len(needle) - 1) :]
    return None


def _transcripts(
    handle: BufferedReader, start: int, end: int, chunk_bytes: int
) -> tuple[dict[str, TranscriptSpan], int]:
    """The transcripts object's members from `start` (just after its `{`) as spans, and the
    file offset just after its closing `}`."""
    spans: dict[str, TranscriptSpan] = {}
    window = Window(handle, start, end, chunk_bytes)
    buf = window.buf
    window.want(0, _LOOKAHEAD)
    if buf[0:1] == b"}" and window.filled:
        return spans, start + 1
    i = 0
    while True:
        i = window.want(i, _LOOKAHEAD)
        key = _KEY.match(buf, i, window.filled)
        if key is None:
            raise _Unexpected
        name = key_text(bytes(key.group(1)))  # now: the buffer moves when more is read
        value = key.end() - 1
        if buf[value + 1 : value + 2] == b"]":
            stop = value + 2
        else:
            searched = value
            while (found := _END.search(buf, searched, window.filled)) is None:
                searched = max(value, window.filled - 8)
                moved = window.more(value)
                if moved < 0:
                    raise _Unexpected
                value, searched = value - moved, searched - moved
            stop = found.start() + 2
        if stop >= window.filled:
            raise _Unexpected
        with memoryview(buf) as view:
            digest = hashlib.sha256(view[value:stop]).digest()
        spans[name] = TranscriptSpan(window.base + value, stop - value, digest)
        if buf[stop] == 0x7D:  # "}": the last one
            return spans, window.base + stop + 1
        i = stop + 1  # after ","


class Window:
    """Part of the file in a reused buffer: `buf[:filled]` holds the bytes from offset `base`."""

    def __init__(self, handle: BufferedReader, start: int, end: int, chunk_bytes: int) -> None:
        self.handle = handle
        self.end = end
        self.chunk = chunk_bytes
        self.buf = bytearray(2 * chunk_bytes + _LOOKAHEAD)
        self.base = start
        self.filled = 0
        handle.seek(start)

    def more(self, keep: int) -> int:
        """Read more, keeping `buf[keep:]`; how far the kept bytes moved to the front (-1 at the end)."""
        if self.base + self.filled >= self.end:
            return -1
        if keep:
            kept = self.filled - keep
            self.buf[:kept] = self.buf[keep : self.filled]
            self.base += keep
            self.filled = kept
        wanted = min(self.chunk, self.end - (self.base + self.filled))
        if len(self.buf) < self.filled + wanted:  # one transcript longer than a chunk
            self.buf.extend(bytes(self.filled + wanted - len(self.buf)))
        with memoryview(self.buf) as view:
            n = self.handle.readinto(view[self.filled : self.filled + wanted])
        if not n:
            return -1
        self.filled += n
        return keep

    def want(self, at: int, size: int) -> int:
        """Make `size` bytes from `at` available when the file has them; `at` after any move."""
        while self.filled - at < size:
            moved = self.more(at)
            if moved < 0:
                break
            at -= moved
        return at


def key_text(escaped: bytes) -> str:
    """A transcript's key: no escapes at either level (the pattern allows none), so its bytes
    are its text, which must be UTF-8 without control characters to be valid JSON."""
    try:
        key = escaped.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _Unexpected from exc
    if _CONTROL.search(key):
        raise _Unexpected
    return key
