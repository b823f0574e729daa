"""Dovecot stopped while a mail call over IMAP waits on it, and started again.

A private Dovecot (its own configuration and port, not the one the mail tests share) sits behind a
loopback relay that tells the test when a command has reached Dovecot and holds back its answer:
the test then stops Dovecot (SIGTERM, as `systemctl stop`), so the call is cut off in flight. Each
call (list, get, and a move that changes the mailbox) answers a structured error naming the
server; the move leaves the message in exactly one folder; once Dovecot runs again the same
server, never restarted, answers every call."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from deskmcp.mail.server import Settings, create_server
from tests.helpers.faults import FaultFigures
from tests.helpers.mail import make_mail
from tests.helpers.relay import Relay
from tests.helpers.tool_calls import call, fail
from tests.mail.dovecot import Dovecot, halt, launch, start, stop

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

CODES = ("io_error", "external_service_error", "timeout")


@dataclass
class Stoppable:
    server: Dovecot
    proc: Any
    relay: Relay

    def stop(self) -> None:
        halt(self.proc)

    def start(self) -> None:
        self.proc = launch(self.server)


@pytest.fixture
def dovecot(tmp_path: Path) -> Iterator[Stoppable]:
    server, proc = start(tmp_path / "dovecot")
    running = Stoppable(server, proc, Relay(server.port))
    try:
        yield running
    finally:
        running.relay.close()
        stop(server, running.proc)


def where(message: dict[str, Any], relay: Relay) -> bool:
    """Whether an error names the IMAP server (as deskmcp reaches it: the relay's address)."""
    return f"127.0.0.1:{relay.port}" in message["message"]


async def test_dovecot_stopped_in_the_middle_of_imap_calls_answers_naming_it_loses_nothing_and_recovers(
    tmp_path: Path, dovecot: Stoppable, fault_figures: FaultFigures
) -> None:
    server, relay = dovecot.server, dovecot.relay
    user = server.add_user()
    imap = server.client(user)
    imap.create_folder("Projects")
    for i in range(3):
        imap.append("INBOX", make_mail(f"Report {i}", f"Figures {i}.", msgid=f"<report{i}@corp.test>"))
    imap.logout()
    settings = Settings(workspace=tmp_path / "ws", **{**server.settings(user), "imap_port": relay.port})
    answered: dict[str, float] = {}
    errors: dict[str, dict[str, Any]] = {}
    recovered: dict[str, float] = {}
    halted: dict[str, float] = {}

    async with Client(create_server(settings)) as client:

        async def cut_off(name: str, tool: str, args: dict[str, Any], *markers: bytes) -> None:
            """Call `tool`, stop Dovecot once the command holding `markers` reached it (the
            background sync, on a connection of its own, sends no such command), then start it."""
            in_flight = relay.hold(*markers)
            outcome: dict[str, Any] = {}
            stopping = 0.0

            async def run() -> None:
                outcome.update(await fail(client, tool, args))
                answered[name] = time.monotonic() - stopping

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(run)
                await anyio.to_thread.run_sync(in_flight.wait)
                stopping = time.monotonic()
                await anyio.to_thread.run_sync(dovecot.stop)
                halted[name] = time.monotonic() - stopping
            errors[name] = outcome
            await anyio.to_thread.run_sync(dovecot.start)

        with anyio.fail_after(120):  # a hang guard only
            listed = await call(client, "list_emails", {"query": "", "max_results": 10})
            ids = {m["rfc_message_id"]: m["id"] for m in listed["emails"]}
            assert len(ids) == 3

            # A size criterion the local copy cannot answer: the server searches.
            server_side = {"query": "larger:1", "max_results": 10}
            await cut_off("list_emails", "list_emails", server_side, b"LARGER")
            began = time.monotonic()
            again = await call(client, "list_emails", server_side)
            recovered["list_emails"] = time.monotonic() - began
            assert {m["rfc_message_id"] for m in again["emails"]} == set(ids)

            target = ids["<report0@corp.test>"]
            await cut_off("get_email", "get_email", {"message_id": target}, b"RFC822.SIZE", b"BODY.PEEK[]")
            began = time.monotonic()
            got = await call(client, "get_email", {"message_id": target})
            recovered["get_email"] = time.monotonic() - began
            assert "Figures 0." in got["body"]

            moving = ids["<report1@corp.test>"]
            await cut_off("move_email", "move_email", {"message_id": moving, "destination_label": "Projects"}, b"MOVE")
            # The move reached Dovecot before it stopped: the message is in Projects, and only there.
            check = server.client(user)
            try:
                places = {}
                for folder in ("INBOX", "Projects"):
                    check.select_folder(folder, readonly=True)
                    places[folder] = len(check.search(["HEADER", "Message-ID", "<report1@corp.test>"]))
            finally:
                check.logout()
            assert sum(places.values()) == 1, places
            began = time.monotonic()
            found = await call(client, "list_emails", {"query": "in:Projects", "max_results": 10})
            [moved] = [m for m in found["emails"] if m["rfc_message_id"] == "<report1@corp.test>"]
            back = await call(client, "move_email", {"message_id": moved["id"], "destination_label": "INBOX"})
            recovered["move_email"] = time.monotonic() - began
            assert back["labels"] and "INBOX" in back["labels"]

    for name, error in errors.items():
        assert error["error"] in CODES, (name, error)
        assert where(error, relay), (name, error)
    for name in errors:
        fault_figures.record(f"{name}: answer", f"{errors[name]['error']}: {errors[name]['message']}")
        fault_figures.record(f"{name}: answered after the stop began", round(answered[name], 2), "s")
        fault_figures.record(f"{name}: Dovecot stopped after", round(halted[name], 2), "s")
        fault_figures.record(f"{name}: after the start, the same call took", round(recovered[name], 2), "s")
    fault_figures.record("move cut off: the message is in", ", ".join(f"{k} {v}" for k, v in places.items()))
