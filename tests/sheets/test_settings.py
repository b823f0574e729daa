"""Sheets settings from the environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from deskmcp.sheets.server import unavailable
from deskmcp.sheets.settings import SheetsSettings


def test_environment_lists_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHEETS_FOLDERS", f"{tmp_path / 'a'},{tmp_path / 'b'}")
    monkeypatch.setenv("SHEETS_REQUESTS_PER_MINUTE", "30")
    settings = SheetsSettings(workspace=tmp_path)
    assert settings.folders == [tmp_path / "a", tmp_path / "b"]
    assert settings.requests_per_minute == 30
    assert settings.root == tmp_path / "sheets"


def test_missing_extra_folder_or_google_authorisation_is_reported(tmp_path: Path) -> None:
    assert unavailable(SheetsSettings(workspace=tmp_path)) is None
    missing = unavailable(SheetsSettings(workspace=tmp_path, folders=[tmp_path / "nope"]))
    assert missing is not None and "nope" in missing
    google = unavailable(SheetsSettings(workspace=tmp_path, backend="google"))
    assert google is not None and "deskmcp auth google" in google
