"""The whole cycle with real processes: `deskmcp orchestrate` over `deskmcp serve mail` (Maildir,
delivering through an SMTP sink on loopback) and `deskmcp serve vault`, on a temporary vault."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from dataclasses import dataclass, field
from email import message_from_bytes, policy
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.mail import deliver, make_mail
from tests.helpers.network import free_port
from tests.helpers.orchestrator import RULES
from tests.helpers.processes import orchestrate, server_process

pytestmark = pytest.mark.e2e


@dataclass
class Sink:
    port: int
    messages: list[bytes] = field(default_factory=list)

    def subjects(self) -> list[str]:
        return [str(message_from_bytes(m, policy=policy.default)["Subject"]) for m in self.messages]


@pytest.fixture(scope="module")
def sink() -> Iterator[Sink]:
    from aiosmtpd.controller import Controller

    found = Sink(free_port())

    class Handler:
        async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
            found.messages.append(bytes(envelope.original_content))
            return "250 OK"

    controller = Controller(Handler(), hostname="127.0.0.1", port=found.port)
    controller.start()
    try:
        yield found
    finally:
        controller.stop()


def environment(workspace: Path, vault: Path, sink: Sink, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VAULT_", "ORCHESTRATOR_", "DESKMCP_", "MAIL_"))}
    env.update(
        DESKMCP_WORKSPACE=str(workspace),
        VAULT_PATH=str(vault),
        MAIL_SMTP_HOST="127.0.0.1",
        MAIL_SMTP_PORT=str(sink.port),
        MAIL_SMTP_SECURITY="none",
        ORCHESTRATOR_CALL_TIMEOUT="60",
        ORCHESTRATOR_QUERY="in:inbox -label:AI_PROCESSED",  # the test mail has a fixed date
        **extra,
    )
    return env


def frontmatter_text(path: Path) -> str:
    return path.read_text(encoding="utf-8").split("---\n")[1]


def test_the_whole_cycle_runs_over_real_mail_and_vault_servers(tmp_path: Path, sink: Sink) -> None:
    workspace, vault = tmp_path / "ws", tmp_path / "vault"
    vault.mkdir()
    (vault / "triage-rules.yaml").write_text(RULES, encoding="utf-8")
    original_id = "<meet-1@example.org>"
    deliver(workspace, make_mail("Can we meet?", "Tuesday?", sender="Ana <ana@example.org>", msgid=original_id))
    deliver(workspace, make_mail("Weekly deals", "Sale", sender="newsletter@shop.example"))
    deliver(workspace, make_mail("Outage in eu-west", "Down", sender="ops@example.org"))
    deliver(workspace, make_mail("Payment", "The invoice is attached", sender="bob@example.org"))
    deliver(workspace, make_mail("Hmm", "Thoughts?", sender="carol@example.org"))
    sink.messages.clear()
    env = environment(workspace, vault, sink)

    first = orchestrate(env, "--once")
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("ingested 5, decided 5, sent 0")
    second = orchestrate(env, "--once")
    assert second.stdout.startswith("ingested 0, decided 0")  # labelled AI_PROCESSED: never ingested twice

    assert len(list((vault / "Needs_Action").glob("*.md"))) == 4  # the newsletter is archived
    assert "status: done" in frontmatter_text(next((vault / "Done").glob("*Weekly-deals*.md")))
    [draft] = (vault / "Drafts").glob("*Can-we-meet*.md")
    assert "status: pending_approval" in frontmatter_text(draft)
    assert sink.messages == []  # nothing leaves without approval

    draft.rename(vault / "Approved" / draft.name)  # the person approves by moving the file
    third = orchestrate(env, "--once")
    assert third.returncode == 0, third.stderr
    assert "sent 1" in third.stdout

    [raw] = sink.messages
    reply = message_from_bytes(raw, policy=policy.default)
    assert reply["Subject"] == "Re: Can we meet?"
    assert reply["In-Reply-To"] == original_id
    assert original_id in reply["References"]
    assert "Tuesday works." in reply.get_content()
    assert (vault / "Done" / draft.name).exists()
    assert not list((vault / "Needs_Action").glob("*Can-we-meet*.md"))  # the answered mail is filed too
    audit = [json.loads(line) for p in (vault / "Logs").glob("gmail_mcp_*.jsonl") for line in p.open()]
    assert any(line.get("subject") == "Re: Can we meet?" for line in audit)
    events = [json.loads(line)["event"] for p in (vault / "Logs").glob("orchestrator_*.jsonl") for line in p.open()]
    assert events.count("sent") == 1


def test_a_crash_at_each_point_of_a_send_delivers_exactly_once_over_smtp(tmp_path: Path, sink: Sink) -> None:
    """The servers run in one `deskmcp serve all --http`; the orchestrator reaches them by URL and
    is killed (SIGKILL) at each point of a send, then restarted."""
    workspace, vault = tmp_path / "ws", tmp_path / "vault"
    vault.mkdir()
    (vault / "triage-rules.yaml").write_text(RULES, encoding="utf-8")
    points = ["before_send", "sent_unrecorded", "after_send", "during_move"]
    for n, _ in enumerate(points):
        deliver(workspace, make_mail(f"Shall we meet {n}?", "When?", sender=f"p{n}@example.org"))
    sink.messages.clear()
    port = free_port()
    servers = ["serve", "all", "--http", "--port", str(port), "--only", "vault,mail", "--log-level", "INFO"]
    with server_process(servers, environment(workspace, vault, sink), "Application startup complete"):
        env = environment(workspace, vault, sink, ORCHESTRATOR_MCP_URL=f"http://127.0.0.1:{port}/mcp")
        crash_and_restart(env, vault, sink, points)


def crash_and_restart(env: dict[str, str], vault: Path, sink: Sink, points: list[str]) -> None:
    first = orchestrate(env, "--once")
    assert first.returncode == 0, first.stderr
    for n, point in enumerate(points):
        [draft] = (vault / "Drafts").glob(f"*meet-{n}*.md")
        draft.rename(vault / "Approved" / draft.name)
        crashed = orchestrate({**env, "DESKMCP_ORCHESTRATOR_FAULT": point}, "--once", "--decider", "assistant")
        assert crashed.returncode == -signal.SIGKILL, (point, crashed.stderr)
        restarted = orchestrate(env, "--once", "--decider", "assistant")
        assert restarted.returncode == 0, (point, restarted.stderr)
        assert sink.subjects().count(f"Re: Shall we meet {n}?") == 1, point
        assert (vault / "Done" / draft.name).exists(), point
        assert not (vault / "Approved" / draft.name).exists(), point
    assert len(sink.messages) == len(points)
