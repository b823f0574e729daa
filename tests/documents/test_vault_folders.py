"""A vault that is also a documents root keeps its protected folders: the documents server never
writes into them, whichever root names them."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from deskmcp.documents.server import create_server
from deskmcp.documents.settings import DocumentsSettings
from tests.documents.samples import fails, ok, tree
from tests.helpers.files import write

pytestmark = pytest.mark.anyio


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    folder = tmp_path / "Vault"
    write(folder, "Drafts/Re-lunch.md", "---\nto: ana@example.org\n---\nFriday works.\n")
    write(folder, "Projects/alpha.md", "# Alpha\n")
    return folder


def _settings(tmp_path: Path, **values: object) -> DocumentsSettings:
    return DocumentsSettings.model_validate({"workspace": tmp_path / "ws", **values})


@pytest.mark.parametrize(
    ("where", "folder"),
    [
        ("main", "Approved"),
        ("main", "approved/sub"),
        ("main", "Drafts"),
        ("extra", "vault:Approved"),
        ("extra", "vault:Needs_Action/today"),
        ("absolute", "{vault}/Approved"),
    ],
)
async def test_security_create_note_refuses_the_vaults_protected_folders_in_any_root(
    tmp_path: Path, vault: Path, where: str, folder: str
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    main = vault if where in ("main", "absolute") else docs
    extra = str(vault) if where == "extra" else ""
    settings = _settings(tmp_path, documents_path=main, extra_roots=extra, vault_path=vault)
    before = tree(vault)
    async with Client(create_server(settings)) as c:
        error = await fails(c, "create_note", title="Send money", content="approved", folder=folder.format(vault=vault))
    assert error["error"] == "permission_denied"
    assert "VAULT_PROTECTED_FOLDERS" in error["message"]
    assert tree(vault) == before


async def test_security_create_note_refuses_a_symlink_into_a_protected_folder(tmp_path: Path, vault: Path) -> None:
    (vault / "Approved").mkdir()
    (vault / "Shortcut").symlink_to(vault / "Approved", target_is_directory=True)
    settings = _settings(tmp_path, documents_path=vault, vault_path=vault)
    async with Client(create_server(settings)) as c:
        error = await fails(c, "create_note", title="Sneaky", content="x", folder="Shortcut")
    assert error["error"] == "permission_denied"
    assert list((vault / "Approved").iterdir()) == []


async def test_security_create_note_refuses_protected_folders_of_a_vault_inside_the_documents_folder(
    tmp_path: Path,
) -> None:
    docs = tmp_path / "docs"
    write(docs, "Vault/Projects/alpha.md", "# Alpha\n")
    settings = _settings(tmp_path, documents_path=docs, vault_path=docs / "Vault")
    async with Client(create_server(settings)) as c:
        error = await fails(c, "create_note", title="Sneaky", content="x", folder="Vault/Approved")
    assert error["error"] == "permission_denied"
    assert not (docs / "Vault" / "Approved").exists()


async def test_security_the_default_vault_in_the_workspace_is_protected_too(tmp_path: Path) -> None:
    vault = tmp_path / "ws" / "vault"
    vault.mkdir(parents=True)
    settings = _settings(tmp_path, documents_path=tmp_path / "ws", extra_roots="")
    async with Client(create_server(settings)) as c:
        error = await fails(c, "create_note", title="Sneaky", content="x", folder="vault/Done")
    assert error["error"] == "permission_denied"
    assert not (vault / "Done").exists()


async def test_notes_go_into_the_vaults_other_folders_and_protection_follows_the_setting(
    tmp_path: Path, vault: Path
) -> None:
    open_settings = _settings(tmp_path, documents_path=vault, vault_path=vault, protected_folders="")
    async with Client(create_server(_settings(tmp_path, documents_path=vault, vault_path=vault))) as c:
        written = await ok(c, "create_note", title="Plan", content="x", folder="Projects")
    async with Client(create_server(open_settings)) as c:
        approved = await ok(c, "create_note", title="Plan", content="x", folder="Approved")
    assert written["path"] == "Projects/plan.md"
    assert approved["path"] == "Approved/plan.md"


async def test_indexing_reads_the_protected_folders_without_writing_them(tmp_path: Path, vault: Path) -> None:
    settings = _settings(tmp_path, documents_path=vault, vault_path=vault)
    before = {p: (vault / p).read_bytes() for p in tree(vault) if (vault / p).is_file()}
    async with Client(create_server(settings)) as c:
        indexed = await ok(c, "index_document", path="Drafts/Re-lunch.md", tags=["mail"])
        folder = await ok(c, "index_folder", path="Drafts", tags=["triage"])
    after = {p: (vault / p).read_bytes() for p in tree(vault) if (vault / p).is_file()}
    assert indexed["tags"] == ["mail"]
    assert folder["unchanged"] + folder["updated"] == 1
    assert after == before
