"""Turning a cache file into index changes, in this process or in a short-lived worker.

`changes` reads the cache, compares each meeting's fingerprint with what the index holds,
and yields a head (the file's fingerprint and format, folders, the keys to delete) followed
by one entry per new or changed meeting and a closing `done`. The service applies them in
one transaction, so an index is never left half old, half new.

A string cache is scanned with its transcripts left in the file (`cache_scan`): finding the
few meetings that changed takes a fraction of a second and little memory, so the server does
it itself. Many changes (a first index) are built by `python -m deskmcp.meetings.worker`,
in parallel with the server writing them, and a cache read whole costs a few hundred
megabytes: a process that exits gives that memory back to the operating system, which a
long-running server would not. The worker reads its request
(msgpack) on stdin and writes length-prefixed msgpack frames on stdout. It imports nothing
from the MCP SDK, so it starts quickly.
"""

from __future__ import annotations

import gc
import os
import struct
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Generator, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

import msgspec

from deskmcp.core.errors import DeskError, IOFailure, Timeout, from_payload
from deskmcp.meetings import cache_file, cache_layout, cache_scan
from deskmcp.meetings.cache_file import TranscriptSpan
from deskmcp.meetings.cache_layout import Layout
from deskmcp.meetings.cache_records import FolderInfo, RawMeeting, lazy_state, raw_meetings, tolerant_state
from deskmcp.meetings.cache_scan import ScannedCache
from deskmcp.meetings.entries import index_entry

Message = tuple[str, dict[str, Any]]
_LENGTH = struct.Struct(">I")
COMMAND = [sys.executable, "-m", "deskmcp.meetings.worker"]


def changes(
    path: Path,
    max_bytes: int,
    known: Mapping[str, str],
    *,
    after_chunk: Callable[[int], None] | None = None,
    scan: bool = True,
    whole: bool = True,
    layout: Layout | None = None,
    texts: bool = False,
    split: bool = False,
) -> Generator[Message]:
    """("head", ...), then ("entry", fields) per new or changed meeting, then ("done", {}),
    and after it, when the file follows one, ("layout", {"layout": bytes}).

    With `texts` (a first index in the background), the head is followed by every new or
    changed meeting's searchable text first (("texts", {"items": [...]}) messages, see
    `search_texts`, and ("texts_done", {"count": n})): searches can scan those while the
    entries are indexed. `split` (only in a process that runs no thread, the worker): half of
    those texts are made by a forked copy of the process meanwhile (`_texts`).

    With the `layout` of the version the index holds, a string cache is first compared with
    that version record by record (`cache_layout`). Else, or when that reader cannot follow
    the file, it is read with its transcripts left in the file (`cache_scan`); with `scan`
    False, or when that reader cannot follow it either, it is read whole. With `whole` False
    nothing is yielded then (the caller reads it whole elsewhere). A `SpanError` while the
    entries are built means: call again with `scan` False. The first two ways end with the
    new version's layout, after `done`: a scan makes it while the caller commits the entries.
    """
    delta = cache_layout.compare(path, max_bytes, layout) if scan and layout is not None and known else None
    if delta is not None:
        yield from _changes_of_delta(delta, path, known)
        return
    scanned = cache_scan.scan(path, max_bytes) if scan else None
    if scanned is not None:
        with scanned:
            yield from _changes_of_scan(scanned, path, known, texts=texts, split=split)
        return
    if not whole:
        return
    document = cache_file.read_document(path, max_bytes, after_chunk=after_chunk)
    state, fmt = lazy_state(document.data, inner=document.inner) or tolerant_state(
        document.data, path.name, inner=document.inner
    )
    raws, folders = raw_meetings(state)
    live: set[str] = set()
    pending = []
    for raw in raws:
        fingerprint = raw.fingerprint()
        if known.get(raw.id) == fingerprint:
            live.add(raw.id)
        elif raw.is_meeting():
            live.add(raw.id)
            pending.append((raw, fingerprint))
    yield _head(path, document.source, fmt, folders, known, live, pending)
    if texts:
        yield from _texts(pending, split=split)
    yield from _entries(pending)
    yield "done", {}


