"""kill -9 in the middle of a call: a replica behind haproxy while it sends a mail the person
confirmed, and a single `deskmcp serve` process while it writes a note, writes a workbook or
builds its first index. Nothing is sent twice or lost, no file is left half-written, and the next
start completes the index."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.helpers.faults import FaultFigures
from tests.helpers.haproxy import SKIP_REASON, Replica, balancer, haproxy_binary
from tests.helpers.mail import Received, SmtpSink
from tests.helpers.network import free_port
from tests.helpers.person import Person
from tests.helpers.postgres import fresh_database, postgres_cluster
from tests.helpers.processes import environment, write_meeting_cache

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

TOKEN = "fault-token-for-the-tests"
STATE_KEYS = "fault-request-state-key-0123456789abcdef"
MAIL = {"to": "eve@elsewhere.test", "subject": "Signed contract", "body": "The contract, signed."}


class HoldingCapture:
    """An aiosmtpd handler counting deliveries into `sink`; while `hold` is set, the next message's
    DATA phase is held (the whole message received, no answer yet) until its client goes away,
    when aiosmtpd cancels the handler and the message is not taken, as a server that never
    answered the final dot does not."""

    def __init__(self, sink: SmtpSink, name: str, holding: threading.Event) -> None:
        self.sink = sink
        self.name = name
        self.holding = holding
        self.hold = False
        self.held_from: str | None = None

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        if self.hold:
            self.hold = False
            self.held_from = self.name
            self.holding.set()
            await asyncio.Event().wait()  # until the client leaves (the handler is cancelled then)
        self.sink.messages.append(
            Received(envelope.mail_from, list(envelope.rcpt_tos), bytes(envelope.original_content))
        )
        return "250 OK"


@dataclass
class Cluster:
    base: str
    replicas: dict[str, Replica]
    sink: SmtpSink
    captures: dict[str, HoldingCapture]
    holding: threading.Event
    posted: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    """Headers and body of each POST to /mcp, in order."""

    def client(self, person: Person) -> tuple[httpx2.AsyncClient, Client]:
        async def record(request: httpx2.Request) -> None:
            if request.method == "POST":
                self.posted.append((dict(request.headers), request.content))

        http = httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60, event_hooks={"request": [record]}
        )
        transport = streamable_http_client(self.base + "/mcp", http_client=http)
        return http, Client(transport, mode="2026-07-28", elicitation_callback=person.answer)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    """Two `serve all --http --stateless` replicas behind haproxy, each with a workspace of its own
    (as on two hosts), sharing the request-state keys and a PostgreSQL database (send journal, spent
    confirmations); each sends through its own port of one SMTP capture."""
    if haproxy_binary() is None:
        pytest.skip(SKIP_REASON)
    from aiosmtpd.controller import Controller

    sink = SmtpSink("127.0.0.1", 0)
    holding = threading.Event()
    with ExitStack() as stack:
        database = fresh_database(stack.enter_context(postgres_cluster()))
        ports = {"r1": free_port(), "r2": free_port()}
        replicas: dict[str, Replica] = {}
        captures: dict[str, HoldingCapture] = {}
        for name, port in ports.items():
            captures[name] = HoldingCapture(sink, name, holding)
            controller = Controller(captures[name], hostname="127.0.0.1", port=free_port())
            controller.start()
            stack.callback(controller.stop)
            workspace = tmp_path / name
            write_meeting_cache(workspace / "granola")
            env = environment(
                workspace,
                DESKMCP_TOKEN=TOKEN,
                DESKMCP_STATE_KEYS=STATE_KEYS,
                DESKMCP_DATABASE_URL=database,
                MAIL_SMTP_HOST="127.0.0.1",
                MAIL_SMTP_PORT=str(controller.port),
                MAIL_SMTP_SECURITY="none",
                MAIL_ADDRESS="me@corp.test",
            )
            args = ["serve", "all", "--only", "mail", "--http", "--stateless", "--port", str(port)]
            args += ["--trusted-proxy", "127.0.0.1"]
            replicas[name] = Replica(args, env)
            stack.callback(replicas[name].stop)
        base = stack.enter_context(balancer(tmp_path, free_port(), ports))
        yield Cluster(base, replicas, sink, captures, holding)


def rpc_answer(response: httpx2.Response) -> dict[str, Any]:
    """The JSON-RPC response in an MCP answer (plain JSON, or the event stream's message)."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        for line in response.text.splitlines():
            if line.startswith("data:"):
                message = json.loads(line.removeprefix("data:"))
                if "result" in message or "error" in message:
                    return message
        raise AssertionError(f"no JSON-RPC answer in the stream: {response.text[:500]}")
    return response.json()


async def test_a_replica_killed_while_sending_a_confirmed_mail_leaves_it_delivered_once_by_the_other(
    cluster: Cluster, fault_figures: FaultFigures
) -> None:
    for capture in cluster.captures.values():
        capture.hold = True
    person = Person("accept")
    http, client = cluster.client(person)
    outcome: list[Any] = []
    killed_at = 0.0

    async def kill_the_sending_replica() -> None:
        nonlocal killed_at
        await anyio.to_thread.run_sync(cluster.holding.wait)
        [sending] = [c.name for c in cluster.captures.values() if c.held_from]
        for capture in cluster.captures.values():
            capture.hold = False
        cluster.replicas[sending].kill()
        killed_at = time.monotonic()

    try:
        async with http, client:
            with anyio.fail_after(90):
                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(kill_the_sending_replica)
                    outcome.append(await client.call_tool("send_email", MAIL))
    except Exception as exc:  # the connection to the killed replica broke: the client saw an error
        assert killed_at, exc
        outcome.append(exc)
    assert len(person.asked) == 1
    assert cluster.sink.messages == []  # the held message was not taken
    retried = False
    first = outcome[0]
    if isinstance(first, Exception) or first.is_error:
        # What a client does when the call carrying the person's answer broke off: it sends the
        # same request again (the same sealed state and answer), and haproxy routes it to the
        # replica still running.
        headers, body = cluster.posted[-1]
        assert b"requestState" in body
        async with httpx2.AsyncClient(timeout=60) as again:
            with anyio.fail_after(60):
                response = await again.post(cluster.base + "/mcp", content=body, headers=headers)
        answer = rpc_answer(response)
        assert "result" in answer, answer
        result = answer["result"]
        assert not result.get("isError"), result
        retried = True
        structured = result["structuredContent"]
    else:
        structured = first.structured_content
    recovered = time.monotonic() - killed_at
    assert structured is not None and structured["rfc_message_id"]
    assert [m.rcpt_tos for m in cluster.sink.messages] == [["eve@elsewhere.test"]]
    assert structured["rfc_message_id"].encode() in cluster.sink.messages[0].data
    fault_figures.record("deliveries", len(cluster.sink.messages))
    fault_figures.record("retried by the client", "yes" if retried else "no (haproxy redispatched)")
    fault_figures.record("kill to sent answer", round(recovered, 2), "s")
