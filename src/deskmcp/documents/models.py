"""The documents server's data contracts: the results of its tools."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

Kind = Literal["markdown", "text", "html", "pdf", "docx"]


class DocumentSummary(BaseModel):
    path: str = Field(description="How to name this document in other calls ('root:path' for extra roots)")
    title: str
    kind: Kind
    tags: list[str] = []
    size: int = Field(description="Bytes on disk when indexed")
    modified_at: str | None = Field(default=None, description="ISO 8601 UTC modification time when indexed")
    indexed_at: str | None = None
    word_count: int = 0
    pages: int | None = None


class IndexDocumentOutput(DocumentSummary):
    status: Literal["added", "updated", "unchanged"] = Field(
        description="added: new to the index; updated: re-indexed in place; unchanged: same file and tags"
    )


class IndexFailure(BaseModel):
    path: str
    error: str = Field(description="The error code, e.g. parse_error")
    message: str


class IndexFolderOutput(BaseModel):
    folder: str
    added: int
    updated: int
    unchanged: int
    skipped: int = Field(description="Files with an unsupported extension")
    removed: int = Field(default=0, description="Index entries dropped because their file no longer exists")
    failed: list[IndexFailure] = Field(default=[], description="Files that could not be indexed, with why")
    truncated: bool = Field(
        default=False, description="True when this call stopped at max_files; call again to continue"
    )
    remaining: int = Field(default=0, description="Supported files this call did not get to (some may be unchanged)")


class NoteCreated(BaseModel):
    path: str = Field(description="The new note's path, usable with get_document and index tools")
    title: str
    tags: list[str]
    created: str = Field(description="ISO 8601 UTC creation time, as written in the frontmatter")
    renamed: bool = Field(description="True when a note with the same name existed and a suffix was added")


class SearchHit(DocumentSummary):
    score: float | None = Field(
        default=None, description="Relevance, higher is better (null without a query): bm25 by words, fused in hybrid"
    )
    snippet: str | None = Field(default=None, description="Matching text with matches marked ⟦like this⟧")
    changed_since_indexed: bool = Field(
        default=False, description="The file changed on disk after it was indexed; call index_document to refresh it"
    )
    lexical_rank: int | None = Field(default=None, description="Its rank by words (null: not among those matches)")
    semantic_rank: int | None = Field(default=None, description="Its rank by meaning (null: not among those)")


class IndexingProgress(BaseModel):
    """A folder is being indexed for the first time: answers cover the files done so far."""

    done: int = Field(description="Files indexed so far")
    total: int = Field(description="Files to index")


class SearchOutput(BaseModel):
    items: list[SearchHit]
    total: int | None = Field(default=None, description="How many documents match in all (by words; null by meaning)")
    total_approximate: bool = Field(
        default=False,
        description="True when total may count files deleted since they were indexed: only this page was checked",
    )
    next_cursor: str | None = Field(default=None, description="Pass as `cursor` for the next page; null on the last")
    pruned: int = Field(default=0, description="Index entries dropped during this call because their file is gone")
    partial: bool = Field(default=False, description="True while a folder is first indexed: more may match later")
    indexing: IndexingProgress | None = Field(default=None, description="How far the first indexing is, while it runs")
    unmatched_terms: list[str] = Field(
        default=[], description="Words of the query no document holds (within the filters), as written"
    )
    mode: Literal["lexical", "semantic", "hybrid"] | None = Field(
        default=None, description="How the documents were found: by words, meaning or both (null without a query)"
    )
    semantic_pending: int | None = Field(
        default=None,
        description="Documents not embedded yet (a first index by meaning): the meaning side covers the rest",
    )


class ListDocumentsOutput(BaseModel):
    items: list[DocumentSummary]
    total: int
    next_cursor: str | None = None
    partial: bool = Field(default=False, description="True while a folder is first indexed: more may be listed later")
    indexing: IndexingProgress | None = Field(default=None, description="How far the first indexing is, while it runs")


class TagCount(BaseModel):
    tag: str
    count: int


class TagList(BaseModel):
    tags: list[TagCount]


class RootInfo(BaseModel):
    name: str = Field(description="Prefix for paths in this root ('name:path'); the main root needs none")
    path: str = Field(
        description="The folder on disk (on a shared server: relative to your workspace, a team folder by its name)"
    )
    main: bool
    exists: bool
    documents: int = Field(description="Documents indexed from this root")


class RootList(BaseModel):
    roots: list[RootInfo]


class DocumentMetadata(BaseModel):
    path: str
    root: str
    name: str
    kind: Kind
    mime_type: str
    size: int
    modified_at: str | None = None
    created_at: str | None = Field(default=None, description="Birth time where the file system records it")
    accessed_at: str | None = None
    title: str
    word_count: int
    char_count: int
    pages: int | None = Field(default=None, description="Page count (PDF; DOCX as last saved); null for other formats")
    frontmatter: dict[str, Any] = Field(default={}, description="Markdown YAML frontmatter")
    properties: dict[str, str] = Field(default={}, description="Author, subject, keywords... as the file records")
    indexed: bool
    tags: list[str] = []
    indexed_at: str | None = None


class DocumentText(BaseModel):
    path: str
    title: str
    kind: Kind
    text: str
    offset: int = Field(description="Character offset of `text` in the whole document text")
    total_chars: int
    truncated: bool = Field(description="True when more text follows; call again with offset=next_offset")
    next_offset: int | None = None


class RemovedDocument(BaseModel):
    path: str
    removed: bool = True
    file_deleted: bool = Field(default=False, description="Always false: the file on disk is never touched")
