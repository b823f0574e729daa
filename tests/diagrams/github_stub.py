"""A small stand-in for the GitHub REST API on loopback, answering from a table the test fills."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    hold: bool = False
    """Wait until the stub is released before answering (a slow server)."""


@dataclass
class Seen:
    path: str
    query: str
    headers: dict[str, str]


class GitHubStub:
    def __init__(self, prefix: str = "/api/v3") -> None:
        self.prefix = prefix
        self.routes: dict[str, list[Reply]] = {}
        self.seen: list[Seen] = []
        self.release = threading.Event()
        self.url = ""

    def route(self, path: str, *replies: Reply) -> None:
        """Answer `path` (with its query string, if any) with `replies` in turn; the last one repeats."""
        self.routes[path] = list(replies)

    def reset(self) -> None:
        self.routes.clear()
        self.seen.clear()

    def answer(self, handler: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(handler.path)
        path = parts.path.removeprefix(self.prefix)
        self.seen.append(Seen(path, parts.query, {k.lower(): v for k, v in handler.headers.items()}))
        replies = self.routes.get(f"{path}?{parts.query}" if parts.query else path) or self.routes.get(path)
        if not replies:
            reply = Reply(404, {"message": "Not Found"})
        else:
            reply = replies.pop(0) if len(replies) > 1 else replies[0]
        if reply.hold:
            self.release.wait(30)
        if isinstance(reply.body, bytes):
            data, kind = reply.body, "application/octet-stream"
        elif isinstance(reply.body, str):
            data, kind = reply.body.encode(), "text/plain"
        else:
            data, kind = json.dumps(reply.body).encode(), "application/json"
        try:
            handler.send_response(reply.status)
            handler.send_header("Content-Type", kind)
            handler.send_header("Content-Length", str(len(data)))
            for name, value in reply.headers.items():
                handler.send_header(name, value)
            handler.end_headers()
            handler.wfile.write(data)
        except OSError:
            pass  # the client gave up (timeout test)


@contextmanager
def serve(stub: GitHubStub) -> Iterator[GitHubStub]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            stub.answer(self)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    stub.url = f"http://127.0.0.1:{server.server_address[1]}{stub.prefix}"
    try:
        yield stub
    finally:
        stub.release.set()
        server.shutdown()
        server.server_close()
