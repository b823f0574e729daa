"""Running the flow: one pass (`--once`) or a loop (`--watch`) that also reacts to approvals.

`--watch` runs a full pass every `poll_seconds`, and a send-only pass as soon as a note lands
in `Approved/` (file system events through `watchfiles`, within a second). SIGINT or SIGTERM
stops it cleanly: the pass under way finishes its current step, nothing is cut in half; a
second signal stops at once.
"""

from __future__ import annotations

import contextlib
import logging
import signal
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import watchfiles

from deskmcp.core.paths import is_hidden
from deskmcp.core.settings import environment
from deskmcp.orchestrator.access import MailAccess
from deskmcp.orchestrator.deciders import create_decider
from deskmcp.orchestrator.layout import APPROVED
from deskmcp.orchestrator.mcp_client import MCPClient
from deskmcp.orchestrator.mcp_vault import open_vault
from deskmcp.orchestrator.models import PassSummary
from deskmcp.orchestrator.service import Orchestrator
from deskmcp.orchestrator.settings import OrchestratorSettings

log = logging.getLogger("deskmcp.orchestrator")


def server_environment(settings: OrchestratorSettings) -> dict[str, str]:
    """The environment the mail and vault subprocesses get: ours, pointed at the same vault, with
    every toolset on (the user's DESKMCP_TOOLSETS is about what a model sees, not this client) and
    no protected vault folders: this vault server's only client is the orchestrator, which owns them."""
    env = environment()
    env["DESKMCP_WORKSPACE"] = str(settings.workspace)
    env["VAULT_PATH"] = str(settings.root)
    env["DESKMCP_TOOLSETS"] = "all"
    env["VAULT_PROTECTED_FOLDERS"] = ""
    return env


@asynccontextmanager
async def open_orchestrator(settings: OrchestratorSettings, *, dry_run: bool = False) -> AsyncIterator[Orchestrator]:
    """An `Orchestrator` talking to the mail server over MCP, closed on exit.

    The vault is reached through a `deskmcp serve vault` of its own, or in this process when the
    servers are shared (`ORCHESTRATOR_MCP_URL`: that vault server refuses writes into the triage
    folders to every client) or for a dry run (which only reads, and starts no server for it).
    """
    env = server_environment(settings)

    def client(name: str) -> MCPClient:
        return MCPClient(
            name,
            settings.server_command("mail" if name == "mail" else "vault"),
            settings.root,
            url=settings.mcp_url,
            timeout=settings.call_timeout,
            env=env,
        )

    mail_client = client("mail")
    vault_client = None if settings.mcp_url or dry_run else client("vault")
    vault = open_vault(settings.root, vault_client)
    async with mail_client, vault_client or contextlib.nullcontext():
        decider = create_decider(settings, dry_run=dry_run)
        yield Orchestrator(settings, vault, MailAccess(mail_client), decider, dry_run=dry_run)


async def _approvals(root: Path, hints: set[str], wake: Callable[[], None], stop: anyio.Event) -> None:
    """Report notes created in Approved/ (moved there in Obsidian or by a tool) as they appear."""
    folder = root / APPROVED
    while not stop.is_set():
        try:
            async for changes in watchfiles.awatch(
                folder, stop_event=stop, debounce=100, step=50, rust_timeout=500, recursive=False
            ):
                for change, raw in changes:
                    path = Path(raw)
                    if change != watchfiles.Change.deleted and path.suffix == ".md" and not is_hidden(path.name):
                        hints.add(f"{APPROVED}/{path.name}")
                if hints:
                    wake()
        except (OSError, RuntimeError) as exc:  # the folder vanished: look again after a pause
            log.warning("cannot watch %s (%s); retrying", folder, exc)
            with anyio.move_on_after(5):
                await stop.wait()


async def watch(
    orchestrator: Orchestrator,
    poll_seconds: float,
    report: Callable[[PassSummary], None],
    *,
    stop: anyio.Event | None = None,
) -> None:
    """Passes until `stop` is set (or SIGINT/SIGTERM arrives)."""
    stop = stop or anyio.Event()
    hints: set[str] = set()
    wake = anyio.Event()

    def wake_up() -> None:
        wake.set()

    async def signals(scope: anyio.CancelScope) -> None:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as received:
            async for signum in received:
                if stop.is_set():
                    scope.cancel()  # a second signal: do not wait for the pass
                    return
                log.warning("received %s: stopping after the current step", signal.Signals(signum).name)
                stop.set()
                wake.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(signals, tg.cancel_scope)
        if not orchestrator.dry_run:
            orchestrator.ensure_layout()
        tg.start_soon(_approvals, orchestrator.root, hints, wake_up, stop)
        next_full = 0.0
        while not stop.is_set():
            full = anyio.current_time() >= next_full
            batch = tuple(sorted(hints))
            hints.clear()
            wake = anyio.Event()
            summary = await orchestrator.run_pass(approved_only=not full, hints=batch)
            if full:
                next_full = anyio.current_time() + poll_seconds
            if full or summary.sent or summary.failed:
                report(summary)
            if stop.is_set():
                break
            if hints:
                continue
            with anyio.move_on_after(max(0.0, next_full - anyio.current_time())):
                await wake.wait()
        tg.cancel_scope.cancel()
