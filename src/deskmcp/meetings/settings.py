"""Configuration of the meetings server."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr

from deskmcp.core.config import OptionalPath, WorkspaceSettings, env_alias

log = logging.getLogger(__name__)


class MeetingsSettings(WorkspaceSettings):
    """Environment: `GRANOLA_SOURCE`, `GRANOLA_MCP_URL`, `GRANOLA_API_KEY`, `GRANOLA_OS_KEYRING`,
    `GRANOLA_API_URL`, `GRANOLA_API_SYNC_SECONDS`,
    `GRANOLA_CACHE_PATH`, `GRANOLA_MAX_CACHE_MB`, `GRANOLA_WORKER_MIN_MB`,
    `GRANOLA_BACKGROUND_MIN_MB`, `DESKMCP_MAX_FILE_CHARS`, plus the workspace's.

    With `GRANOLA_API_KEY` set, meetings come from Granola's public API (synced into the index);
    else from the local cache."""

    api_key: SecretStr | None = Field(
        default=None,
        validation_alias=env_alias("api_key", "GRANOLA_API_KEY"),
        description="A Granola API key (grn_...; Settings -> Connectors -> API keys): meetings then come"
        " from Granola's public API instead of the local cache.",
    )
    os_keyring: bool = Field(
        default=False,
        validation_alias=env_alias("os_keyring", "GRANOLA_OS_KEYRING"),
        description="Without GRANOLA_API_KEY, read the key from the OS keyring (service 'deskmcp', name"
        " 'granola:api') when the optional keyring package is installed (never for a user of a multi-user"
        " deployment).",
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

    source: Literal["auto", "cache", "api", "mcp"] = Field(
        default="auto",
        validation_alias=env_alias("source", "GRANOLA_SOURCE"),
        description="Where meetings come from: auto (the API with GRANOLA_API_KEY, else the hosted MCP"
        " server once `deskmcp auth granola` signed in, else the cache), cache, api or mcp.",
    )
    mcp_url: str = Field(
        default="https://mcp.granola.ai/mcp",
        validation_alias=env_alias("mcp_url", "GRANOLA_MCP_URL"),
        description="Granola's hosted MCP server (every plan; sign in with `deskmcp auth granola`, or per user"
        " at /auth/granola/url on a shared server, where this is the deployment's alone).",
    )
    mcp_token_principal: tuple[str, str] | None = Field(
        default=None,
        description="(issuer, subject) of the user whose own sign-in to the hosted MCP server is used; set per"
        " user by deskmcp.serving.users.",
    )
    mcp_token_database: str | None = Field(
        default=None,
        description="PostgreSQL URL keeping each user's sealed sign-in to the hosted MCP server; set per user by"
        " deskmcp.serving.users from DESKMCP_DATABASE_URL.",
    )
    mcp_token_keys: SecretStr | None = Field(
        default=None,
        description="Keys sealing those sign-ins; set per user by deskmcp.serving.users from DESKMCP_TOKEN_KEYS.",
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

    def granola_api_key(self) -> str | None:
        """The API key: `GRANOLA_API_KEY`, else (with `GRANOLA_OS_KEYRING`) the OS keyring's entry."""
        if self.api_key is not None:
            return self.api_key.get_secret_value() or None
        if not self.os_keyring:
            return None
        try:
            import keyring  # type: ignore[import-not-found]
            import keyring.errors  # type: ignore[import-not-found]
        except ImportError:
            return None
        try:
            return keyring.get_password("deskmcp", "granola:api") or None
        except keyring.errors.KeyringError as exc:
            log.warning("the OS keyring could not be read: %s", type(exc).__name__)
            return None

    def remote_source(self, has_key: bool) -> Literal["api", "mcp"] | None:
        """The remote source chosen, or None for the local cache. `auto`: the API with a key,
        else the hosted MCP server when a sign-in left its token file."""
        if self.source == "mcp":
            return "mcp"
        if self.source == "cache" or (self.source == "api" and not has_key):
            return None
        if has_key:
            return "api"
        from deskmcp.meetings.granola_mcp import signed_in_at, token_file_for

        return "mcp" if signed_in_at(token_file_for(self.mcp_url)) else None

    @property
    def fallback_folders(self) -> list[Path]:
        return [self.workspace / "granola"]
