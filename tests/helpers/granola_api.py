"""A loopback stand-in for Granola's public API, written from its published reference.

Sources, field by field (docs.granola.ai, API reference, read 2026-11):

- `GET /v1/notes` ("List notes"): query `created_before`, `created_after`, `updated_after`
  (dates or date-times), `cursor`, `page_size` (integer, default 10, 1 <= x <= 30). Answers
  `{"notes": [...], "hasMore": bool, "cursor": str | null}`, all three required; each listed
  note holds `id`, `object` ("note"), `title`, `owner` `{name, email}`, `created_at`,
  `updated_at`. Newest first.
- `GET /v1/notes/{note_id}` ("Get note"): `note_id` matches `^not_[a-zA-Z0-9]{14}$`; query
  `include` = `transcript` adds the transcript. Answers the note: `id`, `object`, `title`,
  `owner`, `created_at`, `updated_at`, `web_url`, `calendar_event` `{event_title, invitees:
  [{email}], organiser, calendar_event_id, scheduled_start_time, scheduled_end_time}`,
  `attendees` `[{name, email}]`, `folder_membership` `[{id, object: "folder", name}]`,
  `summary_text`, `summary_markdown`, and with `include=transcript` `transcript`
  `[{speaker: {source: "microphone" | "speaker", diarization_label?}, text, start_time,
  end_time}]`. 400 bad request, 401 "Unauthorized - Invalid API key", 404 not found.
- Authentication: `Authorization: Bearer <key>`.
- Rate limits ("Rate limits"): 25 requests per 5 seconds in a burst, 5 per second sustained,
  then 429 with `Retry-After`. Enforced here as a token bucket when `rate` is set.

Compared with a third-party reading of the same API: Airbyte's Granola connector reference
(docs.airbyte.com, "Granola full reference") lists the same note fields (id, object, title,
owner, created_at, calendar_event, attendees [name, email], folder_membership [id, object,
name], summary_text, summary_markdown, transcript [speaker, text, start_time, end_time]) and
the listing's cursor and has-more flag. (arcade-granola's models could not be found to compare
with.) Where the reference is silent, the stub chooses and says so: the cursor is opaque base64
of an offset; a 403 (a plan without API access) answers `{"message": ...}`.

Faults the tests ask for: 429 with `Retry-After`, 5xx, a page or a note that is not JSON, a
note deleted between the listing and its fetch, a forbidden key.
"""

from __future__ import annotations

import base64
import json
import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

KEY = "grn_stubkey0123456789"
SUMMARY_FIELDS = ("id", "object", "title", "owner", "created_at", "updated_at")


@dataclass
class Fault:
    """Answer the next `times` requests of `kind` ("list", "get" or a note id) with `status`
    (and `Retry-After` when set), or with a body that is not JSON (`status` 200, `garbled`)."""

    kind: str
    status: int = 500
    retry_after: float | None = None
    garbled: bool = False
    times: int = 1
    skip: int = 0
    """Let this many matching requests through first."""


def _when(value: str) -> datetime:
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


