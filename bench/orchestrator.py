"""Benchmark of the triage orchestrator (not a test: it prints what it measures).

For each size it fills an offline Maildir with that many mails, then runs the flow with the
rules decider over real stdio servers (`deskmcp serve mail`, `deskmcp serve vault`) and measures:

- ingest + decide: passes until the inbox is empty (mails per second, ms per mail);
- send: every drafted reply approved by moving it into Approved/, one pass (ms per send,
  delivered to the Maildir's Sent folder);
- the same ingest with the vault reached in-process (the fallback path) as a baseline, and the ratio.

    uv run python bench/orchestrator.py --sizes 100,500
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/http.py would shadow the standard library's `http`: keep this folder off the import path.
_BENCH = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _BENCH]

import argparse
import mailbox
import os
import tempfile
import time
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid

import anyio

from deskmcp.orchestrator.access import MailAccess
from deskmcp.orchestrator.deciders import create_decider
from deskmcp.orchestrator.mcp_client import MCPClient
from deskmcp.orchestrator.mcp_vault import open_vault
from deskmcp.orchestrator.runner import server_environment
from deskmcp.orchestrator.service import Orchestrator
from deskmcp.orchestrator.settings import OrchestratorSettings

SUBJECTS = ["Can we meet on Tuesday?", "Weekly newsletter", "Outage in eu-west", "Question about invoice 42", "Hello"]


def fill(maildir: Path, count: int) -> None:
    box = mailbox.Maildir(maildir, create=True)
    start = datetime(2026, 11, 1, tzinfo=UTC)
    for n in range(count):
        msg = EmailMessage()
        subject = SUBJECTS[n % len(SUBJECTS)]
        msg["From"] = f"Person {n} <p{n}@example.org>" if "newsletter" not in subject else "newsletter@example.org"
        msg["To"] = "me@localhost"
        msg["Subject"] = f"{subject} #{n}"
        msg["Date"] = format_datetime(start + timedelta(minutes=n))
        msg["Message-ID"] = make_msgid(domain="example.org")
        msg.set_content(f"Mail number {n}.\n" + "Some words of text. " * 40)
        box.add(msg)
    box.close()


async def flow(workspace: Path, count: int, *, vault_over_mcp: bool) -> tuple[float, float, int]:
    # every mail of the generated mailbox, whatever its date (the default query takes the last week)
    query = "in:inbox -label:AI_PROCESSED"
    settings = OrchestratorSettings(workspace=workspace, vault_path=workspace / "vault", query=query)
    os.environ.update(server_environment(settings))
    env = dict(os.environ)
    mail_client = MCPClient("mail", settings.server_command("mail"), settings.root, timeout=120, env=env)
    vault_client = MCPClient("vault", settings.server_command("vault"), settings.root, timeout=120, env=env)
    vault = open_vault(settings.root, vault_client if vault_over_mcp else None)
    async with mail_client, vault_client:
        orchestrator = Orchestrator(settings, vault, MailAccess(mail_client), create_decider(settings))
        await orchestrator.run_pass(approved_only=True)  # servers started, layout created
        started = time.perf_counter()
        ingested = 0
        while True:
            summary = await orchestrator.run_pass()
            ingested += summary.ingested
            if summary.ingested == 0:
                break
        ingest = time.perf_counter() - started
        drafts = sorted((settings.root / "Drafts").glob("*.md"))
        for draft in drafts:
            draft.rename(settings.root / "Approved" / draft.name)
        started = time.perf_counter()
        summary = await orchestrator.run_pass(approved_only=True)
        send = time.perf_counter() - started
    assert ingested == count, (ingested, count)
    assert summary.sent == len(drafts), summary
    return ingest, send, len(drafts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="100,500")
    args = parser.parse_args()
    for count in [int(s) for s in args.sizes.split(",")]:
        results = {}
        for over_mcp in (True, False):
            with tempfile.TemporaryDirectory() as tmp:
                workspace = Path(tmp)
                fill(workspace / "mail", count)
                (workspace / "vault").mkdir()
                results[over_mcp] = anyio.run(lambda w=workspace, o=over_mcp, c=count: flow(w, c, vault_over_mcp=o))
        ingest, send, sends = results[True]
        base_ingest, _base_send, _ = results[False]
        print(f"{count} mails")
        print(f"  ingest + decide (vault over MCP): {ingest:6.2f} s  {1000 * ingest / count:6.1f} ms/mail")
        print(f"  ingest + decide (vault in-process): {base_ingest:6.2f} s  {1000 * base_ingest / count:6.1f} ms/mail")
        print(f"  ratio MCP / in-process: {ingest / base_ingest:4.2f}x")
        print(f"  send {sends} approved replies: {send:6.2f} s  {1000 * send / max(sends, 1):6.1f} ms/send")


if __name__ == "__main__":
    main()
