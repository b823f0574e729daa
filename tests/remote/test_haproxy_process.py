"""Two `deskmcp serve all --http --stateless` replicas behind a real haproxy (Debian's), as
docs/deployment.md describes: requests spread over both, a send the person confirms on one replica
is finished by the other (shared request-state keys), a keyed send retried across replicas goes out
once (the send journal in a real PostgreSQL they share), health checks reach the token-protected
replicas, and a replica killed mid-sequence leaves the client carrying on through the other.

Each replica has a workspace of its own, as on two hosts: only the request-state keys and the
database are shared. The replicas, haproxy and PostgreSQL start once for the module; the kill comes
last, in the last test."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.helpers.haproxy import SKIP_REASON, Replica, haproxy_binary, replica_cluster
from tests.helpers.mail import SmtpSink, smtp_capture
from tests.helpers.person import Person
from tests.helpers.postgres import fresh_database, postgres_bin, postgres_cluster

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.anyio,
    pytest.mark.skipif(haproxy_binary() is None, reason=SKIP_REASON),
]

TOKEN = "replica-token-for-the-tests"
STATE_KEYS = "shared-request-state-key-0123456789abcdef"
CHEAP_TOOL = "granola.cache.status"
MAIL = {"to": "eve@elsewhere.test", "subject": "Q3 numbers", "body": "Figures attached."}


@dataclass
class Cluster:
    base: str
    replicas: dict[str, Replica]
    sink: SmtpSink
    database: str | None
    """The PostgreSQL the send journal is kept in (None: PostgreSQL is not installed)."""
    served_by: list[str] = field(default_factory=list)
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """(replica, JSON-RPC request) of each response."""

    def forget(self) -> None:
        self.served_by.clear()
        self.requests.clear()

    def client(self, mode: str = "legacy", person: Person | None = None) -> tuple[httpx2.AsyncClient, Client]:
        """An MCP client through haproxy; the replica behind each response goes to `served_by`."""

        async def record(response: httpx2.Response) -> None:
            self.served_by.append(response.headers.get("x-served-by", "?"))
            try:
                body = json.loads(response.request.content or b"null")
            except ValueError:
                body = None
            self.requests.append((self.served_by[-1], body if isinstance(body, dict) else {}))

        http = httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60, event_hooks={"response": [record]}
        )
        transport = streamable_http_client(self.base + "/mcp", http_client=http)
        return http, Client(transport, mode=mode, elicitation_callback=person.answer if person else None)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("replicas")
    with ExitStack() as stack:
        sink = stack.enter_context(smtp_capture())
        database = None
        if postgres_bin() is not None:
            database = fresh_database(stack.enter_context(postgres_cluster()))

        def env(name: str) -> dict[str, str]:
            return {
                "DESKMCP_TOKEN": TOKEN,
                "DESKMCP_STATE_KEYS": STATE_KEYS,
                "MAIL_SMTP_HOST": sink.host,
                "MAIL_SMTP_PORT": str(sink.port),
                "MAIL_SMTP_SECURITY": "none",
                "MAIL_ADDRESS": "me@corp.test",
                **({"DESKMCP_DATABASE_URL": database} if database else {}),
            }

        balanced = stack.enter_context(replica_cluster(root, "meetings,mail", env))
        yield Cluster(balanced.base, balanced.replicas, sink, database)


async def test_tool_calls_through_haproxy_spread_over_both_replicas(cluster: Cluster) -> None:
    cluster.forget()
    http, client = cluster.client()
    async with http, client:
        with anyio.fail_after(60):
            results = [await client.call_tool(CHEAP_TOOL, {}) for _ in range(6)]
    assert not any(r.is_error for r in results)
    assert set(cluster.served_by) == {"r1", "r2"}
    # Round robin: neither replica answered everything.
    assert 2 <= cluster.served_by.count("r1") <= len(cluster.served_by) - 2


async def test_health_checks_reach_replicas_that_require_a_token_and_others_are_refused(cluster: Cluster) -> None:
    async with httpx2.AsyncClient(timeout=30) as http:
        health = [await http.get(cluster.base + "/") for _ in range(2)]
        tools = await http.get(cluster.base + "/tools")
    assert [h.status_code for h in health] == [200, 200]
    assert {h.headers["x-served-by"] for h in health} == {"r1", "r2"}
    assert health[0].json()["status"] == "ok"
    assert tools.status_code == 401


async def test_a_send_the_person_confirms_through_haproxy_is_finished_by_the_other_replica(cluster: Cluster) -> None:
    cluster.sink.messages.clear()
    person = Person("accept")
    http, client = cluster.client(mode="2026-07-28", person=person)
    async with http, client:
        cluster.forget()
        with anyio.fail_after(60):
            result = await client.call_tool("send_email", {**MAIL, "subject": "Confirmed across replicas"})
    assert not result.is_error, result.content
    assert len(person.asked) == 1
    # The call that asked and its retry carrying the answer and the sealed state: one on each replica.
    calls = [(served, body["params"]) for served, body in cluster.requests if body.get("method") == "tools/call"]
    assert len(calls) == 2
    (asked_on, first), (finished_on, retry) = calls
    assert "requestState" not in first and retry.get("requestState")
    assert {asked_on, finished_on} == {"r1", "r2"}
    assert [m.rcpt_tos for m in cluster.sink.messages] == [["eve@elsewhere.test"]]


async def test_a_keyed_send_retried_on_the_other_replica_is_sent_once(cluster: Cluster) -> None:
    if cluster.database is None:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql); .ci/run installs it")
    cluster.sink.messages.clear()
    args = {**MAIL, "subject": "Sent once", "idempotency_key": "retry-across-replicas-1"}
    # A client of protocol 2026-07-28 that cannot ask the person: stateless replicas know that
    # from the call itself (an older client would be refused, as they cannot know what it declared).
    http, client = cluster.client(mode="2026-07-28")
    async with http, client:
        cluster.forget()
        with anyio.fail_after(60):
            first = await client.call_tool("send_email", args)
    [first_on] = [served for served, body in cluster.requests if body.get("method") == "tools/call"]
    # The retry, as a program would send it after a lost answer: through the tool API, once the
    # round robin has come back to the replica that sent, so that it reaches the other one.
    async with httpx2.AsyncClient(base_url=cluster.base, headers={"Authorization": f"Bearer {TOKEN}"}) as api:
        with anyio.fail_after(60):
            for _ in range(4):
                if (await api.get("/")).headers["x-served-by"] == first_on:
                    break
            retried = await api.post("/api/tools/send_email", json=args)

    assert not first.is_error, first.content
    assert retried.status_code == 200, retried.text
    assert retried.headers["x-served-by"] != first_on
    assert retried.json()["duplicate"] is True
    assert retried.json()["rfc_message_id"] == first.structured_content["rfc_message_id"]  # type: ignore[index]
    assert len(cluster.sink.messages) == 1


async def test_a_replica_killed_mid_sequence_leaves_the_client_carrying_on_through_the_other(
    cluster: Cluster,
) -> None:
    http, client = cluster.client()
    answers: list[Any] = []
    async with http, client:
        with anyio.fail_after(120):
            for i in itertools.count():
                if i == 3:
                    cluster.replicas["r1"].kill()
                    cluster.forget()
                answers.append(await client.call_tool(CHEAP_TOOL, {}))
                if i == 9:
                    break
    assert len(answers) == 10
    assert not any(a.is_error for a in answers)
    assert set(cluster.served_by) == {"r2"}
