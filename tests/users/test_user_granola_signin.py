"""Each user of a shared server signs in to Granola's hosted MCP server with their own account:
`/auth/granola/url` and its callback, against a loopback stand-in of the hosted server behind the
tests' oidc-provider (discovery, dynamic registration, PKCE, consent over HTTP). The tokens land
sealed in that user's own row of PostgreSQL, their meetings sync through them into their own
index, another user is asked to sign in themselves, a sign-in finishes only for the user who
began it and only once, and the tokens refresh."""

from __future__ import annotations

import base64
import json
import os
import urllib.parse
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import httpx2
import psycopg
import pytest

from deskmcp.core.errors import AuthRequired
from deskmcp.core.principal import Principal
from deskmcp.gateway import compose
from deskmcp.meetings.granola_mcp import GranolaMcp, signed_out
from deskmcp.servers import SERVERS
from deskmcp.serving.app import create_app
from deskmcp.serving.options import HttpOptions
from deskmcp.serving.users import UsersSettings, read_user_settings, user_settings, user_workspace
from tests.helpers.authorization_server import (
    CLIENT_SECRET,
    INTROSPECTOR,
    AuthorizationServer,
    Person,
)
from tests.helpers.granola_mcp import HostedGranola, hosted_granola
from tests.helpers.network import free_port, serving
from tests.meetings.test_api_source import NOTES

pytestmark = pytest.mark.e2e  # oidc-provider, the hosted stand-in, PostgreSQL

SOME = NOTES[:3]
"""Few enough that a first sync keeps within the hosted server's burst: it ends before the first answer."""


@pytest.fixture(scope="module")
def hosted(issuer: AuthorizationServer) -> Iterator[HostedGranola]:
    with hosted_granola(issuer) as server:
        server.notes = [dict(n) for n in SOME]
        yield server


@dataclass
class Deployment:
    """Two replicas of one users-mode deskmcp behind one address (the resource), each checking access
    tokens from the tests' oidc-provider, sharing the users root, PostgreSQL and the sealing keys."""

    bases: list[str]
    issuer: AuthorizationServer
    resource: str
    users: UsersSettings
    database: str

    def headers(self, subject: str) -> dict[str, str]:
        token = self.issuer.sign(self.issuer.claims(self.resource, sub=subject))
        return {"authorization": f"Bearer {token}"}

    def call(self, subject: str, tool: str, arguments: dict[str, Any] | None = None) -> tuple[int, Any]:
        response = httpx2.post(
            f"{self.bases[0]}/api/tools/{tool}", json=arguments or {}, headers=self.headers(subject), timeout=60
        )
        return response.status_code, response.json()

    def synced(self, subject: str) -> dict[str, Any]:
        """`granola.cache.status` once the user's sync has nothing left (asked again until then, bounded)."""

        async def asking() -> dict[str, Any]:
            with anyio.fail_after(60):
                async with httpx2.AsyncClient(timeout=60) as http:
                    while True:
                        answer = await http.post(
                            f"{self.bases[0]}/api/tools/granola.cache.status", json={}, headers=self.headers(subject)
                        )
                        status = answer.json()
                        if answer.status_code != 200 or status.get("syncing") is None:
                            return status
                        await anyio.lowlevel.checkpoint()

        return anyio.run(asking)

    def begin(self, subject: str) -> str:
        answer = httpx2.get(f"{self.bases[0]}/auth/granola/url", headers=self.headers(subject), timeout=60)
        assert answer.status_code == 200, answer.text
        return answer.json()["url"]

    def callback(self, params: dict[str, str], subject: str | None = None, replica: int = 0) -> httpx2.Response:
        """The browser's return (no token), or the same made with `subject`'s token."""
        headers = self.headers(subject) if subject else {}
        return httpx2.get(f"{self.bases[replica]}/auth/granola/callback", params=params, headers=headers, timeout=60)

    def settings(self, subject: str) -> Any:
        assert self.users.users_root is not None
        who = Principal(self.issuer.issuer, subject)
        workspace = user_workspace(self.users.users_root, who)
        return user_settings(SERVERS["meetings"], workspace, read_user_settings(workspace), (), who)

    def record(self, subject: str) -> Any:
        from deskmcp.meetings.mcp_source import user_record

        return user_record(self.settings(subject))