def _changes_of_scan(
    scanned: ScannedCache, path: Path, known: Mapping[str, str], *, texts: bool = False, split: bool = False
) -> Iterator[Message]:
    raws, folders = raw_meetings(scanned.state)
    live: set[str] = set()
    pending = _sorted(raws, known, live, scanned)
    # Transcripts no document takes must be valid JSON too.
    used = {raw.transcript.offset for raw in raws if isinstance(raw.transcript, TranscriptSpan)}
    for span in scanned.state["transcripts"].values():
        if span.offset not in used:
            scanned.read(span)
    yield _head(path, scanned.source, "string", folders, known, live, pending)
    if texts:
        yield from _texts(pending, scanned, split=split)
    yield from _entries(pending, scanned)
    scanned.check_unchanged()
    yield "done", {}
    layout = cache_layout.predicted(scanned, folders)
    if layout is not None:
        yield "layout", {"layout": layout.encode()}


def _changes_of_delta(delta: cache_layout.Delta, path: Path, known: Mapping[str, str]) -> Iterator[Message]:
    with delta.scanned as scanned:
        live = {key for key in delta.unchanged if key in known}  # as indexed from the same records
        pending = _sorted(delta.raws, known, live, scanned)
        yield _head(path, scanned.source, "string", delta.layout.folders, known, live, pending)
        yield from _entries(pending, scanned)
        scanned.check_unchanged()
    yield "done", {}
    yield "layout", {"layout": delta.layout.encode()}


def _sorted(
    raws: list[RawMeeting], known: Mapping[str, str], live: set[str], scanned: ScannedCache
) -> list[tuple[RawMeeting, str]]:
    """The meetings to index again (new or changed), with their fingerprints; the documents
    that stay indexed are added to `live`."""
    pending = []
    for raw in raws:
        fingerprint = raw.fingerprint()
        if known.get(raw.id) == fingerprint:
            live.add(raw.id)  # its spans were decoded whole when it was indexed
            continue
        if raw.is_meeting():
            live.add(raw.id)
            pending.append((raw, fingerprint))
        elif isinstance(raw.transcript, TranscriptSpan):
            scanned.read(raw.transcript)  # not indexed, but must be valid JSON all the same
    return pending


def _entries(pending: list[tuple[RawMeeting, str]], scanned: ScannedCache | None = None) -> Iterator[Message]:
    """An ("entry", fields) per changed meeting; a transcript left in the file is read from
    `scanned` first."""
    for raw, fingerprint in pending:
        if scanned is not None and isinstance(raw.transcript, TranscriptSpan):
            raw.transcript = scanned.read(raw.transcript)
        built = raw.for_index()
        raw.transcript = None  # its bytes go as soon as the entry is sent
        if built is not None:
            meeting, transcript, digest = built
            yield "entry", index_entry(meeting, transcript, digest, fingerprint)


TEXTS_BATCH = 500
"""Meetings per ("texts", ...) message."""
SPLIT_MIN = 2 * TEXTS_BATCH
"""Fewer meetings' texts than this are not worth a second process."""


def search_texts(raw: RawMeeting, transcript: Any) -> list[Any] | None:
    """What a search needs of one meeting before it is indexed: its key, its text fields in the
    index's order (title, participants, folders, notes, transcript, as `index_entry` makes
    them), the columns the filters read (start, platform, folders as [id, name]) and its
    summary's fields (participants' names, has_transcript). None when it is not a meeting."""
    piece = RawMeeting(raw.id, raw.doc, raw.meta, raw.panels, transcript, raw.folders)
    built = piece.for_index()
    if built is None:
        return None
    meeting, _, digest = built
    return [
        meeting.id,
        [
            meeting.title,
            " ".join(f"{p.name or ''} {p.email or ''}" for p in meeting.participants),
            " ".join(f.name for f in meeting.folders),
            meeting.notes,
            digest.text,
        ],
        meeting.start_ts,
        meeting.platform,
        [[f.id, f.name] for f in meeting.folders],
        [p.name or p.email or "" for p in meeting.participants],
        meeting.has_transcript,
    ]


