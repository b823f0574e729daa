from __future__ import annotations

import os
from pathlib import Path

import pytest
from mcp import Client

from deskmcp.documents import server as documents_server
from deskmcp.documents.settings import DocumentsSettings
from deskmcp.servers import SERVERS
from tests.documents.samples import fails, ok


def test_environment_names_the_documents_folder_and_extra_roots(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DESKMCP_WORKSPACE", str(tmp_path / "ws"))
    monkeypatch.setenv("DOCUMENTS_PATH", str(tmp_path / "mydocs"))
    monkeypatch.setenv("DOCUMENTS_EXTRA_ROOTS", os.pathsep.join([str(tmp_path / "a"), "", str(tmp_path / "b")]))
    monkeypatch.setenv("DOCUMENTS_MAX_FILE_MB", "2")
    settings = DocumentsSettings()
    assert settings.root == tmp_path / "mydocs"
    assert settings.extra_roots == (tmp_path / "a", tmp_path / "b")
    assert settings.max_file_bytes == 2 * 1024 * 1024


def test_default_documents_folder_is_in_the_workspace_and_is_created(tmp_path: Path) -> None:
    settings = DocumentsSettings(workspace=tmp_path / "ws")
    assert settings.root == tmp_path / "ws" / "documents"
    assert documents_server.unavailable(settings) is None
    service = documents_server.create_service(settings)
    try:
        assert (tmp_path / "ws" / "documents").is_dir()
    finally:
        service.close()


def test_extra_roots_with_the_same_folder_name_get_distinct_names(tmp_path: Path) -> None:
    for sub in ("one/Projects", "two/Projects", "x"):
        (tmp_path / sub).mkdir(parents=True)
    settings = DocumentsSettings(
        workspace=tmp_path / "ws",
        extra_roots=(tmp_path / "one" / "Projects", tmp_path / "two" / "Projects", tmp_path / "x"),
    )
    service = documents_server.create_service(settings)
    try:
        names = [r.name for r in service.catalog.list_roots().roots]
    finally:
        service.close()
    assert names == ["documents", "projects", "projects-2", "x-root"]


@pytest.mark.anyio
async def test_documents_is_registered_and_serves_its_tools(tmp_path: Path) -> None:
    spec = SERVERS["documents"]
    module = spec.load()
    settings = spec.settings(workspace=tmp_path / "ws")
    async with Client(module.create_server(settings)) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        roots = await ok(c, "list_roots")
    assert {
        "index_document",
        "index_folder",
        "create_note",
        "search_documents",
        "extract_metadata",
        "get_document",
        "list_documents",
        "list_tags",
        "list_roots",
        "remove_document",
    } == set(tools)
    assert tools["search_documents"].annotations is not None
    assert tools["search_documents"].annotations.read_only_hint is True
    assert tools["remove_document"].annotations is not None
    assert tools["remove_document"].annotations.destructive_hint is True
    assert roots["roots"][0]["path"] == str((tmp_path / "ws" / "documents").resolve())


@pytest.mark.anyio
async def test_a_misspelt_documents_path_is_never_created_and_tools_name_the_variable(tmp_path: Path) -> None:
    typo = tmp_path / "Documetns"
    settings = DocumentsSettings(workspace=tmp_path / "ws", documents_path=typo)
    reason = documents_server.unavailable(settings)
    async with Client(documents_server.create_server(settings)) as c:
        folder = await fails(c, "index_folder", path="")
        note = await fails(c, "create_note", title="Plan", content="text")
        one = await fails(c, "get_document", path="plan.md")
    assert not typo.exists()
    assert reason == f"The documents folder {typo.resolve()} does not exist. Create it or fix DOCUMENTS_PATH."
    for error in (folder, note, one):
        assert error["error"] == "not_found"
        assert error["message"] == reason
        assert error["details"]["variable"] == "DOCUMENTS_PATH"
        assert error["details"]["path"] == str(typo.resolve())


@pytest.mark.anyio
async def test_a_missing_extra_root_is_reported_naming_its_variable_and_full_path(tmp_path: Path) -> None:
    missing = tmp_path / "archive"
    settings = DocumentsSettings(workspace=tmp_path / "ws", extra_roots=(missing,))
    async with Client(documents_server.create_server(settings)) as c:
        error = await fails(c, "index_folder", path="archive:")
    assert not missing.exists()
    assert error["error"] == "not_found"
    assert "DOCUMENTS_EXTRA_ROOTS" in error["message"]
    assert str(missing.resolve()) in error["message"]
