"""Google credentials (deskmcp.google.auth) and the web flow (deskmcp.google.web): the token store,
silent refresh, revoked grants, PKCE and states."""

from __future__ import annotations

import base64
import hashlib
import json
import stat
import subprocess
import sys
import urllib.parse
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from googleapiclient.http import HttpMockSequence

from deskmcp.core.errors import AuthRequired, BadRequest
from deskmcp.google.auth import (
    SCOPES,
    FileTokenStore,
    GoogleSettings,
    build_service,
    credentials,
    scopes_for,
)
from deskmcp.google.web import WebAuthorization
from tests.helpers.google import GOOGLE_ENVIRONMENT

SHEETS = list(SCOPES["sheets"])


@pytest.fixture(autouse=True)
def _no_google_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in GOOGLE_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)


def settings(tmp_path: Path, **overrides: Any) -> GoogleSettings:
    return GoogleSettings(
        workspace=tmp_path / "ws", google_client_id="cid", google_client_secret="csecret", **overrides
    )


def stored_token(tmp_path: Path, **overrides: Any) -> GoogleSettings:
    s = settings(tmp_path)
    data = {
        "token": "old-access",
        "refresh_token": "refresh-1",
        "token_uri": "https://oauth2.googleapis.com/token",
        "client_id": "cid",
        "client_secret": "csecret",
        "scopes": SHEETS,
        "expiry": "2020-01-01T00:00:00Z",
    }
    data.update(overrides)
    FileTokenStore(s.google_token_path).save(data)
    return s


def test_token_file_is_written_0600_in_a_private_folder(tmp_path: Path) -> None:
    path = tmp_path / "ws" / ".deskmcp" / "google-token.json"
    store = FileTokenStore(path)
    assert store.load() is None
    store.save({"token": "a", "refresh_token": "r"})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert store.load() == {"token": "a", "refresh_token": "r"}
    assert [p.name for p in path.parent.iterdir()] == ["google-token.json"]


def test_token_file_replacement_keeps_0600_even_over_a_wider_file(tmp_path: Path) -> None:
    path = tmp_path / "token.json"
    path.write_text("{}", encoding="utf-8")
    path.chmod(0o644)
    FileTokenStore(path).save({"token": "b"})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_missing_token_is_auth_required_naming_the_command(tmp_path: Path) -> None:
    with pytest.raises(AuthRequired) as caught:
        credentials(settings(tmp_path), SHEETS)
    assert "deskmcp auth google" in caught.value.message
    assert caught.value.details["command"] == "deskmcp auth google"


def test_corrupt_token_file_is_auth_required(tmp_path: Path) -> None:
    s = settings(tmp_path)
    s.google_token_path.parent.mkdir(parents=True)
    s.google_token_path.write_text("{not json", encoding="utf-8")
    with pytest.raises(AuthRequired, match="deskmcp auth google"):
        credentials(s, SHEETS)


def test_token_without_needed_scopes_asks_to_authorise_again(tmp_path: Path) -> None:
    s = stored_token(tmp_path, scopes=list(SCOPES["mail"]))
    with pytest.raises(AuthRequired) as caught:
        credentials(s, SHEETS)
    assert caught.value.details["missing_scopes"]


def token_response(access: str = "new-access") -> tuple[dict[str, str], bytes]:
    body = {"access_token": access, "expires_in": 3599, "token_type": "Bearer", "scope": " ".join(SHEETS)}
    return {"status": "200", "content-type": "application/json"}, json.dumps(body).encode()


def test_refreshed_token_is_written_back_to_the_store(tmp_path: Path) -> None:
    import google_auth_httplib2

    s = stored_token(tmp_path)
    creds = credentials(s, SHEETS)
    creds.refresh(google_auth_httplib2.Request(HttpMockSequence([token_response()])))
    saved = json.loads(s.google_token_path.read_text(encoding="utf-8"))
    assert saved["token"] == "new-access"
    assert saved["refresh_token"] == "refresh-1"  # kept: Google does not resend it
    assert saved["client_id"] == "cid"
    assert stat.S_IMODE(s.google_token_path.stat().st_mode) == 0o600


def test_client_id_and_secret_from_settings_complete_an_old_token(tmp_path: Path) -> None:
    s = stored_token(tmp_path, client_id=None, client_secret=None)
    creds = credentials(s, SHEETS)
    assert getattr(creds, "client_id", None) == "cid"


def test_revoked_grant_is_auth_required_naming_the_command(tmp_path: Path) -> None:
    import google_auth_httplib2

    s = stored_token(tmp_path)
    creds = credentials(s, SHEETS)
    refused = (
        {"status": "400", "content-type": "application/json"},
        b'{"error": "invalid_grant", "error_description": "Token has been expired or revoked."}',
    )
    with pytest.raises(AuthRequired) as caught:
        creds.refresh(google_auth_httplib2.Request(HttpMockSequence([refused])))
    assert "deskmcp auth google" in caught.value.message
    assert "invalid_grant" in caught.value.details["reason"]


