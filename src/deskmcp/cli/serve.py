"""`deskmcp serve`: one server or all of them, over stdio or streamable HTTP."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from deskmcp.cli import LogLevelOpt, ToolsetsOpt, WorkspaceOpt, app, setup_logging
from deskmcp.cli.selection import ExcludeOpt, OnlyOpt, _compose, _selected, ensure_workspace
from deskmcp.core.errors import BadRequest
from deskmcp.servers import SERVERS

if TYPE_CHECKING:
    import socket


@app.command()
def serve(
    name: Annotated[str, typer.Argument(help=f"Which server: all, {', '.join(SERVERS)}.")],
    http: Annotated[bool, typer.Option("--http", help="Serve streamable HTTP instead of stdio.")] = False,
    host: Annotated[str, typer.Option(help="HTTP address to bind; anything but loopback requires a token.")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option(help="HTTP port (1-65535).", min=1, max=65535)] = 8765,
    only: OnlyOpt = None,
    exclude: ExcludeOpt = None,
    allow_host: Annotated[
        list[str] | None,
        typer.Option("--allow-host", help="Extra Host name clients may use (DNS-rebinding check)."),
    ] = None,
    allow_origin: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-origin",
            help="Extra web origin (scheme://host[:port]) whose pages may call the server, besides "
            "$DESKMCP_ALLOWED_ORIGINS; by default only the server's own origin.",
        ),
    ] = None,
    max_body_mb: Annotated[float, typer.Option(help="Largest HTTP request body, in MiB (413 above).")] = 4.0,
    stateless: Annotated[
        bool,
        typer.Option(
            "--stateless",
            help="MCP without sessions, for several replicas behind a load balancer ($DESKMCP_STATELESS); "
            "the replicas share DESKMCP_STATE_KEYS.",
        ),
    ] = False,
    trusted_proxy: Annotated[
        list[str] | None,
        typer.Option(
            "--trusted-proxy",
            help="Address or network of a proxy whose X-Forwarded-For/-Proto are believed, besides "
            "$DESKMCP_TRUSTED_PROXIES; by default nobody's.",
        ),
    ] = None,
    toolsets: ToolsetsOpt = None,
    workspace: WorkspaceOpt = None,
    log_level: LogLevelOpt = "WARNING",
) -> None:
    """Run one server, or all of them (`all`), over stdio (for an MCP client) or streamable HTTP (--http).

    Over HTTP the MCP endpoint is /mcp and the tool API is GET /tools and POST /api/tools/NAME.
    Binding anything but 127.0.0.1 requires a bearer token: DESKMCP_TOKEN, or one generated and
    printed once to stderr; or, with DESKMCP_AUTH_ISSUER and DESKMCP_AUTH_RESOURCE set, access
    tokens from that OAuth authorization server, a scope per tool (docs/authorization.md).
    """

    setup_logging(log_level)
    specs = _selected(name, only, exclude)
    origins = _allowed_origins(allow_origin) if http else ()
    stateless, proxies, state_security = _replica_options(stateless, trusted_proxy) if http else (False, (), None)
    ensure_workspace(workspace)
    authorization = _authorization() if http else None
    users = _users(authorization) if http else None
    # The port first: finding it busy once every server has started would cost seconds.
    sock = _bind(host, port) if http else None
    if users is not None:
        # Each user's servers are composed on their own workspace; this one only says what they publish.
        composition = _compose(None, name=_server_name(name), toolsets=toolsets, request_state_security=state_security)
    else:
        # A server named on its own always starts: its tools then say what is missing.
        composition = _compose(
            specs,
            workspace=workspace,
            keep_unavailable=name != "all",
            name=_server_name(name),
            toolsets=toolsets,
            request_state_security=state_security,
        )
    if not http:
        composition.server.run("stdio")
        return

    from deskmcp.serving.listen import serve as serve_http
    from deskmcp.serving.options import HttpOptions, HttpSettings, resolve_token

    token, generated = (None, False) if authorization else resolve_token(host, HttpSettings().token_text)
    options = HttpOptions(
        host=host,
        port=port,
        token=token,
        max_body_bytes=int(max_body_mb * 1024 * 1024),
        allowed_hosts=tuple(allow_host or ()),
        allowed_origins=origins,
        workspace=workspace,
        authorization=authorization,
        stateless=stateless,
        trusted_proxies=proxies,
        request_state_security=state_security,
        users=users,
    )

    def announce() -> None:
        # stderr: over HTTP stdout is free, but logs and notices all go to stderr.
        base = f"http://{_url_host(host)}:{port}"
        where = f" (bound to every address, {host})" if host in ("0.0.0.0", "::") else ""
        typer.echo(
            f"deskmcp: serving MCP at {base}/mcp and the tool API at {base}/tools{where}; Ctrl-C stops.", err=True
        )
        if generated:
            typer.echo(f"deskmcp: send 'Authorization: Bearer {token}' (or set DESKMCP_TOKEN).", err=True)
        elif token:
            typer.echo("deskmcp: requests need 'Authorization: Bearer' with the value of DESKMCP_TOKEN.", err=True)
        elif authorization:
            settings = authorization.settings
            typer.echo(
                f"deskmcp: requests need an access token from {settings.issuer} for {settings.resource} "
                f"(scopes {' '.join(settings.scopes)}).",
                err=True,
            )

    serve_http(composition, options, log_level=log_level, on_ready=announce, sock=sock)


def _authorization() -> Any:
    """The OAuth resource server (`deskmcp.serving.auth`) when DESKMCP_AUTH_ISSUER is set, else None; a bad
    setting, or a missing `remote` extra, is one line and exit code 2."""
    from pydantic import ValidationError

    from deskmcp.core.extras import MissingExtra, needs_extra
    from deskmcp.core.settings import raw
    from deskmcp.serving.auth.settings import AuthorizationSettings
    from deskmcp.serving.options import HttpSettings

    if not raw(AuthorizationSettings, "issuer"):
        return None  # the resource server's libraries (joserfc) are the remote extra: not needed
    try:
        with needs_extra("remote", "DESKMCP_AUTH_ISSUER (an OAuth authorization server)"):
            from deskmcp.serving.auth.gate import ResourceServer, authorization_from_environment
    except MissingExtra as exc:
        typer.echo(f"deskmcp: {exc.message}", err=True)
        raise typer.Exit(2) from None
    try:
        settings = authorization_from_environment()
    except ValidationError as exc:
        error = exc.errors()[0]
        typer.echo(f"deskmcp: {error['msg']} ({'.'.join(map(str, error['loc']))}).", err=True)
        raise typer.Exit(2) from None
    if settings is None:
        return None
    if HttpSettings().token_text:
        typer.echo(
            "deskmcp: DESKMCP_TOKEN and DESKMCP_AUTH_ISSUER are both set; unset one (the static token is for "
            "one person on one machine, the authorization server for several).",
            err=True,
        )
        raise typer.Exit(2)
    return ResourceServer(settings)


def _users(authorization: object) -> Any:
    """Per-user serving when DESKMCP_USERS_ROOT is set (`deskmcp.serving.users`); it needs an authorization
    server, which names each request's user. A bad setting is one line and exit code 2."""
    from deskmcp.serving.users import UsersSettings

    users = UsersSettings()
    if users.users_root is None:
        return None
    if authorization is None:
        typer.echo(
            "deskmcp: DESKMCP_USERS_ROOT serves each user their own data, which needs an authorization server "
            "to say who each request is from: set DESKMCP_AUTH_ISSUER and DESKMCP_AUTH_RESOURCE too.",
            err=True,
        )
        raise typer.Exit(2)
    return users


