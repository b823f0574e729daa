"""`deskmcp settings` as a real process, and docs/configuration.md checked against the settings classes."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import Field

from deskmcp.core.config import OptionalPath
from deskmcp.core.settings import Settings, env_alias, environment_names, is_secret, renamed
from deskmcp.core.shared_settings import VaultFolderSettings
from deskmcp.settings_table import (
    TABLE_END,
    TABLE_START,
    all_settings,
    markdown_table,
    settings_classes,
    with_table,
)
from tests.helpers.principals import principal

ROOT = Path(__file__).resolve().parents[1]
PREFIXES = (
    "DESKMCP_",
    "GRANOLA_",
    "VAULT_",
    "DOCUMENTS_",
    "MAIL_",
    "ORCHESTRATOR_",
    "SHEETS_",
    "DIAGRAMS_",
    "GOOGLE_",
    "GITHUB_",
    "OPENAI_",
)


PACKAGE_PREFIXES = {
    "deskmcp": "DESKMCP_",
    "meetings": "GRANOLA_",
    "vault": "VAULT_",
    "documents": "DOCUMENTS_",
    "mail": "MAIL_",
    "orchestrator": "ORCHESTRATOR_",
    "sheets": "SHEETS_",
    "diagrams": "DIAGRAMS_",
    "google": "GOOGLE_",
    "serving": "DESKMCP_",
    "connect": "DESKMCP_",
}
"""Each package's prefix (meetings keeps Granola's, the source it reads); `DESKMCP_` is everyone's."""


def clean_environment(tmp_path: Path, **values: str) -> dict[str, str]:
    """This environment without any deskmcp setting (old names included), plus `values`."""
    names = {name for s in all_settings() for name in s.names}
    env = {k: v for k, v in os.environ.items() if k not in names and not k.startswith(PREFIXES)}
    env.update(DESKMCP_WORKSPACE=str(tmp_path / "ws"), **values)
    return env


def settings(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "deskmcp.cli", "settings", *args],
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
        check=False,
    )


def rows(done: subprocess.CompletedProcess[str]) -> dict[str, dict[str, Any]]:
    assert done.returncode == 0, done.stderr
    return {row["name"]: row for row in json.loads(done.stdout)}


def test_settings_lists_values_with_their_source_and_masks_secrets(tmp_path: Path) -> None:
    env = clean_environment(
        tmp_path,
        DIAGRAMS_GITHUB_TOKEN="ghp_do_not_show",
        MAIL_SMTP_PASSWORD="hunter2",
        DESKMCP_DATABASE_URL="postgresql://deskmcp:pw-do-not-show@db.example/deskmcp",
        DESKMCP_TOOLSETS="all",
    )
    done = settings(env, "--json")
    found = rows(done)

    assert found["DESKMCP_TOOLSETS"] | {} == {
        "package": "deskmcp",
        "name": "DESKMCP_TOOLSETS",
        "also": [],
        "old": [],
        "value": "all",
        "source": "environment (DESKMCP_TOOLSETS)",
        "secret": False,
    }
    assert found["DESKMCP_WORKSPACE"]["value"] == str(tmp_path / "ws")
    assert found["DIAGRAMS_RENDER_QUEUE"]["value"] == "8"
    assert found["DIAGRAMS_RENDER_QUEUE"]["source"] == "default"
    assert found["DIAGRAMS_GITHUB_TOKEN"]["value"] == "********"
    assert found["DIAGRAMS_GITHUB_TOKEN"]["secret"] is True
    assert found["MAIL_SMTP_PASSWORD"]["value"] == "********"
    assert found["DESKMCP_DATABASE_URL"]["value"] == "postgresql://deskmcp:********@db.example/deskmcp"
    for secret in ("ghp_do_not_show", "hunter2", "pw-do-not-show"):
        assert secret not in done.stdout and secret not in done.stderr
    # every setting of every package is listed, each name once
    assert set(found) == {s.name for s in all_settings()}
    assert len(json.loads(done.stdout)) == len(found)