def test_service_built_offline_refreshes_on_401_and_retries(tmp_path: Path) -> None:
    s = stored_token(tmp_path, expiry="2999-01-01T00:00:00Z")  # valid until Google says 401
    creds = credentials(s, SHEETS)
    http = HttpMockSequence(
        [
            ({"status": "401"}, b'{"error": {"code": 401, "message": "expired"}}'),
            token_response("fresh"),
            ({"status": "200"}, b'{"spreadsheetId": "abc", "sheets": []}'),
        ]
    )
    service = build_service("sheets", "v4", creds, http=http)
    assert service.spreadsheets().get(spreadsheetId="abc").execute()["spreadsheetId"] == "abc"
    assert json.loads(s.google_token_path.read_text(encoding="utf-8"))["token"] == "fresh"


def test_scopes_are_combined_without_duplicates_and_unknown_names_refused() -> None:
    assert scopes_for(["sheets", "sheets"]) == SHEETS
    assert len(scopes_for(["mail", "sheets"])) == len(SCOPES["mail"]) + len(SCOPES["sheets"])
    with pytest.raises(BadRequest):
        scopes_for(["calendar"])


def test_service_account_with_delegated_user(tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    key_file = tmp_path / "sa.json"
    key_file.write_text(
        json.dumps(
            {
                "type": "service_account",
                "client_email": "bot@project.iam.gserviceaccount.com",
                "private_key": pem,
                "private_key_id": "k1",
                "token_uri": "https://oauth2.googleapis.com/token",
                "client_id": "1",
            }
        ),
        encoding="utf-8",
    )
    creds = credentials(
        settings(tmp_path, google_service_account_file=key_file, google_delegated_user="ann@example.org"), SHEETS
    )
    assert getattr(creds, "_subject", None) == "ann@example.org"


def web_flow(tmp_path: Path, handler: Any) -> tuple[WebAuthorization, GoogleSettings]:
    s = settings(tmp_path)
    return WebAuthorization(s, SHEETS, transport=httpx.MockTransport(handler)), s


def test_web_flow_exchanges_the_code_with_the_pkce_verifier_and_stores_the_token(tmp_path: Path) -> None:
    seen: dict[str, str] = {}

    def handler(request: httpx.Request) -> httpx.Response:
        seen.update(dict(urllib.parse.parse_qsl(request.content.decode())))
        return httpx.Response(200, json={"access_token": "at", "refresh_token": "rt", "expires_in": 3600})

    flow, s = web_flow(tmp_path, handler)
    url = flow.start("http://127.0.0.1:8765/callback")
    query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
    assert query["code_challenge_method"] == "S256"
    assert query["access_type"] == "offline"
    flow.finish(query["state"], "the-code")
    digest = hashlib.sha256(seen["code_verifier"].encode()).digest()
    assert base64.urlsafe_b64encode(digest).decode().rstrip("=") == query["code_challenge"]
    assert seen["code"] == "the-code"
    saved = json.loads(s.google_token_path.read_text(encoding="utf-8"))
    assert saved["refresh_token"] == "rt"
    assert stat.S_IMODE(s.google_token_path.stat().st_mode) == 0o600


def test_web_flow_refuses_a_state_it_did_not_issue(tmp_path: Path) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise AssertionError("the token endpoint must not be called")

    flow, s = web_flow(tmp_path, handler)
    flow.start("http://127.0.0.1:8765/callback")
    with pytest.raises(BadRequest, match="state"):
        flow.finish("forged", "code")
    assert not s.google_token_path.exists()


def test_web_flow_state_is_single_use(tmp_path: Path) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"access_token": "at", "refresh_token": "rt"})

    flow, _s = web_flow(tmp_path, handler)
    state = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(flow.start("http://x/cb")).query))["state"]
    flow.finish(state, "c")
    with pytest.raises(BadRequest):
        flow.finish(state, "c")


def test_web_flow_keeps_a_bounded_number_of_pending_states_and_forgets_old_ones(tmp_path: Path) -> None:
    now = [0.0]
    flow = WebAuthorization(settings(tmp_path), SHEETS, ttl=600.0, max_pending=3, clock=lambda: now[0])

    def start() -> str:
        return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(flow.start("http://x/cb")).query))["state"]

    states = [start() for _ in range(5)]
    assert [flow.is_pending(s) for s in states] == [False, False, True, True, True]
    assert len(flow._pending) == 3  # pyright: ignore[reportPrivateUsage]
    now[0] = 601.0
    assert not any(flow.is_pending(s) for s in states)
    assert flow._pending == {}  # pyright: ignore[reportPrivateUsage]
    with pytest.raises(BadRequest, match="expired"):
        flow.finish(states[-1], "c")


@pytest.mark.e2e
def test_importing_the_google_layer_loads_no_google_library() -> None:
    code = (
        "import sys, deskmcp.google.auth, deskmcp.google.errors, deskmcp.google.web; "
        "print([m for m in sys.modules if m.startswith(('google', 'httplib2'))])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
