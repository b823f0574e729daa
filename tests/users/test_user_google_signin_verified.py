"""Connecting Google per user, through the real token check (oidc-provider as the authorization
server): a sign-in's state finishes only for the user who began it, and only once, in one process
and across replicas sharing PostgreSQL."""

from __future__ import annotations

import base64
import os
import urllib.parse
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest

from deskmcp.core.once import MemoryLedger, OnceLedger, PostgresLedger
from deskmcp.core.postgres import close_pools
from deskmcp.core.principal import Principal
from deskmcp.gateway import compose
from deskmcp.google.auth import token_store
from deskmcp.google.sealed_tokens import SealingKeys
from deskmcp.google.web import PrincipalSignIn
from deskmcp.serving.app import create_app
from deskmcp.serving.options import HttpOptions
from deskmcp.serving.users import UsersSettings, google_settings
from tests.helpers.authorization_server import (
    CLIENT_SECRET,
    INTROSPECTOR,
    AuthorizationServer,
)
from tests.helpers.network import free_port, serving
from tests.helpers.postgres import Postgres, fresh_database

pytestmark = pytest.mark.e2e  # starts oidc-provider (and PostgreSQL for the replicas)


def google_token_endpoint(request: httpx2.Request) -> httpx2.Response:
    form = dict(urllib.parse.parse_qsl(request.content.decode()))
    return httpx2.Response(
        200, json={"access_token": f"access-for-{form['code']}", "refresh_token": f"refresh-{form['code']}"}
    )


@dataclass
class SignIn:
    bases: list[str]
    issuer: AuthorizationServer
    resource: str
    users: UsersSettings

    def token(self, subject: str) -> str:
        return self.issuer.sign(self.issuer.claims(self.resource, sub=subject))

    def start(self, subject: str, replica: int = 0) -> str:
        answer = httpx2.get(
            f"{self.bases[replica]}/auth/url", headers={"authorization": f"Bearer {self.token(subject)}"}, timeout=30
        )
        assert answer.status_code == 200, answer.text
        return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(answer.json()["url"]).query))["state"]

    def callback(self, state: str, code: str, token: str | None = None, replica: int = 0) -> httpx2.Response:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        return httpx2.get(
            f"{self.bases[replica]}/callback", params={"state": state, "code": code}, headers=headers, timeout=30
        )

    def stored(self, subject: str) -> Any:
        owner = Principal(self.issuer.issuer, subject)
        return token_store(google_settings(owner, self.users)).load()


def replicas(
    issuer: AuthorizationServer, root: Path, ledgers: list[OnceLedger], stack: ExitStack
) -> tuple[list[str], str, UsersSettings]:
    """One deskmcp app per ledger, all for one resource and one state key (replicas behind one address)."""
    from deskmcp.serving.auth.gate import ResourceServer
    from deskmcp.serving.auth.settings import AuthorizationSettings

    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    users = UsersSettings(users_root=root)
    keys = SealingKeys.parse("s1:" + base64.b64encode(os.urandom(32)).decode())
    bases = []
    for index, spent in enumerate(ledgers):
        checker = ResourceServer(
            AuthorizationSettings(
                issuer=issuer.issuer, resource=resource, client_id=INTROSPECTOR, client_secret=CLIENT_SECRET
            )
        )
        oauth = PrincipalSignIn(keys, transport=httpx2.MockTransport(google_token_endpoint), spent=spent)
        options = HttpOptions(port=port, authorization=checker, users=users, oauth=oauth)
        app = create_app(compose(keep_unavailable=True), options)
        bases.append(stack.enter_context(serving(app, port=port if index == 0 else 0)))
    return bases, resource, users


@pytest.fixture
def one_process(issuer: AuthorizationServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SignIn]:
    monkeypatch.setenv("GOOGLE_CLIENT_ID", "deskmcp-client")
    monkeypatch.setenv("GOOGLE_CLIENT_SECRET", "deskmcp-secret")
    with ExitStack() as stack:
        bases, resource, users = replicas(issuer, tmp_path / "users", [MemoryLedger()], stack)
        yield SignIn(bases, issuer, resource, users)


def test_security_a_sign_in_is_not_finished_with_another_users_token(one_process: SignIn) -> None:
    state = one_process.start("alice")

    back = one_process.callback(state, "c1", token=one_process.token("bob"))

    assert back.status_code == 403, back.text
    assert one_process.stored("alice") is None and one_process.stored("bob") is None
    # Refused before it was spent: the browser of the one who began it still finishes it.
    assert one_process.callback(state, "c2").status_code == 200
    assert one_process.stored("alice")["token"] == "access-for-c2"


def test_a_sign_in_finished_with_its_own_users_token_is_stored_for_them(one_process: SignIn) -> None:
    state = one_process.start("alice")

    back = one_process.callback(state, "c3", token=one_process.token("alice"))

    assert back.status_code == 200, back.text
    assert one_process.stored("alice")["token"] == "access-for-c3"


def test_security_a_callback_with_a_token_that_fails_its_check_is_refused(one_process: SignIn) -> None:
    state = one_process.start("alice")
    foreign = one_process.issuer.sign(one_process.issuer.claims("http://127.0.0.1:1/mcp", sub="alice"))

    back = one_process.callback(state, "c4", token=foreign)

    assert back.status_code == 401
    assert one_process.stored("alice") is None


def test_security_a_sign_in_state_finishes_once(one_process: SignIn) -> None:
    state = one_process.start("alice")

    answers = [one_process.callback(state, code) for code in ("c5", "c6", "c7")]

    assert [a.status_code for a in answers] == [200, 400, 400]
    assert "already used" in answers[1].text
    assert one_process.stored("alice")["token"] == "access-for-c5"


def test_security_a_sign_in_state_finishes_once_across_replicas_sharing_the_database(
    issuer: AuthorizationServer, postgres: Postgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_CLIENT_ID", "deskmcp-client")
    monkeypatch.setenv("GOOGLE_CLIENT_SECRET", "deskmcp-secret")
    url = fresh_database(postgres)
    try:
        with ExitStack() as stack:
            bases, resource, users = replicas(
                issuer, tmp_path / "users", [PostgresLedger(url), PostgresLedger(url)], stack
            )
            sign_in = SignIn(bases, issuer, resource, users)
            state = sign_in.start("alice", replica=0)

            first = sign_in.callback(state, "c8", replica=1)
            again = sign_in.callback(state, "c9", replica=0)

            assert (first.status_code, again.status_code) == (200, 400), (first.text, again.text)
            assert sign_in.stored("alice")["token"] == "access-for-c8"
    finally:
        close_pools()