def _text_batches(pending: list[tuple[RawMeeting, str]], scanned: ScannedCache | None) -> Iterator[list[list[Any]]]:
    """`search_texts` of every meeting of `pending`, TEXTS_BATCH at a time. A transcript left in
    the file is unescaped for this alone (not checked: its entry checks it, and a bad one sends
    the whole reading back)."""
    items: list[list[Any]] = []
    for raw, _ in pending:
        transcript = raw.transcript
        if scanned is not None and isinstance(transcript, TranscriptSpan):
            transcript = scanned.read_text(transcript)
        item = search_texts(raw, transcript)
        if item is None:
            continue
        items.append(item)
        if len(items) >= TEXTS_BATCH:
            yield items
            items = []
    if items:
        yield items


def _texts(
    pending: list[tuple[RawMeeting, str]], scanned: ScannedCache | None = None, *, split: bool = False
) -> Iterator[Message]:
    """("texts", {"items": [...]}) for every meeting of `pending`, then ("texts_done", {"count": n}).

    `split` (the worker process, which runs no thread of its own): the second half is made by a
    forked copy of this process on the other core meanwhile, and sent after the first."""
    count = 0
    half = len(pending) // 2 if split and hasattr(os, "fork") and len(pending) >= SPLIT_MIN else len(pending)
    helper = _Helper(pending[half:], scanned) if half < len(pending) else None
    for items in _text_batches(pending[:half], scanned):
        count += len(items)
        yield "texts", {"items": items}
    rest = helper.batches() if helper is not None else None
    if helper is not None and rest is None:  # the copy failed: made here instead
        rest = list(_text_batches(pending[half:], scanned))
    for items in rest or []:
        count += len(items)
        yield "texts", {"items": items}
    yield "texts_done", {"count": count}


class _Helper:
    """A forked copy of the worker making some meetings' texts; its batches arrive on a pipe,
    read by a thread as they come (so neither side waits on the other's buffer)."""

    def __init__(self, pending: list[tuple[RawMeeting, str]], scanned: ScannedCache | None) -> None:
        read_end, write_end = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the copy: write its batches, then leave without running any cleanup
            os.close(read_end)
            code = 0
            try:
                with os.fdopen(write_end, "wb") as out:
                    for items in _text_batches(pending, scanned):
                        payload = msgspec.msgpack.encode(items)
                        out.write(_LENGTH.pack(len(payload)) + payload)
            except BaseException:
                code = 1
            os._exit(code)
        os.close(write_end)
        self._pipe = os.fdopen(read_end, "rb")
        self._received: list[bytes] = []
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        with self._pipe:
            while len(header := self._pipe.read(_LENGTH.size)) == _LENGTH.size:
                self._received.append(self._pipe.read(_LENGTH.unpack(header)[0]))

    def batches(self) -> list[list[list[Any]]] | None:
        """Its batches once it ended; None when it failed."""
        self._thread.join()
        _, status = os.waitpid(self.pid, 0)
        if status != 0:
            return None
        try:
            return [msgspec.msgpack.decode(payload) for payload in self._received]
        except msgspec.DecodeError:
            return None


def _head(
    path: Path,
    source: str,
    fmt: str,
    folders: list[FolderInfo],
    known: Mapping[str, str],
    live: set[str],
    pending: list[tuple[RawMeeting, str]],
) -> Message:
    match = cache_file.VERSIONED_NAME.match(path.name)
    return (
        "head",
        {
            "source": source,
            "format": f"cache-v{match.group(1)} ({fmt})" if match else fmt,
            "folders": [
                {"id": f.id, "name": f.name, "description": f.description, "meetings": f.meeting_ids} for f in folders
            ],
            "deletes": [key for key in known if key not in live],
            "changed": len(pending),
            "unchanged": len(live) - len(pending),
        },
    )


# -- the worker process ----------------------------------------------------------------------


