"""`deskmcp demo`: a demo workspace of generated data, toured through a real MCP client."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from deskmcp.cli import app, setup_logging


@app.command()
def demo(
    workspace: Annotated[
        Path | None,
        typer.Option(
            "--workspace",
            "-w",
            help="Where to generate the demo (default: the 'demo' folder in your data folder; "
            "DESKMCP_WORKSPACE is not used, so the demo never mixes with your own data).",
        ),
    ] = None,
    meetings: Annotated[int, typer.Option(help="How many meetings to generate.")] = 300,
    fresh: Annotated[bool, typer.Option("--fresh", help="Regenerate the demo data even if present.")] = False,
) -> None:
    """Create a demo workspace with generated data and tour the servers through a real MCP client."""
    setup_logging("WARNING")
    from deskmcp.demo.tour import run_tour

    run_tour(workspace, meetings=meetings, fresh=fresh)
