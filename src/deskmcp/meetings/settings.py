"""Configuration of the meetings server."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr

from deskmcp.core.config import OptionalPath, WorkspaceSettings, env_alias


class MeetingsSettings(WorkspaceSettings):
    """Environment: `GRANOLA_API_KEY`, `GRANOLA_API_URL`, `GRANOLA_API_SYNC_SECONDS`,
    `GRANOLA_CACHE_PATH`, `GRANOLA_MAX_CACHE_MB`, `GRANOLA_WORKER_MIN_MB`,
    `GRANOLA_BACKGROUND_MIN_MB`, `MAX_FILE_CHARS`, plus the workspace's.

    With `GRANOLA_API_KEY` set, meetings come from Granola's public API (synced into the index);
    else from the local cache."""

    api_key: SecretStr | None = Field(
        default=None,
        validation_alias=env_alias("api_key", "GRANOLA_API_KEY"),
        description="A Granola API key (grn_...; Settings -> Connectors -> API keys): meetings then come"
        " from Granola's public API instead of the local cache.",
    )
    api_url: str = Field(
        default="https://public-api.granola.ai",
        validation_alias=env_alias("api_url", "GRANOLA_API_URL"),
        description="Base URL of Granola's public API (tests and proxies point it elsewhere).",
    )
    api_sync_seconds: float = Field(
        default=300.0,
        ge=1,
        validation_alias=env_alias("api_sync_seconds", "GRANOLA_API_SYNC_SECONDS"),
        description="Seconds between two syncs of the public API's changes into the index.",
    )

    cache_path: OptionalPath = Field(
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
    worker_min_mb: int = Field(
        default=32,
        ge=0,
        validation_alias=env_alias("worker_min_mb", "GRANOLA_WORKER_MIN_MB"),
        description="Read caches of at least this many MiB in a short-lived worker process (0: always).",
    )
    background_min_mb: int = Field(
        default=64,
        ge=0,
        validation_alias=env_alias("background_min_mb", "GRANOLA_BACKGROUND_MIN_MB"),
        description="A first index of a cache of at least this many MiB runs in the background: search and"
        " list answer meanwhile from the meetings indexed so far, flagged with `indexing`.",
    )

    @property
    def fallback_folders(self) -> list[Path]:
        return [self.workspace / "granola"]
