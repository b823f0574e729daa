"""The meetings server's data contracts: the results of its tools."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

Platform = Literal["zoom", "meet", "teams", "other"]
Section = Literal["header", "attendees", "notes", "links", "transcript"]


class Participant(BaseModel):
    name: str | None = None
    email: str | None = None
    role: Literal["creator", "attendee"] = "attendee"


class FolderRef(BaseModel):
    id: str
    name: str


class TranscriptSegment(BaseModel):
    start: str | None = Field(default=None, description="ISO 8601 UTC time the segment started")
    end: str | None = None
    offset_seconds: float | None = Field(default=None, description="Seconds since the first segment started")
    source: str | None = Field(default=None, description="'microphone' (the user) or 'system' (other people)")
    speaker: str | None = Field(default=None, description="'me' for the microphone, 'them' for system audio")
    text: str


class Meeting(BaseModel):
    """One meeting, normalised from whatever cache format it came from."""

    id: str
    title: str
    start_ts: str | None = Field(default=None, description="ISO 8601 UTC start (calendar event, else creation)")
    end_ts: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    duration_minutes: float | None = None
    platform: Platform | None = None
    participants: list[Participant] = []
    folders: list[FolderRef] = []
    links: list[str] = Field(default=[], description="Conference and calendar URLs")
    notes: str = Field(default="", description="The notes as Markdown (user notes, else AI panels)")
    has_transcript: bool = False
    transcript_segments: int = 0
    web_url: str | None = Field(default=None, description="The note's page on Granola (public API source only)")


class MeetingSummary(BaseModel):
    id: str
    title: str
    start_ts: str | None = None
    platform: Platform | None = None
    participants: list[str] = Field(default=[], description="Names (or emails when no name is known)")
    folders: list[str] = Field(default=[], description="Folder names")
    has_transcript: bool = False


INDEXING = "Set while a first index runs: results cover the meetings indexed so far"


class IndexingProgress(BaseModel):
    """A big cache's first index is under way: answers cover the meetings indexed so far."""

    done: int = Field(description="Meetings indexed so far")
    total: int = Field(description="Meetings to index (0 while the cache is still being read)")
    scanned: int | None = Field(
        default=None,
        description="Set when searches also scan the text of the meetings not indexed yet (this many): such a"
        " search considers every meeting, and marks the hits the scan found `provisional`",
    )


SYNCING = "Set while meetings are synced from Granola: results cover the meetings synced so far"
STALE = "Set when Granola could not be reached since this time: results are from the last sync"


class SyncProgress(BaseModel):
    """A sync from Granola's API is under way: answers cover the meetings synced so far."""

    done: int = Field(description="Notes fetched in this sync so far")
    total: int = Field(description="Notes this sync fetches (grows while the notes are still being listed)")


class ListMeetingsOutput(BaseModel):
    items: list[MeetingSummary]
    total: int = Field(description="How many meetings match the filters in all")
    next_cursor: str | None = Field(default=None, description="Pass as `cursor` for the next page; null on the last")
    indexing: IndexingProgress | None = Field(default=None, description=INDEXING)
    syncing: SyncProgress | None = Field(default=None, description=SYNCING)
    stale_since: str | None = Field(default=None, description=STALE)


class SearchHit(MeetingSummary):
    score: float = Field(description="Relevance, higher is better: bm25 by words, fused in hybrid mode")
    snippet: str | None = Field(default=None, description="Matching text with matches marked ⟦like this⟧")
    lexical_rank: int | None = Field(default=None, description="Its rank by words (null: not among those matches)")
    semantic_rank: int | None = Field(default=None, description="Its rank by meaning (null: not among those)")
    provisional: bool | None = Field(
        default=None,
        description="Found by a scan of a meeting not indexed yet (see `indexing.scanned`): its score is an"
        " estimate, so its rank among the others may change once it is indexed",
    )


class SearchMeetingsOutput(BaseModel):
    items: list[SearchHit]
    next_cursor: str | None = None
    indexing: IndexingProgress | None = Field(default=None, description=INDEXING)
    unmatched_terms: list[str] = Field(
        default=[], description="Words of the query no meeting holds (within the filters), as written"
    )
    mode: Literal["lexical", "semantic", "hybrid"] | None = Field(
        default=None, description="How the meetings were found: by words, meaning or both"
    )
    semantic_pending: int | None = Field(
        default=None,
        description="Meetings not embedded yet (a first index by meaning): the meaning side covers the rest",
    )
    syncing: SyncProgress | None = Field(default=None, description=SYNCING)
    stale_since: str | None = Field(default=None, description=STALE)


