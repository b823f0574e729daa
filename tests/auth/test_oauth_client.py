"""The official SDK's OAuth client against deskmcp and a real authorization server: discovery from
the 401, authorization code + PKCE with the resource indicator, the person
signing in and consenting over HTTP, then tool calls, and a step-up when a tool needs more scope."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from tests.helpers.authorization_server import (
    DESKTOP_CLIENT,
    REDIRECT_URI,
    AuthorizationServer,
    Person,
    protected_app,
)
from tests.helpers.network import free_port, serving
from tests.helpers.processes import environment, server_process

pytestmark = pytest.mark.e2e


class MemoryStorage:
    """The SDK's `TokenStorage`, kept in memory; holds the client registered at `issuer` (a client
    registering itself would be allowed only the scope it registered with, so could not step up)."""

    def __init__(self, issuer: str) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = OAuthClientInformationFull(
            client_id=DESKTOP_CLIENT,
            redirect_uris=[REDIRECT_URI],  # type: ignore[list-item]
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
            issuer=issuer,
        )

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


def oauth_client(mcp_url: str, person: Person, storage: MemoryStorage) -> OAuthClientProvider:
    redirects: list[dict[str, str]] = []

    async def redirect_handler(authorization_url: str) -> None:
        redirects.append(await person.authorize(authorization_url, REDIRECT_URI))

    async def callback_handler() -> AuthorizationCodeResult:
        params = redirects.pop()
        return AuthorizationCodeResult(code=params["code"], state=params.get("state"), iss=params.get("iss"))

    metadata = OAuthClientMetadata(
        client_name="deskmcp tests",
        redirect_uris=[REDIRECT_URI],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )
    return OAuthClientProvider(
        server_url=mcp_url,
        client_metadata=metadata,
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )


async def session_calls(mcp_url: str, auth: OAuthClientProvider) -> tuple[set[str], Any, Any]:
    async with (
        httpx2.AsyncClient(auth=auth, timeout=30) as http,
        Client(streamable_http_client(mcp_url, http_client=http)) as client,
    ):
        names = {t.name for t in (await client.list_tools()).tools}
        me = await client.call_tool("whoami" if "whoami" in names else "list_notes", {})
        written = await client.call_tool("write_note", {"path": "Signed in.md", "body": "by alice"})
        return names, me, written


def test_sdk_oauth_client_signs_in_with_pkce_and_steps_up_to_write(issuer: AuthorizationServer, tmp_path: Path) -> None:
    port = free_port()
    app, _ = protected_app(issuer, port, tmp_path / "workspace")
    person = Person(login="alice")
    storage = MemoryStorage(issuer.issuer)
    with serving(app, port=port) as base:
        names, me, written = anyio.run(session_calls, f"{base}/mcp", oauth_client(f"{base}/mcp", person, storage))

    # the first authorization asked for the basic scope only: the list shows the read tools
    assert "read_note" in names and "write_note" not in names
    assert not me.is_error
    assert me.structured_content["issuer"] == issuer.issuer
    assert me.structured_content["subject"] == "alice"
    # write_note answered 403 insufficient_scope; the client asked the person again and retried
    assert not written.is_error, written
    assert person.consents == 2
    assert storage.tokens is not None and set((storage.tokens.scope or "").split()) >= {"read", "write"}
    assert (tmp_path / "workspace" / "vault" / "Signed in.md").is_file()


def test_serve_all_over_http_takes_access_tokens_from_the_configured_issuer(
    issuer: AuthorizationServer, tmp_path: Path
) -> None:
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    env = environment(tmp_path / "workspace", DESKMCP_AUTH_ISSUER=issuer.issuer, DESKMCP_AUTH_RESOURCE=resource)
    args = ["serve", "all", "--http", "--port", str(port)]
    with server_process(args, env, ready="requests need an access token") as stderr:
        base = f"http://127.0.0.1:{port}"
        anonymous = httpx2.get(f"{base}/tools", timeout=30)
        metadata = httpx2.get(f"{base}/.well-known/oauth-protected-resource/mcp", timeout=30).json()
        person = Person(login="bob")
        names, me, written = anyio.run(
            session_calls, resource, oauth_client(resource, person, MemoryStorage(issuer.issuer))
        )

    assert f"access token from {issuer.issuer} for {resource}" in stderr[-1]
    assert anonymous.status_code == 401
    assert metadata["resource"] == resource
    assert "write_note" not in names
    assert not me.is_error
    assert not written.is_error, written
    assert person.consents == 2
    assert (tmp_path / "workspace" / "vault" / "Signed in.md").is_file()