def test_settings_reads_an_old_name_and_says_so_once(tmp_path: Path) -> None:
    env = clean_environment(tmp_path, KROKI_BASE_URL="https://kroki.example", GITHUB_TOKEN="ghp_conventional")
    done = settings(env, "--server", "diagrams")

    assert done.returncode == 0, done.stderr
    line = next(line for line in done.stdout.splitlines() if "DIAGRAMS_KROKI_URL" in line)
    assert line.split() == [
        "DIAGRAMS_KROKI_URL",
        "(old:",
        "KROKI_BASE_URL)",
        "=",
        "https://kroki.example",
        "[environment",
        "(KROKI_BASE_URL)]",
    ]
    token = next(line for line in done.stdout.splitlines() if "DIAGRAMS_GITHUB_TOKEN" in line)
    assert token.endswith("= ********    [environment (GITHUB_TOKEN)]")
    warnings = [line for line in done.stderr.splitlines() if "deprecated" in line]
    assert len(warnings) == 1
    assert "KROKI_BASE_URL is deprecated" in warnings[0] and "set DIAGRAMS_KROKI_URL instead" in warnings[0]
    # one server's list: its settings and the shared ones, no other server's
    assert "[deskmcp]" in done.stdout and "[diagrams]" in done.stdout
    assert "MAIL_" not in done.stdout and "[serving]" not in done.stdout


def test_settings_shows_a_users_settings_file_as_the_source(tmp_path: Path) -> None:
    workspace = tmp_path / "users" / principal("alice").key
    workspace.mkdir(parents=True)
    (workspace / "settings.env").write_text(
        "VAULT_PATH=notes\nGIT_CACHE_TTL=9\nGRANOLA_API_KEY=grn_do_not_show\n", encoding="utf-8"
    )
    env = clean_environment(tmp_path, DESKMCP_TOOLSETS="all", VAULT_READ_ONLY="1")
    done = settings(env, "--json", "--user-workspace", str(workspace))
    found = rows(done)

    source = f"settings file ({workspace / 'settings.env'})"
    assert (found["VAULT_PATH"]["value"], found["VAULT_PATH"]["source"]) == ("notes", source)
    assert (found["DIAGRAMS_GIT_CACHE_TTL"]["value"], found["DIAGRAMS_GIT_CACHE_TTL"]["source"]) == ("9", source)
    assert (found["GRANOLA_API_KEY"]["value"], found["GRANOLA_API_KEY"]["source"]) == ("********", source)
    # the deployment's settings come from the environment; a user's others are defaults, whatever
    # this process's environment says (a user's server never reads it)
    assert found["DESKMCP_TOOLSETS"]["source"] == "environment (DESKMCP_TOOLSETS)"
    assert (found["VAULT_READ_ONLY"]["value"], found["VAULT_READ_ONLY"]["source"]) == ("false", "default")
    assert found["DESKMCP_WORKSPACE"]["value"] == str(workspace)
    assert "grn_do_not_show" not in done.stdout


def test_settings_refuses_an_unknown_server_and_a_forbidden_user_setting_and_shows_a_refused_value(
    tmp_path: Path,
) -> None:
    env = clean_environment(tmp_path)
    done = settings(env, "--server", "calendar")
    assert done.returncode == 2
    assert "No server 'calendar'" in done.stderr and "diagrams" in done.stderr

    done = settings(clean_environment(tmp_path, DIAGRAMS_RENDER_QUEUE="-3"), "--server", "diagrams")
    assert done.returncode == 0, done.stderr
    line = next(line for line in done.stdout.splitlines() if "DIAGRAMS_RENDER_QUEUE" in line)
    assert "= -3  (refused: Input should be greater than or equal to 0)" in line

    workspace = tmp_path / "users" / "u"
    workspace.mkdir(parents=True)
    (workspace / "settings.env").write_text("DESKMCP_WORKSPACE=/\n", encoding="utf-8")
    done = settings(env, "--user-workspace", str(workspace))
    assert done.returncode == 2
    assert "may not set DESKMCP_WORKSPACE" in done.stderr


def test_the_configuration_page_holds_the_table_of_the_settings_classes() -> None:
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert with_table(page) == page, "regenerate: uv run python -m deskmcp.settings_table docs/configuration.md"
    table = page[page.index(TABLE_START) : page.index(TABLE_END)]
    for s in all_settings():
        assert f"| `{s.name}` |" in table, s.name


def test_the_table_check_sees_a_stale_page() -> None:
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    stale = page.replace("| `DIAGRAMS_KROKI_URL` |", "| `KROKI_BASE_URL` |")
    assert stale != page
    assert with_table(stale) != stale
    assert with_table(stale) == page
    assert markdown_table() in page


def test_every_setting_carries_its_package_prefix_or_is_another_packages_setting() -> None:
    settings = all_settings()
    owners: dict[str, set[str]] = {}
    for s in settings:
        owners.setdefault(s.name, set()).add(s.package)
    wrong = [
        f"{s.package}: {s.name}"
        for s in settings
        if not s.name.startswith(("DESKMCP_", PACKAGE_PREFIXES[s.package]))
        and not any(
            PACKAGE_PREFIXES[other] != "DESKMCP_" and s.name.startswith(PACKAGE_PREFIXES[other])
            for other in owners[s.name]
        )
    ]
    assert wrong == []
    for s in settings:
        for old in s.old:
            assert renamed(old) == s.name


