"""`deskmcp orchestrate`: the flow from the command line, with a readable summary."""

from __future__ import annotations

import sys
from typing import Any

import anyio
import typer
from pydantic import ValidationError

from deskmcp.core.errors import DeskError
from deskmcp.orchestrator.models import PassSummary
from deskmcp.orchestrator.runner import open_orchestrator, watch
from deskmcp.orchestrator.settings import OrchestratorSettings
from deskmcp.orchestrator.state import VaultLock
from deskmcp.orchestrator.triage import TriageService


def report(summary: PassSummary) -> None:
    if summary.skipped:
        typer.echo(f"pass skipped: {summary.skipped}")
        return
    typer.echo(summary.line())
    for event in summary.events:
        typer.echo(f"  {event}")


def _settings(overrides: dict[str, Any]) -> OrchestratorSettings | None:
    """The settings with the command line's options over the environment; None (said why) when invalid."""
    try:
        return OrchestratorSettings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        typer.echo(f"Invalid settings: {exc}", err=True)
        return None


def run(overrides: dict[str, Any], *, watch: bool, dry_run: bool) -> int:
    """Run the flow; the exit code (0 ok, 1 a pass failed or was skipped, 2 cannot start)."""
    settings = _settings(overrides)
    if settings is None:
        return 2
    lock = VaultLock(settings.root / "Logs")
    try:
        if not dry_run:
            if not settings.root.is_dir() and settings.vault_path is not None:
                typer.echo(f"The vault folder {settings.root} does not exist.", err=True)
                return 2
            lock.acquire()
        return anyio.run(_main, settings, watch, dry_run)
    except DeskError as exc:
        typer.echo(exc.message, err=True)
        return 2
    finally:
        lock.release()


async def _main(settings: OrchestratorSettings, watching: bool, dry_run: bool) -> int:
    async with open_orchestrator(settings, dry_run=dry_run) as orchestrator:
        if watching:
            typer.echo(f"watching {settings.root} (a pass every {settings.poll_seconds:g}s; Ctrl-C stops)")
            await watch(orchestrator, settings.poll_seconds, report)
            typer.echo("stopped")
            return 0
        summary = await orchestrator.run_pass()
        report(summary)
        return 1 if summary.skipped or summary.failed else 0


def approve(overrides: dict[str, Any], note: str) -> int:
    """A person approves one draft on a terminal: the draft is shown, the answer read from the
    terminal (not from a pipe, so no program answers for them). 0 approved, 1 not, 2 cannot."""
    settings = _settings(overrides)
    if settings is None:
        return 2
    if not settings.root.is_dir():
        typer.echo(f"The vault folder {settings.root} does not exist.", err=True)
        return 2
    if not sys.stdin.isatty():
        typer.echo("Approving needs you at a terminal: run this command yourself, not through a program.", err=True)
        return 2
    service = TriageService(settings)

    async def main() -> int:
        draft, content_hash = await service.draft_to_approve(note)
        typer.echo(draft.for_person(excerpt_chars=4000))
        typer.echo("")
        if not typer.confirm("Approve this reply? It is sent on the next pass", default=False):
            typer.echo("Not approved; the draft stays in Drafts/.")
            return 1
        result = await service.approve(note, content_hash)
        typer.echo(f"Approved: {result.path}. {result.message}.")
        return 0

    try:
        return anyio.run(main)
    except DeskError as exc:
        typer.echo(exc.message, err=True)
        return 2