def _write(out: IO[bytes], encoder: msgspec.msgpack.Encoder, kind: str, body: dict[str, Any]) -> None:
    payload = encoder.encode((kind, body))
    out.write(_LENGTH.pack(len(payload)))
    out.write(payload)


def main() -> int:
    gc.disable()  # a short-lived process building millions of acyclic objects
    request = msgspec.msgpack.decode(sys.stdin.buffer.read())
    out = sys.stdout.buffer
    encoder = msgspec.msgpack.Encoder()
    try:
        stream = changes(
            Path(request["path"]),
            int(request["max_bytes"]),
            request["known"],
            scan=bool(request.get("scan", True)),
            texts=bool(request.get("texts", False)),
            split=True,
        )
        for kind, body in stream:
            _write(out, encoder, kind, body)
    except DeskError as exc:
        _write(out, encoder, "error", exc.to_dict())
    out.flush()
    return 0


# -- the server's side -----------------------------------------------------------------------


class WorkerRun:
    """One worker process, its messages read as they arrive. Use as a context manager: the
    process is killed and reaped on exit, whatever happened."""

    def __init__(
        self,
        path: Path,
        max_bytes: int,
        known: Mapping[str, str],
        *,
        command: list[str] | None = None,
        timeout: float = 300.0,
        scan: bool = True,
        texts: bool = False,
    ) -> None:
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed in __exit__
        self._timed_out = threading.Event()
        self.timeout = timeout
        try:
            self._proc = subprocess.Popen(
                command or COMMAND, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr
            )
        except OSError as exc:
            self._stderr.close()
            raise IOFailure(f"Could not start the cache reader: {exc}.") from exc
        self._timer = threading.Timer(timeout, self._expire)
        self._timer.daemon = True
        self._timer.start()
        request = msgspec.msgpack.encode(
            {"path": str(path), "max_bytes": max_bytes, "known": dict(known), "scan": scan, "texts": texts}
        )
        assert self._proc.stdin is not None and self._proc.stdout is not None
        try:
            self._proc.stdin.write(request)
            self._proc.stdin.close()
        except OSError:
            pass  # the process died already: reading says how
        self._out = self._proc.stdout

    def _expire(self) -> None:
        self._timed_out.set()
        self._proc.kill()

    def __enter__(self) -> WorkerRun:
        return self

    def __exit__(self, *_exc: object) -> None:
        self._timer.cancel()
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait()
        self._out.close()
        self._stderr.close()

    def _read(self, n: int) -> bytes | None:
        data = self._out.read(n)
        return data if len(data) == n else None

    def _failure(self) -> DeskError:
        code = self._proc.wait()
        self._stderr.seek(0)
        tail = self._stderr.read()[-2000:].decode("utf-8", errors="replace").strip()
        if self._timed_out.is_set():
            return Timeout(
                f"Reading the Granola cache took longer than {self.timeout:.0f} s and was stopped; "
                "the index was left as it was. Try again.",
                {"timeout_seconds": self.timeout},
            )
        return IOFailure(
            f"The cache reader stopped unexpectedly (exit code {code}); the index was left as it was. "
            "Try again; the server log has the details.",
            {"exit_code": code, "stderr": tail[-500:]},
        )

    def messages(self) -> Iterator[Message]:
        """Every message up to `done`, then the layout if one follows; raises the taxonomy's
        error on an error message or when the process ends, is killed or writes garbage before
        `done` (after it, that only means no layout)."""
        done = False
        while True:
            header = self._read(_LENGTH.size)
            body = self._read(_LENGTH.unpack(header)[0]) if header is not None else None
            try:
                if body is None:
                    raise self._failure()
                try:
                    kind, fields = msgspec.msgpack.decode(body)
                except (msgspec.DecodeError, ValueError, TypeError):
                    self._proc.kill()
                    raise self._failure() from None
                if kind == "error":
                    raise from_payload(fields)
            except DeskError:
                if done:
                    return
                raise
            yield kind, fields
            if kind == "layout":
                return
            done = done or kind == "done"


if __name__ == "__main__":
    sys.exit(main())
