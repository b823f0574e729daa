"""A keyed send whose journal database cannot be reached: the call answers io_error at once (not
after the pool's wait), names the database but never its password, and nothing is sent. The
database is a loopback port that takes connections and never answers, or one that refuses them."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import anyio
import pytest

from deskmcp.core.postgres import close_pools
from tests.helpers.mail import SmtpSink
from tests.helpers.silent import silent_listener
from tests.helpers.tool_calls import Connect, fail

pytest.importorskip("psycopg_pool")
pytestmark = pytest.mark.anyio

PASSWORD = "hunter2-not-for-answers"


@pytest.fixture
def silent_port() -> Iterator[int]:
    with silent_listener() as port:
        yield port
    close_pools()


@pytest.fixture
def closed_port() -> Iterator[int]:
    with socket.socket() as held:  # bound, never listening: connecting is refused
        held.bind(("127.0.0.1", 0))
        yield held.getsockname()[1]
    close_pools()


async def _send_twice(connect: Connect, sink: SmtpSink, port: int) -> list[dict[str, object]]:
    url = f"postgresql://deskmcp:{PASSWORD}@127.0.0.1:{port}/journal"
    bodies = []
    async with connect(
        smtp_host=sink.host, smtp_port=sink.port, smtp_security="none", address="me@corp.test", database_url=url
    ) as c:
        for attempt in range(2):  # the first call opens the pool, the second finds it empty
            began = time.monotonic()
            with anyio.fail_after(30):  # a hang guard only
                bodies.append(
                    await fail(
                        c, "send_email", {"to": "you@example.org", "subject": "Hi", "body": "x", "idempotency_key": "k"}
                    )
                )
            print(f"attempt {attempt + 1}: answered in {time.monotonic() - began:.2f} s")
    return bodies


@pytest.mark.parametrize("which", ["silent", "refusing"])
async def test_a_keyed_send_with_its_journal_database_unreachable_is_an_io_error_naming_it(
    connect: Connect, smtp_sink: SmtpSink, silent_port: int, closed_port: int, which: str
) -> None:
    port = silent_port if which == "silent" else closed_port

    bodies = await _send_twice(connect, smtp_sink, port)

    for body in bodies:
        assert body["error"] == "io_error", body
        assert f"127.0.0.1:{port}/journal" in str(body["message"]), body
        assert body["details"] == {"database": f"127.0.0.1:{port}/journal"}
        assert PASSWORD not in str(body)
        assert "nothing was sent" in str(body["message"])
    reason = "no answer within" if which == "silent" else "refused"
    assert all(reason in str(b["message"]).lower() for b in bodies), bodies
    assert smtp_sink.messages == []
