"""Configuration of the vault server."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pydantic import Field

from deskmcp.core.config import env_alias
from deskmcp.core.shared_settings import ProtectedFoldersSettings, VaultFolderSettings


class VaultSettings(VaultFolderSettings, ProtectedFoldersSettings):
    """Environment: `VAULT_READ_ONLY`, `VAULT_MAX_NOTE_BYTES`, `VAULT_WATCH`, `VAULT_INDEX_WORKERS`;
    `VAULT_PATH` and `VAULT_PROTECTED_FOLDERS`, which other servers read too
    (`deskmcp.core.shared_settings`); plus the workspace's."""

    read_only: bool = Field(
        default=False,
        validation_alias=env_alias("read_only", "VAULT_READ_ONLY"),
        description="Offer only the reading tools; the service refuses writes with permission_denied.",
    )
    max_note_bytes: int = Field(
        default=4 * 1024 * 1024,
        ge=1024,
        validation_alias=env_alias("max_note_bytes", "VAULT_MAX_NOTE_BYTES"),
        description="Largest note read, written or indexed in full (bigger notes are indexed by name only).",
    )
    index_workers: int = Field(
        default=2,
        ge=1,
        le=16,
        validation_alias=env_alias("index_workers", "VAULT_INDEX_WORKERS"),
        description="Processes that read and parse notes when thousands need indexing (1: none).",
    )
    watch: bool = Field(
        default=True,
        validation_alias=env_alias("watch", "VAULT_WATCH"),
        description="Watch the vault for edits while serving (else re-scan by mtime before answering).",
    )

    read_only_switch: ClassVar[str] = "VAULT_READ_ONLY=1"
    """The setting named when a writing tool is called in read-only mode."""

    @property
    def root(self) -> Path:
        return self.vault

    @property
    def index_path(self) -> Path:
        return self.index_folder / "vault.sqlite3"
