"""Configuration of the documents server."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

from pydantic import Field, field_validator
from pydantic_settings import NoDecode

from deskmcp.core.config import OptionalPath, WorkspaceSettings, env_alias, expand


class DocumentsSettings(WorkspaceSettings):
    """Environment: `DOCUMENTS_PATH`, `DOCUMENTS_EXTRA_ROOTS`, `DOCUMENTS_MAX_FILE_MB`, `MAX_FILE_CHARS`,
    plus the workspace's."""

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

    @field_validator("extra_roots", mode="before")
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
    def max_file_bytes(self) -> int:
        return int(self.max_file_mb * 1024 * 1024)
