"""The `deskmcp` command.

Commands that only describe (`--version`, `--help`) import neither the MCP SDK nor any server:
everything heavy is imported inside the command that needs it.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Annotated

import typer

from deskmcp import __version__

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
    rich_markup_mode=None,  # plain help: rendering it with rich costs a second of imports
)

WorkspaceOpt = Annotated[
    Path | None,
    typer.Option("--workspace", "-w", help="Workspace folder (default: $DESKMCP_WORKSPACE or your data folder)."),
]
ToolsetsOpt = Annotated[
    str | None,
    typer.Option(
        "--toolsets",
        help="Which tools clients see (default: $DESKMCP_TOOLSETS or 'default'): default, all, dynamic, "
        "server names, toolset ids like vault.write, and -exclusions, comma-separated.",
    ),
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


# Each command group registers its commands on `app` when imported; their order is the help's.
# isort: off
from deskmcp.cli import serve  # noqa: E402, F401
from deskmcp.cli import tools  # noqa: E402, F401
from deskmcp.cli import orchestrate  # noqa: E402, F401
from deskmcp.cli import settings_command  # noqa: E402, F401
from deskmcp.cli import demo  # noqa: E402, F401
from deskmcp.cli import connect  # noqa: E402, F401
from deskmcp.cli import auth  # noqa: E402, F401
from deskmcp.cli import models  # noqa: E402, F401
# isort: on
