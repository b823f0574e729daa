"""Granola's hosted MCP server as a source of meetings, synced into the meetings index.

The sync is the API source's (`api_source.ApiSource`: resumable, answers flagged `syncing` and
`stale_since`) run on the hosted server's tools (`granola_mcp.GranolaMcp`): `list_meetings`
lists every meeting at each sync (it has no published paging nor `updated_after`, so each sync is
a full listing and meetings no longer listed leave the index), `get_meetings` fetches the new or
changed ones ten at a time, `get_meeting_transcript` their transcripts while the plan has them.
Each meeting is mapped by the API source's own mapping (`api_notes`), so the tools answer the same
from either source.

deskmcp signs in as an OAuth client (`deskmcp.connect.oauth`): `deskmcp auth granola` opens the browser
once; the sync uses the tokens kept (0600 file per URL) and refreshes them, and never opens a
browser itself: without a sign-in every tool answers `auth_required` saying how to sign in.

On a shared server (users mode) each user signs in with their own Granola account at
`/auth/granola/url` (`deskmcp.connect.remote_sign_in`, declared by the server's `USERS`): their
tokens are kept sealed in PostgreSQL when the deployment has a token database, else in a 0600 file
of their own workspace (`user_record`), bound to the address they were issued for (the
deployment's `GRANOLA_MCP_URL`), and the sync sends and refreshes those (`RemoteTokens`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from deskmcp.core.clock import Clock
from deskmcp.core.search.index import SearchIndex
from deskmcp.meetings.api_source import ApiSource, _StoppableClock
from deskmcp.meetings.granola_mcp import (
    USER_SIGN_IN,
    GranolaMcp,
    no_browser,
    signed_in_at,
    signed_out,
    token_file_for,
)
from deskmcp.meetings.settings import MeetingsSettings

if TYPE_CHECKING:
    from deskmcp.connect.remote_sign_in import TokenRecord

FORMAT = "granola-mcp"
REMOTE = "granola"
"""The name of the users' sign-in (`/auth/granola/url`) and of their records."""
USER_TOKEN_FILE = ".deskmcp/granola-mcp-sign-in.json"
"""A user's sign-in in their workspace when the deployment has no token database."""


def user_record(settings: MeetingsSettings) -> TokenRecord:
    """The record of the sign-in of the user `settings.mcp_token_principal` (users mode): a sealed row
    in PostgreSQL with a token database and keys, else a 0600 file in their workspace."""
    from deskmcp.connect.remote_sign_in import FileRecord

    owner = settings.mcp_token_principal
    assert owner is not None
    if settings.mcp_token_database and settings.mcp_token_keys is not None:
        from deskmcp.google.sealed_tokens import RemoteTokenStore, SealingKeys

        keys = SealingKeys.parse(settings.mcp_token_keys.get_secret_value())
        return RemoteTokenStore(settings.mcp_token_database, keys, owner[0], owner[1], REMOTE, USER_SIGN_IN)
    return FileRecord(settings.workspace / USER_TOKEN_FILE)


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
        clock = clock or _StoppableClock(self._closing)
        if settings.mcp_token_principal is not None:
            from deskmcp.connect.remote_sign_in import RemoteTokens

            auth = RemoteTokens(user_record(settings), url, lambda: signed_out(USER_SIGN_IN))
            self.api = GranolaMcp(
                url, auth=auth, signed_in=auth.signed_in, sign_in=USER_SIGN_IN, clock=clock, rate=rate
            )
            return
        tokens = token_file_for(url, token_folder)
        self.api = GranolaMcp(
            url,
            auth=oauth_for(url, folder=token_folder, browser=no_browser),
            signed_in=lambda: signed_in_at(tokens),
            clock=clock,
            rate=rate,
        )
