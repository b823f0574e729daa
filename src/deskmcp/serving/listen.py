"""Running the app under uvicorn: the socket bound before any server is built, the limits on
what a slow or idle client can hold (a whole request within `read_timeout`), TCP_NODELAY, and
the line saying where it listens.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from deskmcp.gateway import Composition

if TYPE_CHECKING:
    pass
from deskmcp.serving.app import create_app
from deskmcp.serving.options import HttpOptions

log = logging.getLogger("deskmcp.http")


def uvicorn_settings(options: HttpOptions) -> dict[str, Any]:
    """The uvicorn `Config` arguments that bound what a slow or idle client can hold (and send
    each response without waiting on Nagle's algorithm, see `read_timeout_protocol`).

    uvicorn's own X-Forwarded-* handling is off: it would believe any loopback peer by default;
    the app believes only `HttpOptions.trusted_proxies`."""
    return {
        "http": read_timeout_protocol(options.read_timeout),
        "timeout_keep_alive": options.keep_alive_timeout,
        "proxy_headers": False,
    }


def read_timeout_protocol(seconds: float) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol, closing a connection whose request (head and body) has not fully
    arrived `seconds` after the connection opened or the previous response ended.

    uvicorn has no such limit of its own: its keep-alive timer stops at the first byte received,
    so a client sending a header a byte at a time would hold a connection (and its memory) for ever.

    Each connection also gets TCP_NODELAY. asyncio sets it only on sockets created with
    `IPPROTO_TCP` named, which uvicorn's (and `bind`'s) are not; without it the body written after
    a response's head waited for the client's delayed ACK, about 40 ms on every request of a
    kept-alive connection.
    """
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class ReadTimeoutH11Protocol(H11Protocol):
        _read_deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            sock = transport.get_extra_info("socket")
            if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
                with suppress(OSError):
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            super().connection_made(transport)
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def handle_events(self) -> None:
            super().handle_events()
            if self.conn.their_state is not h11.IDLE and self.conn.their_state is not h11.SEND_BODY:
                self._disarm()  # the whole request is in (or the connection is done with)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and self.conn.their_state in (h11.IDLE, h11.SEND_BODY):
                self._arm()

        def _arm(self) -> None:
            self._disarm()
            self._read_deadline = self.loop.call_later(seconds, self._too_slow)

        def _disarm(self) -> None:
            if self._read_deadline is not None:
                self._read_deadline.cancel()
                self._read_deadline = None

        def _too_slow(self) -> None:
            self._read_deadline = None
            if not self.transport.is_closing():
                log.info("closing a connection whose request took over %g s to arrive", seconds)
                self.transport.close()

    return ReadTimeoutH11Protocol


def bind(host: str, port: int) -> socket.socket:
    """A TCP socket bound to (host, port), as uvicorn would bind it; raises OSError when that
    address cannot be had (`errno.EADDRINUSE`: the port is in use).

    Bound before any server is built, so a busy port is reported at once; the socket is then
    handed to uvicorn, so nothing can take the port in between."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        # As uvicorn does: a port whose last connections are in TIME_WAIT is free.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
    except OSError:
        sock.close()
        raise
    return sock


def serve(
    composition: Composition,
    options: HttpOptions,
    *,
    log_level: str = "warning",
    on_ready: Callable[[], None] | None = None,
    sock: socket.socket | None = None,
) -> None:
    """Run the app under uvicorn until interrupted; `on_ready` is called once it is listening.
    `sock` is the socket from `bind` (else uvicorn binds host and port itself)."""
    import uvicorn

    class AnnouncingServer(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.should_exit:
                return
            if sockets:  # uvicorn logs where it listens only for the sockets it binds itself
                host, port = sockets[0].getsockname()[:2]
                where = f"[{host}]" if ":" in host else host
                logging.getLogger("uvicorn.error").info("Uvicorn running on http://%s:%d", where, port)
            if on_ready is not None:
                on_ready()

    app = create_app(composition, options)
    config = uvicorn.Config(
        app, host=options.host, port=options.port, log_level=log_level.lower(), **uvicorn_settings(options)
    )
    AnnouncingServer(config).run(sockets=[sock] if sock is not None else None)
