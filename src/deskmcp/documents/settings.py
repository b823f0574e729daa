"""Configuration of the documents server."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

from pydantic import Field, field_validator
from pydantic_settings import NoDecode

from deskmcp.core.config import OptionalPath, WorkspaceSettings, env_alias, expand
from deskmcp.core.protected_folders import TRIAGE_FOLDERS, folder_names


class DocumentsSettings(WorkspaceSettings):
    """Environment: `DOCUMENTS_PATH`, `DOCUMENTS_EXTRA_ROOTS`, `DOCUMENTS_READ_ONLY_ROOTS`,
    `DOCUMENTS_MAX_FILE_MB`, `DESKMCP_MAX_FILE_CHARS`, `DOCUMENTS_INDEX_MAX_FILES`, `VAULT_PATH` and
    `VAULT_PROTECTED_FOLDERS` (the vault's folders no note is written into), plus the workspace's."""

    documents_path: OptionalPath = Field(
        default=None,
        validation_alias=env_alias("documents_path", "DOCUMENTS_PATH"),
        description="The main documents folder (default: <workspace>/documents, created if missing; "
        "a folder set here is never created).",
    )
    # NoDecode: the variable is a path list, not JSON.
    extra_roots: Annotated[tuple[Path, ...], NoDecode] = Field(
        default=(),
        validation_alias=env_alias("extra_roots", "DOCUMENTS_EXTRA_ROOTS"),
        description="More folders to index, separated by the OS path separator (':' or ';').",
    )
    read_only_roots: Annotated[tuple[Path, ...], NoDecode] = Field(
        default=(),
        validation_alias=env_alias("read_only_roots", "DOCUMENTS_READ_ONLY_ROOTS"),
        description="Extra roots no note is written into (shared team folders), separated like DOCUMENTS_EXTRA_ROOTS.",
    )
    max_file_mb: float = Field(
        default=50.0,
        gt=0,
        validation_alias=env_alias("max_file_mb", "DOCUMENTS_MAX_FILE_MB"),
        description="Files larger than this many MiB are refused before they are read.",
    )
    max_index_chars: int = Field(
        default=5_000_000,
        ge=10_000,
        validation_alias=env_alias("max_index_chars", "DOCUMENTS_MAX_INDEX_CHARS"),
        description="Most characters of one document's text that are indexed for search.",
    )

    index_max_files: int = Field(
        default=5000,
        ge=1,
        validation_alias=env_alias("index_max_files", "DOCUMENTS_INDEX_MAX_FILES"),
        description="Most files one index_folder call reads and indexes (unchanged files do not count); "
        "calling again continues.",
    )
    vault_path: OptionalPath = Field(
        default=None,
        validation_alias=env_alias("vault_path", "VAULT_PATH"),
        description="The vault (default: <workspace>/vault): when it is or lies in a root, its protected "
        "folders are never written into.",
    )
    vault_protected_folders: str = Field(
        default=",".join(TRIAGE_FOLDERS),
        validation_alias=env_alias("vault_protected_folders", "VAULT_PROTECTED_FOLDERS"),
        description="Comma-separated top-level folders of the vault no note is written into (as the vault server).",
    )

    @field_validator("extra_roots", "read_only_roots", mode="before")
    @classmethod
    def _split_roots(cls, value: object) -> object:
        if value is None:
            return ()
        if isinstance(value, str | Path):
            value = str(value).split(os.pathsep)
        if isinstance(value, list | tuple):
            return tuple(expand(str(v).strip()) for v in value if str(v).strip())
        return value

    @property
    def root(self) -> Path:
        return self.documents_path or self.workspace / "documents"

    @property
    def read_only_folders(self) -> frozenset[Path]:
        return frozenset(p.resolve() for p in self.read_only_roots)

    @property
    def vault(self) -> Path:
        return self.vault_path or self.workspace / "vault"

    @property
    def protected(self) -> tuple[str, ...]:
        return folder_names(self.vault_protected_folders)

    @property
    def max_file_bytes(self) -> int:
        return int(self.max_file_mb * 1024 * 1024)
