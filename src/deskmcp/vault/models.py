"""The vault server's data contracts: notes, lists, links and status."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class NoteContent(BaseModel):
    """One note (returned by read_note, write_note, append_note and patch_frontmatter)."""

    path: str = Field(description="Vault-relative path (canonical, with .md)")
    frontmatter: dict[str, Any] = Field(description="Parsed YAML frontmatter; dates as ISO strings")
    body: str = Field(description="The text after the frontmatter block, exactly as in the file")
    content_hash: str = Field(description="SHA-256 of the file; pass it as expected_hash when writing it back")
    title: str = Field(description="Frontmatter title, else the file name")
    modified: str | None = Field(default=None, description="Last modification time, ISO 8601 UTC")
    size: int = Field(description="Size of the file in bytes")
    frontmatter_error: str | None = Field(
        None, description="Set when the frontmatter is not valid YAML: what is wrong and on which line"
    )


class NoteMatch(BaseModel):
    path: str = Field(description="Vault-relative path; pass it to read_note")
    title: str = ""
    snippet: str | None = Field(
        default=None, description="Matched text with the matching words marked ⟦like this⟧ (search only)"
    )
    score: float | None = Field(
        default=None, description="Relevance, higher is better (search only): bm25 by words, fused in hybrid mode"
    )
    tags: list[str] = []
    modified: str | None = Field(default=None, description="Last modification time, ISO 8601 UTC")
    lexical_rank: int | None = Field(default=None, description="Its rank by words (null: not among those matches)")
    semantic_rank: int | None = Field(default=None, description="Its rank by meaning (null: not among those)")


class IndexingProgress(BaseModel):
    """The vault is being indexed (a first start): answers cover the notes indexed so far."""

    done: int = Field(description="Notes indexed so far")
    total: int = Field(description="Notes found in the vault so far")


class NoteList(BaseModel):
    """Notes (returned by list_notes, search_notes and recent_notes)."""

    notes: list[NoteMatch]
    total: int | None = Field(default=None, description="How many notes match in all (list_notes, search_notes)")
    next_cursor: str | None = Field(default=None, description="Pass as cursor to get the next page; null on the last")
    indexing: IndexingProgress | None = Field(
        default=None, description="Set while the vault is still being indexed: results cover only the notes done"
    )
    unmatched_terms: list[str] = Field(
        default=[], description="search_notes: words of the query no note holds (within the filters), as written"
    )
    mode: Literal["lexical", "semantic", "hybrid"] | None = Field(
        default=None, description="search_notes, related_notes: how the notes were found (by words, meaning or both)"
    )
    semantic_pending: int | None = Field(
        default=None, description="Notes not embedded yet (a first index by meaning): the meaning side covers the rest"
    )


class MoveResult(BaseModel):
    moved: bool
    source: str
    destination: str
    updated: list[str] = Field(default=[], description="Notes whose links to it were rewritten (update_links)")


class TagCount(BaseModel):
    tag: str = Field(description="The tag without '#'; nested tags keep their '/' (project/alpha)")
    count: int = Field(description="Notes carrying it (frontmatter tags or inline #tags)")


class TagList(BaseModel):
    tags: list[TagCount]


class OutgoingLink(BaseModel):
    target: str = Field(description="The link target as written")
    resolved_path: str | None = Field(description="The note it resolves to, or null when no such note exists")
    heading: str | None = None
    alias: str | None = None
    embed: bool = Field(default=False, description="True for ![[embeds]]")
    line: int = Field(description="1-based line in the body")


class LinkList(BaseModel):
    path: str
    links: list[OutgoingLink]


class Backlink(BaseModel):
    source: str = Field(description="The note that links here")
    line: int = Field(description="1-based line of the link in that note's body")
    context: str = Field(description="That line's text")
    heading: str | None = None
    alias: str | None = None
    embed: bool = False


class BacklinkList(BaseModel):
    path: str
    backlinks: list[Backlink]


class VaultStatus(BaseModel):
    root: str = Field(description="The vault folder (relative to the workspace on a shared server)")
    notes: int
    read_only: bool
    watching: bool = Field(description="True while edits on disk are picked up by the file watcher")
    index_path: str = Field(description="The vault's index file (relative to the workspace on a shared server)")
    last_scan_seconds: float | None = None
    max_note_bytes: int
    indexing: IndexingProgress | None = Field(default=None, description="Set while the vault is being indexed")
    problem: str | None = Field(default=None, description="What stops the vault from working, when something does")
    protected_folders: list[str] = Field(
        default=[], description="Folders the writing tools refuse (the email triage flow's, by default)"
    )
