"""Users' Google tokens in a real PostgreSQL: sealed per principal, key rotation, and a refresh under
the row's lock, so two processes refreshing at once spend a refresh token only once."""

from __future__ import annotations

import base64
import json
import os
import threading
import urllib.parse
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import psycopg
import pytest
from pydantic import SecretStr

from deskmcp.core.errors import AuthRequired
from deskmcp.google.auth import GoogleSettings, user_credentials
from deskmcp.google.sealed_tokens import TABLE, PostgresTokenStore, SealingKeys

pytestmark = pytest.mark.e2e  # starts PostgreSQL

ISSUER = "https://id.example.test"


def key() -> str:
    return base64.b64encode(os.urandom(32)).decode()


def token(**overrides: Any) -> dict[str, Any]:
    return {
        "token": "access-0",
        "refresh_token": "refresh-0",
        "client_id": "client",
        "client_secret": "secret",
        "token_uri": "https://oauth2.example.test/token",
        "scopes": ["https://www.googleapis.com/auth/spreadsheets"],
        **overrides,
    }


def test_a_token_is_kept_sealed_and_read_back_by_its_principal(database: str) -> None:
    keys = SealingKeys.parse(f"k1:{key()}")
    store = PostgresTokenStore(database, keys, ISSUER, "alice")

    store.save(token())

    assert store.load() == token()
    with psycopg.connect(database) as conn:
        raw = conn.execute(f"SELECT key_id, sealed FROM {TABLE}").fetchall()
    assert [row[0] for row in raw] == ["k1"]
    assert b"refresh-0" not in bytes(raw[0][1])
    assert PostgresTokenStore(database, keys, ISSUER, "bob").load() is None


def test_security_a_row_copied_to_another_user_does_not_open(database: str) -> None:
    keys = SealingKeys.parse(f"k1:{key()}")
    alice = PostgresTokenStore(database, keys, ISSUER, "alice")
    bob = PostgresTokenStore(database, keys, ISSUER, "bob")
    alice.save(token(refresh_token="alice-refresh"))
    bob.save(token(refresh_token="bob-refresh"))
    with psycopg.connect(database) as conn:
        conn.execute(
            f"UPDATE {TABLE} SET sealed = (SELECT sealed FROM {TABLE} WHERE owner = %s) WHERE owner = %s",
            (alice.owner, bob.owner),
        )

    with pytest.raises(AuthRequired, match="does not open for this user"):
        bob.load()
    same_subject_other_issuer = PostgresTokenStore(database, keys, "https://other.example.test", "alice")
    assert same_subject_other_issuer.load() is None


def test_an_older_key_still_opens_and_the_token_is_sealed_again_with_the_first(database: str) -> None:
    old, new = key(), key()
    PostgresTokenStore(database, SealingKeys.parse(f"old:{old}"), ISSUER, "alice").save(token())
    rotated = PostgresTokenStore(database, SealingKeys.parse(f"new:{new},old:{old}"), ISSUER, "alice")

    assert rotated.load() == token()

    with psycopg.connect(database) as conn:
        assert conn.execute(f"SELECT key_id FROM {TABLE}").fetchone() == ("new",)
    assert PostgresTokenStore(database, SealingKeys.parse(f"new:{new}"), ISSUER, "alice").load() == token()
    with pytest.raises(AuthRequired, match="no longer"):
        PostgresTokenStore(database, SealingKeys.parse(f"other:{key()}"), ISSUER, "alice").load()


class RotatingTokenEndpoint(BaseHTTPRequestHandler):
    """Google's token endpoint as far as a refresh goes: each refresh token works once and is
    replaced by a new one (rotation); one used twice is refused with invalid_grant."""

    spent: list[str]
    lock: threading.Lock
    barrier: threading.Barrier | None

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", "0"))
        form = dict(urllib.parse.parse_qsl(self.rfile.read(length).decode()))
        used = form.get("refresh_token", "")
        with self.lock:
            reused = used in self.spent
            self.spent.append(used)
            number = len(self.spent)
        if reused:
            body, status = {"error": "invalid_grant", "error_description": "Token has been expired or revoked."}, 400
        else:
            body, status = (
                {"access_token": f"access-{number}", "refresh_token": f"refresh-{number}", "expires_in": 3600},
                200,
            )
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def token_endpoint() -> Iterator[tuple[str, list[str]]]:
    spent: list[str] = []
    handler = type("Handler", (RotatingTokenEndpoint,), {"spent": spent, "lock": threading.Lock()})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/token", spent
    finally:
        server.shutdown()
        server.server_close()


def test_two_processes_refreshing_at_once_spend_the_refresh_token_once(
    database: str, token_endpoint: tuple[str, list[str]], tmp_path: Any
) -> None:
    from google.auth.transport.requests import Request

    uri, spent = token_endpoint
    keys = f"k1:{key()}"
    expired = (datetime.now(UTC) - timedelta(hours=1)).replace(tzinfo=None).isoformat() + "Z"
    PostgresTokenStore(database, SealingKeys.parse(keys), ISSUER, "alice").save(token(token_uri=uri, expiry=expired))
    settings = GoogleSettings(
        workspace=tmp_path,
        database_url=database,
        google_token_keys=SecretStr(keys),
        google_token_principal=(ISSUER, "alice"),
    )
    scopes = ["https://www.googleapis.com/auth/spreadsheets"]
    # Two replicas: each its own store object, both holding the same expired token.
    replicas = [
        user_credentials(settings, scopes, store=PostgresTokenStore(database, SealingKeys.parse(keys), ISSUER, "alice"))
        for _ in range(2)
    ]
    assert all(c.expired for c in replicas)
    start = threading.Barrier(2, timeout=30)
    errors: list[BaseException] = []

    google_token_uri = getattr(replicas[0], "token_uri")  # noqa: B009 (typed as the base Credentials)
    plain = Request()

    def to_stub(url: str, method: str = "GET", body: Any = None, headers: Any = None, **kwargs: Any) -> Any:
        # google-auth always refreshes at Google's address: the request goes to the loopback stub instead.
        return plain(uri if url == google_token_uri else url, method, body, headers, **kwargs)

    def refresh(creds: Any) -> None:
        try:
            start.wait()
            creds.refresh(to_stub)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=refresh, args=(c,)) for c in replicas]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)

    assert errors == []
    assert spent == ["refresh-0"]
    assert [c.token for c in replicas] == ["access-1", "access-1"]
    stored = PostgresTokenStore(database, SealingKeys.parse(keys), ISSUER, "alice").load()
    assert stored is not None and stored["refresh_token"] == "refresh-1"
