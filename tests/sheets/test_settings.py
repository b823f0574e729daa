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


@pytest.mark.anyio
async def test_a_sheets_path_that_does_not_exist_is_reported_and_never_created(tmp_path: Path) -> None:
    from mcp import Client

    from deskmcp.sheets.server import create_server
    from tests.helpers.tool_calls import fail

    typo = tmp_path / "Documnets" / "sheets"
    settings = SheetsSettings(workspace=tmp_path / "ws", sheets_path=typo)
    reason = unavailable(settings)
    assert reason is not None and str(typo) in reason and "SHEETS_PATH" in reason
    async with Client(create_server(settings)) as c:
        listed = await fail(c, "list_spreadsheets")
        created = await fail(c, "create_spreadsheet", {"title": "plan"})
        read = await fail(c, "read_values", {"spreadsheet_id": "plan.xlsx", "ranges": ["A1"]})
    for err in (listed, created, read):
        assert err["error"] == "not_found"
        assert str(typo) in err["message"] and "SHEETS_PATH" in err["message"]
    assert not (tmp_path / "Documnets").exists()


@pytest.mark.anyio
async def test_the_default_sheets_folder_is_created_in_the_workspace(tmp_path: Path) -> None:
    from mcp import Client

    from deskmcp.sheets.server import create_server
    from tests.helpers.tool_calls import call

    settings = SheetsSettings(workspace=tmp_path / "ws")
    async with Client(create_server(settings)) as c:
        listed = await call(c, "list_spreadsheets")
    assert listed["spreadsheets"] == []
    assert (tmp_path / "ws" / "sheets").is_dir()
