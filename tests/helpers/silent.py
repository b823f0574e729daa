"""Servers that stop answering, on loopback: a listener that takes every connection and never says
a word, and a relay to a real server that can fall silent (a host gone quiet mid-session: its
connections stay open, nothing comes back)."""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def silent_listener() -> Iterator[int]:
    """A loopback port whose server accepts connections and never answers; yields the port. The
    accepted sockets are held open until the block ends."""
    server = socket.create_server(("127.0.0.1", 0), backlog=64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            held.append(conn)

    thread = threading.Thread(target=accept, name="silent-listener", daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join(timeout=5)
        server.close()
        for conn in held:
            conn.close()


class Relay:
    """Forwards loopback connections on `port` to `target` until `silence()`: from then on every
    connection, old and new, is kept open and nothing is passed either way. `speak()` undoes it
    for new connections."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.server = socket.create_server(("127.0.0.1", 0), backlog=64)
        self.server.setblocking(False)
        self.port: int = self.server.getsockname()[1]
        self.silent = threading.Event()
        self._stop = threading.Event()
        self._pairs: dict[socket.socket, socket.socket] = {}
        self._held: list[socket.socket] = []
        self._selector = selectors.DefaultSelector()
        self._selector.register(self.server, selectors.EVENT_READ)
        self._thread = threading.Thread(target=self._run, name="relay", daemon=True)
        self._thread.start()

    def silence(self) -> None:
        self.silent.set()

    def speak(self) -> None:
        self.silent.clear()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        for sock in [self.server, *self._pairs, *self._held]:
            with contextlib.suppress(OSError):
                sock.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            for key, _ in self._selector.select(timeout=0.05):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                if sock is self.server:
                    self._accept()
                elif not self.silent.is_set():
                    self._pass(sock)
            if self.silent.is_set():
                for sock in list(self._pairs):  # keep them open, stop reading them
                    with contextlib.suppress(KeyError, ValueError):
                        self._selector.unregister(sock)
                    self._held.append(sock)
                    del self._pairs[sock]

    def _accept(self) -> None:
        try:
            conn, _ = self.server.accept()
        except BlockingIOError:
            return
        if self.silent.is_set():
            self._held.append(conn)
            return
        upstream = socket.create_connection(self.target, timeout=5)
        for one, other in ((conn, upstream), (upstream, conn)):
            one.setblocking(True)
            self._pairs[one] = other
            self._selector.register(one, selectors.EVENT_READ)

    def _pass(self, sock: socket.socket) -> None:
        other = self._pairs.get(sock)
        if other is None:
            return
        try:
            data = sock.recv(65536)
        except OSError:
            data = b""
        if data:
            with contextlib.suppress(OSError):
                other.sendall(data)
            return
        for each in (sock, other):
            with contextlib.suppress(KeyError, ValueError):
                self._selector.unregister(each)
            self._pairs.pop(each, None)
            each.close()


@contextmanager
def relay(target_host: str, target_port: int) -> Iterator[Relay]:
    """A `Relay` to `target`, closed at the end of the block."""
    running = Relay(target_host, target_port)
    try:
        yield running
    finally:
        running.close()
