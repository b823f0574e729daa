"""`deskmcp auth`: deskmcp authorised to use an account (Google's desktop sign-in, a Granola key)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from deskmcp.cli import WorkspaceOpt, app, setup_logging
from deskmcp.core.errors import DeskError

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
