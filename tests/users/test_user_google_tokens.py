"""Served per user with a token database configured, each user's mail and sheets servers keep that
user's Google token in their own sealed row, and a user's settings cannot point elsewhere."""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from deskmcp.core.errors import PermissionDenied
from deskmcp.core.postgres import close_pools
from deskmcp.google.auth import token_store
from deskmcp.google.sealed_tokens import PostgresTokenStore
from deskmcp.servers import SERVERS
from deskmcp.serving.users import read_user_settings, user_settings, user_workspace
from tests.helpers.postgres import Postgres, fresh_database
from tests.helpers.principals import principal

pytestmark = pytest.mark.e2e  # starts PostgreSQL


@pytest.fixture
def database(postgres: Postgres, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    url = fresh_database(postgres)
    monkeypatch.setenv("DESKMCP_DATABASE_URL", url)
    monkeypatch.setenv("DESKMCP_TOKEN_KEYS", "k1:" + base64.b64encode(os.urandom(32)).decode())
    yield url
    close_pools()


def test_security_each_users_google_token_is_their_own_sealed_row(database: str, tmp_path: Path) -> None:
    alice, bob = principal("alice"), principal("bob")
    stores = {}
    for who in (alice, bob):
        workspace = user_workspace(tmp_path, who)
        for server in ("mail", "sheets"):
            settings = user_settings(SERVERS[server], workspace, {"MAIL_BACKEND": "gmail"}, (), who)
            stores[who.subject, server] = token_store(settings)

    stores["alice", "sheets"].save({"token": "alice-access", "refresh_token": "alice-refresh"})

    assert all(isinstance(s, PostgresTokenStore) for s in stores.values())
    assert stores["alice", "mail"].load() == {"token": "alice-access", "refresh_token": "alice-refresh"}
    assert stores["bob", "mail"].load() is None
    assert stores["bob", "sheets"].load() is None
    assert not (tmp_path / alice.key / ".deskmcp" / "google-token.json").exists()


def test_security_a_users_settings_cannot_choose_the_token_database_or_keys(database: str, tmp_path: Path) -> None:
    alice = principal("alice")
    workspace = user_workspace(tmp_path, alice)
    for line in ("DESKMCP_DATABASE_URL=postgresql://elsewhere/db", "DESKMCP_TOKEN_KEYS=k:AAAA"):
        (workspace / "settings.env").write_text(line + "\n", encoding="utf-8")
        with pytest.raises(PermissionDenied, match="may not set"):
            read_user_settings(workspace)
