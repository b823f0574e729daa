"""Connecting a Google account over HTTP: /auth/url and /callback (deskmcp.google.web) on the HTTP app."""

from __future__ import annotations

import json
import urllib.parse
from pathlib import Path
from typing import Any

import httpx2
import pytest

from deskmcp.gateway import compose
from deskmcp.google.auth import GoogleSettings
from deskmcp.google.web import OAuthRoutes
from deskmcp.servers import get_spec
from deskmcp.serving.app import create_app
from deskmcp.serving.options import HttpOptions
from tests.helpers.network import serving


@pytest.fixture
def google(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> GoogleSettings:
    monkeypatch.setenv("DESKMCP_WORKSPACE", str(tmp_path / "ws"))
    monkeypatch.delenv("DESKMCP_TOKEN", raising=False)
    return GoogleSettings(workspace=tmp_path / "ws", google_client_id="cid", google_client_secret="secret")


def token_endpoint(seen: list[dict[str, str]]) -> httpx2.MockTransport:
    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(dict(urllib.parse.parse_qsl(request.content.decode())))
        return httpx2.Response(200, json={"access_token": "at", "refresh_token": "rt", "expires_in": 3600})

    return httpx2.MockTransport(handler)


def app_for(google: GoogleSettings, seen: list[dict[str, str]], **options: Any) -> Any:
    oauth = OAuthRoutes(google, transport=token_endpoint(seen))
    return create_app(compose([get_spec("sheets")]), HttpOptions(oauth=oauth, **options))


def query(url: str) -> dict[str, str]:
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))


def test_auth_url_then_callback_stores_the_token_and_shows_a_page(google: GoogleSettings) -> None:
    seen: list[dict[str, str]] = []
    with serving(app_for(google, seen)) as base:
        started = httpx2.get(f"{base}/auth/url").json()
        consent = query(started["url"])
        assert consent["redirect_uri"] == f"{base}/callback"
        assert consent["code_challenge_method"] == "S256"
        assert "spreadsheets" in consent["scope"]
        done = httpx2.get(f"{base}/callback", params={"state": consent["state"], "code": "c0de"})
    assert done.status_code == 200
    assert "authorised" in done.text
    assert seen[0]["code"] == "c0de"
    assert seen[0]["redirect_uri"] == f"{base}/callback"
    token = json.loads(google.google_token_path.read_text(encoding="utf-8"))
    assert token["refresh_token"] == "rt"


def test_callback_refuses_a_state_it_did_not_issue(google: GoogleSettings) -> None:
    seen: list[dict[str, str]] = []
    with serving(app_for(google, seen)) as base:
        httpx2.get(f"{base}/auth/url")
        forged = httpx2.get(f"{base}/callback", params={"state": "forged", "code": "c0de"})
    assert forged.status_code == 400
    assert "state" in forged.text
    # A page for the browser, as the sign-in's other pages (not the tool API's JSON errors).
    assert forged.headers["content-type"].startswith("text/html")
    assert forged.text.lstrip().startswith("<!doctype html>") and "not authorised" in forged.text
    assert seen == []
    assert not google.google_token_path.exists()


def test_callback_reports_a_refused_consent(google: GoogleSettings) -> None:
    seen: list[dict[str, str]] = []
    with serving(app_for(google, seen)) as base:
        state = query(httpx2.get(f"{base}/auth/url").json()["url"])["state"]
        refused = httpx2.get(f"{base}/callback", params={"state": state, "error": "access_denied"})
    assert refused.status_code == 401
    assert "access_denied" in refused.text
    assert seen == []


def test_auth_url_needs_the_bearer_token_when_one_is_set(google: GoogleSettings) -> None:
    seen: list[dict[str, str]] = []
    with serving(app_for(google, seen, token="s3cret")) as base:
        denied = httpx2.get(f"{base}/auth/url")
        allowed = httpx2.get(f"{base}/auth/url", headers={"Authorization": "Bearer s3cret"})
        redirect = httpx2.get(f"{base}/auth/url", params={"redirect": "1"}, headers={"Authorization": "Bearer s3cret"})
    assert denied.status_code == 401
    assert allowed.status_code == 200
    assert redirect.status_code == 302
    assert redirect.headers["location"].startswith("https://accounts.google.com/")


def test_auth_url_without_an_oauth_client_says_how_to_configure_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("GOOGLE_CLIENT_SECRETS", "GOOGLE_CLIENT_ID", "GOOGLE_CLIENT_SECRET"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DESKMCP_WORKSPACE", str(tmp_path / "ws"))
    app = create_app(compose([get_spec("sheets")]), HttpOptions(oauth=OAuthRoutes(GoogleSettings(workspace=tmp_path))))
    with serving(app) as base:
        answer = httpx2.get(f"{base}/auth/url")
    assert answer.status_code == 401
    assert "GOOGLE_CLIENT_SECRETS" in answer.json()["message"]
