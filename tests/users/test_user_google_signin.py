"""Connecting Google when deskmcp serves several users: the state of /auth/url carries the signed-in
user, the token lands in that user's own store, and another user cannot complete it."""

from __future__ import annotations

import base64
import json
import os
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from deskmcp.core.errors import BadRequest, PermissionDenied
from deskmcp.gateway import compose
from deskmcp.google.auth import token_store
from deskmcp.google.sealed_tokens import SealingKeys
from deskmcp.google.web import PrincipalSignIn
from deskmcp.serving.app import create_app
from deskmcp.serving.options import HttpOptions
from deskmcp.serving.users import UsersSettings, google_settings
from tests.helpers.network import serving
from tests.helpers.principals import ActingFromHeader, as_user, principal


def google_token_endpoint(request: httpx2.Request) -> httpx2.Response:
    form = dict(urllib.parse.parse_qsl(request.content.decode()))
    return httpx2.Response(
        200, json={"access_token": f"access-for-{form['code']}", "refresh_token": f"refresh-{form['code']}"}
    )


@pytest.fixture
def deployment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, UsersSettings]]:
    monkeypatch.setenv("GOOGLE_CLIENT_ID", "deskmcp-client")
    monkeypatch.setenv("GOOGLE_CLIENT_SECRET", "deskmcp-secret")
    users = UsersSettings(users_root=tmp_path / "users")
    keys = SealingKeys.parse("s1:" + base64.b64encode(os.urandom(32)).decode())
    oauth = PrincipalSignIn(keys, transport=httpx2.MockTransport(google_token_endpoint))
    app = create_app(compose(keep_unavailable=True), HttpOptions(users=users, oauth=oauth))
    with serving(ActingFromHeader(app)) as base:
        yield base, users


def start(base: str, subject: str) -> str:
    answer = httpx2.get(f"{base}/auth/url", headers=as_user(subject), timeout=30).json()
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(answer["url"]).query))["state"]


def stored(users: UsersSettings, subject: str) -> Any:
    return token_store(google_settings(principal(subject), users)).load()


def test_the_callback_stores_the_token_of_the_user_who_started(deployment: tuple[str, UsersSettings]) -> None:
    base, users = deployment
    state = start(base, "alice")

    back = httpx2.get(f"{base}/callback", params={"state": state, "code": "c1"}, timeout=30)

    assert back.status_code == 200
    assert stored(users, "alice")["token"] == "access-for-c1"
    assert stored(users, "bob") is None


def test_security_another_user_cannot_complete_a_users_sign_in(deployment: tuple[str, UsersSettings]) -> None:
    base, users = deployment
    state = start(base, "alice")

    back = httpx2.get(f"{base}/callback", params={"state": state, "code": "c2"}, headers=as_user("bob"), timeout=30)

    assert back.status_code == 403
    assert "another user" in back.text
    assert stored(users, "alice") is None
    assert stored(users, "bob") is None


def test_security_a_forged_or_altered_state_is_refused(deployment: tuple[str, UsersSettings]) -> None:
    base, users = deployment
    state = start(base, "alice")
    key_id, _, sealed = state.partition(".")
    altered = f"{key_id}.{sealed[:-4]}{'AAAA' if not sealed.endswith('AAAA') else 'BBBB'}"

    answers = [
        httpx2.get(f"{base}/callback", params={"state": s, "code": "c3"}, timeout=30)
        for s in (altered, "s1.bm90LXNlYWxlZA", json.dumps({"iss": "x", "sub": "bob"}))
    ]

    assert [a.status_code for a in answers] == [400, 400, 400]
    assert stored(users, "alice") is None


def test_security_auth_url_needs_a_signed_in_user(deployment: tuple[str, UsersSettings]) -> None:
    base, _ = deployment

    answer = httpx2.get(f"{base}/auth/url", timeout=30)

    assert answer.status_code == 401
    assert answer.json()["error"] == "auth_required"


def test_security_the_flow_stores_a_token_only_through_the_settings_of_the_user_who_began(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_CLIENT_ID", "deskmcp-client")
    monkeypatch.setenv("GOOGLE_CLIENT_SECRET", "deskmcp-secret")
    users = UsersSettings(users_root=tmp_path / "users")
    keys = SealingKeys.parse("s1:" + base64.b64encode(os.urandom(32)).decode())
    flow = PrincipalSignIn(keys, transport=httpx2.MockTransport(google_token_endpoint))
    alice, bob = principal("alice"), principal("bob")

    url, scopes = flow.begin(alice, google_settings(alice, users), "http://127.0.0.1/callback", ["mail"])
    state = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))["state"]
    returned = flow.returned(state, "c5", None, caller=None)

    assert (returned.owner.issuer, returned.owner.subject) == (alice.issuer, alice.subject)
    assert returned.scopes == scopes
    with pytest.raises(PermissionDenied, match="not those of the user who began"):
        flow.finish(returned, google_settings(bob, users))
    assert stored(users, "alice") is None and stored(users, "bob") is None
    flow.finish(returned, google_settings(alice, users))
    assert stored(users, "alice")["token"] == "access-for-c5"
    assert stored(users, "bob") is None
    with pytest.raises(BadRequest, match="already used"):
        flow.returned(state, "c5", None, caller=alice)
