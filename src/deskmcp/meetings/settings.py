"""Configuration of the meetings server."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, field_validator

from deskmcp.core.config import WorkspaceSettings, env_alias, expand


class MeetingsSettings(WorkspaceSettings):
    """Environment: `GRANOLA_CACHE_PATH`, `GRANOLA_MAX_CACHE_MB`, `MAX_FILE_CHARS`, plus the workspace's."""

    cache_path: Path | None = Field(
        default=None,
        validation_alias=env_alias("cache_path", "GRANOLA_CACHE_PATH"),
        description="Granola's cache file or folder (default: Granola's folder, then <workspace>/granola).",
    )
    max_cache_mb: int = Field(
        default=1024,
        ge=1,
        validation_alias=env_alias("max_cache_mb", "GRANOLA_MAX_CACHE_MB"),
        description="Refuse cache files larger than this many MiB.",
    )
    max_chars: int = Field(
        default=200_000,
        ge=1_000,
        validation_alias=env_alias("max_chars", "MAX_FILE_CHARS"),
        description="Longest text a single tool answer carries (exports, transcripts).",
    )

    @field_validator("cache_path", mode="before")
    @classmethod
    def _expand_cache(cls, value: object) -> object:
        return expand(value) if isinstance(value, str | Path) and str(value) else None

    @property
    def fallback_folders(self) -> list[Path]:
        return [self.workspace / "granola"]