class ExportMarkdownOutput(BaseModel):
    id: str
    title: str
    markdown: str
    truncated: bool = False


class StatsBucket(BaseModel):
    key: str
    count: int
    minutes: float = Field(default=0.0, description="Total known meeting duration in the bucket")


class StatsOutput(BaseModel):
    group_by: Literal["day", "week", "participant", "platform", "folder"]
    timezone: str
    total: int
    buckets: list[StatsBucket]
    syncing: SyncProgress | None = Field(default=None, description=SYNCING)
    stale_since: str | None = Field(default=None, description=STALE)


class TranscriptOutput(BaseModel):
    id: str
    title: str
    segments: list[TranscriptSegment]
    total_segments: int = Field(description="Segments in the whole transcript")
    truncated: bool = Field(default=False, description="True when max_chars cut the answer short")
    note: str | None = Field(default=None, description="Why there is no transcript (the Granola plan has none)")


class Folder(BaseModel):
    id: str
    name: str
    description: str | None = None
    meeting_count: int


class FolderList(BaseModel):
    folders: list[Folder]
    syncing: SyncProgress | None = Field(default=None, description=SYNCING)
    stale_since: str | None = Field(default=None, description=STALE)


class ParticipantCount(BaseModel):
    name: str | None
    email: str | None
    meeting_count: int
    last_meeting: str | None = None


class ParticipantList(BaseModel):
    participants: list[ParticipantCount]
    syncing: SyncProgress | None = Field(default=None, description=SYNCING)
    stale_since: str | None = Field(default=None, description=STALE)


class SyncStatus(BaseModel):
    """How meetings are synced from Granola's public API (or hosted MCP server)."""

    url: str = Field(description="The service synced from")
    last_sync: str | None = Field(default=None, description="When the last complete sync ended (ISO 8601 UTC)")
    next_sync: str | None = Field(default=None, description="When the next sync starts (ISO 8601 UTC)")
    high_water: str | None = Field(default=None, description="Newest note update synced: the next sync asks after it")
    notes: int = Field(default=0, description="Notes held in the index")
    vanished: int = Field(default=0, description="Notes listed but gone before they could be fetched (skipped)")
    pending: int = Field(default=0, description="Notes listed and not fetched yet (a sync resumes with them)")
    last_error: dict[str, object] | None = Field(
        default=None, description="The last sync's error (code, message), if it failed"
    )
    transcripts: str | None = Field(default=None, description="Why transcripts are not synced (plan)")


class CacheStatus(BaseModel):
    source: Literal["cache", "api", "mcp"] = Field(
        default="cache", description="Where meetings come from: the local cache, the public API or the hosted MCP"
    )
    ok: bool = Field(
        default=True, description="False when the other tools cannot read the cache; see error and message"
    )
    error: str | None = Field(default=None, description="The error code the other tools answer with, when not ok")
    message: str | None = Field(default=None, description="What is wrong and how to fix it, when not ok")
    path: str | None = Field(
        default=None, description="The cache file in use (full path), or null when none was found or not the source"
    )
    exists: bool = Field(default=False, description="Whether the cache file exists (cache source)")
    format: str | None = Field(default=None, description="cache-v3 (string) / cache-v4 / cache-v6 (object)")
    size_bytes: int | None = None
    modified: str | None = None
    encrypted_newer: str | None = Field(
        default=None, description="An encrypted cache newer than the plain one, if any (its data cannot be read)"
    )
    meetings: int = 0
    folders: int = 0
    transcripts: int = 0
    index_path: str
    indexed_at: str | None = None
    last_sync_seconds: float | None = None
    indexing: IndexingProgress | None = Field(default=None, description=INDEXING)
    searched_locations: list[str] = []
    sync: SyncStatus | None = Field(default=None, description="The sync from Granola (api and mcp sources)")
    syncing: SyncProgress | None = Field(default=None, description=SYNCING)
    stale_since: str | None = Field(default=None, description=STALE)
