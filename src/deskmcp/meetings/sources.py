"""Where meetings come from: the contract every source of the meetings index meets.

Two sources feed the same index, and the tools never know which: Granola's local cache
(`MeetingService` reads it, `CacheSource` is its face here) and Granola's public API
(`api_source.ApiSource`, chosen by `GRANOLA_API_KEY`) and Granola's hosted MCP server
(`mcp_source.McpSource`, chosen by `GRANOLA_SOURCE=mcp` or a sign-in). `_default_source` is the one place the
source is chosen.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from deskmcp.meetings.models import CacheStatus, IndexingProgress, SyncProgress

if TYPE_CHECKING:
    from deskmcp.meetings.service import MeetingService


class MeetingSource(Protocol):
    """What the service asks of a source of meetings."""

    name: str
    """"cache", "api" or "mcp": said in `granola.cache.status`."""

    def refresh(self, *, partial: bool = False) -> None:
        """Bring the index up to date, or start doing so. `partial` (search, list): answer from
        what is indexed so far rather than wait. Raises what no answer could be true without
        (no cache found, a wrong API key)."""
        ...

    def indexing(self) -> IndexingProgress | None:
        """How far a first index of a cache running in the background is."""
        ...

    def syncing(self) -> SyncProgress | None:
        """How far a sync from a remote source is, or None when the index holds all it has."""
        ...

    def stale_since(self) -> str | None:
        """Since when the remote source could not be reached (answers are the last sync's)."""
        ...

    def transcripts_missing(self) -> str | None:
        """Why the source gives no transcripts (a Granola plan without them), or None."""
        ...

    def status(self) -> CacheStatus:
        """The source's state for `granola.cache.status`: never fails on what the other tools fail on."""
        ...

    def close(self) -> None: ...


class CacheSource:
    """Granola's local cache file, read by the service itself (see `service`)."""

    name = "cache"

    def __init__(self, service: MeetingService) -> None:
        self._service = service

    def refresh(self, *, partial: bool = False) -> None:
        self._service.refresh_cache(partial=partial)

    def indexing(self) -> IndexingProgress | None:
        return self._service.cache_indexing()

    def syncing(self) -> SyncProgress | None:
        return None

    def stale_since(self) -> str | None:
        return None

    def transcripts_missing(self) -> str | None:
        return None

    def status(self) -> CacheStatus:
        return self._service.cache_status()

    def close(self) -> None:
        """The service closes what the cache source uses (its index and first-index thread)."""