def test_secrets_are_known_by_type_and_by_name() -> None:
    fields = {
        (s.package, s.name): is_secret(s.name, s.info)
        for s in all_settings()
        if s.name
        in {
            "DIAGRAMS_GITHUB_TOKEN",
            "MAIL_SMTP_PASSWORD",
            "DESKMCP_STATE_KEYS",
            "DESKMCP_AUTH_CLIENT_SECRET",
            "GOOGLE_TOKEN_FILE",
            "GRANOLA_OS_KEYRING",
            "MAIL_ADDRESS",
        }
    }
    assert fields == {
        ("diagrams", "DIAGRAMS_GITHUB_TOKEN"): True,
        ("mail", "MAIL_SMTP_PASSWORD"): True,
        ("serving", "DESKMCP_STATE_KEYS"): True,
        ("serving", "DESKMCP_AUTH_CLIENT_SECRET"): True,
        ("google", "GOOGLE_TOKEN_FILE"): False,  # a path
        ("meetings", "GRANOLA_OS_KEYRING"): False,  # a switch
        ("mail", "MAIL_ADDRESS"): False,
    }


def declarations(classes: list[type[Settings]]) -> dict[str, list[str]]:
    """Environment name -> `Class.field` of every field declaring it, each class of `classes` and of
    their bases walked; a field a class inherits is its base's declaration, one it writes again its own."""
    found: dict[str, set[str]] = {}
    for cls in classes:
        for base in cls.__mro__:
            if not (isinstance(base, type) and issubclass(base, Settings)):
                continue
            own = inspect.get_annotations(base)
            for field, info in base.model_fields.items():
                if field in own:
                    for name in environment_names(field, info):
                        found.setdefault(name, set()).add(f"{base.__name__}.{field}")
    return {name: sorted(fields) for name, fields in found.items()}


def test_every_environment_name_is_declared_by_one_field_of_one_class() -> None:
    found = declarations([cls for _package, cls in settings_classes()])

    twice = {name: fields for name, fields in found.items() if len(fields) > 1}
    assert twice == {}, "declare a setting several packages read once, in deskmcp.core.shared_settings"
    # the walk sees the shared settings through the servers' classes that inherit them
    assert found["VAULT_PATH"] == ["VaultFolderSettings.vault_path"]
    assert found["DESKMCP_DATABASE_URL"] == ["DatabaseSettings.database_url"]
    # and the table lists every name the classes declare (a shared class it does not know would be missing)
    assert found.keys() == {name for s in all_settings() for name in s.names}


def test_the_declaration_check_sees_a_name_declared_twice() -> None:
    class Mine(VaultFolderSettings):
        folder: str = Field(default="", validation_alias=env_alias("folder", "VAULT_PATH"))

    class Again(Mine):
        vault_path: OptionalPath = Field(default=None, validation_alias=env_alias("vault_path", "VAULT_PATH"))

    assert declarations([Mine])["VAULT_PATH"] == ["Mine.folder", "VaultFolderSettings.vault_path"]
    assert declarations([Again])["VAULT_PATH"] == ["Again.vault_path", "Mine.folder", "VaultFolderSettings.vault_path"]


def test_connect_sends_its_own_token_else_the_servers_one(monkeypatch: pytest.MonkeyPatch) -> None:
    from deskmcp.connect.bridge import token_from_environment

    monkeypatch.delenv("DESKMCP_REMOTE_TOKEN", raising=False)
    monkeypatch.delenv("DESKMCP_TOKEN", raising=False)
    assert token_from_environment() is None
    monkeypatch.setenv("DESKMCP_TOKEN", "server-token")
    assert token_from_environment() == "server-token"
    monkeypatch.setenv("DESKMCP_REMOTE_TOKEN", "remote-token")
    assert token_from_environment() == "remote-token"
    monkeypatch.setenv("DESKMCP_REMOTE_TOKEN", "")  # set, and empty: no token, sign in with OAuth
    assert token_from_environment() is None


def test_one_servers_list_shows_each_package_once_the_shared_ones_first() -> None:
    from itertools import groupby

    from deskmcp.settings_table import server_settings

    runs = {
        server: [package for package, _ in groupby(s.package for s in server_settings(server))]
        for server in ("mail", "orchestrator")
    }

    assert runs == {
        "mail": ["deskmcp", "google", "vault", "documents", "mail"],
        "orchestrator": ["deskmcp", "vault", "mail", "orchestrator"],
    }
