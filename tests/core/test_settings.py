"""The one settings mechanism: prefixed names, old names with one warning, conventional names
without one, and nothing read but the declared names."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from deskmcp.core import settings as mechanism
from deskmcp.core.config import WorkspaceSettings
from deskmcp.core.settings import Settings, environment_names
from deskmcp.diagrams.settings import DiagramsSettings
from deskmcp.orchestrator.settings import OrchestratorSettings
from deskmcp.serving.users import UsersSettings


@pytest.fixture
def warned(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh 'already warned' set: the warning is once per process, and other tests share it."""
    monkeypatch.setattr(mechanism, "_WARNED", set())


def _clear(monkeypatch: pytest.MonkeyPatch, cls: type[Settings]) -> None:
    for field, info in cls.model_fields.items():
        for name in environment_names(field, info):
            monkeypatch.delenv(name, raising=False)


def test_an_old_name_is_read_with_one_warning_naming_the_new_one(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, warned: None, tmp_path: Path
) -> None:
    _clear(monkeypatch, DiagramsSettings)
    monkeypatch.setenv("PROJECT_ROOT", str(tmp_path))
    monkeypatch.setenv("GIT_CACHE_TTL", "7")
    with caplog.at_level(logging.WARNING, logger="deskmcp.settings"):
        first = DiagramsSettings()
        second = DiagramsSettings()
    assert first.project_root == second.project_root == tmp_path
    assert first.git_cache_ttl == 7.0
    lines = [r.getMessage() for r in caplog.records]
    assert len([line for line in lines if line.startswith("PROJECT_ROOT ")]) == 1
    assert any("PROJECT_ROOT is deprecated" in line and "DIAGRAMS_PROJECT_ROOT" in line for line in lines)
    assert any("GIT_CACHE_TTL is deprecated" in line and "DIAGRAMS_GIT_CACHE_TTL" in line for line in lines)
    assert len(lines) == 2


def test_the_new_name_wins_over_the_old_one(monkeypatch: pytest.MonkeyPatch, warned: None) -> None:
    _clear(monkeypatch, WorkspaceSettings)
    monkeypatch.setenv("MAX_FILE_CHARS", "5000")
    monkeypatch.setenv("DESKMCP_MAX_FILE_CHARS", "6000")
    assert WorkspaceSettings().max_chars == 6000


def test_a_conventional_name_is_read_without_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, warned: None
) -> None:
    _clear(monkeypatch, DiagramsSettings)
    _clear(monkeypatch, OrchestratorSettings)
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_conventional")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-conventional")
    with caplog.at_level(logging.WARNING, logger="deskmcp.settings"):
        assert DiagramsSettings().github_token == "ghp_conventional"
        key = OrchestratorSettings().llm_api_key
    assert key is not None and key.get_secret_value() == "sk-conventional"
    assert caplog.records == []
    monkeypatch.setenv("DIAGRAMS_GITHUB_TOKEN", "ghp_prefixed")
    assert DiagramsSettings().github_token == "ghp_prefixed"


def test_a_field_name_is_not_an_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    # `LIVE`, `max_chars` or `DESKMCP_max_chars` are nobody's settings: a variable of another
    # program with a field's name must not change deskmcp
    _clear(monkeypatch, UsersSettings)
    _clear(monkeypatch, WorkspaceSettings)
    monkeypatch.setenv("LIVE", "3")
    monkeypatch.setenv("max_chars", "5000")
    monkeypatch.setenv("DESKMCP_MAX_CHARS", "5000")
    assert UsersSettings().live == 16
    assert WorkspaceSettings().max_chars == 200_000


def test_names_are_read_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    _clear(monkeypatch, WorkspaceSettings)
    monkeypatch.setenv("deskmcp_toolsets", "all")
    assert WorkspaceSettings().toolsets == "default"


def test_keyword_construction_takes_field_names() -> None:
    assert DiagramsSettings(git_cache_ttl=3, workspace=Path("/w")).git_cache_ttl == 3.0


def test_the_functions_beyond_settings_read_and_set_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DESKMCP_TEST_VARIABLE", "one")
    assert mechanism.variable("DESKMCP_TEST_VARIABLE") == "one"
    assert mechanism.environment()["DESKMCP_TEST_VARIABLE"] == "one"
    copy = mechanism.environment()
    copy["DESKMCP_TEST_VARIABLE"] = "two"
    assert mechanism.variable("DESKMCP_TEST_VARIABLE") == "one"
    monkeypatch.delenv("DESKMCP_TEST_VARIABLE")
    mechanism.set_variable("DESKMCP_TEST_VARIABLE", "three")
    assert mechanism.variable("DESKMCP_TEST_VARIABLE") == "three"
    monkeypatch.delenv("DESKMCP_TEST_VARIABLE")
