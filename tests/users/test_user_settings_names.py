"""A user's settings.env takes the prefixed names, and the names from before the prefix mapped to them."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from deskmcp.core import settings as mechanism
from deskmcp.core.errors import PermissionDenied
from deskmcp.servers import SERVERS
from deskmcp.serving.users import read_user_settings, user_keys, user_settings, user_workspace
from tests.helpers.principals import principal


def test_a_user_may_set_the_prefixed_names_and_the_old_ones() -> None:
    keys = user_keys()
    for name in ("DIAGRAMS_PROJECT_ROOT", "PROJECT_ROOT", "DIAGRAMS_KROKI_URL", "KROKI_BASE_URL", "GITHUB_TOKEN"):
        assert name in keys, name


def test_an_old_name_in_a_users_settings_is_read_as_the_new_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(mechanism, "_WARNED", set())
    workspace = user_workspace(tmp_path, principal("alice"))
    (workspace / "project").mkdir()
    (workspace / "settings.env").write_text(
        f"PROJECT_ROOT={workspace / 'project'}\nDIAGRAM_RENDER_QUEUE=3\nDIAGRAMS_GIT_CACHE_TTL=9\n", encoding="utf-8"
    )
    with caplog.at_level(logging.WARNING, logger="deskmcp.settings"):
        values = read_user_settings(workspace)
    assert values == {
        "DIAGRAMS_PROJECT_ROOT": str(workspace / "project"),
        "DIAGRAMS_RENDER_QUEUE": "3",
        "DIAGRAMS_GIT_CACHE_TTL": "9",
    }
    assert [r.getMessage().split(" ", 1)[0] for r in caplog.records] == ["PROJECT_ROOT", "DIAGRAM_RENDER_QUEUE"]
    settings = user_settings(SERVERS["diagrams"], workspace, values, (), principal("alice"))
    assert settings.root.resolve() == (workspace / "project").resolve()
    assert settings.render_queue == 3
    assert settings.git_cache_ttl == 9.0


def test_security_the_old_name_of_a_deployment_setting_stays_refused(tmp_path: Path) -> None:
    workspace = user_workspace(tmp_path, principal("bob"))
    for line in ("MAX_FILE_CHARS=5000", "DESKMCP_MAX_FILE_CHARS=5000"):
        (workspace / "settings.env").write_text(line + "\n", encoding="utf-8")
        with pytest.raises(PermissionDenied, match="DESKMCP_MAX_FILE_CHARS"):
            read_user_settings(workspace)