@dataclass
class GranolaStub:
    """The state the server answers from; tests change it between syncs."""

    notes: dict[str, dict[str, Any]] = field(default_factory=dict)
    key: str = KEY
    forbidden: bool = False
    rate: float | None = None
    """Scale of the published rate limits to enforce (1.0: as published); None: none."""
    faults: list[Fault] = field(default_factory=list)
    delete_when_listed: set[str] = field(default_factory=set)
    hits: Counter[str] = field(default_factory=Counter)
    listings: list[dict[str, str]] = field(default_factory=list)
    """The query of every listing request answered (not rate limited)."""
    on_get: Callable[[str], None] | None = None
    url: str = ""
    rate_limited: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    _tokens: float = 25.0
    _stamp: float = field(default_factory=time.monotonic)

    def reset(self, notes: list[dict[str, Any]] | None = None, *, rate: float | None = None) -> None:
        with self.lock:
            self.notes = {n["id"]: n for n in notes or []}
            self.forbidden = False
            self.rate = rate
            self.faults = []
            self.delete_when_listed = set()
            self.hits = Counter()
            self.listings = []
            self.on_get = None
            self.rate_limited = 0
            self._tokens, self._stamp = 25.0, time.monotonic()

    def put(self, note: dict[str, Any]) -> None:
        with self.lock:
            self.notes[note["id"]] = note

    def remove(self, note_id: str) -> None:
        with self.lock:
            self.notes.pop(note_id, None)

    def _take_token(self) -> float | None:
        """None when a request may go, else the seconds until it may."""
        if self.rate is None:
            return None
        per_second = 5.0 * self.rate
        now = time.monotonic()
        self._tokens = min(25.0, self._tokens + (now - self._stamp) * per_second)
        self._stamp = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return None
        return (1.0 - self._tokens) / per_second

    def _fault(self, kinds: tuple[str, ...]) -> Fault | None:
        for fault in self.faults:
            if fault.kind in kinds and fault.times > 0:
                if fault.skip > 0:
                    fault.skip -= 1
                    continue
                fault.times -= 1
                return fault
        return None

    def answer(self, method: str, target: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        parts = urlsplit(target)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        with self.lock:
            if method != "GET":
                return _json(405, {"message": "Method not allowed"})
            if headers.get("authorization") != f"Bearer {self.key}":
                return _json(401, {"message": "Unauthorized - Invalid API key"})
            if self.forbidden:
                return _json(403, {"message": "API access is not available on this plan"})
            wait = self._take_token()
            if wait is not None:
                self.rate_limited += 1
                status, head, body = _json(429, {"message": "Too many requests"})
                head["Retry-After"] = str(max(1, math.ceil(wait)))
                return status, head, body
            if parts.path == "/v1/notes":
                self.hits["list"] += 1
                self.listings.append(query)
                return self._list(query)
            if parts.path.startswith("/v1/notes/"):
                note_id = parts.path.removeprefix("/v1/notes/")
                self.hits["get"] += 1
                self.hits[note_id] += 1
                hook = self.on_get
        if parts.path.startswith("/v1/notes/"):
            if hook is not None:
                hook(note_id)
            with self.lock:
                return self._get(note_id, query)
        return _json(404, {"message": "Not found"})

    def _list(self, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        fault = self._fault(("list",))
        if fault is not None:
            return _fault_answer(fault)
        try:
            size = int(query.get("page_size", "10"))
            offset = int(base64.urlsafe_b64decode(query["cursor"]).decode()) if "cursor" in query else 0
            bounds = {k: _when(query[k]) for k in ("created_before", "created_after", "updated_after") if k in query}
        except (ValueError, KeyError):
            return _json(400, {"message": "Bad request"})
        if not 1 <= size <= 30:
            return _json(400, {"message": "page_size must be between 1 and 30"})
        chosen = [
            n
            for n in self.notes.values()
            if ("created_before" not in bounds or _when(n["created_at"]) < bounds["created_before"])
            and ("created_after" not in bounds or _when(n["created_at"]) > bounds["created_after"])
            and ("updated_after" not in bounds or _when(n["updated_at"]) > bounds["updated_after"])
        ]
        chosen.sort(key=lambda n: (n["created_at"], n["id"]), reverse=True)
        page = chosen[offset : offset + size]
        more = offset + size < len(chosen)
        for note in page:
            if note["id"] in self.delete_when_listed:
                self.notes.pop(note["id"], None)
        return _json(
            200,
            {
                "notes": [{k: n.get(k) for k in SUMMARY_FIELDS} for n in page],
                "hasMore": more,
                "cursor": base64.urlsafe_b64encode(str(offset + size).encode()).decode() if more else None,
            },
        )

    def _get(self, note_id: str, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        fault = self._fault(("get", note_id))
        if fault is not None:
            return _fault_answer(fault)
        note = self.notes.get(note_id)
        if note is None:
            return _json(404, {"message": "Not found"})
        if query.get("include") not in (None, "transcript"):
            return _json(400, {"message": "Bad request"})
        body = dict(note)
        if query.get("include") != "transcript":
            body.pop("transcript", None)
        return _json(200, body)


def _json(status: int, body: object) -> tuple[int, dict[str, str], bytes]:
    return status, {"Content-Type": "application/json"}, json.dumps(body).encode()


def _fault_answer(fault: Fault) -> tuple[int, dict[str, str], bytes]:
    if fault.garbled:
        return 200, {"Content-Type": "application/json"}, b'{"notes": [{"id": "not_'
    status, head, body = _json(fault.status, {"message": "stub fault"})
    if fault.retry_after is not None:
        head["Retry-After"] = str(fault.retry_after)
    return status, head, body


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self._answer()

    def _answer(self) -> None:
        headers = {k.lower(): v for k, v in self.headers.items()}
        status, head, body = self.server.stub.answer(self.command, self.path, headers)
        self.send_response(status)
        for name, value in head.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, stub: GranolaStub) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.stub = stub


@contextmanager
def granola_api(notes: list[dict[str, Any]] | None = None, *, rate: float | None = None) -> Iterator[GranolaStub]:
    """A stub serving `notes` on a free loopback port, stopped on exit."""
    stub = GranolaStub()
    stub.reset(notes, rate=rate)
    server = _Server(stub)
    stub.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, name="granola-api-stub", daemon=True)
    thread.start()
    try:
        yield stub
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
