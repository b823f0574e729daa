"""The `deskmcp` command.

Commands that only describe (`--version`, `--help`) import neither the MCP SDK nor any server:
everything heavy is imported inside the command that needs it.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from deskmcp import __version__
from deskmcp.cli.selection import ExcludeOpt, OnlyOpt, _compose, _selected, ensure_workspace
from deskmcp.core.errors import BadRequest, DeskError

if TYPE_CHECKING:
    from mcp.types import CallToolResult

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


@app.command()
def tools(
    as_json: Annotated[bool, typer.Option("--json", help="Machine output: the MCP tool definitions.")] = False,
    stats: Annotated[
        bool, typer.Option("--stats", help="What tools/list costs a model: characters and estimated tokens.")
    ] = False,
    only: OnlyOpt = None,
    exclude: ExcludeOpt = None,
    toolsets: ToolsetsOpt = None,
    workspace: WorkspaceOpt = None,
) -> None:
    """List the tools a client sees, with their toolset (--toolsets all for every tool).

    Describing writes nothing: no index is opened and no folder is created.
    """
    if stats:
        from deskmcp.toolcost import measure, print_table

        setup_logging("ERROR")
        try:
            costs = measure(workspace=workspace, toolsets=toolsets)
        except BadRequest as exc:
            typer.echo(f"deskmcp: {exc.message}", err=True)
            raise typer.Exit(2) from None
        print_table(costs, typer.echo)
        return
    import anyio
    import orjson

    setup_logging("ERROR")
    composition = _compose(
        _selected("all", only, exclude), workspace=workspace, keep_unavailable=True, toolsets=toolsets
    )
    server = composition.server
    listed = anyio.run(lambda: server.tool_definitions(output_schemas=True))
    if as_json:
        payload = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed]
        typer.echo(orjson.dumps(payload, option=orjson.OPT_INDENT_2).decode())
        return
    width = max((len(t.name) for t in listed), default=0)
    sets = {t.name: server.tool_toolsets.get(t.name, "") for t in listed}
    set_width = max((len(v) for v in sets.values()), default=0)
    for t in listed:
        typer.echo(f"{t.name:<{width}}  {sets[t.name]:<{set_width}}  {one_line(t.description)}")


def one_line(description: str | None) -> str:
    """The first paragraph of a description, on one line."""
    from deskmcp.core.schema import compact_description

    return compact_description(description).split("\n")[0]


def parse_assignments(pairs: list[str]) -> dict[str, Any]:
    """`["q=budget", "limit=5", "tags=[\"a\"]"]` -> `{"q": "budget", "limit": 5, "tags": ["a"]}`.

    A value is JSON when it parses as JSON, else the string as typed.
    """
    import orjson

    arguments: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise BadRequest(f"Argument {pair!r} is not key=value.", {"argument": pair})
        try:
            arguments[key] = orjson.loads(value)
        except orjson.JSONDecodeError:
            arguments[key] = value
    return arguments


@app.command()
def call(
    tool: Annotated[str, typer.Argument(help="Tool name, as `deskmcp tools` lists it.")],
    assignments: Annotated[
        list[str] | None, typer.Argument(help="Arguments as key=value; values are JSON when they parse.")
    ] = None,
    workspace: WorkspaceOpt = None,
    log_level: LogLevelOpt = "ERROR",
) -> None:
    """Call one tool in-process and print its structured result as JSON.

    Every tool can be called, whatever toolsets are configured. On a tool error the error
    JSON goes to stderr and the exit code is 1. A reading tool whose answer covers only part of
    an index still being built (a large vault's first index) is asked again once the index is
    complete, with the progress on stderr; an answer left partial exits with code 3.
    """
    import anyio
    import orjson
    from mcp import Client
    from mcp.types import TextContent

    from deskmcp.gateway import compose

    setup_logging(log_level)
    try:
        arguments = parse_assignments(assignments or [])
    except BadRequest as exc:
        typer.echo(exc.to_json(), err=True)
        raise typer.Exit(2) from None
    ensure_workspace(workspace)
    composition = compose(workspace=workspace, keep_unavailable=True, toolsets="all")

    async def run() -> CallToolResult:
        async with Client(composition.server) as client:
            result = await client.call_tool(tool, arguments)
            # The index is built by threads of this process, which end with it: answering now
            # would leave every later call with the same part. A reading tool is asked again.
            # A sync from a remote service (Granola's API) is waited for while it moves; one that
            # stands still (a note it cannot read stays pending until a later sync) is not.
            partial = indexing_progress(result) or indexing_progress(result, "syncing")
            if partial is None or not await _read_only(client, tool):
                return result
            reported: tuple[int, int] | None = None
            synced: tuple[int, int] | None = None
            moved = anyio.current_time()
            while True:
                if (progress := indexing_progress(result)) is not None:
                    done, total = progress
                    if progress != reported and (total or reported is None):  # 0 of 0: still walking the folders
                        typer.echo(f"deskmcp: indexing before answering: {done:,} of {total:,} done", err=True)
                        reported = progress
                elif (progress := indexing_progress(result, "syncing")) is not None:
                    if progress != synced:
                        synced, moved = progress, anyio.current_time()
                        typer.echo(f"deskmcp: syncing before answering: {progress[0]:,} of {progress[1]:,}", err=True)
                    elif anyio.current_time() - moved > SYNC_STALL_SECONDS:
                        return result
                else:
                    return result
                await anyio.sleep(1)
                result = await client.call_tool(tool, arguments)

    result = anyio.run(run)
    text = "".join(c.text for c in result.content if isinstance(c, TextContent))
    if result.is_error:
        typer.echo(text, err=True)
        raise typer.Exit(1)
    if result.structured_content is not None:
        typer.echo(orjson.dumps(result.structured_content, option=orjson.OPT_INDENT_2).decode())
    else:
        typer.echo(text)
    if (progress := indexing_progress(result)) is not None:
        typer.echo(
            f"deskmcp: the answer is partial: it covers {progress[0]:,} of {progress[1]:,} items, "
            "the rest were not indexed yet.",
            err=True,
        )
        raise typer.Exit(3)
    if (progress := indexing_progress(result, "syncing")) is not None:
        # Not waited for: a sync from a remote service can take many minutes, or keep a note
        # it could not read pending until a later sync; `serve` keeps syncing in the background.
        typer.echo(
            f"deskmcp: the answer is partial: the sync from the remote source has fetched {progress[0]:,} of "
            f"{progress[1]:,} items and stands still (see the status tool's last error); `deskmcp serve` "
            "keeps syncing in the background.",
            err=True,
        )
        raise typer.Exit(3)


SYNC_STALL_SECONDS = 15.0
"""How long `deskmcp call` waits for a sync whose progress stands still before answering."""


def indexing_progress(result: CallToolResult, flag: str = "indexing") -> tuple[int, int] | None:
    """(done, total) when a tool answered while its index was still being built (or, with
    `flag="syncing"`, while its remote source was still being synced), else None."""
    structured = result.structured_content
    progress = structured.get(flag) if isinstance(structured, dict) else None
    if not isinstance(progress, dict):
        return None
    return int(progress.get("done") or 0), int(progress.get("total") or 0)


async def _read_only(client: Any, tool: str) -> bool:
    """Whether `tool` is marked read-only, so calling it again changes nothing."""
    for listed in (await client.list_tools()).tools:
        if listed.name == tool:
            return bool(listed.annotations and listed.annotations.read_only_hint)
    return False


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


@app.command()
def connect(
    url: Annotated[str, typer.Argument(help="The remote deskmcp, e.g. http://server:8765 (its /mcp endpoint).")],
    workspace: WorkspaceOpt = None,
    log_level: LogLevelOpt = "WARNING",
) -> None:
    """Serve, over stdio, the tools of a deskmcp running elsewhere over HTTP.

    A remote that asks for OAuth authorization is signed in to in the browser on first use; the
    tokens are kept (0600) under your config folder and refreshed. Its client identity:
    DESKMCP_CONNECT_CLIENT_METADATA_URL, or DESKMCP_CONNECT_CLIENT_ID (and _SECRET), else it
    registers itself. A remote with one static token: set DESKMCP_REMOTE_TOKEN (or DESKMCP_TOKEN).
    Starts even when the remote is down; calls then answer mcp_unavailable until it is back.
    """
    from deskmcp.connect.bridge import ForwardingServer, endpoint, token_from_environment
    from deskmcp.connect.oauth import ClientSettings, oauth_for
    from deskmcp.core.config import WorkspaceSettings

    setup_logging(log_level)
    ensure_workspace(workspace)
    settings = WorkspaceSettings(workspace=workspace) if workspace else WorkspaceSettings()
    token = token_from_environment()
    try:
        auth = None if token else oauth_for(endpoint(url), client=ClientSettings.from_environment())
        server = ForwardingServer(url, token=token, cache_dir=settings.workspace / ".deskmcp", auth=auth)
    except ValueError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(2) from None
    server.run("stdio")


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
from deskmcp.cli import serve  # noqa: E402, F401
