"""`deskmcp tools` and `deskmcp call`: the tools a client sees, and one tool called in-process."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from deskmcp.cli import LogLevelOpt, ToolsetsOpt, WorkspaceOpt, app, setup_logging
from deskmcp.cli.selection import ExcludeOpt, OnlyOpt, _compose, _selected, ensure_workspace
from deskmcp.core.errors import BadRequest

if TYPE_CHECKING:
    from mcp.types import CallToolResult


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
