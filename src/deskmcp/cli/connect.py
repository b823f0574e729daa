"""`deskmcp connect`: the tools of a remote deskmcp served over stdio."""

from __future__ import annotations

from typing import Annotated

import typer

from deskmcp.cli import LogLevelOpt, WorkspaceOpt, app, setup_logging
from deskmcp.cli.selection import ensure_workspace


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
