"""A TCP relay on loopback in front of a server (Dovecot in the fault tests), to know when a call
is waiting on that server: `hold(marker)` passes on the next command containing `marker` and holds
back the server's answers to it, so the test can stop the server while the call is in flight.

When the server closes a connection (it stopped), the relay closes the client's too; while nothing
listens behind it, a new connection is closed at once, as a refused one would fail."""

from __future__ import annotations

import contextlib
import socket
import threading

from tests.helpers.network import free_port


class Relay:
    def __init__(self, port: int) -> None:
        self.target = port
        self.port = free_port()
        self.markers: tuple[bytes, ...] = ()
        self.in_flight = threading.Event()
        self._held: set[socket.socket] = set()
        self._listener = socket.create_server(("127.0.0.1", self.port))
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def hold(self, *markers: bytes) -> threading.Event:
        """Hold back the answers to the next command containing every one of `markers` (the
        command itself reaches the server); the event is set once it was sent."""
        self.in_flight.clear()
        self.markers = markers
        return self.in_flight

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            for each in self._open:
                with contextlib.suppress(OSError):
                    each.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:  # closed
                return
            try:
                server = socket.create_connection(("127.0.0.1", self.target), timeout=5)
            except OSError:  # nothing listens behind: the client's connection ends at once
                client.close()
                continue
            server.settimeout(None)
            with self._lock:
                self._open.update((client, server))
            threading.Thread(target=self._pump, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, False), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, from_client: bool) -> None:
        try:
            while data := source.recv(65536):
                if from_client and self.markers and all(m in data for m in self.markers):
                    self.markers = ()
                    self._held.add(source)
                    sink.sendall(data)
                    self.in_flight.set()
                    continue
                if not from_client and sink in self._held:
                    continue  # the answer to the held command never reaches the client
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for each in (source, sink):
                with contextlib.suppress(OSError):
                    each.shutdown(socket.SHUT_RDWR)
                with contextlib.suppress(OSError):
                    each.close()
