"""Reading one consistent version of Granola's cache file in as little memory as it allows.

A `cache-v3.json` is `{"cache": "<the whole state as an escaped JSON string>"}`. Decoding
that the obvious way holds the file, the decoded Python string and the parsed state at
once (well over a gigabyte for a heavy user's cache). Here the string is unescaped piece
by piece, straight from the file into one UTF-8 buffer: the file is never held whole, and
the buffer is the only copy of the state. Object forms (`cache-v4.json`, `cache-v6.json`)
are read into one buffer as they are.

The file is opened once and checked with `fstat` before and after reading: Granola rewrites
it all day, and a version changed under us is read again rather than indexed half old, half
new. The fingerprint returned is that of the version read.
"""

from __future__ import annotations

import mmap
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from io import BufferedReader
from pathlib import Path
from typing import Any

import orjson

from deskmcp.core.errors import DeskError, IOFailure, NotFound, ParseError, PermissionDenied

CHUNK_BYTES = 4 * 1024 * 1024
ATTEMPTS = 3
VERSIONED_NAME = re.compile(r"^cache-v(\d+)\.json$")
_STRING_CACHE = re.compile(rb'^\s*\{\s*"cache"\s*:\s*"')
_STRING_END = re.compile(rb'"\s*\}\s*$')


def _error(kind: type[DeskError], message: str, path: Path, **details: Any) -> DeskError:
    return kind(message, {"path": str(path), **details})


@dataclass
class CacheDocument:
    """The cache's JSON: the inner document of a string cache, else the whole file."""

    data: memoryview
    inner: bool
    """True when `data` is the unescaped inner document (`{"state": ...}`), not the file."""
    source: str
    """The fingerprint of the version read (see `fingerprint_of`)."""


@dataclass(frozen=True)
class TranscriptSpan:
    """One transcript as it stands, escaped, in a string cache: where, and a hash of its bytes
    (see `cache_scan`)."""

    offset: int
    length: int
    digest: bytes


def fingerprint_of(path: Path, st: os.stat_result) -> str:
    """What identifies one version of the cache file. The inode and ctime catch a file
    replaced within the same mtime tick at the same size."""
    return f"{path}|{st.st_ino}|{st.st_size}|{st.st_mtime_ns}|{st.st_ctime_ns}"


def fingerprint(path: Path) -> str:
    return fingerprint_of(path, path.stat())


def read_document(
    path: Path,
    max_bytes: int,
    *,
    chunk_bytes: int = CHUNK_BYTES,
    after_chunk: Callable[[int], None] | None = None,
) -> CacheDocument:
    """Read the cache file, retrying when it changes while being read.

    `after_chunk(n)` is called after the n-th chunk is read (progress, and tests that
    change the file mid-read).
    """
    for attempt in range(ATTEMPTS):
        document = _read_once(path, max_bytes, chunk_bytes, after_chunk)
        if document is not None:
            return document
        if attempt == ATTEMPTS - 1:
            break
    raise _error(
        ParseError,
        f"{path.name} kept changing while being read ({ATTEMPTS} attempts); Granola may be busy. Try again.",
        path,
        attempts=ATTEMPTS,
    )


def _open_errors(path: Path, exc: OSError) -> DeskError:
    name = path.name
    if isinstance(exc, FileNotFoundError):
        return _error(NotFound, f"{name} does not exist.", path)
    if isinstance(exc, PermissionError):
        return _error(PermissionDenied, f"{name} cannot be read: permission denied.", path)
    if isinstance(exc, IsADirectoryError):
        return _error(NotFound, f"{name} is a folder, not a file.", path)
    return _error(IOFailure, f"{name} could not be read: {exc.strerror}.", path)


def _read_once(
    path: Path, max_bytes: int, chunk_bytes: int, after_chunk: Callable[[int], None] | None
) -> CacheDocument | None:
    """One read; None when the file changed meanwhile."""
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise _open_errors(path, exc) from exc
    with handle:
        before = os.fstat(handle.fileno())
        if before.st_size > max_bytes:
            raise _error(
                IOFailure,
                f"{path.name} is {before.st_size:,} bytes, over the {max_bytes:,}-byte limit (GRANOLA_MAX_CACHE_MB).",
                path,
                size=before.st_size,
                limit=max_bytes,
            )
        try:
            opening = string_cache_start(handle.read(4096))
            closing = closing_quote(handle, before.st_size) if opening is not None else None
            if opening is not None and closing is not None:
                handle.seek(opening)
                data = unescape(handle, closing, path, chunk_bytes, after_chunk)
                inner = True
            else:
                handle.seek(0)
                data = _read_all(handle, before.st_size, chunk_bytes, after_chunk)
                inner = False
            after = os.fstat(handle.fileno())
        except OSError as exc:
            raise _open_errors(path, exc) from exc
    if fingerprint_of(path, before) != fingerprint_of(path, after):
        return None
    if len(data) < 4096 and not bytes(data).strip():
        raise _error(
            ParseError,
            f"{path.name} is empty. Granola may be writing it; try again, or check the Granola app.",
            path,
        )
    return CacheDocument(data, inner, fingerprint_of(path, before))


