"""The `deskmcp` command.

Commands that only describe (`--version`, `--help`) import neither the MCP SDK nor any server:
everything heavy is imported inside the command that needs it.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from deskmcp import __version__
from deskmcp.core.errors import BadRequest, DeskError

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


auth_app = typer.Typer(help="Authorise deskmcp to use an account (Google for mail and sheets).", no_args_is_help=True)
app.add_typer(auth_app, name="auth")


@auth_app.command("google")
def auth_google(
    scopes: Annotated[
        str, typer.Option("--scopes", help="Comma-separated servers whose Google scopes to ask for: mail, sheets.")
    ] = "mail,sheets",
    no_browser: Annotated[
        bool, typer.Option("--no-browser", help="Print the address instead of opening a browser.")
    ] = False,
    port: Annotated[int, typer.Option(help="Loopback port for Google's redirect (0: any free port).")] = 0,
    workspace: WorkspaceOpt = None,
) -> None:
    """Sign in to Google in the browser and keep the token (0600 file, GOOGLE_TOKEN_FILE).

    Needs an OAuth client: GOOGLE_CLIENT_SECRETS (the client JSON of a Desktop app), or
    GOOGLE_CLIENT_ID and GOOGLE_CLIENT_SECRET. Run it again whenever a tool answers auth_required.
    """
    from deskmcp.google.auth import GoogleSettings, run_desktop_flow, scopes_for

    setup_logging("WARNING")
    overrides: dict[str, Any] = {"workspace": workspace} if workspace else {}
    try:
        settings = GoogleSettings(**overrides)
        wanted = scopes_for(s.strip() for s in scopes.split(",") if s.strip())
        run_desktop_flow(settings, wanted, open_browser=not no_browser, port=port)
    except DeskError as exc:
        typer.echo(exc.message, err=True)
        raise typer.Exit(1) from None
    typer.echo(f"Authorised. Token saved to {settings.google_token_path}", err=True)


@auth_app.command("granola")
def auth_granola(workspace: WorkspaceOpt = None) -> None:
    """Sign in to Granola's hosted MCP server (GRANOLA_MCP_URL) in the browser, for meetings
    without an API key (every plan). The tokens are kept (0600) under your config folder and
    refreshed; from then on the meetings server syncs from it (unless GRANOLA_API_KEY is set)."""
    import anyio

    from deskmcp.meetings.granola_mcp import sign_in, token_file_for
    from deskmcp.meetings.settings import MeetingsSettings

    setup_logging("WARNING")
    settings = MeetingsSettings(workspace=workspace) if workspace else MeetingsSettings()
    try:
        tools = anyio.run(sign_in, settings.mcp_url)
    except Exception as exc:  # the sign-in's boundary: said, not raised
        typer.echo(f"Signing in to {settings.mcp_url} failed: {type(exc).__name__}: {exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"Signed in ({len(tools)} tools). Tokens saved to {token_file_for(settings.mcp_url)}", err=True)


models_app = typer.Typer(
    help="The models search by meaning uses (DESKMCP_EMBEDDER names one): list, import, pull, distill, remove. "
    "The store is DESKMCP_MODELS_DIR, else the 'models' folder of your data folder; see docs/search.md.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(models_app, name="models")


def _models_failure(exc: DeskError) -> typer.Exit:
    """A model-store failure: its message on stderr; exit code 2 for a bad request, else 1."""
    typer.echo(f"deskmcp: {exc.message}", err=True)
    return typer.Exit(2 if isinstance(exc, BadRequest) else 1)


@models_app.command("list")
def models_list() -> None:
    """The models in the store, those `pull` can add, and the one search uses."""
    from deskmcp.core.config import WorkspaceSettings
    from deskmcp.core.search.embedders.inventory import describe_store

    typer.echo("\n".join(describe_store(configured=WorkspaceSettings().embedder)))


@models_app.command("import")
def models_import(
    path: Annotated[Path, typer.Argument(help="A model folder: model.safetensors, tokenizer.json, config.json.")],
    name: Annotated[str | None, typer.Option("--name", help="Name in the store (default: the folder's).")] = None,
) -> None:
    """Copy a model folder (a model2vec static model or a BERT sentence encoder) into the store, checked."""
    from deskmcp.core.search.embedders.importing import import_model

    try:
        manifest = import_model(path, name=name)
    except DeskError as exc:
        raise _models_failure(exc) from None
    typer.echo(f"Added {manifest.model_id} ({manifest.kind}, {manifest.dimension} dimensions).")


@models_app.command("pull")
def models_pull(name: Annotated[str, typer.Argument(help="A catalog model, as `deskmcp models list` shows.")]) -> None:
    """Download a catalog model, check it against its pinned sha256, and add it (nothing is kept otherwise)."""
    from deskmcp.core.search.embedders.downloads import pull_model

    try:
        manifest = pull_model(name)
    except DeskError as exc:
        raise _models_failure(exc) from None
    typer.echo(f"Added {manifest.model_id} ({manifest.kind}, {manifest.dimension} dimensions).")


@models_app.command("distill")
def models_distill(
    source: Annotated[str, typer.Argument(help="A BERT encoder of the store, e.g. all-MiniLM-L6-v2.")],
    name: Annotated[str, typer.Argument(help="Name of the static model to add.")],
    dimensions: Annotated[int, typer.Option("--dimensions", help="Width of its vectors (PCA).", min=1)] = 256,
) -> None:
    """Make a fast static model from a sentence encoder: each token's vector through the encoder, PCA-reduced."""
    import time

    from deskmcp.core.search.embedders.distill import distill_model

    started = time.monotonic()

    def report(done: int, total: int) -> None:
        typer.echo(f"deskmcp: {done:,} of {total:,} tokens encoded", err=True)

    try:
        manifest = distill_model(source, name, dimensions=dimensions, progress=report)
    except DeskError as exc:
        raise _models_failure(exc) from None
    typer.echo(f"Added {manifest.model_id} ({manifest.dimension} dimensions) in {time.monotonic() - started:.0f} s.")


@models_app.command("remove")
def models_remove(name: Annotated[str, typer.Argument(help="A model of the store.")]) -> None:
    """Delete a model from the store."""
    from deskmcp.core.search.embedders.store import remove_model

    try:
        folder = remove_model(name)
    except DeskError as exc:
        raise _models_failure(exc) from None
    typer.echo(f"Removed {name} ({folder}).")


# Each command group registers its commands on `app` when imported; their order is the help's.
# isort: off
from deskmcp.cli import serve  # noqa: E402, F401
from deskmcp.cli import tools  # noqa: E402, F401
from deskmcp.cli import orchestrate  # noqa: E402, F401
from deskmcp.cli import settings_command  # noqa: E402, F401
from deskmcp.cli import demo  # noqa: E402, F401
from deskmcp.cli import connect  # noqa: E402, F401
# isort: on
