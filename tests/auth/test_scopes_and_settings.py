"""The scope each tool needs, what a principal's scopes let it list and call, and the settings
that configure the resource server (refused when unsafe)."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client
from pydantic import ValidationError
from typer.testing import CliRunner

from deskmcp.cli import app as cli
from deskmcp.core.errors import BadRequest
from deskmcp.core.principal import Principal, acting_for
from deskmcp.gateway import compose
from deskmcp.serving.app import create_app
from deskmcp.serving.auth.gate import ResourceServer
from deskmcp.serving.auth.settings import AuthorizationSettings
from deskmcp.serving.options import HttpOptions
from tests.helpers.network import free_port

ISSUER = "https://issuer.example"
RESOURCE = "https://desk.example/mcp"


def test_each_tool_needs_read_write_or_send_by_its_annotations_and_server(tmp_path: Path) -> None:
    server = compose(workspace=tmp_path, toolsets="all").server
    scopes = {name: server.tool_scope(name) for name in server.tool_toolsets}
    assert {n for n, s in scopes.items() if s == "send"} == {"send_email", "forward_email", "send_draft", "triage_run"}
    assert scopes["read_note"] == scopes["list_emails"] == scopes["read_values"] == "read"
    assert scopes["write_note"] == scopes["move_email"] == scopes["update_values"] == "write"
    assert scopes["render_mermaid"] == "write"  # reaches Kroki, but sends no message for the user


@pytest.mark.anyio
async def test_a_principal_lists_and_calls_only_the_tools_of_its_scopes(tmp_path: Path) -> None:
    server = compose(workspace=tmp_path, toolsets="all").server
    async with Client(server) as client:
        everything = {t.name for t in (await client.list_tools()).tools}
        with acting_for(Principal("https://issuer.example", "alice", frozenset({"read"}))):
            readable = {t.name for t in (await client.list_tools()).tools}
            refused = await client.call_tool("write_note", {"path": "a.md", "body": "x"})
    assert "write_note" in everything and "write_note" not in readable
    assert readable == {n for n in everything if server.tool_scope(n) == "read"}
    assert refused.is_error
    assert '"scope":"write"' in refused.content[0].text  # type: ignore[union-attr]
    assert not (tmp_path / "vault" / "a.md").exists()


@pytest.mark.parametrize("algorithms", [("none",), ("HS256",), ("RS256", "HS512"), ("RS256", "none")])
def test_security_settings_refuse_alg_none_and_hmac(algorithms: tuple[str, ...]) -> None:
    with pytest.raises(ValidationError, match="may not contain"):
        AuthorizationSettings(issuer=ISSUER, resource=RESOURCE, algorithms=algorithms)


@pytest.mark.parametrize(
    "resource",
    [
        "http://desk.example/mcp",
        "desk.example/mcp",
        "https://desk.example/mcp?x=1",
        "https://desk.example/mcp#f",
        "https://desk.example/",
        "https://desk.example/team/mcp",
    ],
)
def test_security_settings_refuse_a_resource_that_is_not_the_https_url_of_the_mcp_endpoint(resource: str) -> None:
    with pytest.raises(ValidationError):
        AuthorizationSettings(issuer=ISSUER, resource=resource)


def test_settings_read_the_environment_and_name_the_metadata_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DESKMCP_AUTH_ISSUER", ISSUER)
    monkeypatch.setenv("DESKMCP_AUTH_RESOURCE", "https://desk.example:8443/mcp")
    monkeypatch.setenv("DESKMCP_AUTH_SCOPES", "send, read")
    monkeypatch.setenv("DESKMCP_AUTH_ALGORITHMS", "ES256 EdDSA")
    settings = AuthorizationSettings()  # type: ignore[call-arg]
    assert settings.scopes == ("read", "send")
    assert settings.algorithms == ("ES256", "EdDSA")
    assert settings.metadata_url == "https://desk.example:8443/.well-known/oauth-protected-resource/mcp"
    assert settings.metadata_path == "/.well-known/oauth-protected-resource/mcp"
    assert ResourceServer(settings).challenge() == (
        'Bearer scope="read", resource_metadata="https://desk.example:8443/.well-known/oauth-protected-resource/mcp"'
    )


def test_introspection_needs_both_client_id_and_secret() -> None:
    with pytest.raises(ValidationError, match="both"):
        AuthorizationSettings(issuer=ISSUER, resource=RESOURCE, client_id="desk")


def test_security_static_token_and_authorization_server_are_not_both_taken(tmp_path: Path) -> None:
    authorization = ResourceServer(AuthorizationSettings(issuer=ISSUER, resource=RESOURCE))
    with pytest.raises(BadRequest, match="both set"):
        create_app(compose(workspace=tmp_path), HttpOptions(token="s3cret", authorization=authorization))
    # off loopback, an authorization server stands in for the static token
    create_app(compose(workspace=tmp_path), HttpOptions(host="0.0.0.0", authorization=authorization))


def test_serve_refuses_an_unsafe_authorization_setting_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DESKMCP_AUTH_ISSUER", ISSUER)
    monkeypatch.setenv("DESKMCP_AUTH_RESOURCE", RESOURCE)
    monkeypatch.setenv("DESKMCP_AUTH_ALGORITHMS", "HS256")
    args = ["serve", "all", "--http", "--port", str(free_port()), "--workspace", str(tmp_path)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2
    assert "may not contain HS256" in result.output