def _bind(host: str, port: int) -> socket.socket:
    """The HTTP socket, bound; a port in use (or an address not on this machine) is one line and exit code 1."""
    import errno

    from deskmcp.serving.listen import bind

    try:
        return bind(host, port)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            why = (
                f"port {port} on {host} is already in use (by another deskmcp or another program). "
                f"Choose another with --port, or stop the process listening there."
            )
        elif exc.errno == errno.EACCES:
            why = f"port {port} on {host} needs privileges to bind; choose one above 1023 with --port."
        else:
            why = f"cannot listen on {host} port {port}: {exc.strerror or exc}. Check --host and --port."
        typer.echo(f"deskmcp: {why}", err=True)
        raise typer.Exit(1) from None


def _allowed_origins(extra: list[str] | None) -> tuple[str, ...]:
    """DESKMCP_ALLOWED_ORIGINS and the --allow-origin values; a malformed one is a usage error."""
    from deskmcp.serving.options import HttpSettings, parse_origins

    try:
        return parse_origins(",".join([HttpSettings().allowed_origins, *(extra or ())]))
    except BadRequest as exc:
        typer.echo(f"deskmcp: {exc.message}", err=True)
        raise typer.Exit(2) from None


def _replica_options(stateless: bool, trusted: list[str] | None) -> tuple[bool, tuple[str, ...], Any]:
    """--stateless / DESKMCP_STATELESS, the trusted proxies and the shared request-state keys
    (`deskmcp.serving.replicas`); a bad value is one line and exit code 2."""
    from pydantic import ValidationError

    from deskmcp.serving.replicas import ReplicaSettings, request_state_security, trusted_proxies

    try:
        settings = ReplicaSettings(stateless=True) if stateless else ReplicaSettings()
        proxies = trusted_proxies(settings.trusted_proxies, trusted or ())
        return settings.stateless, proxies, request_state_security(settings)
    except BadRequest as exc:
        typer.echo(f"deskmcp: {exc.message}", err=True)
    except ValidationError as exc:
        typer.echo(f"deskmcp: {exc.errors()[0]['msg']} (DESKMCP_STATELESS: true or false).", err=True)
    raise typer.Exit(2)


def _url_host(host: str) -> str:
    """The host as written in a URL: IPv6 in brackets, a wildcard bind as the loopback name."""
    if host in ("0.0.0.0", "::", ""):
        return "127.0.0.1" if host != "::" else "[::1]"
    from deskmcp.serving.hosts import bracketed

    return bracketed(host)


def _server_name(name: str) -> str:
    return "deskmcp" if name == "all" else f"deskmcp-{name}"
