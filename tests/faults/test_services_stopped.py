"""Services deskmcp depends on stop in the middle of the users' calls, and start again.

PostgreSQL (the send journal of every user) is stopped while two users send keyed mail and started
again: the calls made meanwhile answer io_error at once and send nothing, the calls after the start
succeed, and nothing is lost or sent twice (each user's earlier send is still known to the journal,
and each retried send goes out once).

The SMTP capture is stopped while it holds a message it has not yet accepted: the send answers
that delivery is unknown, nothing was delivered, the journal keeps the send pending, and the same
key retried once the capture is back sends it once, with the same Message-ID."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from deskmcp.core.postgres import close_pools
from deskmcp.mail.server import Settings, create_server
from tests.helpers.faults import FaultFigures
from tests.helpers.mail import SinkHandler, SmtpSink, smtp_capture
from tests.helpers.network import free_port
from tests.helpers.postgres import StoppableCluster, fresh_database, stoppable_cluster
from tests.helpers.tool_calls import call, fail

pytest.importorskip("psycopg_pool")
pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

USERS = ("ann", "ben")


@pytest.fixture
def cluster() -> Iterator[StoppableCluster]:
    with stoppable_cluster() as running:
        try:
            yield running
        finally:
            close_pools()


@pytest.fixture
def smtp() -> Iterator[SmtpSink]:
    with smtp_capture() as sink:
        yield sink


def _user(tmp_path: Path, name: str, smtp: SmtpSink, database: str) -> Client:
    settings = Settings(
        workspace=tmp_path / name,
        address=f"{name}@corp.test",
        smtp_host=smtp.host,
        smtp_port=smtp.port,
        smtp_security="none",
        database_url=database,
    )
    return Client(create_server(settings))


def _mail(name: str, key: str) -> dict[str, Any]:
    return {
        "to": "team@example.org",
        "subject": f"{name} {key}",
        "body": f"From {name}.",
        "idempotency_key": f"{name}-{key}",
    }


async def test_postgresql_stopped_and_started_while_users_send(
    tmp_path: Path, cluster: StoppableCluster, smtp: SmtpSink, fault_figures: FaultFigures
) -> None:
    database = fresh_database(cluster.server)
    async with _user(tmp_path, USERS[0], smtp, database) as ann, _user(tmp_path, USERS[1], smtp, database) as ben:
        users = {"ann": ann, "ben": ben}
        with anyio.fail_after(120):  # a hang guard only
            first = {name: await call(c, "send_email", _mail(name, "before")) for name, c in users.items()}

            await anyio.to_thread.run_sync(cluster.stop)
            during: list[tuple[str, float]] = []
            for name, c in users.items():
                for _ in range(2):
                    began = time.monotonic()
                    error = await fail(c, "send_email", _mail(name, "during"))
                    during.append((error["error"], time.monotonic() - began))
                    assert error["error"] == "io_error", error
                    assert "nothing was sent" in error["message"], error

            await anyio.to_thread.run_sync(cluster.start)
            started = time.monotonic()
            after = {name: await call(c, "send_email", _mail(name, "during")) for name, c in users.items()}
            recovered = time.monotonic() - started
            again = {name: await call(c, "send_email", _mail(name, "before")) for name, c in users.items()}

    subjects = sorted(m.data.split(b"Subject: ", 1)[1].split(b"\r\n", 1)[0].decode() for m in smtp.messages)
    assert subjects == ["ann before", "ann during", "ben before", "ben during"]  # nothing lost, nothing twice
    for name in users:
        assert after[name]["duplicate"] is False
        assert again[name]["duplicate"] is True  # the journal kept what was sent before the stop
        assert again[name]["rfc_message_id"] == first[name]["rfc_message_id"]
    slowest = max(seconds for _, seconds in during)
    print(f"calls during the outage: {len(during)}, slowest answer {slowest:.2f} s; recovered after {recovered:.2f} s")
    fault_figures.record("calls during the outage", len(during))
    fault_figures.record("errors during the outage", ", ".join(sorted({code for code, _ in during})))
    fault_figures.record("slowest answer during the outage", round(slowest, 2), "s")
    fault_figures.record("first call after the start succeeded after", round(recovered, 2), "s")
    fault_figures.record("deliveries (4 sends asked once each)", len(smtp.messages))


class StallingHandler(SinkHandler):
    """Takes a message's data and stalls before answering, until the server is stopped."""

    def __init__(self, sink: SmtpSink) -> None:
        super().__init__(sink)
        self.holding = threading.Event()

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.holding.set()
        await asyncio.Event().wait()  # never answers: cancelled when the server stops
        raise AssertionError("unreachable")


async def test_the_smtp_server_stopped_mid_send_then_a_retry_sends_once(
    tmp_path: Path, fault_figures: FaultFigures
) -> None:
    sink = SmtpSink("127.0.0.1", free_port())
    stalling = StallingHandler(sink)
    with ExitStack() as capture:  # closed in the middle of the send
        capture.enter_context(smtp_capture(sink, stalling))
        settings = Settings(
            workspace=tmp_path / "ann", address="ann@corp.test", smtp_host=sink.host, smtp_port=sink.port,
            smtp_security="none",
        )  # fmt: skip
        mail = _mail("ann", "mid-send")
        answer: dict[str, Any] = {}
        async with Client(create_server(settings)) as c:

            async def send() -> None:
                answer.update(await fail(c, "send_email", mail))

            with anyio.fail_after(120):  # a hang guard only
                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(send)
                    await anyio.to_thread.run_sync(stalling.holding.wait)
                    stopped = time.monotonic()
                    await anyio.to_thread.run_sync(capture.close)
                answered = time.monotonic() - stopped
                assert sink.messages == []  # nothing delivered: the server never accepted it

                with smtp_capture(sink):  # the same address again
                    retried = await call(c, "send_email", mail)
                    again = await call(c, "send_email", mail)

    assert answer["error"] == "send_failed", answer
    assert "may or may not have been delivered" in answer["message"], answer
    assert "idempotency_key" in answer["message"], answer  # says how to retry without sending twice
    assert len(sink.messages) == 1
    assert again["duplicate"] is True and again["rfc_message_id"] == retried["rfc_message_id"]
    print(f"mid-send stop answered {answer['error']} after {answered:.2f} s: {answer['message']}")
    fault_figures.record("error when the SMTP server stopped mid-send", answer["error"])
    fault_figures.record("answered after the stop", round(answered, 2), "s")
    fault_figures.record("deliveries after the retry and one more", len(sink.messages))
