"""Configuration of the documents server."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

from pydantic import Field, field_validator
from pydantic_settings import NoDecode

from deskmcp.core.config import env_alias, expand
from deskmcp.core.shared_settings import DocumentsFolderSettings, ProtectedFoldersSettings, VaultFolderSettings


class DocumentsSettings(DocumentsFolderSettings, VaultFolderSettings, ProtectedFoldersSettings):
    """Environment: `DOCUMENTS_EXTRA_ROOTS`, `DOCUMENTS_READ_ONLY_ROOTS`, `DOCUMENTS_MAX_FILE_MB`,
    `DOCUMENTS_MAX_INDEX_CHARS`, `DOCUMENTS_INDEX_MAX_FILES`; `DOCUMENTS_PATH`, and `VAULT_PATH` and
    `VAULT_PROTECTED_FOLDERS` (the vault's folders no note is written into), which other servers read
    too (`deskmcp.core.shared_settings`); plus the workspace's."""

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
        return self.documents

    @property
    def read_only_folders(self) -> frozenset[Path]:
        return frozenset(p.resolve() for p in self.read_only_roots)

    @property
    def max_file_bytes(self) -> int:
        return int(self.max_file_mb * 1024 * 1024)
