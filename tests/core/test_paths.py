import os
from pathlib import Path

import pytest

from deskmcp.core.errors import BadRequest, PermissionDenied
from deskmcp.core.paths import HIDDEN_RULE, relative_posix, safe_join, shown_path, shown_text, visible_join


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "root"
    (r / "notes").mkdir(parents=True)
    (r / "notes" / "a.md").write_text("a", encoding="utf-8")
    return r


def test_safe_join_resolves_a_relative_path_inside_the_root(root: Path):
    assert safe_join(root, "notes/a.md") == (root / "notes" / "a.md").resolve()
    assert safe_join(root, "notes/./new.md") == (root / "notes" / "new.md").resolve()
    assert safe_join(root, "notes\\a.md") == (root / "notes" / "a.md").resolve()


@pytest.mark.parametrize(
    "hostile",
    [
        "../outside.md",
        "notes/../../outside.md",
        "/etc/passwd",
        "C:\\Windows\\win.ini",
        "c:/x",
        "\\\\server\\share\\x",
        "//server/share/x",
        "notes/a.md\x00.txt",
    ],
)
def test_safe_join_rejects_traversal_absolute_drive_unc_and_nul_paths(root: Path, hostile: str):
    with pytest.raises(PermissionDenied) as info:
        safe_join(root, hostile)
    assert info.value.code == "permission_denied"


def test_safe_join_rejects_symlink_escape(root: Path, tmp_path: Path):
    outside = tmp_path / "secret"
    outside.mkdir()
    (outside / "key.txt").write_text("secret", encoding="utf-8")
    os.symlink(outside, root / "link")
    with pytest.raises(PermissionDenied):
        safe_join(root, "link/key.txt")
    with pytest.raises(PermissionDenied):
        safe_join(root, "link/new-file.md")


def test_safe_join_allows_symlinks_that_stay_inside_the_root(root: Path):
    os.symlink(root / "notes", root / "alias")
    assert safe_join(root, "alias/a.md") == (root / "notes" / "a.md").resolve()


def test_safe_join_requires_a_path_unless_the_root_itself_is_allowed(root: Path):
    with pytest.raises(BadRequest):
        safe_join(root, "")
    assert safe_join(root, "", allow_root=True) == root.resolve()


def test_relative_posix_is_root_relative(root: Path):
    assert relative_posix(root, root / "notes" / "a.md") == "notes/a.md"


@pytest.mark.parametrize(
    "hidden", [".obsidian/plugins/x/data.json", ".git/config", ".env", "notes/.trash/a.md", "notes/./.b", "notes\\.c"]
)
def test_security_visible_join_refuses_hidden_parts_naming_the_rule(root: Path, hidden: str):
    with pytest.raises(PermissionDenied) as raised:
        visible_join(root, hidden)
    assert HIDDEN_RULE in raised.value.message
    assert raised.value.details["rule"] == "hidden"


def test_security_visible_join_refuses_a_visible_symlink_into_a_hidden_folder(root: Path):
    (root / ".obsidian").mkdir()
    (root / ".obsidian" / "app.json").write_text("{}", encoding="utf-8")
    (root / "app.json").symlink_to(root / ".obsidian" / "app.json")
    with pytest.raises(PermissionDenied):
        visible_join(root, "app.json")


def test_visible_join_resolves_visible_paths_and_the_root_itself(root: Path):
    assert visible_join(root, "notes/a.md") == (root / "notes" / "a.md").resolve()
    assert visible_join(root, "", allow_root=True) == root.resolve()
    assert visible_join(root / "notes", "a.md") == (root / "notes" / "a.md").resolve()


def test_shown_path_is_the_full_path_without_a_workspace_to_hide(tmp_path: Path) -> None:
    assert shown_path(tmp_path / "vault", None) == str(tmp_path / "vault")


def test_security_shown_path_names_folders_relative_to_the_workspace_and_others_by_name(tmp_path: Path) -> None:
    workspace = tmp_path / "users" / "abc"
    (workspace / "vault").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (workspace / "link").symlink_to(workspace / "vault")

    assert shown_path(workspace / "vault", workspace) == "vault"
    assert shown_path(workspace / ".deskmcp" / "audit" / "sends.jsonl", workspace) == ".deskmcp/audit/sends.jsonl"
    assert shown_path(workspace, workspace) == "."
    assert shown_path(workspace / "link", workspace) == "link"
    assert shown_path(tmp_path / "team", workspace) == "team"
    assert shown_text(f"no cache (looked in {workspace}/granola, {workspace})", workspace) == (
        "no cache (looked in granola, .)"
    )
