"""deskmcp as an OAuth resource server in front of a real authorization server (oidc-provider):
the metadata, the challenges, every refusal of a bad token, scopes per tool, introspection."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from joserfc.jwk import ECKey, RSAKey
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.helpers.authorization_server import (
    OPAQUE_SERVICE,
    SERVICE,
    AuthorizationServer,
    protected_app,
)
from tests.helpers.network import free_port, serving

pytestmark = pytest.mark.e2e

MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


class Deployment:
    def __init__(self, base: str, resource_server: Any, issuer: AuthorizationServer) -> None:
        self.base = base
        self.resource = f"{base}/mcp"
        self.rs = resource_server
        self.issuer = issuer

    def token(self, scope: str = "read", client_id: str = SERVICE, resource: str | None = None) -> str:
        return self.issuer.client_credentials(client_id, scope, resource or self.resource)

    def call_mcp(self, token: str | None, name: str, arguments: dict[str, Any] | None = None) -> httpx2.Response:
        """A raw `tools/call` POST to /mcp (no session: refusals come before the MCP layer)."""
        headers = dict(MCP_HEADERS)
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
        return httpx2.post(self.resource, json=body, headers=headers, timeout=30)

    def call_api(self, token: str | None, name: str, arguments: dict[str, Any] | None = None) -> httpx2.Response:
        headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
        return httpx2.post(f"{self.base}/api/tools/{name}", json=arguments or {}, headers=headers, timeout=30)

    def mcp_session(self, token: str, work: Any) -> Any:
        async def run() -> Any:
            async with (
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
                Client(streamable_http_client(self.resource, http_client=http)) as client,
            ):
                return await work(client)

        return anyio.run(run)


@pytest.fixture(scope="module")
def deployment(issuer: AuthorizationServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    workspace = tmp_path_factory.mktemp("workspace")
    port = free_port()
    app, resource_server = protected_app(issuer, port, workspace)
    with serving(app, port=port) as base:
        yield Deployment(base, resource_server, issuer)


def challenge(response: httpx2.Response) -> dict[str, str]:
    """The parameters of a `WWW-Authenticate: Bearer k="v", ...` header."""
    scheme, _, rest = response.headers["www-authenticate"].partition(" ")
    assert scheme == "Bearer"
    params: dict[str, str] = {}
    for part in rest.split('", '):
        key, _, value = part.partition("=")
        params[key.strip()] = value.strip().strip('"')
    return params


def test_protected_resource_metadata_is_served_unauthenticated_at_the_path_inserted_url(
    deployment: Deployment,
) -> None:
    url = f"{deployment.base}/.well-known/oauth-protected-resource/mcp"
    response = httpx2.get(url, timeout=30)
    assert response.status_code == 200
    assert response.json() == {
        "resource": deployment.resource,
        "authorization_servers": [deployment.issuer.issuer],
        "scopes_supported": ["read", "write", "send"],
        "bearer_methods_supported": ["header"],
        "resource_name": "deskmcp",
    }
    # byte for byte as clients write the URL: no trailing slash added, no normalisation
    assert f'"resource":"{deployment.resource}"'.encode() in response.content
    assert httpx2.get(f"{deployment.base}/", timeout=30).json()["auth"] == "oauth"


def test_request_without_a_token_gets_401_naming_the_metadata_and_the_basic_scope(deployment: Deployment) -> None:
    for response in (
        deployment.call_mcp(None, "whoami"),
        deployment.call_api(None, "whoami"),
        httpx2.get(f"{deployment.base}/tools", timeout=30),
    ):
        assert response.status_code == 401
        assert response.json()["error"] == "auth_required"
        assert challenge(response) == {
            "scope": "read",
            "resource_metadata": f"{deployment.base}/.well-known/oauth-protected-resource/mcp",
        }


def test_a_token_from_the_issuer_lists_and_calls_only_the_tools_its_scopes_allow(deployment: Deployment) -> None:
    token = deployment.token("read")

    async def work(client: Client) -> tuple[set[str], dict[str, Any]]:
        names = {t.name for t in (await client.list_tools()).tools}
        result = await client.call_tool("whoami", {})
        assert not result.is_error, result
        assert result.structured_content is not None
        return names, result.structured_content

    names, me = deployment.mcp_session(token, work)
    assert {"whoami", "read_note", "list_emails"} <= names
    assert not names & {"write_note", "send_email", "move_email"}
    assert me == {"issuer": deployment.issuer.issuer, "subject": SERVICE, "scopes": "read"}
    listed = httpx2.get(f"{deployment.base}/tools", headers={"Authorization": f"Bearer {token}"}, timeout=30)
    assert {t["name"] for t in listed.json()} == names


@pytest.mark.parametrize(("tool", "needed"), [("write_note", "write"), ("send_email", "send"), ("triage_run", "send")])
def test_security_a_call_beyond_the_token_scopes_gets_403_insufficient_scope_naming_it(
    deployment: Deployment, tool: str, needed: str
) -> None:
    token = deployment.token("read write" if needed == "send" else "read")
    for response in (deployment.call_mcp(token, tool, {}), deployment.call_api(token, tool, {})):
        assert response.status_code == 403
        assert response.json()["error"] == "permission_denied"
        assert response.json()["details"] == {"tool": tool, "scope": needed}
        params = challenge(response)
        assert params["error"] == "insufficient_scope"
        assert params["scope"] == needed
        assert params["resource_metadata"] == f"{deployment.base}/.well-known/oauth-protected-resource/mcp"


def test_a_token_with_the_needed_scope_calls_a_write_tool(deployment: Deployment) -> None:
    token = deployment.token("read write")
    response = deployment.call_api(token, "write_note", {"path": "From the service.md", "body": "written"})
    assert response.status_code == 200, response.text
    assert response.json()["path"] == "From the service.md"


def refused(deployment: Deployment, token: str) -> str:
    """The reason the server gives for refusing `token` (asserting it was refused with 401 invalid_token)."""
    response = deployment.call_api(token, "whoami")
    assert response.status_code == 401, response.text
    params = challenge(response)
    assert params["error"] == "invalid_token"
    assert params["resource_metadata"].endswith("/.well-known/oauth-protected-resource/mcp")
    return params["error_description"]


def test_security_a_real_token_issued_for_another_resource_is_refused(deployment: Deployment) -> None:
    other = "http://127.0.0.1:1/other/mcp"
    token = deployment.token("read", resource=other)
    assert other in refused(deployment, token)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"aud": "http://127.0.0.1:1/mcp"}, "audience"),
        ({"aud": ["http://127.0.0.1:1/mcp", "https://elsewhere.example/mcp"]}, "audience"),
        ({"aud": None}, "audience"),
        ({"iss": "http://127.0.0.1:1"}, "issued by"),
        ({"exp": 1_700_000_000, "iat": 1_699_999_000}, "expired"),
        ({"exp": None}, "no exp"),
        ({"nbf": 4_000_000_000}, "not valid yet"),
        ({"iat": 4_000_000_000}, "not valid yet"),
        ({"sub": None, "client_id": None}, "no subject"),
        ({"sub": None, "client_id": "alice"}, "no subject"),
        ({"sub": ""}, "no subject"),
    ],
    ids=[
        "other-audience",
        "other-audiences",
        "no-audience",
        "other-issuer",
        "expired",
        "no-exp",
        "nbf-future",
        "iat-future",
        "no-subject",
        "no-subject-a-client-named-like-a-user",
        "empty-subject",
    ],
)
def test_security_a_token_signed_with_the_issuers_key_but_wrong_claims_is_refused(
    deployment: Deployment, change: dict[str, Any], reason: str
) -> None:
    issuer = deployment.issuer
    good = issuer.sign(issuer.claims(deployment.resource))
    assert deployment.call_api(good, "whoami").status_code == 200
    assert reason in refused(deployment, issuer.sign(issuer.claims(deployment.resource, **change)))


def test_security_a_token_with_alg_none_is_refused(deployment: Deployment) -> None:
    issuer = deployment.issuer
    assert "alg 'none'" in refused(deployment, issuer.unsigned(issuer.claims(deployment.resource)))


def test_security_a_token_signed_hs256_with_the_issuers_public_key_is_refused(deployment: Deployment) -> None:
    issuer = deployment.issuer
    assert "alg 'HS256'" in refused(deployment, issuer.hmac_with_public_key(issuer.claims(deployment.resource)))


def test_security_a_token_with_a_forged_signature_is_refused(deployment: Deployment) -> None:
    issuer = deployment.issuer
    impostor = RSAKey.generate_key(2048, parameters={"kid": issuer.key.kid or ""}, private=True)
    assert "signature" in refused(deployment, issuer.sign(issuer.claims(deployment.resource), key=impostor))


def test_security_an_unknown_kid_is_refused_after_one_refetch_of_the_keys(deployment: Deployment) -> None:
    issuer = deployment.issuer
    assert deployment.call_api(deployment.token("read"), "whoami").status_code == 200
    fetches = deployment.rs.verifier.issuer.fetches
    rogue = ECKey.generate_key("P-256", parameters={"kid": "rogue-1"}, private=True)
    token = issuer.sign(issuer.claims(deployment.resource), key=rogue, alg="ES256")
    assert "'rogue-1' is not among the issuer's keys" in refused(deployment, token)
    assert deployment.rs.verifier.issuer.fetches == fetches + 1
    # again at once: refused from the cache, the issuer is not asked again within the interval
    refused(deployment, token)
    assert deployment.rs.verifier.issuer.fetches == fetches + 1


@pytest.fixture
def uncached(issuer: AuthorizationServer, tmp_path: Path) -> Iterator[Deployment]:
    """A deployment asking the issuer about opaque tokens on every request."""
    port = free_port()
    app, resource_server = protected_app(issuer, port, tmp_path, introspection_cache_seconds=0)
    with serving(app, port=port) as base:
        yield Deployment(base, resource_server, issuer)


def test_an_opaque_token_is_accepted_by_introspection_and_refused_once_revoked(uncached: Deployment) -> None:
    token = uncached.token("read", client_id=OPAQUE_SERVICE)
    assert token.count(".") != 2  # opaque: not a JWT
    response = uncached.call_api(token, "whoami")
    assert response.status_code == 200, response.text
    # The provider's introspection names no sub for a client's own token: it acts as that client,
    # under an issuer no person's principal has.
    expected = {"issuer": uncached.issuer.issuer + "#client", "subject": OPAQUE_SERVICE, "scopes": "read"}
    assert response.json() == expected
    uncached.issuer.revoke(token, OPAQUE_SERVICE)
    assert "not active" in refused(uncached, token)


def test_an_opaque_tokens_answer_is_reused_until_the_cache_time_and_then_asked_again(
    issuer: AuthorizationServer, tmp_path: Path
) -> None:
    port = free_port()
    app, resource_server = protected_app(issuer, port, tmp_path, introspection_cache_seconds=120)
    verifier = resource_server.verifier
    introspections: list[str] = []

    async def count(request: httpx2.Request) -> None:
        if request.url.path.endswith("/introspection"):
            introspections.append(str(request.url))

    verifier.client.event_hooks["request"].append(count)
    with serving(app, port=port) as base:
        deployment = Deployment(base, resource_server, issuer)
        token = deployment.token("read", client_id=OPAQUE_SERVICE)
        answers = [deployment.call_api(token, "whoami").status_code for _ in range(3)]
        asked = len(introspections)
        deployment.issuer.revoke(token, OPAQUE_SERVICE)
        still = deployment.call_api(token, "whoami").status_code
        verifier.clock = lambda: time.time() + 121  # past the cache time
        later = refused(deployment, token)

    assert answers == [200, 200, 200]
    assert asked == 1
    assert still == 200  # revoked at the issuer, refused once the cached answer ends
    assert "not active" in later
    assert len(introspections) == 2


def test_security_an_opaque_token_for_another_resource_is_refused_by_introspection(deployment: Deployment) -> None:
    token = deployment.token("read", client_id=OPAQUE_SERVICE, resource="http://127.0.0.1:1/other/mcp")
    assert "audience" in refused(deployment, token)


def test_security_an_unknown_opaque_token_is_refused_as_inactive(deployment: Deployment) -> None:
    assert "not active" in refused(deployment, "not-a-token-the-issuer-ever-issued")


def signed_with_header(issuer: AuthorizationServer, claims: dict[str, Any], **header: Any) -> str:
    from joserfc import jwt

    fields = {"alg": "RS256", "kid": issuer.key.kid, **header}
    return jwt.encode({k: v for k, v in fields.items() if v is not None}, claims, issuer.key, algorithms=["RS256"])


@pytest.mark.parametrize("typ", ["JWT", None, "jwt", "application/jwt", "id_token+jwt", "at+jwt+x"])
def test_security_a_jwt_that_is_not_marked_an_access_token_is_refused(deployment: Deployment, typ: str | None) -> None:
    token = signed_with_header(deployment.issuer, deployment.issuer.claims(deployment.resource), typ=typ)
    assert "typ" in refused(deployment, token)


@pytest.mark.parametrize("typ", ["at+jwt", "application/at+jwt", "AT+JWT", "Application/At+JWT"])
def test_a_jwt_marked_an_access_token_is_accepted_in_every_spelling(deployment: Deployment, typ: str) -> None:
    token = signed_with_header(deployment.issuer, deployment.issuer.claims(deployment.resource), typ=typ)
    assert deployment.call_api(token, "whoami").status_code == 200


@pytest.mark.parametrize("separator", ["\u00a0", "\t", "\u2003", "\n", "\u3000"])
def test_security_scopes_are_split_on_the_ascii_space_only(deployment: Deployment, separator: str) -> None:
    issuer = deployment.issuer
    token = issuer.sign(issuer.claims(deployment.resource, scope=f"read{separator}write"))

    answer = deployment.call_api(token, "write_note", {"path": "x.md", "body": "x"})

    assert answer.status_code == 403, answer.text
    assert (
        deployment.call_api(issuer.sign(issuer.claims(deployment.resource, scope="read  write")), "whoami").json()[
            "scopes"
        ]
        == "read write"
    )


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH"])
def test_other_methods_on_the_metadata_url_answer_405(deployment: Deployment, method: str) -> None:
    answer = httpx2.request(method, f"{deployment.base}/.well-known/oauth-protected-resource/mcp", timeout=30)

    assert answer.status_code == 405, answer.text
    assert answer.json()["error"] == "bad_request"