@pytest.fixture
def deployment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, database: str, hosted: HostedGranola, issuer: AuthorizationServer
) -> Iterator[Deployment]:
    from deskmcp.serving.auth.gate import ResourceServer
    from deskmcp.serving.auth.settings import AuthorizationSettings

    monkeypatch.setenv("GRANOLA_MCP_URL", hosted.url)
    monkeypatch.setenv("DESKMCP_DATABASE_URL", database)
    monkeypatch.setenv("DESKMCP_TOKEN_KEYS", "k1:" + base64.b64encode(os.urandom(32)).decode())
    users = UsersSettings(users_root=tmp_path / "users")
    for subject in ("alice", "bob"):
        workspace = user_workspace(tmp_path / "users", Principal(issuer.issuer, subject))
        # A user's own GRANOLA_MCP_URL is dropped: tokens go to the deployment's address only.
        (workspace / "settings.env").write_text(
            "GRANOLA_SOURCE=mcp\nGRANOLA_MCP_URL=http://127.0.0.1:9/elsewhere\nGRANOLA_API_SYNC_SECONDS=3600\n",
            encoding="utf-8",
        )
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    checked = AuthorizationSettings(
        issuer=issuer.issuer, resource=resource, client_id=INTROSPECTOR, client_secret=CLIENT_SECRET
    )
    with ExitStack() as stack:
        bases = [
            stack.enter_context(
                serving(
                    create_app(
                        compose(keep_unavailable=True),
                        HttpOptions(port=port, authorization=ResourceServer(checked), users=users),
                    ),
                    port=port if replica == 0 else 0,
                )
            )
            for replica in (0, 1)
        ]
        yield Deployment(bases, issuer, resource, users, database)


def authorised(url: str, login: str) -> dict[str, str]:
    """The person `login` signs in at the provider and consents; the redirect's parameters."""
    redirect_uri = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)["redirect_uri"][0]

    async def browse() -> dict[str, str]:
        with anyio.fail_after(60):
            return await Person(login=login).authorize(url, redirect_uri)

    return anyio.run(browse)


def rows(database: str) -> list[tuple[str, bytes]]:
    from deskmcp.google.sealed_tokens import REMOTE_TABLE

    with psycopg.connect(database) as conn:
        return [(r[0], bytes(r[1])) for r in conn.execute(f"SELECT key_id, sealed FROM {REMOTE_TABLE}")]


def test_security_each_user_syncs_their_own_hosted_granola_through_their_own_sealed_sign_in(
    deployment: Deployment, hosted: HostedGranola
) -> None:
    url = deployment.begin("alice")
    query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
    assert query["code_challenge_method"] == "S256" and query["resource"] == hosted.url

    assert deployment.callback(authorised(url, "alice-at-granola")).status_code == 200

    synced = deployment.synced("alice")
    assert synced["source"] == "mcp" and synced["ok"] is True, synced
    status, listed = deployment.call("alice", "granola.meetings.list", {"limit": 100})
    assert status == 200, listed
    assert sorted(m["id"] for m in listed["items"]) == sorted(n["id"] for n in SOME)

    status, refused = deployment.call("bob", "granola.meetings.list", {"limit": 100})
    assert refused["error"] == "auth_required", refused
    assert "/auth/granola/url" in refused["message"] and "deskmcp auth granola" not in refused["message"]
    assert not any(n["id"] in json.dumps(refused) or n["title"] in json.dumps(refused) for n in SOME)

    kept = deployment.record("alice").load()
    assert kept["url"] == hosted.url
    secrets = [kept["tokens"]["access_token"], kept["tokens"]["refresh_token"], kept["client_info"]["client_secret"]]
    stored = rows(deployment.database)
    assert len(stored) == 1 and deployment.record("bob").load() is None
    assert not any(s.encode() in sealed for s in secrets for _key, sealed in stored)
    from deskmcp.google.sealed_tokens import RemoteTokenStore

    assert isinstance(deployment.record("alice"), RemoteTokenStore)
    assert deployment.users.users_root is not None
    for path in deployment.users.users_root.rglob("*"):
        if path.is_file():
            assert not any(s.encode() in path.read_bytes() for s in secrets), path


