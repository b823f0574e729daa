"""A user's MAIL_ACCOUNTS never takes a password from the server's environment, whether the
accounts are written inline or in a file of the user's own workspace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deskmcp.core.errors import PermissionDenied
from deskmcp.mail.settings import MailSettings
from deskmcp.serving.users import settings_of
from tests.helpers.principals import principal

SERVER_SECRET = "the-servers-own-secret"


@pytest.mark.parametrize("kind", ["smtp", "imap"])
def test_security_a_users_accounts_file_cannot_name_a_variable_of_the_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    monkeypatch.setenv("DESKMCP_SERVER_PASSWORD", SERVER_SECRET)
    workspace = tmp_path / "users" / "mallory"
    workspace.mkdir(parents=True)
    accounts = workspace / "accounts.json"
    entry = {"name": "work", "address": "m@example.org", f"{kind}_host": "mail.attacker.test"}
    entry[f"{kind}_user"] = "m"
    entry[f"{kind}_password_env"] = "DESKMCP_SERVER_PASSWORD"
    accounts.write_text(json.dumps([entry]), encoding="utf-8")

    with pytest.raises(PermissionDenied, match="password_env") as refused:
        settings_of(MailSettings, "mail", workspace, {"MAIL_ACCOUNTS": str(accounts)}, principal=principal("mallory"))

    assert SERVER_SECRET not in refused.value.message


def test_a_users_accounts_file_inside_their_workspace_is_read(tmp_path: Path) -> None:
    workspace = tmp_path / "users" / "alice"
    workspace.mkdir(parents=True)
    accounts = workspace / "accounts.json"
    accounts.write_text(
        json.dumps([{"name": "work", "address": "a@example.org", "smtp_host": "smtp.example.org"}]), encoding="utf-8"
    )

    settings = settings_of(MailSettings, "mail", workspace, {"MAIL_ACCOUNTS": str(accounts)}, principal=principal("a"))

    assert list(settings.account_settings()) == ["work"]
