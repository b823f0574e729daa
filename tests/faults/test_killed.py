"""kill -9 in the middle of a call: a replica behind haproxy while it sends a mail the person
confirmed, and a single `deskmcp serve` process while it writes a note, writes a workbook or
builds its first index. Nothing is sent twice or lost, no file is left half-written, and the next
start completes the index."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import threading
import time
import zipfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.helpers.faults import FaultFigures
from tests.helpers.haproxy import SKIP_REASON, Replica, haproxy_binary, replica_cluster
from tests.helpers.mail import Received, SmtpSink, smtp_capture
from tests.helpers.network import free_port
from tests.helpers.person import Person
from tests.helpers.postgres import fresh_database, postgres_cluster
from tests.helpers.processes import environment

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

TOKEN = "fault-token-for-the-tests"
STATE_KEYS = "fault-request-state-key-0123456789abcdef"
MAIL = {"to": "eve@elsewhere.test", "subject": "Signed contract", "body": "The contract, signed."}


class HoldingCapture:
    """An aiosmtpd handler counting deliveries into `sink`; while `hold` is set, the next message's
    DATA phase is held (the whole message received, no answer yet) until its client goes away,
    when aiosmtpd cancels the handler. Then the message is not taken, as a server that never
    answered the final dot does not; or, with `take_held`, it was taken already, as a mail server
    that queued the message but whose answer never reached the sender."""

    def __init__(self, sink: SmtpSink, name: str, holding: threading.Event, *, take_held: bool = False) -> None:
        self.sink = sink
        self.name = name
        self.holding = holding
        self.take_held = take_held
        self.hold = False
        self.held_from: str | None = None
        self.taken = 0

    def take(self, envelope: Any) -> None:
        self.sink.messages.append(
            Received(envelope.mail_from, list(envelope.rcpt_tos), bytes(envelope.original_content))
        )
        self.taken += 1

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        if self.hold:
            self.hold = False
            self.held_from = self.name
            if self.take_held:
                self.take(envelope)
            self.holding.set()
            await asyncio.Event().wait()  # until the client leaves (the handler is cancelled then)
        self.take(envelope)
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

    async def send_and_kill(self, http: httpx2.AsyncClient, client: Client) -> tuple[Any, float]:
        """Call send_email through `client` and kill -9 the replica sending it once its capture
        holds the message (the other capture holds nothing more). The call's result, or the
        exception it broke with, and when the kill came (`time.monotonic()`)."""
        for capture in self.captures.values():
            capture.hold = True
        outcome: list[Any] = []
        killed_at = 0.0

        async def kill_the_sending_replica() -> None:
            nonlocal killed_at
            await anyio.to_thread.run_sync(self.holding.wait)
            [sending] = [c.name for c in self.captures.values() if c.held_from]
            for capture in self.captures.values():
                capture.hold = False
            self.replicas[sending].kill()
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
        return outcome[0], killed_at


@contextmanager
def mail_cluster(
    root: Path, database: str | None, take_held: bool = False, buffer_requests: bool = False, **extra: str
) -> Iterator[Cluster]:
    """Two `serve all --only mail --http --stateless` replicas behind haproxy, each with a workspace
    of its own (as on two hosts), sharing the request-state keys and `database` (send journal,
    spent confirmations) when given; each sends through its own port of one SMTP capture."""
    if haproxy_binary() is None:
        pytest.skip(SKIP_REASON)
    sink = SmtpSink("127.0.0.1", 0)
    holding = threading.Event()
    captures = {name: HoldingCapture(sink, name, holding, take_held=take_held) for name in ("r1", "r2")}
    with ExitStack() as stack:
        ports = {
            name: stack.enter_context(smtp_capture(SmtpSink("127.0.0.1", free_port()), capture)).port
            for name, capture in captures.items()
        }

        def env(name: str) -> dict[str, str]:
            return {
                "DESKMCP_TOKEN": TOKEN,
                "DESKMCP_STATE_KEYS": STATE_KEYS,
                **({"DESKMCP_DATABASE_URL": database} if database else {}),
                "MAIL_SMTP_HOST": "127.0.0.1",
                "MAIL_SMTP_PORT": str(ports[name]),
                "MAIL_SMTP_SECURITY": "none",
                "MAIL_ADDRESS": "me@corp.test",
                **extra,
            }

        balanced = stack.enter_context(replica_cluster(root, "mail", env, buffer_requests=buffer_requests))
        yield Cluster(balanced.base, balanced.replicas, sink, captures, holding)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    """The replicas with a PostgreSQL database of their own."""
    with postgres_cluster() as server, mail_cluster(tmp_path, fresh_database(server)) as running:
        yield running


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
    person = Person("accept")
    first, killed_at = await cluster.send_and_kill(*cluster.client(person))
    assert len(person.asked) == 1
    [killed] = [c for c in cluster.captures.values() if c.held_from]
    assert killed.taken == 0  # the message held when its replica died was not taken
    retried = False
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


@pytest.mark.parametrize("buffer_requests", [False, True], ids=["streamed", "buffered"])
async def test_a_replica_killed_after_its_mail_server_took_an_unkeyed_send_is_not_sent_again_by_haproxy(
    tmp_path: Path, fault_figures: FaultFigures, buffer_requests: bool
) -> None:
    """An unattended send (MAIL_CONFIRM_SENDS=false, no idempotency key) that the mail server took
    while the replica died before reading its answer: nothing could tell a call haproxy resent from
    a new one, so haproxy must not resend it (`retry-on conn-failure` only) and the mail goes out
    once; the client hears that its call broke and can look in Sent before sending again. haproxy
    resends only a request it holds whole, so the case is run with requests buffered too."""
    statuses: list[int] = []

    async def record(response: httpx2.Response) -> None:
        if response.request.method == "POST":
            statuses.append(response.status_code)

    with mail_cluster(
        tmp_path, None, take_held=True, buffer_requests=buffer_requests, MAIL_CONFIRM_SENDS="false"
    ) as cluster:
        http = httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60, event_hooks={"response": [record]}
        )
        client = Client(streamable_http_client(cluster.base + "/mcp", http_client=http), mode="2026-07-28")
        first, killed_at = await cluster.send_and_kill(http, client)
        answered = time.monotonic() - killed_at
        [killed] = [c for c in cluster.captures.values() if c.held_from]
        [other] = [c for c in cluster.captures.values() if not c.held_from]
    broke = isinstance(first, Exception) or first.is_error
    assert [m.rcpt_tos for m in cluster.sink.messages] == [["eve@elsewhere.test"]]  # once, not twice
    assert (killed.taken, other.taken) == (1, 0)
    assert broke, first  # the client is told the call did not finish
    fault_figures.record("deliveries", len(cluster.sink.messages))
    fault_figures.record("sent again by haproxy", "no" if other.taken == 0 else "yes")
    fault_figures.record("the client heard", f"HTTP {statuses[-1]}" if statuses else type(first).__name__)
    fault_figures.record("kill to the client's answer", round(answered * 1000), "ms")


# -- a single server killed in the middle of a write or a first index -----------------------


@dataclass
class Served:
    """A `deskmcp serve KIND --http` process and its base URL."""

    replica: Replica
    base: str

    def stop(self) -> None:
        self.replica.stop()


def serve(kind: str, workspace: Path, **extra: str) -> Served:
    """`deskmcp serve KIND --http` on a free loopback port, on `workspace`."""
    env = environment(workspace, DESKMCP_TOKEN=TOKEN, **extra)
    port = free_port()
    replica = Replica(["serve", kind, "--http", "--port", str(port), "--max-body-mb", "64"], env)
    return Served(replica, f"http://127.0.0.1:{port}")


async def call(served: Served, tool: str, arguments: dict[str, Any]) -> Any:
    """One tool call through the official client over streamable HTTP."""
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120) as http:
        transport = streamable_http_client(served.base + "/mcp", http_client=http)
        async with Client(transport) as client:
            return await client.call_tool(tool, arguments)


def kill_when(served: Served, landed: Any, seconds: float = 60) -> bool:
    """Kill `replica` (SIGKILL) as soon as `landed()` is true; False if it never was within `seconds`.
    A busy check, so the kill follows the moment it looks for within microseconds."""
    deadline = time.monotonic() + seconds
    while not landed():
        if time.monotonic() > deadline or served.replica.proc.poll() is not None:
            return False
    served.replica.kill()
    return True


async def killed_during(served: Served, tool: str, arguments: dict[str, Any], landed: Any) -> bool:
    """Call `tool` and kill the server once `landed()`; whether the kill came before the answer."""
    answered: list[Any] = []
    killed = False

    async def run() -> None:
        # The server dies under the call: the client sees its connection break.
        with contextlib.suppress(Exception):
            answered.append(await call(served, tool, arguments))

    with anyio.fail_after(120):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(run)
            killed = await anyio.to_thread.run_sync(kill_when, served, landed)
    return killed and not answered


def temporary(folder: Path, name: str) -> list[Path]:
    return [p for p in folder.iterdir() if p.name.startswith(f".{name}.") and p.name.endswith(".tmp")]


def size_of(paths: list[Path]) -> int:
    return sum(p.stat().st_size for p in paths)


def written(folder: Path, name: str) -> int:
    """Bytes in the temporary files beside `name` so far."""
    total = 0
    for path in temporary(folder, name):
        with contextlib.suppress(FileNotFoundError):  # renamed into place meanwhile
            total += path.stat().st_size
    return total


async def test_a_server_killed_while_writing_a_big_note_leaves_the_old_note_and_serves_no_temporary_file(
    tmp_path: Path, fault_figures: FaultFigures
) -> None:
    workspace = tmp_path / "ws"
    vault = workspace / "vault"
    vault.mkdir(parents=True)
    old = "# Big\n\nThe earlier text of the big note.\n"
    (vault / "big.md").write_text(old, encoding="utf-8")
    new_body = "The new text. " + "lorem ipsum dolor sit amet " * 600_000  # about 16 MB
    size = 48 * 1024 * 1024
    replica = serve("vault", workspace, VAULT_PATH=str(vault), VAULT_MAX_NOTE_BYTES=str(size))
    try:
        killed = await killed_during(
            replica,
            "write_note",
            {"path": "big.md", "body": new_body, "overwrite": True},
            lambda: bool(temporary(vault, "big.md")),
        )
    finally:
        replica.stop()
    assert killed
    left = temporary(vault, "big.md")
    sizes = size_of(left)
    text = (vault / "big.md").read_text(encoding="utf-8")
    assert text == old or text.endswith(new_body + "\n") or text.endswith(new_body), text[:200]
    restarted = serve("vault", workspace, VAULT_PATH=str(vault), VAULT_MAX_NOTE_BYTES=str(size))
    try:
        with anyio.fail_after(60):
            listed = await call(restarted, "list_notes", {})
            read = await call(restarted, "read_note", {"path": "big.md"})
            # The next write into the folder removes what the killed one left.
            rewritten = await call(restarted, "write_note", {"path": "small.md", "body": "Small."})
    finally:
        restarted.stop()
    assert not listed.is_error and not read.is_error and not rewritten.is_error, rewritten.content
    assert [n["path"] for n in listed.structured_content["notes"]] == ["big.md"]
    assert read.structured_content["body"] in (old, text)
    assert sorted(p.name for p in vault.iterdir()) == ["big.md", "small.md"]  # no temporary file remains
    fault_figures.record("note after the kill", "old" if text == old else "new")
    fault_figures.record("temporary file left by the kill", f"{len(left)} ({sizes:,} bytes)")
    fault_figures.record("notes served after restart", len(listed.structured_content["notes"]))
    fault_figures.record("temporary files after the next write", len(temporary(vault, "big.md")))


def big_workbook(path: Path, rows: int) -> None:
    """A workbook of `rows` rows of text and numbers, A1 holding "old"."""
    import openpyxl

    book = openpyxl.Workbook(write_only=True)
    sheet = book.create_sheet("Data")
    sheet.append(["old", "amount", "note"])
    for i in range(rows):
        sheet.append([f"item {i}", i * 1.5, f"remark number {i} about the quarterly figures"])
    book.save(path)


async def test_a_server_killed_while_writing_a_big_workbook_leaves_a_workbook_that_opens(
    tmp_path: Path, fault_figures: FaultFigures
) -> None:
    import openpyxl

    workspace = tmp_path / "ws"
    folder = workspace / "sheets"
    folder.mkdir(parents=True)
    big_workbook(folder / "book.xlsx", 40_000)
    replica = serve("sheets", workspace, SHEETS_PATH=str(folder))
    try:
        killed = await killed_during(
            replica,
            "update_values",
            {"spreadsheet_id": "book.xlsx", "range": "Data!A1", "values": [["new"]]},
            lambda: written(folder, "book.xlsx") > 0,  # the new package is being written
        )
    finally:
        replica.stop()
    assert killed
    left = temporary(folder, "book.xlsx")
    sizes = size_of(left)
    with zipfile.ZipFile(folder / "book.xlsx") as package:
        assert package.testzip() is None  # every part whole
    book = openpyxl.load_workbook(folder / "book.xlsx", read_only=True)
    [[first]] = book["Data"].iter_rows(max_row=1, max_col=1, values_only=True)
    book.close()
    assert first in ("old", "new")
    restarted = serve("sheets", workspace, SHEETS_PATH=str(folder))
    try:
        with anyio.fail_after(60):
            listed = await call(restarted, "list_spreadsheets", {})
            read = await call(
                restarted, "read_values", {"spreadsheet_id": "book.xlsx", "ranges": ["Data!A1:A1", "Data!A40001"]}
            )
            # The next write into the folder removes what the killed one left.
            rewritten = await call(
                restarted, "update_values", {"spreadsheet_id": "book.xlsx", "range": "Data!B1", "values": [["total"]]}
            )
    finally:
        restarted.stop()
    assert not listed.is_error and not read.is_error, (listed.content, read.content)
    assert not rewritten.is_error, rewritten.content
    assert sorted(p.name for p in folder.iterdir()) == ["book.xlsx"]  # no temporary file remains
    assert [s["id"] for s in listed.structured_content["spreadsheets"]] == ["book.xlsx"]
    assert read.structured_content["ranges"][0]["values"] == [[first]]
    assert read.structured_content["ranges"][1]["values"] == [["item 39999"]]
    fault_figures.record("workbook after the kill", f"opens, A1 {first!r} ({'old' if first == 'old' else 'new'})")
    fault_figures.record("temporary file left by the kill", f"{len(left)} ({sizes:,} bytes)")
    fault_figures.record("temporary files after the next write", len(temporary(folder, "book.xlsx")))


def indexed_notes(workspace: Path) -> int:
    """Notes the vault's index holds so far (0 before its database exists), read as another
    process would."""
    found = list((workspace / ".deskmcp" / "index").glob("vault*.sqlite3"))
    if not found:
        return 0
    try:
        with contextlib.closing(sqlite3.connect(f"file:{found[0]}?mode=ro", uri=True, timeout=1)) as conn:
            return int(conn.execute("SELECT count(*) FROM docs").fetchone()[0])
    except sqlite3.Error:  # created but not yet holding its tables
        return 0


async def test_a_server_killed_during_its_first_index_completes_it_on_the_next_start(
    tmp_path: Path, fault_figures: FaultFigures
) -> None:
    workspace = tmp_path / "ws"
    vault = workspace / "vault"
    total = 6000
    for i in range(total):
        folder = vault / f"area-{i % 20}"
        folder.mkdir(parents=True, exist_ok=True)
        words = " ".join(f"word{(i * 7 + j) % 5000}" for j in range(150))
        (folder / f"note-{i}.md").write_text(f"# Note {i}\n\nmarker{i} {words}\n", encoding="utf-8")
    replica = serve("vault", workspace, VAULT_PATH=str(vault))
    at_kill = 0

    def part_indexed() -> bool:
        nonlocal at_kill
        at_kill = indexed_notes(workspace)
        return at_kill > 0

    try:
        with anyio.fail_after(120):
            killed = await anyio.to_thread.run_sync(kill_when, replica, part_indexed)
    finally:
        replica.stop()
    assert killed
    assert 0 < at_kill < total
    started = time.monotonic()
    restarted = serve("vault", workspace, VAULT_PATH=str(vault))
    try:
        with anyio.fail_after(180):
            # Each answer says whether the index is still being built (`indexing`).
            listed = await call(restarted, "list_notes", {"limit": 1})
            assert not listed.is_error, listed.content
            while listed.structured_content["indexing"] is not None:
                listed = await call(restarted, "list_notes", {"limit": 1})
            completed = time.monotonic() - started
            first = await call(restarted, "search_notes", {"query": "marker0"})
            last = await call(restarted, "search_notes", {"query": f"marker{total - 1}"})
    finally:
        restarted.stop()
    assert [n["path"] for n in first.structured_content["notes"]] == ["area-0/note-0.md"]
    assert [n["path"] for n in last.structured_content["notes"]] == [f"area-{(total - 1) % 20}/note-{total - 1}.md"]
    assert listed.structured_content["total"] == total
    [database] = (workspace / ".deskmcp" / "index").glob("vault*.sqlite3")
    with contextlib.closing(sqlite3.connect(database)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert conn.execute("SELECT count(*) FROM docs").fetchone()[0] == total
    fault_figures.record("notes indexed when killed", f"{at_kill} of {total}")
    fault_figures.record("next start to a complete index", round(completed, 2), "s")
    fault_figures.record("index after the next start", "integrity ok, every note found")
