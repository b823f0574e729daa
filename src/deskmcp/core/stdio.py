"""MCP over stdio, read and written in the event loop when stdin and stdout are pipes or sockets.

The SDK's stdio transport reads every line and writes every message through a worker thread
(a file object wrapped by anyio): three thread hand-offs per call, about a millisecond of CPU
on a warm call that itself takes a few. When both standard streams are pipes or sockets (as
an MCP client starts a server), deskmcp instead waits on the descriptors in the event loop and
reads and writes them without blocking; the messages, their order and the SDK session
handling them are the same. Anything else (a terminal, a file, Windows) is served by the SDK's
transport as it is.

Either way, while the server runs, descriptor 0 reads the null device and descriptor 1 writes
to stderr, so a stray `print` or a child process cannot write into the protocol stream; the
wire is served from private duplicates, and both descriptors are put back at the end.
"""

from __future__ import annotations

import logging
import os
import stat
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

import anyio
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server

log = logging.getLogger(__name__)

READ_BYTES = 1 << 16


class LineReader:
    """The lines arriving on a non-blocking descriptor, as text (invalid UTF-8 replaced, as the
    SDK's reader does), each with its newline; the last one without, if the stream ends so."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._buffer = bytearray()
        self._searched = 0  # the buffer holds no newline before this

    def __aiter__(self) -> LineReader:
        return self

    async def __anext__(self) -> str:
        while True:
            end = self._buffer.find(b"\n", self._searched)
            if end >= 0:
                return self._take(end + 1)
            self._searched = len(self._buffer)
            await anyio.wait_readable(self._fd)
            try:
                data = os.read(self._fd, READ_BYTES)
            except (BlockingIOError, InterruptedError):
                continue
            if not data:
                if self._buffer:
                    return self._take(len(self._buffer))
                raise StopAsyncIteration
            self._buffer += data

    def _take(self, size: int) -> str:
        line = self._buffer[:size].decode("utf-8", errors="replace")
        del self._buffer[:size]
        self._searched = 0
        return line


class Writer:
    """Writes text to a non-blocking descriptor whole, waiting in the event loop while the
    reader at the other end is behind."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    async def write(self, text: str) -> None:
        data = memoryview(text.encode("utf-8"))
        while data:
            try:
                written = os.write(self._fd, data)
            except (BlockingIOError, InterruptedError):
                await anyio.wait_writable(self._fd)
                continue
            data = data[written:]

    async def flush(self) -> None:
        """Nothing is buffered."""


def pollable(fd: int) -> bool:
    """Whether `fd` is a pipe or a socket: what the event loop can wait on and what may be made
    non-blocking without changing a terminal or a file other programs share."""
    if sys.platform == "win32":
        return False
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


@asynccontextmanager
async def stdio_streams() -> AsyncIterator[tuple[Any, Any]]:
    """The read and write streams of an MCP session over this process's stdin and stdout."""
    if not (pollable(0) and pollable(1)):
        log.debug("stdio: served by the SDK's transport (stdin or stdout is not a pipe or socket)")
        async with stdio_server() as streams:
            yield streams
        return
    log.debug("stdio: read and written in the event loop")
    with _claimed(0) as wire_in, _claimed(1) as wire_out:
        async with stdio_server(LineReader(wire_in), Writer(wire_out)) as streams:  # type: ignore[arg-type]
            yield streams


async def serve(lowlevel: Server[Any]) -> None:
    """Run an MCP server's session over stdio until the client closes stdin."""
    async with stdio_streams() as (read, write):
        await lowlevel.run(read, write, lowlevel.create_initialization_options())


class _claimed:
    """A private, non-blocking duplicate of a standard descriptor, with the descriptor itself
    pointed at the null device (stdin) or stderr (stdout) until the end."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.private = -1

    def __enter__(self) -> int:
        import fcntl  # POSIX only, as the descriptors this is used for

        self.private = fcntl.fcntl(self.fd, fcntl.F_DUPFD_CLOEXEC, 3)
        try:
            aside = os.open(os.devnull, os.O_RDONLY) if self.fd == 0 else os.dup(2)
            try:
                os.dup2(aside, self.fd)
            finally:
                os.close(aside)
            os.set_blocking(self.private, False)
        except OSError:
            self.__exit__()
            raise
        return self.private

    def __exit__(self, *_exc: object) -> None:
        with suppress(OSError):
            os.set_blocking(self.private, True)  # the descriptor is shared with the client
        with suppress(OSError):
            os.dup2(self.private, self.fd)
        with suppress(OSError):
            os.close(self.private)
