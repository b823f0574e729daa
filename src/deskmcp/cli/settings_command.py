"""`deskmcp settings`: every setting, its value in effect and where it came from (the table itself
is `deskmcp.settings_table`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from deskmcp.cli import app, setup_logging
from deskmcp.core.errors import DeskError


@app.command("settings")
def settings_(
    server: Annotated[str | None, typer.Option("--server", help="Only the settings this server reads.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")] = False,
    user_workspace: Annotated[
        Path | None, typer.Option("--user-workspace", help="A user's workspace (users mode): read its settings.env.")
    ] = None,
) -> None:
    """List every setting: its name (and old name), the value in effect and where it came from; secrets masked."""
    setup_logging("WARNING")
    from deskmcp.settings_table import settings_command

    try:
        typer.echo(settings_command(server, as_json_output=as_json, user_workspace=user_workspace))
    except DeskError as exc:
        typer.echo(f"deskmcp: {exc.message}", err=True)
        raise typer.Exit(2) from None
