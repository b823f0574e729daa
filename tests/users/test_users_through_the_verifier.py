"""Each user their own data through the real token check: oidc-provider as the authorization server,
deskmcp verifying each access token against its keys, and the verified principal choosing the
workspace. Alice's token reads Alice's notes only, whatever path she sends."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest

from deskmcp.core.principal import Principal
from deskmcp.gateway import compose
from deskmcp.httpapi import HttpOptions, create_app
from deskmcp.users import UsersSettings
from tests.helpers.authorization_server import (
    CLIENT_SECRET,
    INTROSPECTOR,
    SERVICE,
    AuthorizationServer,
    authorization_server,
    provider_missing,
)
from tests.helpers.network import free_port, serving

pytestmark = pytest.mark.e2e  # starts oidc-provider


@dataclass
class Remote:
    base: str
    issuer: AuthorizationServer
    resource: str
    root: Path

    def token(self, subject: str) -> str:
        return self.issuer.sign(self.issuer.claims(self.resource, sub=subject))

    def call(self, token: str | None, tool: str, arguments: dict[str, object]) -> httpx2.Response:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        return httpx2.post(f"{self.base}/api/tools/{tool}", json=arguments, headers=headers, timeout=60)


def workspace_of(root: Path, issuer: str, subject: str, word: str) -> Path:
    ws = root / Principal(issuer, subject).key
    (ws / "vault").mkdir(parents=True)
    (ws / "vault" / f"{word}.md").write_text(f"# {word}\n\nThe {word} secret plan.\n", encoding="utf-8")
    return ws


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Remote]:
    from deskmcp.auth.gate import ResourceServer
    from deskmcp.auth.settings import AuthorizationSettings

    if (reason := provider_missing()) is not None:
        pytest.skip(reason)
    folder = tmp_path_factory.mktemp("verified")
    with authorization_server(folder / "oidc") as issuer:
        port = free_port()
        resource = f"http://127.0.0.1:{port}/mcp"
        root = folder / "users"
        workspace_of(root, issuer.issuer, "alice", "alpha")
        workspace_of(root, issuer.issuer, "bob", "bravo")
        checker = ResourceServer(
            AuthorizationSettings(
                issuer=issuer.issuer, resource=resource, client_id=INTROSPECTOR, client_secret=CLIENT_SECRET
            )
        )
        options = HttpOptions(port=port, authorization=checker, users=UsersSettings(users_root=root))
        app = create_app(compose(keep_unavailable=True, toolsets="all"), options)
        with serving(app, port=port) as base:
            yield Remote(base, issuer, resource, root)


def test_security_each_verified_user_reads_and_searches_only_their_own_notes(remote: Remote) -> None:
    alice, bob = remote.token("alice"), remote.token("bob")

    alices = remote.call(alice, "search_notes", {"query": "secret"})
    bobs = remote.call(bob, "search_notes", {"query": "secret"})

    assert alices.status_code == 200 and bobs.status_code == 200
    assert "alpha.md" in alices.text and "bravo" not in alices.text
    assert "bravo.md" in bobs.text and "alpha" not in bobs.text


def test_security_a_verified_user_cannot_reach_another_users_workspace_by_path(remote: Remote) -> None:
    alice = remote.token("alice")
    bob_key = Principal(remote.issuer.issuer, "bob").key

    for path in (f"../{bob_key}/vault/bravo.md", str(remote.root / bob_key / "vault" / "bravo.md"), "bravo.md"):
        answer = remote.call(alice, "read_note", {"path": path})
        assert answer.status_code >= 400, (path, answer.text)
        assert "bravo secret" not in answer.text


def test_security_without_a_valid_token_no_users_data_is_reached(remote: Remote) -> None:
    other_audience = remote.issuer.sign(remote.issuer.claims("http://127.0.0.1:1/mcp", sub="alice"))

    answers = [remote.call(token, "search_notes", {"query": "secret"}) for token in (None, other_audience)]

    assert [a.status_code for a in answers] == [401, 401]
    assert all("secret plan" not in a.text for a in answers)


def test_a_token_issued_by_the_provider_gets_its_own_empty_workspace(remote: Remote) -> None:
    issued = remote.issuer.client_credentials(SERVICE, "read write send", remote.resource)

    answer = remote.call(issued, "list_notes", {})

    assert answer.status_code == 200, answer.text
    assert json.loads(answer.text)["notes"] == []
    assert (remote.root / Principal(remote.issuer.issuer, SERVICE).key).is_dir()
