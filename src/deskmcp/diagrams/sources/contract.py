"""The Source contract, and the semantics every source shares.

A source only knows how to enumerate the files under a folder and how to hand over one file's
bytes. Everything a tool promises on top of that (what `root`, `glob` and `recursive` mean,
the order, paging, bounded reads, line ranges, binary detection) is written once here, so it is
the same whichever backend answers.
"""

from __future__ import annotations

import functools
import io
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import BinaryIO, Protocol

from deskmcp.core.errors import BadRequest
from deskmcp.core.paths import split_relative
from deskmcp.diagrams.sources.encodings import MARK, REPLACEMENT, TextDecoder, sniff


@dataclass(frozen=True, slots=True)
class FileInfo:
    """One file of a source: its normalised path (forward slashes, relative to the source)."""

    path: str
    size: int | None = None


class Source(Protocol):
    """What a backend implements. Paths given to it are already validated and normalised."""

    kind: str
    label: str
    """Where the files come from, for messages (a folder, `owner/name@ref`, a repository URL)."""
    ref: str | None
    """The commit or branch read (None for a working folder)."""

    def walk(self, root: str, *, include_ignored: bool) -> Iterable[FileInfo]:
        """Every file under `root` ("" for the whole source), in any order. NotFound when `root`
        is not a folder of the source."""
        ...

    def open(self, path: str) -> tuple[BinaryIO, int | None]:
        """The file's bytes as a stream and its size if known. NotFound when it is missing,
        BadRequest when it is a folder."""
        ...


def normalise(user_path: str, *, allow_root: bool) -> str:
    """The canonical relative form of a user path ('' for the root), refusing escapes."""
    parts = split_relative(user_path)
    if not parts and not allow_root:
        raise BadRequest("A file path is required. Call list_files for valid paths.", {"path": user_path})
    return "/".join(parts)


