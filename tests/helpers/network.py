"""Loopback for the tests: a free port, and an ASGI app served by a real uvicorn in a thread."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import uvicorn
from starlette.types import ASGIApp


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on at the time of asking."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ObservedServer(uvicorn.Server):
    """A uvicorn server that signals when it is listening."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = threading.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        self.ready.set()


@contextmanager
def serving(
    app: ASGIApp, *, startup_seconds: float = 30, port: int = 0, nodelay: bool = True, **config: Any
) -> Iterator[str]:
    """Run `app` under uvicorn on a loopback port in a thread (a free one unless `port` is given,
    for an app that must know its own port); yields the base URL.
    `config` goes to `uvicorn.Config` (e.g. `serving.listen.uvicorn_settings(options)`); `nodelay=False`
    listens as uvicorn and `deskmcp serve --http` do, without TCP_NODELAY on the listening socket."""
    # The socket is bound here and handed to uvicorn, so no other process can take the port between.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Connections accepted on it inherit TCP_NODELAY: a response's body is not held back until the
    # client acknowledges its head (about 40 ms per request on a kept-alive connection).
    if nodelay:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", port))
    port = sock.getsockname()[1]
    server = ObservedServer(uvicorn.Config(app, log_level="warning", lifespan="on", **config))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        if not server.ready.wait(startup_seconds) or not server.started:
            raise RuntimeError("uvicorn did not start")
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


Serving = Callable[..., AbstractContextManager[str]]
