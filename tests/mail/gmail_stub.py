"""A stand-in for the Gmail API at the HTTP layer: the calls a listing makes (messages.list,
messages.get with format=metadata, labels.list) and the batch endpoint that carries several
of them in one request. Used in-process as the `http` object under googleapiclient
(`StubHttp`), or served on loopback with a delay per request (`LoopbackGmail`, for the bench).
"""

from __future__ import annotations

import json
import threading
import time
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httplib2

GMAIL = "https://gmail.googleapis.com"
BOUNDARY = "batch_stub_boundary"


class FakeGmail:
    """A mailbox of `count` messages (m0 newest) answering Gmail API requests by path."""

    def __init__(self, count: int) -> None:
        self.ids = [f"m{i}" for i in range(count)]
        self.requests: list[tuple[str, str]] = []
        self.failing: set[str] = set()  # ids whose part of a batch answers 500
        self._lock = threading.Lock()

    def answer(self, method: str, target: str, body: bytes, content_type: str) -> tuple[int, str, bytes]:
        """(status, content type, body) for one HTTP request to `target` (path and query)."""
        with self._lock:
            self.requests.append((method, target))
        path = urlsplit(target).path
        if path == "/batch" or path.startswith("/batch/"):
            return 200, f"multipart/mixed; boundary={BOUNDARY}", self._batch(body, content_type)
        status, payload = self._single(method, target, in_batch=False)
        return status, "application/json", json.dumps(payload).encode()

    def _single(self, method: str, target: str, *, in_batch: bool) -> tuple[int, dict[str, Any]]:
        parts = urlsplit(target)
        path, query = parts.path, parse_qs(parts.query)
        if path.endswith("/labels"):
            labels = [{"id": "INBOX", "name": "INBOX", "type": "system"}, {"id": "L1", "name": "Paid", "type": "user"}]
            return 200, {"labels": labels}
        if path.endswith("/messages") and method == "GET":
            limit = int(query.get("maxResults", ["100"])[0])
            start = int(query.get("pageToken", ["0"])[0])
            page = self.ids[start : start + limit]
            out: dict[str, Any] = {"messages": [{"id": m, "threadId": f"t-{m}"} for m in page]}
            if start + limit < len(self.ids):
                out["nextPageToken"] = str(start + limit)
            return 200, out
        mid = path.rsplit("/", 1)[-1]
        if mid in self.ids and method == "GET":
            if in_batch and mid in self.failing:
                return 500, {"error": {"code": 500, "message": "backendError", "errors": [{"reason": "backendError"}]}}
            return 200, _metadata(mid, self.ids.index(mid))
        return 404, {"error": {"code": 404, "message": "Not Found", "errors": [{"reason": "notFound"}]}}

    def _batch(self, body: bytes, content_type: str) -> bytes:
        envelope = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + body)
        chunks: list[str] = []
        for part in envelope.iter_parts():
            inner = part.get_payload(decode=False)
            request_line = str(inner).lstrip().split("\n", 1)[0]
            method, target, _version = request_line.split(" ", 2)
            status, payload = self._single(method, target, in_batch=True)
            content_id = str(part["Content-ID"]).strip()
            chunks.append(
                f"--{BOUNDARY}\r\nContent-Type: application/http\r\nContent-ID: <response-{content_id[1:]}\r\n\r\n"
                f"HTTP/1.1 {status} {'OK' if status == 200 else 'Error'}\r\nContent-Type: application/json\r\n\r\n"
                f"{json.dumps(payload)}\r\n"
            )
        return ("".join(chunks) + f"--{BOUNDARY}--\r\n").encode()


def _metadata(mid: str, index: int) -> dict[str, Any]:
    headers = [
        {"name": "Subject", "value": f"Message {index}"},
        {"name": "From", "value": "Alice <alice@example.org>"},
        {"name": "To", "value": "me@gmail.test"},
        {"name": "Date", "value": "Thu, 19 Nov 2026 12:00:00 +0000"},
        {"name": "Message-ID", "value": f"<{mid}@mail.example.org>"},
    ]
    return {
        "id": mid,
        "threadId": f"t-{mid}",
        "labelIds": ["INBOX"],
        "snippet": f"snippet {index}",
        "payload": {"mimeType": "text/plain", "headers": headers},
    }


class StubHttp:
    """The `http` object under googleapiclient, answered by a `FakeGmail` in this process."""

    def __init__(self, gmail: FakeGmail) -> None:
        self.gmail = gmail

    def request(self, uri: str, method: str = "GET", body: Any = None, headers: Any = None, **_: Any) -> Any:
        target = uri.removeprefix(GMAIL)
        raw = body.encode() if isinstance(body, str) else (body or b"")
        content_type = dict(headers or {}).get("content-type", "")
        status, kind, content = self.gmail.answer(method, target, raw, content_type)
        return httplib2.Response({"status": str(status), "content-type": kind}), content


class LoopbackGmail:
    """A `FakeGmail` served over HTTP on 127.0.0.1, each request answered after `delay` seconds
    (a stand-in for the round trip to Google), and the `http` object that sends the client's
    requests there instead of to gmail.googleapis.com."""

    def __init__(self, gmail: FakeGmail, delay: float) -> None:
        self.gmail = gmail
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length", "0") or 0)
                body = self.rfile.read(length) if length else b""
                time.sleep(delay)  # the round trip being simulated, not a wait in a test
                status, kind, content = stub.gmail.answer(
                    self.command, self.path, body, self.headers.get("Content-Type", "")
                )
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            do_GET = do_POST = _serve

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def http(self) -> Any:
        real = httplib2.Http(timeout=30)
        base = self.base

        class Redirected:
            def request(self, uri: str, *args: Any, **kwargs: Any) -> Any:
                return real.request(uri.replace(GMAIL, base, 1), *args, **kwargs)

        return Redirected()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
