"""What several commands share: the workspace they create, the servers they select and the
composition they build."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from deskmcp.core.errors import BadRequest
from deskmcp.servers import ServerSpec, get_spec

OnlyOpt = Annotated[str | None, typer.Option("--only", help="Comma-separated servers to include (serve all).")]
ExcludeOpt = Annotated[str | None, typer.Option("--exclude", help="Comma-separated servers to leave out (serve all).")]


def ensure_workspace(workspace: Path | None) -> None:
    """Create the configured workspace (--workspace, else DESKMCP_WORKSPACE) when it does not exist
    yet, with one line on stderr naming it: a mistyped path must not pass for an empty workspace.
    The default data folder is created silently, as on any first run."""
    from deskmcp.core.config import WorkspaceSettings, expand
    from deskmcp.core.settings import origin, raw

    configured = raw(WorkspaceSettings, "workspace")
    if workspace is not None:
        path, source = expand(workspace), "--workspace"
    elif configured:
        path, source = expand(configured), origin(WorkspaceSettings, "workspace") or "DESKMCP_WORKSPACE"
    else:
        return
    if path.is_dir():
        return
    path = path.absolute()
    if path.exists():
        typer.echo(f"deskmcp: the workspace {path} ({source}) is not a folder; name a folder.", err=True)
        raise typer.Exit(2)
    try:
        path.mkdir(parents=True)
    except FileExistsError:
        return  # made meanwhile by another deskmcp
    except OSError as exc:
        typer.echo(f"deskmcp: cannot create the workspace {path} ({source}): {exc.strerror or exc}.", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"deskmcp: created the workspace {path} ({source} named a folder that did not exist).", err=True)


def _selected(name: str, only: str | None, exclude: str | None) -> list[ServerSpec]:
    from deskmcp.gateway import parse_names, select

    try:
        if name == "all":
            return select(parse_names(only), parse_names(exclude))
        if only or exclude:
            raise BadRequest("--only and --exclude go with `deskmcp serve all`.")
        return [get_spec(name)]
    except BadRequest as exc:
        typer.echo(exc.message, err=True)
        raise typer.Exit(2) from None


def _compose(specs: list[ServerSpec] | None, **kwargs: Any) -> Any:
    """`gateway.compose`, or in users mode (no `specs`) `serving.users.described_composition`, with a
    bad toolset selection reported as one line and exit code 2."""
    from deskmcp.gateway import compose

    try:
        if specs is None:
            from deskmcp.serving.users import described_composition

            return described_composition(**kwargs)
        return compose(specs, **kwargs)
    except BadRequest as exc:
        typer.echo(f"deskmcp: {exc.message}", err=True)
        raise typer.Exit(2) from None