def test_security_a_sign_in_finishes_only_for_the_user_who_began_it_and_only_once_across_replicas(
    deployment: Deployment,
) -> None:
    params = authorised(deployment.begin("alice"), "alice-at-granola")
    key_id, _, sealed = params["state"].partition(".")
    altered = f"{key_id}.{sealed[:-4]}{'AAAA' if not sealed.endswith('AAAA') else 'BBBB'}"
    assert deployment.callback({**params, "state": altered}).status_code == 400
    mixed_up = deployment.callback({**params, "iss": "http://127.0.0.1:9"})  # RFC 9207: another server's answer
    assert mixed_up.status_code == 400 and "authorization server" in mixed_up.text

    by_bob = deployment.callback(params, subject="bob")
    assert by_bob.status_code == 403 and "another user" in by_bob.text
    assert deployment.record("alice").load() is None and deployment.record("bob").load() is None

    # The browser's return, without a token, passes the gate (the sealed state authorises it) on
    # either replica; the same state again, on the other one, is refused.
    assert deployment.callback(params, replica=1).status_code == 200
    first = deployment.record("alice").load()

    again = deployment.callback(params, replica=0)
    assert again.status_code == 400 and "already used" in again.text
    assert deployment.record("alice").load() == first
    assert deployment.record("bob").load() is None


def test_a_users_sign_in_refreshes_when_its_access_token_expires(deployment: Deployment, hosted: HostedGranola) -> None:
    from deskmcp.connect.remote_sign_in import RemoteTokens

    assert deployment.callback(authorised(deployment.begin("alice"), "alice-at-granola")).status_code == 200
    record = deployment.record("alice")
    before = record.load()
    record.save({**before, "expires_at": 0})  # expired: the next request refreshes first

    tokens = RemoteTokens(record, hosted.url, signed_out)
    page = GranolaMcp(hosted.url, auth=tokens).list_page(updated_after=None, cursor=None)

    assert sorted(n.id for n in page.notes) == sorted(n["id"] for n in SOME)
    assert tokens.refreshes == 1
    after = record.load()
    assert after["tokens"]["access_token"] != before["tokens"]["access_token"]
    assert after["expires_at"] > 0 and after["client_info"] == before["client_info"]

    record.save({**after, "expires_at": 0, "tokens": {**after["tokens"], "refresh_token": "not-granolas"}})
    with pytest.raises(AuthRequired) as refused:
        GranolaMcp(hosted.url, auth=RemoteTokens(record, hosted.url, signed_out)).list_page(
            updated_after=None, cursor=None
        )
    assert "sign in" in refused.value.message.lower()


def test_signing_in_again_reuses_the_users_registration(deployment: Deployment) -> None:
    assert deployment.callback(authorised(deployment.begin("alice"), "alice-at-granola")).status_code == 200
    first = deployment.record("alice").load()
    again = deployment.begin("alice")
    query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(again).query))

    assert query["client_id"] == first["client_info"]["client_id"], "no new client registered"
    assert deployment.callback(authorised(again, "alice-at-granola")).status_code == 200
    second = deployment.record("alice").load()
    assert second["client_info"] == first["client_info"]
    assert second["tokens"]["access_token"] != first["tokens"]["access_token"]


def test_a_user_signs_out_of_hosted_granola_and_only_their_own_tokens_go(deployment: Deployment) -> None:
    assert deployment.callback(authorised(deployment.begin("alice"), "alice-at-granola")).status_code == 200
    assert deployment.callback(authorised(deployment.begin("bob"), "bob-at-granola")).status_code == 200
    url = f"{deployment.bases[1]}/auth/granola"

    assert httpx2.delete(url, timeout=60).status_code == 401  # only a signed-in user signs out, and only themself
    gone = httpx2.delete(url, headers=deployment.headers("alice"), timeout=60)

    assert gone.status_code == 200 and gone.json()["signed_out"] is True, gone.text
    assert deployment.record("alice").load() is None
    assert deployment.record("bob").load() is not None and len(rows(deployment.database)) == 1
    again = httpx2.delete(url, headers=deployment.headers("alice"), timeout=60)
    assert again.status_code == 200 and again.json()["signed_out"] is False
    status, refused = deployment.call("alice", "granola.cache.status")
    assert status == 200 and "/auth/granola/url" in json.dumps(refused), refused