# -- globs -------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=256)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """Compile a glob: `*` and `?` stay within one path segment, `**` spans folders (also none),
    `[abc]` and `{a,b}` are classes and alternatives. A pattern without `/` matches the file name
    at any depth (as `rg -g` and .gitignore do); one with `/` matches the path from `root`."""
    if not pattern or "\x00" in pattern:
        raise BadRequest("glob must be a non-empty pattern such as '**/*.py'.", {"glob": pattern})
    text = pattern.replace("\\", "/").removeprefix("./").lstrip("/")
    if "/" not in text:
        text = "**/" + text
    out: list[str] = []
    i = 0
    n = len(text)
    depth = 0
    while i < n:
        c = text[i]
        if c == "*":
            if text.startswith("**", i):
                at_start = i == 0 or text[i - 1] == "/"
                j = i + 2
                if at_start and (j == n or text[j] == "/"):
                    # '**/' matches zero or more whole folders; a trailing '**' matches everything
                    if j == n:
                        out.append(".*")
                        i = j
                    else:
                        out.append("(?:[^/]*/)*")
                        i = j + 1
                    continue
                out.append("[^/]*")
                i = j
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = text.find("]", i + 2 if text.startswith("[!", i) or text.startswith("[^", i) else i + 1)
            if end == -1:
                out.append(re.escape(c))
            else:
                body = text[i + 1 : end]
                if body.startswith(("!", "^")):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end
        elif c == "{":
            depth += 1
            out.append("(?:")
        elif c == "}" and depth:
            depth -= 1
            out.append(")")
        elif c == "," and depth:
            out.append("|")
        else:
            out.append(re.escape(c))
        i += 1
    if depth:
        raise BadRequest("glob has an unclosed '{'.", {"glob": pattern})
    try:
        return re.compile("".join(out) + r"\Z", re.DOTALL)
    except re.error as exc:
        raise BadRequest(f"glob is not a valid pattern: {exc}.", {"glob": pattern}) from exc


@dataclass(frozen=True, slots=True)
class Entry:
    """One line of a listing: a file, or (non-recursive listings) a sub-folder."""

    path: str
    type: str  # "file" | "dir"
    size: int | None = None


def select(files: Iterable[FileInfo], root: str, glob: str, recursive: bool) -> list[Entry]:
    """The listing every source returns: files under `root` matching `glob` (relative to
    `root`), sorted by path; non-recursive listings hold the direct files and sub-folders."""
    match_all = glob.strip() in ("**/*", "**", "*", "./**/*")
    matcher = glob_regex(glob)
    prefix = f"{root}/" if root else ""
    out: list[Entry] = []
    folders: set[str] = set()
    for info in files:
        path = info.path
        if prefix and not path.startswith(prefix):
            continue
        rel = path[len(prefix) :]
        if not recursive and "/" in rel:
            folder = rel.split("/", 1)[0]
            if folder not in folders and (match_all or matcher.match(folder)):
                folders.add(folder)
                out.append(Entry(prefix + folder, "dir"))
            continue
        if match_all or matcher.match(rel):
            out.append(Entry(path, "file", info.size))
    out.sort(key=lambda e: e.path)
    return out


# -- reading -----------------------------------------------------------------------------------

SNIFF_BYTES = 8192
"""The head of a file that decides whether it is text, and in which encoding (see `encodings`)."""
MAX_SCAN_BYTES = 256 * 1024 * 1024
"""A line range deep in a file is found by reading up to here, no further."""


@dataclass(frozen=True, slots=True)
class TextRead:
    text: str
    truncated: bool
    binary: bool
    start_line: int
    end_line: int | None
    """Last line returned (1-based), None when no text was returned."""
    eof: bool
    """The text reaches the end of the file."""
    encoding: str | None = None
    """How the bytes were decoded (None for a binary file)."""
    replaced: int = 0
    """Characters of `text` that are U+FFFD put for bytes that could not be decoded (or NUL)."""
    lines: int | None = None
    """Lines in the file, when the read went through to its end."""


def _chunks(stream: BinaryIO, head: bytes) -> Iterator[bytes]:
    if head:
        yield head
    seen = len(head)
    while seen < MAX_SCAN_BYTES:
        chunk = stream.read(1 << 16)
        if not chunk:
            return
        seen += len(chunk)
        yield chunk
    raise BadRequest(
        "The line range lies too deep in a very large file; read an earlier range.", {"limit_bytes": MAX_SCAN_BYTES}
    )


_LINE_ENDS = ("\n", "\r", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")
"""What `str.splitlines` ends a line at."""


def _pieces(stream: BinaryIO, head: bytes, decoder: TextDecoder) -> Iterator[tuple[str, bool]]:
    """The decoded text as pieces of lines, each with whether it ends its line. A line longer
    than a chunk comes in several pieces, so no line is ever gathered whole (a file without
    newlines costs what is read of it, not its length squared)."""
    held_cr = ""  # a "\r" at the end of a chunk may be the first half of "\r\n"
    for chunk in _chunks(stream, head):
        text = held_cr + decoder.decode(chunk)
        held_cr = ""
        if not text:
            continue
        parts = text.splitlines(keepends=True)
        last = parts.pop()
        yield from ((part, True) for part in parts)
        if last.endswith("\r"):
            if len(last) > 1:
                yield last[:-1], False
            held_cr = "\r"
        else:
            yield last, last.endswith(_LINE_ENDS)
    tail = held_cr + decoder.decode(b"", final=True)
    if tail:
        parts = tail.splitlines(keepends=True)
        yield from ((part, part.endswith(_LINE_ENDS)) for part in parts)


def _write(buf: io.StringIO, piece: str) -> int:
    """Write a piece with U+FFFD for each marked byte; how many there were."""
    marked = piece.count(MARK)
    buf.write(piece.replace(MARK, REPLACEMENT) if marked else piece)
    return marked


def read_text(stream: BinaryIO, max_chars: int, start_line: int = 1, end_line: int | None = None) -> TextRead:
    """Decode at most `max_chars` characters of lines `start_line`..`end_line` (1-based, inclusive).

    Reading stops as soon as the answer is complete, so a bounded read costs what it returns
    (plus the lines skipped before `start_line`)."""
    head = stream.read(SNIFF_BYTES)
    encoding, bom = sniff(head)
    if encoding is None:
        return TextRead("", False, True, start_line, None, False)
    decoder = TextDecoder(encoding)
    buf = io.StringIO()
    size = replaced = 0
    line_no = 1
    last_line: int | None = None
    ends = True  # whether the last piece read ended its line
    truncated = False
    eof = True
    for piece, ends in _pieces(stream, head[bom:], decoder):
        if line_no < start_line:
            line_no += ends
            continue
        if end_line is not None and line_no > end_line:
            eof = False
            break
        room = max_chars - size
        if len(piece) > room:
            if room:
                replaced += _write(buf, piece[:room])
                last_line = line_no
            truncated = True
            eof = False
            break
        replaced += _write(buf, piece)
        size += len(piece)
        if piece:
            last_line = line_no
        line_no += ends
    lines = line_no - 1 + (not ends) if eof else None
    return TextRead(buf.getvalue(), truncated, False, start_line, last_line, eof, decoder.encoding, replaced, lines)
