"""Which web pages may drive the HTTP server: the server's own origin and configured ones only.

A browser sends `Origin` with every cross-origin request, so a page served by any other local
web server (another port on 127.0.0.1) must be refused on the MCP endpoint, the tool API and the
sign-in routes; programs that send no Origin keep working."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import httpx2
import pytest
from tests.helpers.network import free_port
from typer.testing import CliRunner

from deskmcp.cli import app as cli_app
from deskmcp.core.errors import BadRequest
from deskmcp.gateway import compose
from deskmcp.google.auth import GoogleSettings
from deskmcp.google.web import OAuthRoutes
from deskmcp.serving.app import create_app
from deskmcp.serving.options import HttpOptions, parse_origins

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "page", "version": "1"}},
}
MCP_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def served_app(tmp_path: Path, port: int, **options: Any) -> Any:
    google = GoogleSettings(workspace=tmp_path / "ws", google_client_id="cid", google_client_secret="secret")
    return create_app(compose(), HttpOptions(port=port, oauth=OAuthRoutes(google), **options))


def answers_from(base: str, origin: str | None) -> dict[str, int]:
    """The status of the MCP endpoint, the tool list, a tool call and the sign-in route for a page at `origin`."""
    extra = {"origin": origin} if origin else {}
    with httpx2.Client(timeout=30) as client:  # one client: each new one builds a TLS context
        return {
            "mcp": client.post(f"{base}/mcp", json=INITIALIZE, headers={**MCP_HEADERS, **extra}).status_code,
            "tools": client.get(f"{base}/tools", headers=extra).status_code,
            "call": client.post(f"{base}/api/tools/granola.cache.status", json={}, headers=extra).status_code,
            "auth": client.get(f"{base}/auth/url", headers=extra).status_code,
        }


def test_a_page_from_another_local_port_cannot_drive_the_server_security(
    serve: Any, workspace: Path, tmp_path: Path
) -> None:
    port = free_port()
    with serve(served_app(tmp_path, port), port=port) as base:
        other_ports = {
            origin: answers_from(base, origin)
            for origin in ("http://127.0.0.1:3000", "http://localhost:3000", "http://[::1]:3000", "http://localhost")
        }

    for origin, answers in other_ports.items():
        assert answers == {"mcp": 403, "tools": 403, "call": 403, "auth": 403}, origin


def test_the_servers_own_origin_in_every_loopback_spelling_is_accepted_security(
    serve: Any, workspace: Path, tmp_path: Path
) -> None:
    port = free_port()
    with serve(served_app(tmp_path, port), port=port) as base:
        own = {
            origin: answers_from(base, origin)
            for origin in (f"http://127.0.0.1:{port}", f"http://localhost:{port}", f"http://[::1]:{port}")
        }
        without_origin = answers_from(base, None)

    for origin, answers in own.items():
        assert answers == {"mcp": 200, "tools": 200, "call": 200, "auth": 200}, origin
    assert without_origin == {"mcp": 200, "tools": 200, "call": 200, "auth": 200}


def test_a_configured_origin_is_accepted_and_others_still_refused_security(
    serve: Any, workspace: Path, tmp_path: Path
) -> None:
    port = free_port()
    app = served_app(tmp_path, port, allowed_origins=("https://desk.example.com",))
    with serve(app, port=port) as base:
        configured = answers_from(base, "https://desk.example.com")
        other = answers_from(base, "https://evil.example.com")

    assert configured == {"mcp": 200, "tools": 200, "call": 200, "auth": 200}
    assert other == {"mcp": 403, "tools": 403, "call": 403, "auth": 403}


def test_parse_origins_reads_a_comma_separated_list_and_refuses_what_is_not_an_origin_security() -> None:
    assert parse_origins(" https://desk.example.com/, http://tools.local:8080 ,") == (
        "https://desk.example.com",
        "http://tools.local:8080",
    )
    for wrong in ("desk.example.com", "https://desk.example.com/app", "ftp://desk.example.com", "*"):
        with pytest.raises(BadRequest, match="DESKMCP_ALLOWED_ORIGINS"):
            parse_origins(wrong)


def test_serve_refuses_a_malformed_allowed_origin_with_one_line_naming_the_setting_security(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DESKMCP_ALLOWED_ORIGINS", "desk.example.com")
    # The port is held busy, so that serve could never stay up and block the test, whatever it checks.
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = CliRunner().invoke(cli_app, ["serve", "meetings", "--http", "--port", str(port)])

    assert result.exit_code == 2
    assert "DESKMCP_ALLOWED_ORIGINS" in result.output
    assert "Traceback" not in result.output
