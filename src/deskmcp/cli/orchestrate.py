"""`deskmcp orchestrate`: the triage loop as a process, and a reply draft approved by its person."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from deskmcp.cli import LogLevelOpt, WorkspaceOpt, app, setup_logging
from deskmcp.cli.selection import ensure_workspace

orchestrate_app = typer.Typer(
    help="Triage mail into the vault: ingest, decide, send approved drafts, file them in Done/.",
    rich_markup_mode=None,
)
app.add_typer(orchestrate_app, name="orchestrate")


@orchestrate_app.callback(invoke_without_command=True)
def orchestrate(
    context: typer.Context,
    once: Annotated[bool, typer.Option("--once", help="Run one pass and exit.")] = False,
    watch_: Annotated[
        bool, typer.Option("--watch", help="Run passes until stopped; approvals are sent within a second.")
    ] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Report what would happen; change nothing.")] = False,
    vault: Annotated[Path | None, typer.Option("--vault", help="The vault (default: $VAULT_PATH).")] = None,
    decider: Annotated[str | None, typer.Option("--decider", help="rules, llm or assistant.")] = None,
    poll: Annotated[float | None, typer.Option("--poll", help="Seconds between passes in --watch mode.")] = None,
    workspace: WorkspaceOpt = None,
    log_level: LogLevelOpt = "WARNING",
) -> None:
    """Triage mail into the vault: ingest, decide, send approved drafts, file them in Done/.

    One pass with --once, a loop with --watch (Ctrl-C stops it cleanly). The mail and vault
    servers are started as subprocesses, or reached at ORCHESTRATOR_MCP_URL.
    `deskmcp orchestrate approve NOTE` approves one draft yourself.
    """
    from deskmcp.orchestrator.cli import run

    if context.invoked_subcommand is not None:
        return
    setup_logging(log_level)
    if once == watch_:
        typer.echo("Choose one of --once or --watch.", err=True)
        raise typer.Exit(2)
    if not dry_run:  # a dry run writes nothing, not even the workspace folder
        ensure_workspace(workspace)
    overrides = {"workspace": workspace, "vault_path": vault, "decider": decider, "poll_seconds": poll}
    raise typer.Exit(run(overrides, watch=watch_, dry_run=dry_run))


@orchestrate_app.command("approve")
def orchestrate_approve(
    note: Annotated[str, typer.Argument(help="The draft, e.g. Drafts/Re-lunch.md (triage_list shows them).")],
    vault: Annotated[Path | None, typer.Option("--vault", help="The vault (default: $VAULT_PATH).")] = None,
    workspace: WorkspaceOpt = None,
) -> None:
    """Approve a reply draft yourself: prints it, asks y/N on this terminal, and on yes moves it to
    Approved/ (the next pass sends it). Needs a terminal: a program cannot answer for you."""
    from deskmcp.orchestrator.cli import approve

    raise typer.Exit(approve({"workspace": workspace, "vault_path": vault}, note))
