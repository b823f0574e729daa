"""A user of a multi-user deployment never gets a password from this machine's OS keyring: the
keyring belongs to the server's own OS user, so an entry stored there for a host would otherwise be
sent to that host for whichever user names it in their settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from deskmcp.mail.service import account_password
from deskmcp.mail.settings import MailSettings
from deskmcp.serving.users import settings_of
from tests.helpers.mail import fake_keyring
from tests.helpers.principals import principal


def test_security_a_users_mail_never_takes_a_password_from_the_machines_keyring(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = fake_keyring(monkeypatch, {"smtp:smtp.work.test:bob": "owner-secret", "imap:imap.work.test:bob": "x"})
    values = {
        "MAIL_SMTP_HOST": "smtp.work.test",
        "MAIL_SMTP_USER": "bob",
        "MAIL_IMAP_HOST": "imap.work.test",
        "MAIL_IMAP_USER": "bob",
        "MAIL_OS_KEYRING": "true",  # a user's file cannot turn it back on
    }
    workspace = tmp_path / "users" / "alice"
    workspace.mkdir(parents=True)
    settings = settings_of(MailSettings, "mail", workspace, values, principal=principal("alice"))

    assert account_password(settings, "smtp") is None
    assert account_password(settings, "imap") is None
    assert asked == []

    # The one person on their own machine still has it.
    own = MailSettings(workspace=tmp_path / "own", smtp_host="smtp.work.test", smtp_user="bob")
    assert account_password(own, "smtp") == "owner-secret"
