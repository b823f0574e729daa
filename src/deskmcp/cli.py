"""The `deskmcp` command."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Annotated

import typer

from deskmcp import __version__
from deskmcp.servers import SERVERS, get_spec

app = typer.Typer(
    name="deskmcp",
    help=(
        "MCP servers for your own material: meetings (Granola), notes, documents, mail, "
        "spreadsheets and diagrams. Local-first: everything works offline on a workspace folder.\n\n"
        "Start with `deskmcp demo` for a tour on generated data, then add "
        "`deskmcp serve NAME` to your MCP client."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

WorkspaceOpt = Annotated[
    Path | None,
    typer.Option("--workspace", "-w", help="Workspace folder (default: $DESKMCP_WORKSPACE or your data folder)."),
]
LogLevelOpt = Annotated[str, typer.Option("--log-level", help="DEBUG, INFO, WARNING or ERROR. Logs go to stderr only.")]


def setup_logging(level: str) -> None:
    """Log to stderr: stdout belongs to the MCP protocol."""
    logging.basicConfig(
        stream=sys.stderr,
        level=level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        force=True,
    )


def version_callback(value: bool) -> None:
    if value:
        typer.echo(f"deskmcp {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool, typer.Option("--version", callback=version_callback, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """deskmcp: MCP servers over one local-first core."""


@app.command()
def serve(
    name: Annotated[str, typer.Argument(help=f"Which server: {', '.join(SERVERS)}.")],
    http: Annotated[bool, typer.Option("--http", help="Serve streamable HTTP instead of stdio.")] = False,
    host: Annotated[str, typer.Option(help="HTTP address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="HTTP port.")] = 8765,
    workspace: WorkspaceOpt = None,
    log_level: LogLevelOpt = "WARNING",
) -> None:
    """Run one server over stdio (for an MCP client) or streamable HTTP (--http)."""
    setup_logging(log_level)
    if name not in SERVERS:
        typer.echo(f"No server {name!r}. Choose one of: {', '.join(SERVERS)}.", err=True)
        raise typer.Exit(2)
    spec = get_spec(name)
    module = spec.load()
    settings = spec.settings(workspace=workspace)
    reason = module.unavailable(settings)
    if reason:
        logging.getLogger("deskmcp").warning("%s: %s", name, reason)
    server = module.create_server(settings)
    if http:
        server.run("streamable-http", host=host, port=port)
    else:
        server.run("stdio")


@app.command()
def demo(
    workspace: WorkspaceOpt = None,
    meetings: Annotated[int, typer.Option(help="How many meetings to generate.")] = 300,
    fresh: Annotated[bool, typer.Option("--fresh", help="Regenerate the demo data even if present.")] = False,
) -> None:
    """Create a demo workspace with generated data and tour the servers through a real MCP client."""
    setup_logging("WARNING")
    from deskmcp.demo.tour import run_tour

    run_tour(workspace, meetings=meetings, fresh=fresh)


if __name__ == "__main__":  # pragma: no cover
    app()
