"""`deskmcp connect`'s OAuth client against deskmcp as a resource server and a real authorization
server (oidc-provider): it registers itself, the person signs in and consents (over HTTP, as in a
browser) and the answer reaches connect's own loopback listener; the token file then lets a new
connect call without asking the person again; an answer whose `iss` names another issuer is refused."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
import pytest

from deskmcp.connect.bridge import ForwardingServer
from deskmcp.connect.oauth import oauth_for
from tests.helpers.authorization_server import (
    AuthorizationServer,
    Person,
    protected_app,
)
from tests.helpers.network import free_port, serving

pytestmark = pytest.mark.e2e


def browser_of(person: Person, *, iss: str | None = None):
    """The person's browser: sign-in and consent at the provider, then the redirect to connect's
    listener (with `iss` replaced when given, as a mix-up attack would)."""

    async def browse(authorization_url: str) -> None:
        redirect_uri = parse_qs(urlsplit(authorization_url).query)["redirect_uri"][0]
        params = await person.authorize(authorization_url, redirect_uri)
        if iss is not None:
            params["iss"] = iss
        async with httpx2.AsyncClient(timeout=30) as http:
            await http.get(redirect_uri, params=params)

    return browse


async def list_and_call(url: str, tokens: Path, person: Person, iss: str | None = None) -> tuple[list[str], dict]:
    server = ForwardingServer(url, auth=oauth_for(url, folder=tokens, browser=browser_of(person, iss=iss)))
    with anyio.fail_after(120):
        names = [t.name for t in await server.list_tools()]
        result = await server.call_tool("whoami", {})
    text = "".join(getattr(c, "text", "") for c in result.content)
    return names, {"is_error": result.is_error, "structured": result.structured_content, "text": text}


def test_connect_signs_in_once_and_calls_again_from_its_token_file(issuer: AuthorizationServer, tmp_path: Path) -> None:
    port = free_port()
    app, _ = protected_app(issuer, port, tmp_path / "workspace")
    person = Person(login="carol")
    tokens = tmp_path / "tokens"
    with serving(app, port=port) as base:
        names, first = anyio.run(list_and_call, f"{base}/mcp", tokens, person)
        _, again = anyio.run(list_and_call, f"{base}/mcp", tokens, person)

    assert "whoami" in names
    assert not first["is_error"], first["text"]
    assert first["structured"]["subject"] == "carol"
    assert not again["is_error"], again["text"]
    assert person.consents == 1, "the second connect used the kept tokens"
    [kept] = tokens.glob("oauth-*.json")
    assert kept.stat().st_mode & 0o777 == 0o600


def test_security_connect_refuses_an_answer_naming_another_issuer(issuer: AuthorizationServer, tmp_path: Path) -> None:
    port = free_port()
    app, _ = protected_app(issuer, port, tmp_path / "workspace")
    with serving(app, port=port) as base:
        _, answer = anyio.run(
            list_and_call, f"{base}/mcp", tmp_path / "tokens", Person(login="dave"), "https://evil.example"
        )

    assert answer["is_error"]
    assert '"auth_required"' in answer["text"]
    assert "issuer" in answer["text"].lower() or "iss" in answer["text"]


def test_connect_refreshes_at_the_authorization_servers_token_endpoint_after_a_restart(
    issuer: AuthorizationServer, tmp_path: Path
) -> None:
    """The authorization server lives at another origin than the MCP server (as Granola's does). A
    new process holding only an expired access token and a refresh token must refresh at that
    server's token endpoint, without sending the person to the browser again."""
    port = free_port()
    app, _ = protected_app(issuer, port, tmp_path / "workspace")
    person = Person(login="erin")
    tokens = tmp_path / "tokens"
    browsed: list[str] = []
    browse = browser_of(person)

    async def counting_browser(authorization_url: str) -> None:
        browsed.append(authorization_url)
        await browse(authorization_url)

    async def call(url: str) -> bool:
        server = ForwardingServer(url, auth=oauth_for(url, folder=tokens, browser=counting_browser))
        with anyio.fail_after(120):
            result = await server.call_tool("whoami", {})
        return result.is_error

    with serving(app, port=port) as base:
        assert not anyio.run(call, f"{base}/mcp")
        [kept] = tokens.glob("oauth-*.json")
        data = json.loads(kept.read_text(encoding="utf-8"))
        assert data["tokens"].get("refresh_token"), "the sign-in kept a refresh token"
        kept.write_text(json.dumps({**data, "expires_at": 0}), encoding="utf-8")  # expired since
        assert not anyio.run(call, f"{base}/mcp")

    assert len(browsed) == 1, "the expired token was refreshed, not signed in again"
    assert json.loads(kept.read_text(encoding="utf-8"))["tokens"]["access_token"] != data["tokens"]["access_token"]
