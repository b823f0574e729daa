"""MCP over stdio read and written in the event loop: lines however the bytes arrive, messages
written whole to a slow reader, the standard descriptors kept off the wire, and the SDK's
transport where stdin is not a pipe."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from deskmcp.core.stdio import LineReader, Writer, pollable

pytestmark = pytest.mark.anyio

SERVER = """
import logging, os, sys
log_file = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND)
os.dup2(log_file, 2)
logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
from deskmcp.core.server import DeskServer

server = DeskServer("deskmcp-stdio-check")

@server.tool("shout")
def shout(text: str) -> str:
    print("stray print", flush=True)
    os.write(1, b"stray write\\n")
    return text.upper()

server.run("stdio")
"""


def feed(fd: int, pieces: list[bytes]) -> threading.Thread:
    def run() -> None:
        for piece in pieces:
            os.write(fd, piece)
            time.sleep(0.02)
        os.close(fd)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


async def test_lines_arrive_whole_however_the_bytes_are_split() -> None:
    read, write = os.pipe()
    os.set_blocking(read, False)
    long = b"x" * 300_000  # several reads, more than the pipe holds
    pieces = [b"ab", b"c\nd\ne\n", b'{"a":1}\n{"b":', b"2}\r\n", long[:100_000], long[100_000:] + b"\n", b"tail \xff"]
    thread = feed(write, pieces)
    try:
        with anyio.fail_after(20):
            lines = [line async for line in LineReader(read)]
    finally:
        thread.join()
        os.close(read)

    assert lines == ["abc\n", "d\n", "e\n", '{"a":1}\n', '{"b":2}\r\n', "x" * 300_000 + "\n", "tail \ufffd"]


async def test_a_message_larger_than_the_pipe_is_written_whole_while_the_loop_goes_on() -> None:
    read, write = os.pipe()
    os.set_blocking(write, False)
    text = "é" * 1_000_000  # 2 MB of UTF-8, many times what the pipe holds
    received = bytearray()

    def slow_reader() -> None:
        while chunk := os.read(read, 65536):
            received.extend(chunk)
            time.sleep(0.005)

    thread = threading.Thread(target=slow_reader)
    thread.start()
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await anyio.sleep(0.001)

    try:
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(tick)
                await Writer(write).write(text)
                tg.cancel_scope.cancel()
    finally:
        os.close(write)
        thread.join()
        os.close(read)

    assert bytes(received) == text.encode("utf-8")
    assert ticks > 1  # the loop ran other tasks while the reader was behind


def test_only_pipes_and_sockets_are_served_from_the_event_loop(tmp_path: Path) -> None:
    read, write = os.pipe()
    left, right = socket.socketpair()
    plain = tmp_path / "requests.jsonl"
    plain.write_text("", encoding="utf-8")
    try:
        with plain.open("rb") as file, open(os.devnull, "rb") as null:
            assert pollable(read) and pollable(write)
            assert pollable(left.fileno())
            assert not pollable(file.fileno())
            assert not pollable(null.fileno())
    finally:
        for fd in (read, write):
            os.close(fd)
        left.close()
        right.close()
    assert not pollable(write)  # closed


def script(tmp_path: Path) -> tuple[Path, Path]:
    path = tmp_path / "server.py"
    path.write_text(SERVER, encoding="utf-8")
    return path, tmp_path / "server.log"


async def test_security_output_written_to_stdout_while_serving_never_reaches_the_wire(tmp_path: Path) -> None:
    path, log = script(tmp_path)
    params = StdioServerParameters(command=sys.executable, args=[str(path), str(log)])

    with anyio.fail_after(60):
        async with Client(params) as client:
            answers = [await client.call_tool("shout", {"text": f"call {n}"}) for n in range(3)]

    assert [a.structured_content for a in answers] == [{"result": f"CALL {n}"} for n in range(3)]
    written = log.read_text(encoding="utf-8")
    assert written.count("stray print") == 3 and written.count("stray write") == 3
    assert "read and written in the event loop" in written


def test_a_server_whose_stdin_is_a_file_is_served_by_the_sdks_transport(tmp_path: Path) -> None:
    path, log = script(tmp_path)
    requests = tmp_path / "requests.jsonl"
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "file", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    requests.write_text("".join(json.dumps(m) + "\n" for m in messages), encoding="utf-8")

    with requests.open("rb") as stdin:
        done = subprocess.run(
            [sys.executable, str(path), str(log)], stdin=stdin, capture_output=True, timeout=60, check=True
        )

    # The SDK's session ends at the end of stdin, so only the handshake is sure to be answered.
    answers = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert answers[0]["id"] == 1
    assert answers[0]["result"]["serverInfo"]["name"] == "deskmcp-stdio-check"
    assert "served by the SDK's transport" in log.read_text(encoding="utf-8")
