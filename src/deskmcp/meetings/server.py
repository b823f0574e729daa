"""The meetings MCP server: tools, resources and prompts over `MeetingService`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Annotated, Literal, TypeVar

from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
from pydantic import Field

from deskmcp.core.errors import DeskError, NotFound
from deskmcp.core.pagination import CursorArg
from deskmcp.core.search.embedders import configured_embedder
from deskmcp.core.search.fusion import ModeArg
from deskmcp.core.search.index import QUERY_WORDS
from deskmcp.core.server import READ_ONLY, DeskServer
from deskmcp.meetings.granola_mcp import SERVICE
from deskmcp.meetings.mcp_source import REMOTE, user_record
from deskmcp.meetings.models import (
    CacheStatus,
    ExportMarkdownOutput,
    FolderList,
    ListMeetingsOutput,
    Meeting,
    ParticipantList,
    SearchMeetingsOutput,
    Section,
    StatsOutput,
    TranscriptOutput,
)
from deskmcp.meetings.service import MeetingService
from deskmcp.meetings.settings import MeetingsSettings
from deskmcp.servers import SERVERS, RemoteSignIn, ServerModule, UserPolicy

T = TypeVar("T")

INSTRUCTIONS = """Read-only access to the user's Granola meetings (notes, attendees, transcripts).
Start with granola.meetings.search for a topic or granola.meetings.list with filters (days=7 for
the last week); then granola.meetings.get, granola.meetings.transcript or
granola.meetings.export_markdown with an id from those results. Dates are ISO 8601; a bare
date is a day in the user's time zone. Errors are JSON objects with an `error` code and a
`message` saying how to recover."""

Query = Annotated[
    str | None,
    Field(
        description="Words all in title, notes, attendees, folder or transcript (stop words aside);"
        ' "a phrase" as written; -word excluded'
    ),
]
FromTs = Annotated[str | None, Field(description="Start at or after this ISO 8601 date/time")]
ToTs = Annotated[str | None, Field(description="Start before this ISO 8601 time, or on/before this date")]
Days = Annotated[
    int | None,
    Field(ge=1, le=3660, description="The last N days, today included (user's time zone)"),
]
People = Annotated[
    list[str] | None,
    Field(description="Names or emails, any may match ('ali' finds Alice)"),
]
PlatformArg = Annotated[Literal["zoom", "meet", "teams", "other"] | None, Field()]
FolderArg = Annotated[str | None, Field(description="Folder id or name")]
Limit = Annotated[int, Field(ge=1, le=500, description="Page size")]
MeetingId = Annotated[str, Field(description="From granola.meetings.list or .search")]


Settings = MeetingsSettings

TOOLSETS = {
    "read": "List, search, read, export and count meetings; cache status",
    "more": "Transcript segments by time range, folders, people met",
}
DEFAULT_TOOLSETS = ("read",)


def _users_source(values: Mapping[str, str]) -> dict[str, str]:
    """A user's meetings come from their own API key, their own sign-in to Granola's hosted MCP
    server (GRANOLA_SOURCE=mcp, signed in at /auth/granola/url), or their own cache folder."""
    chosen = next((values[k] for k in ("GRANOLA_SOURCE", "source") if k in values), "auto").strip().lower()
    if chosen == "auto":
        has_key = any(values.get(k, "").strip() for k in ("GRANOLA_API_KEY", "api_key"))
        return {"source": "api" if has_key else "cache"}
    return {}


USERS = UserPolicy(
    # The keyring is this server's OS user's; a user's key is sent to Granola's own API only; their
    # cache is a folder of their workspace, never the Granola app folder of this machine. Their
    # sign-in to the hosted MCP server is their own, its tokens sent only to the deployment's
    # GRANOLA_MCP_URL (a user's own value is dropped).
    fixed={"os_keyring": False},
    ignored=frozenset({"api_url"}),
    deployment=frozenset({"mcp_url"}),
    forbidden=frozenset({"mcp_token_principal", "mcp_token_database", "mcp_token_keys"}),
    data={"cache_path": "granola"},
    chosen=_users_source,
    remote_sign_in=RemoteSignIn(
        name=REMOTE,
        service=SERVICE,
        url=lambda settings: settings.mcp_url,
        record=user_record,
        principal="mcp_token_principal",
        database="mcp_token_database",
        keys="mcp_token_keys",
    ),
)


def create_service(settings: MeetingsSettings) -> MeetingService:
    return MeetingService(settings, embedder=configured_embedder(settings))


def unavailable(settings: MeetingsSettings) -> str | None:
    """None when meetings can be had (an API key is set, Granola's hosted MCP server is chosen or
    signed in to, or a Granola cache is found), else what is missing."""
    has_key = settings.granola_api_key() is not None
    if settings.source == "api" and not has_key:
        return "GRANOLA_SOURCE is api but no GRANOLA_API_KEY is set (a key from Granola's Settings -> API)"
    if settings.remote_source(has_key) is not None:
        return None
    location = MeetingService.locate(settings)
    if location.path is None:
        where = ", ".join(str(p) for p in location.searched)
        return f"no Granola cache found (looked in {where}); set GRANOLA_CACHE_PATH"
    return None


def create_server(settings: MeetingsSettings, service: MeetingService | None = None) -> DeskServer:
    """The meetings tools alone on a server of their own (tests, benchmarks): `servers.create_server`."""
    return SERVERS["meetings"].create_server(settings, service)


def register(server: DeskServer, service: MeetingService) -> None:
    """Add the meetings tools, resources and prompts to `server`."""

    server.close_on_shutdown(service)

    @server.tool("granola.meetings.list", annotations=READ_ONLY)
    def meetings_list(
        q: Query = None,
        from_ts: FromTs = None,
        to_ts: ToTs = None,
        days: Days = None,
        participants: People = None,
        platform: PlatformArg = None,
        folder: FolderArg = None,
        limit: Limit = 50,
        cursor: CursorArg = None,
    ) -> ListMeetingsOutput:
        """Meetings newest first, filtered (all filters must hold): summaries with ids for
        granola.meetings.get, the total matching and next_cursor."""
        f = service.filters(
            from_ts=from_ts,
            to_ts=to_ts,
            days=days,
            participants=participants,
            platform=platform,
            folder=folder,
        )
        return service.list_meetings(f, q=q, limit=limit, cursor=cursor)

    @server.tool("granola.meetings.search", annotations=READ_ONLY)
    def meetings_search(
        q: Annotated[str, Field(min_length=1, description=QUERY_WORDS)],
        from_ts: FromTs = None,
        to_ts: ToTs = None,
        days: Days = None,
        participants: People = None,
        platform: PlatformArg = None,
        folder: FolderArg = None,
        limit: Limit = 20,
        cursor: CursorArg = None,
        mode: ModeArg = None,
    ) -> SearchMeetingsOutput:
        """Search titles, notes, attendees, folders and transcripts, best first; snippets mark
        matches ⟦like this⟧. `unmatched_terms`: query words no meeting holds. Filters as in
        granola.meetings.list."""
        f = service.filters(
            from_ts=from_ts,
            to_ts=to_ts,
            days=days,
            participants=participants,
            platform=platform,
            folder=folder,
        )
        return service.search(q, f, limit=limit, cursor=cursor, mode=mode)

    @server.tool("granola.meetings.related", annotations=READ_ONLY, toolset="more")
    def meetings_related(
        id: MeetingId,
        days: Days = None,
        folder: FolderArg = None,
        limit: Limit = 10,
    ) -> SearchMeetingsOutput:
        """The meetings nearest in meaning to this one (needs an embedding model), nearest first."""
        return service.related(id, service.filters(days=days, folder=folder), limit=limit)

    @server.tool("granola.meetings.get", annotations=READ_ONLY)
    def meetings_get(
        id: MeetingId,
        include_notes: Annotated[bool, Field(description="Include the notes Markdown")] = True,
    ) -> Meeting:
        """One meeting: times, platform, participants with emails, folders, links and notes as
        Markdown (the transcript: granola.meetings.transcript)."""
        return service.get(id, include_notes=include_notes)

    @server.tool("granola.meetings.transcript", annotations=READ_ONLY, toolset="more")
    def meetings_transcript(
        id: MeetingId,
        start_seconds: Annotated[float | None, Field(ge=0, description="From this many seconds in")] = None,
        end_seconds: Annotated[float | None, Field(gt=0, description="Up to this many seconds in")] = None,
        source: Annotated[
            Literal["microphone", "system", "me", "them"] | None,
            Field(description="Only the user's microphone ('me') or the other side ('them')"),
        ] = None,
        max_chars: Annotated[int | None, Field(ge=100, description="Cap on transcript text returned")] = None,
    ) -> TranscriptOutput:
        """A meeting's transcript segments (time, offset, speaker source, text), whole or a time range.

        'microphone'/'me' is the Granola user; 'system'/'them' is everyone else on the call.
        truncated=true means max_chars (or the server's cap) cut it; ask for a later start_seconds.
        """
        return service.transcript(
            id, start_seconds=start_seconds, end_seconds=end_seconds, source=source, max_chars=max_chars
        )

    @server.tool("granola.meetings.export_markdown", annotations=READ_ONLY)
    def meetings_export_markdown(
        id: MeetingId,
        sections: Annotated[
            list[Section] | None,
            Field(description="Default: all but transcript"),
        ] = None,
        max_chars: Annotated[int | None, Field(ge=100, description="Cap on the Markdown length")] = None,
    ) -> ExportMarkdownOutput:
        """Render a meeting as a Markdown document, with the sections asked for, in that order."""
        return service.export_markdown(id, sections, max_chars=max_chars)

    @server.tool("granola.meetings.stats", annotations=READ_ONLY)
    def meetings_stats(
        group_by: Annotated[
            Literal["day", "week", "participant", "platform", "folder"],
            Field(description="Bucket meetings by local day, ISO week, participant, platform or folder"),
        ] = "week",
        from_ts: FromTs = None,
        to_ts: ToTs = None,
        days: Days = None,
        participants: People = None,
        platform: PlatformArg = None,
        folder: FolderArg = None,
        limit: Annotated[int, Field(ge=1, le=500, description="Most buckets for participant/platform/folder")] = 50,
    ) -> StatsOutput:
        """Meetings and their minutes per bucket: days and weeks (user's time zone) oldest first,
        others largest first."""
        f = service.filters(
            from_ts=from_ts,
            to_ts=to_ts,
            days=days,
            participants=participants,
            platform=platform,
            folder=folder,
        )
        return service.stats(f, group_by, limit=limit)

    @server.tool("granola.folders.list", annotations=READ_ONLY, toolset="more")
    def folders_list() -> FolderList:
        """Granola folders (document lists) with their ids and meeting counts. Pass an id or
        name as `folder` to granola.meetings.list or .search."""
        return service.folders()

    @server.tool("granola.participants.list", annotations=READ_ONLY, toolset="more")
    def participants_list(
        q: Annotated[str | None, Field(description="Part of a name or email")] = None,
        limit: Limit = 50,
    ) -> ParticipantList:
        """People who attended meetings, most meetings first, with their last meeting time."""
        return service.participants(q, limit)

    @server.tool("granola.cache.status", annotations=READ_ONLY)
    def cache_status() -> CacheStatus:
        """Where meetings come from (the cache file, or Granola's API and its sync), counts, index
        state. Call this first when other tools fail."""
        return service.status()

    # -- resources --------------------------------------------------------------------------

    @server.resource(
        "granola://folders",
        name="granola-folders",
        description="Granola folders with their meeting counts, as Markdown",
        mime_type="text/markdown",
    )
    def folders_resource() -> str:
        listing = _resource(service.folders)
        lines = ["# Granola folders", ""]
        lines += [f"- [{f.name}](granola://folders/{f.id}) ({f.meeting_count} meetings)" for f in listing.folders]
        return "\n".join(lines) + "\n"

    @server.resource(
        "granola://folders/{folder_id}",
        name="granola-folder",
        description="The meetings in one Granola folder, as a Markdown list",
        mime_type="text/markdown",
    )
    def folder_resource(folder_id: str) -> str:
        folder, items = _resource(lambda: service.folder_meetings(folder_id))
        lines = [f"# {folder.name}", ""]
        if folder.description:
            lines += [folder.description, ""]
        lines += [f"- [{m.title}](granola://meetings/{m.id}) {m.start_ts or ''}" for m in items]
        return "\n".join(lines) + "\n"

    @server.resource(
        "granola://meetings/{meeting_id}",
        name="granola-meeting",
        description="One meeting as Markdown (header, attendees, notes, links)",
        mime_type="text/markdown",
    )
    def meeting_resource(meeting_id: str) -> str:
        return _resource(lambda: service.export_markdown(meeting_id, None)).markdown

    # -- prompts ----------------------------------------------------------------------------

    @server.prompt("summarize_week", description="Summarise the meetings of the last 7 days")
    def summarize_week(days: str = "7") -> str:
        return (
            f"Call granola.meetings.list with days={days} (limit 100). For each meeting, read its notes "
            "with granola.meetings.get. Then write a summary grouped by day: for each meeting the title, "
            "who was there, the decisions made and open questions. End with the themes of the period."
        )

    @server.prompt("action_items", description="Extract the action items of one meeting")
    def action_items(meeting_id: str) -> str:
        return (
            f"Call granola.meetings.get with id={meeting_id!r} and read its notes; if they are thin, also "
            "read granola.meetings.transcript. List every action item as '- [ ] owner: task (due date if "
            "said)', then any decisions. Quote the transcript where an owner or date is unclear."
        )

    @server.prompt("meetings_with", description="Everything discussed with one person")
    def meetings_with(person: str, days: str = "90") -> str:
        return (
            f"Call granola.meetings.list with participants=[{person!r}] and days={days}. Summarise what was "
            f"discussed with {person}, meeting by meeting (newest first), then list open follow-ups."
        )

    @server.prompt("weekly_report", description="A weekly report from meeting statistics and notes")
    def weekly_report(weeks: str = "1") -> str:
        return (
            f"Call granola.meetings.stats with group_by='day' and days={int(weeks) * 7 if weeks.isdigit() else 7}, "
            "and with group_by='participant' for the same days. Then list the meetings of the period and "
            "read the important ones. Write a report: time spent in meetings, who with, key decisions, "
            "action items, and what to follow up next week."
        )


def _resource(call: Callable[[], T]) -> T:
    try:
        return call()
    except NotFound as exc:
        raise ResourceNotFoundError(exc.message) from exc
    except DeskError as exc:
        raise ResourceError(exc.to_json()) from exc


if TYPE_CHECKING:
    # The type checker holds this module to the contract of a server module (`servers.ServerModule`).
    from deskmcp.meetings import server as _this

    _CONTRACT: ServerModule = _this