def string_cache_start(head: bytes) -> int | None:
    """Where the cache string's content starts, when the file's first bytes open one."""
    match = _STRING_CACHE.match(head)
    return match.end() if match is not None else None


def closing_quote(handle: BufferedReader, size: int) -> int | None:
    """Where the string's closing quote is, when the file ends with it and the object's brace."""
    start = max(0, size - 64)
    handle.seek(start)
    found = _STRING_END.search(handle.read(64))
    return start + found.start() if found else None


def _buffer(size: int) -> memoryview:
    """A writable buffer of `size` bytes whose pages become resident only when written
    (an anonymous map, not a zero-filled bytearray)."""
    return memoryview(mmap.mmap(-1, size)) if size else memoryview(bytearray())


def _read_all(
    handle: BufferedReader, size: int, chunk_bytes: int, after_chunk: Callable[[int], None] | None
) -> memoryview:
    data = _buffer(size)
    filled = chunks = 0
    while filled < size:
        n = handle.readinto(data[filled : filled + chunk_bytes])
        if not n:
            break
        filled += n
        chunks += 1
        if after_chunk is not None:
            after_chunk(chunks)
    return data[:filled]


def _is_high_surrogate(buf: bytes | bytearray, at: int) -> bool:
    """Whether `buf[at:at + 6]` reads `\\uD800`-`\\uDBFF`."""
    return (
        at >= 0
        and buf[at] == 0x5C
        and buf[at + 1 : at + 3].lower() == b"ud"
        and buf[at + 3 : at + 4].lower() in (b"8", b"9", b"a", b"b")
    )


def _run_start(buf: bytes | bytearray, at: int) -> int:
    """The first of the backslashes that end at `at`."""
    while at > 0 and buf[at - 1] == 0x5C:
        at -= 1
    return at


def safe_cut(buf: bytes | bytearray, end: int) -> int:
    """The largest cut at or before `end` that splits neither an escape sequence (a `\\uXXXX`
    surrogate pair included) nor a UTF-8 character.

    Every escape is at most 6 bytes, so one starting in the last 12 is moved to the next
    piece whole, with the backslashes before it (which pair up among themselves).
    """
    cut = end
    first = buf.find(b"\\", max(0, end - 12), end)
    if first != -1:
        cut = _run_start(buf, first)
        if _is_high_surrogate(buf, cut - 6) and (cut - 6 - _run_start(buf, cut - 6)) % 2 == 0:
            cut = _run_start(buf, cut - 6)
    return _utf8_cut(buf, cut)


def _utf8_cut(buf: bytes | bytearray, cut: int) -> int:
    """`cut`, moved back to the start of a UTF-8 character that `buf[:cut]` would split."""
    start = cut
    while start > 0 and cut - start < 3 and 0x80 <= buf[start - 1] < 0xC0:
        start -= 1
    if start > 0 and buf[start - 1] >= 0xC0:
        lead = buf[start - 1]
        length = 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
        if cut - (start - 1) < length:
            return start - 1
    return cut


def unescape(
    handle: BufferedReader, end: int, path: Path, chunk_bytes: int, after_chunk: Callable[[int], None] | None
) -> memoryview:
    """The string value's content (from the handle's position up to `end`, its closing quote),
    unescaped into UTF-8 one chunk at a time."""
    # Unescaped text is never longer than its escaped form: one buffer of that size, filled
    # in place, so it is never copied while growing.
    out = _buffer(end - handle.tell())
    filled = 0
    # The work buffer holds '"' + the bytes carried over + one chunk + room for a closing '"',
    # so each piece is decoded where it was read.
    work = bytearray(chunk_bytes + 32)
    work[0] = 0x22
    carried = 0
    remaining = end - handle.tell()
    chunks = 0
    while True:
        with memoryview(work) as view:
            n = handle.readinto(view[1 + carried : 1 + carried + min(chunk_bytes, remaining)]) if remaining else 0
        remaining -= n
        chunks += 1
        if after_chunk is not None and n:
            after_chunk(chunks)
        stop = 1 + carried + n
        last = remaining <= 0 or n == 0
        if last and remaining > 0:
            raise _error(ParseError, f"{path.name} ends inside the cache string: it may be truncated.", path)
        cut = stop if last else max(1, safe_cut(work, stop))
        tail = bytes(work[cut:stop])
        if cut > 1:
            work[cut] = 0x22
            try:
                with memoryview(work) as view:
                    text = orjson.loads(view[: cut + 1])
            except orjson.JSONDecodeError as exc:
                raise _error(
                    ParseError,
                    f"The cache string in {path.name} is not valid JSON ({exc}). It may be truncated; "
                    "reopen Granola to rewrite it.",
                    path,
                ) from exc
            encoded = text.encode("utf-8", errors="replace")
            out[filled : filled + len(encoded)] = encoded
            filled += len(encoded)
        if last:
            return out[:filled]
        work[1 : 1 + len(tail)] = tail
        carried = len(tail)
