"""In a multi-user deployment a Granola API key in a user's own settings is theirs: it chooses
the API source for that user alone, is never read from the server's environment, and is sent
to Granola's own API only."""

from __future__ import annotations

from pathlib import Path

import pytest

from deskmcp.core.errors import PermissionDenied
from deskmcp.meetings.settings import MeetingsSettings
from deskmcp.serving.users import read_user_settings, settings_of
from tests.helpers.mail import fake_keyring
from tests.helpers.principals import principal


def workspace_of(tmp_path: Path, name: str) -> Path:
    workspace = tmp_path / "users" / name
    workspace.mkdir(parents=True)
    return workspace


def test_a_users_granola_api_key_is_theirs_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRANOLA_API_KEY", "grn_theserversownkey0")
    alice = settings_of(
        MeetingsSettings,
        "meetings",
        workspace_of(tmp_path, "alice"),
        {"GRANOLA_API_KEY": "grn_aliceskey00000000"},
        principal=principal("alice"),
    )
    bob = settings_of(MeetingsSettings, "meetings", workspace_of(tmp_path, "bob"), {}, principal=principal("bob"))
    assert alice.api_key is not None and alice.api_key.get_secret_value() == "grn_aliceskey00000000"
    assert bob.api_key is None  # not the server's: bob reads his own cache folder
    assert alice.index_folder.is_relative_to(tmp_path / "users" / "alice")


def test_security_a_user_cannot_send_their_granola_key_elsewhere(tmp_path: Path) -> None:
    values = {"GRANOLA_API_KEY": "grn_aliceskey00000000", "GRANOLA_API_URL": "http://169.254.169.254/latest"}
    alice = settings_of(
        MeetingsSettings, "meetings", workspace_of(tmp_path, "alice"), values, principal=principal("alice")
    )
    assert alice.api_url == "https://public-api.granola.ai"


def test_security_a_user_never_gets_the_machines_keyring_granola_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = fake_keyring(monkeypatch, {"granola:api": "grn_theownerskey00000"})
    bob = settings_of(
        MeetingsSettings,
        "meetings",
        workspace_of(tmp_path, "bob"),
        {"GRANOLA_OS_KEYRING": "true"},
        principal=principal("bob"),
    )
    assert bob.granola_api_key() is None and asked == []


def test_security_a_user_never_gets_the_machines_hosted_granola_sign_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The machine's OS user signed in to Granola's hosted MCP server (a token file in this
    machine's folder): a user of the shared server without a key reads their own cache folder,
    and one asking for the hosted source gets their own sign-in (the principal's), never that file,
    with the deployment's address whatever their own file says."""
    config = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    monkeypatch.setenv("GRANOLA_MCP_URL", "https://mcp.granola.example/mcp")
    from deskmcp.connect.remote_sign_in import FileRecord
    from deskmcp.meetings.granola_mcp import signed_in_at, token_file_for
    from deskmcp.meetings.mcp_source import user_record

    signed_in = token_file_for(MeetingsSettings(workspace=tmp_path / "own").mcp_url)
    signed_in.parent.mkdir(parents=True)
    signed_in.write_text('{"tokens": {"access_token": "the-owners-token"}}', encoding="utf-8")
    assert signed_in_at(signed_in) and signed_in.is_relative_to(config)
    assert MeetingsSettings(workspace=tmp_path / "own").remote_source(False) == "mcp"  # the owner's own server

    bob = settings_of(MeetingsSettings, "meetings", workspace_of(tmp_path, "bob"), {}, principal=principal("bob"))
    assert bob.remote_source(bob.granola_api_key() is not None) is None
    assert bob.cache_path == tmp_path / "users" / "bob" / "granola"
    carol = settings_of(
        MeetingsSettings,
        "meetings",
        workspace_of(tmp_path, "carol"),
        {"GRANOLA_SOURCE": "mcp", "GRANOLA_MCP_URL": "http://169.254.169.254/mcp"},
        principal=principal("carol"),
    )
    assert carol.remote_source(False) == "mcp"
    assert carol.mcp_url == "https://mcp.granola.example/mcp"
    assert carol.mcp_token_principal == (principal("carol").issuer, "carol")
    record = user_record(carol)
    assert isinstance(record, FileRecord) and record.path.is_relative_to(tmp_path / "users" / "carol")
    assert record.load() is None
    record.save({"url": carol.mcp_url, "tokens": {"access_token": "carols"}})
    assert record.path.stat().st_mode & 0o777 == 0o600


def test_security_a_user_cannot_name_whose_granola_sign_in_they_use(tmp_path: Path) -> None:
    for line in ("mcp_token_principal", "mcp_token_database", "mcp_token_keys"):
        workspace = workspace_of(tmp_path, line)
        (workspace / "settings.env").write_text(f"{line}=x\n", encoding="utf-8")
        with pytest.raises(PermissionDenied, match="may not set"):
            read_user_settings(workspace)


def test_a_users_key_chooses_the_api_for_them_alone(tmp_path: Path) -> None:
    alice = settings_of(
        MeetingsSettings,
        "meetings",
        workspace_of(tmp_path, "alice"),
        {"GRANOLA_SOURCE": "auto", "GRANOLA_API_KEY": "grn_aliceskey00000000"},
        principal=principal("alice"),
    )
    assert alice.source == "api" and alice.remote_source(True) == "api"
