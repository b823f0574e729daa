"""Granola's hosted MCP server as a source of meetings, synced into the meetings index.

The sync is the API source's (`api_source.ApiSource`: resumable, answers flagged `syncing` and
`stale_since`) run on the hosted server's tools (`granola_mcp.GranolaMcp`): `list_meetings`
lists every meeting at each sync (it has no published paging nor `updated_after`, so each sync is
a full listing and meetings no longer listed leave the index), `get_meetings` fetches the new or
changed ones ten at a time, `get_meeting_transcript` their transcripts while the plan has them.
Each meeting is mapped by the API source's own mapping (`api_notes`), so the tools answer the same
from either source.

deskmcp signs in as an OAuth client (`connect_oauth`): `deskmcp auth granola` opens the browser
once; the sync uses the tokens kept (0600 file per URL) and refreshes them, and never opens a
browser itself: without a sign-in every tool answers `auth_required` saying how to sign in.
"""

from __future__ import annotations

from pathlib import Path

from deskmcp.core.clock import Clock
from deskmcp.core.search.index import SearchIndex
from deskmcp.meetings.api_source import ApiSource, _StoppableClock
from deskmcp.meetings.granola_mcp import GranolaMcp, no_browser, signed_in_at, token_file_for
from deskmcp.meetings.settings import MeetingsSettings

FORMAT = "granola-mcp"


class McpSource(ApiSource):
    """Meetings from Granola's hosted MCP server, synced into `index` in a thread of its own."""

    name = "mcp"
    format = FORMAT
    full_every = 1

    def __init__(
        self,
        settings: MeetingsSettings,
        index: SearchIndex,
        *,
        token_folder: Path | None = None,
        clock: Clock | None = None,
        rate: float = 1.0,
        background: bool = True,
    ) -> None:
        """`token_folder`: where the sign-in's tokens are (default `deskmcp connect`'s folder)."""
        from deskmcp.connect.oauth import oauth_for

        url = settings.mcp_url
        # The sign-in is per URL (its own token file): the identity is the URL alone.
        self._setup(settings, index, url=url, secret="", background=background)
        tokens = token_file_for(url, token_folder)
        self.api = GranolaMcp(
            url,
            auth=oauth_for(url, folder=token_folder, browser=no_browser),
            signed_in=lambda: signed_in_at(tokens),
            clock=clock or _StoppableClock(self._closing),
            rate=rate,
        )
