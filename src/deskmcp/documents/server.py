"""The documents MCP server: tools over `DocumentService`."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Annotated

from pydantic import Field

from deskmcp.core.pagination import CursorArg
from deskmcp.core.paths import shown_path
from deskmcp.core.search.embedders import configured_embedder
from deskmcp.core.search.fusion import ModeArg
from deskmcp.core.search.index import QUERY_WORDS
from deskmcp.core.server import READ_ONLY, DeskServer, writes
from deskmcp.documents.models import (
    DocumentMetadata,
    DocumentText,
    IndexDocumentOutput,
    IndexFolderOutput,
    Kind,
    ListDocumentsOutput,
    NoteCreated,
    RemovedDocument,
    RootList,
    SearchOutput,
    TagList,
)
from deskmcp.documents.roots import MAIN_VARIABLE, missing_folder
from deskmcp.documents.service import DocumentService
from deskmcp.documents.settings import DocumentsSettings
from deskmcp.servers import SERVERS, ServerModule, UserPolicy

INSTRUCTIONS = """Search and organise the user's documents (Markdown, text, HTML, PDF, DOCX) in their
documents folder. Paths are relative to that folder (`reports/q3.pdf`); files in an extra root are
`rootname:path` (see list_roots). A folder never indexed is indexed by the first search (while that
runs, answers say `partial` and how far `indexing` is); files added or changed later are found once
index_document or index_folder has read them. search_documents ranks by relevance and
filters by tags and file name; get_document returns a document's text; create_note writes a new
Markdown note. Errors are JSON objects with an `error` code and a `message` saying how to recover."""

DocPath = Annotated[
    str,
    Field(description="Path in the documents folder, or 'root:path' (see list_documents, list_roots)"),
]
Tags = Annotated[list[str] | None, Field(description="e.g. ['finance', 'q3']; '#' and case ignored")]
KindArg = Annotated[Kind | None, Field(description="Only this format: markdown, text, html, pdf or docx")]
Limit = Annotated[int, Field(ge=1, le=200, description="Page size")]

Settings = DocumentsSettings

TOOLSETS = {
    "read": "Search documents, extract metadata",
    "write": "Index a document, create a note",
    "more": "Read a document's text, list documents, index a folder",
    "admin": "Tags, roots, removing documents from the index",
}
DEFAULT_TOOLSETS = ("read", "write")

USERS = UserPolicy(
    # The deployment's team folders are every user's extra roots, after their own, and read-only.
    team_folders={"extra_roots": True, "read_only_roots": False},
    team_derived=("read_only_folders",),
)


def create_service(settings: DocumentsSettings) -> DocumentService:
    service = DocumentService(settings)
    service.catalog.use_embedder(configured_embedder(settings))
    return service


def unavailable(settings: DocumentsSettings) -> str | None:
    """None when the documents folder exists, or is the default one and can be created (it is
    created when the server first needs it, never just to answer this), else why not. A folder
    named by DOCUMENTS_PATH is never created."""
    root = settings.root
    if root.is_dir():
        return None
    if settings.documents_path is not None:
        return missing_folder(shown_path(root.resolve(), settings.shown_root), MAIN_VARIABLE)
    parent = next((p for p in root.parents if p.exists()), None)
    if parent is None or not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        where = shown_path(root, settings.shown_root)
        return f"the documents folder {where} cannot be created (no writable parent folder); set DOCUMENTS_PATH"
    return None


def create_server(settings: DocumentsSettings, service: DocumentService | None = None) -> DeskServer:
    """The documents tools alone on a server of their own (tests, benchmarks): `servers.create_server`."""
    return SERVERS["documents"].create_server(settings, service)


def register(server: DeskServer, service: DocumentService) -> None:
    """Add the documents tools to `server`."""

    server.close_on_shutdown(service)

    @server.tool("index_document", annotations=writes(destructive=False, idempotent=True))
    def index_document(path: DocPath, tags: Tags = None) -> IndexDocumentOutput:
        """Index a file's text (again if it changed): added, updated or unchanged. `tags` replaces its
        tags (frontmatter tags stay); omit to keep them. An unreadable file is a parse_error, the
        index unchanged."""
        return service.index_document(path, tags)

    @server.tool("index_folder", annotations=writes(destructive=False, idempotent=True), toolset="more")
    def index_folder(
        path: Annotated[str, Field(description="Folder relative to the documents folder ('' for all of it)")] = "",
        tags: Annotated[list[str] | None, Field(description="Tags added to every file indexed")] = None,
        recursive: Annotated[bool, Field(description="Include subfolders")] = True,
        max_files: Annotated[
            int | None,
            Field(ge=1, le=100_000, description="Read at most this many files (default 5000); unchanged ones are free"),
        ] = None,
    ) -> IndexFolderOutput:
        """Index every supported file in a folder (hidden files skipped) and drop entries whose file
        was deleted. Unchanged files are not re-read. Counts what was added, updated, unchanged or
        removed, and lists files that failed, with why. When `truncated`, call again with the same
        arguments: it continues where it stopped; `remaining` says how many files are left."""
        return service.index_folder(path, tags, recursive=recursive, max_files=max_files)

    @server.tool("create_note", annotations=writes(destructive=False, idempotent=False))
    def create_note(
        title: Annotated[str, Field(min_length=1, max_length=200, description="The note's title")],
        content: Annotated[str, Field(description="Markdown body of the note")],
        tags: Tags = None,
        folder: Annotated[str, Field(description="Folder for the note, relative to the documents folder")] = "",
    ) -> NoteCreated:
        """Write and index a Markdown note with frontmatter (title, tags, created), named from the title;
        never over a file: a repeated title gets a numbered name (renamed=true)."""
        return service.create_note(title, content, tags, folder)

    @server.tool("search_documents", annotations=READ_ONLY)
    def search_documents(
        query: Annotated[str | None, Field(description=QUERY_WORDS + ". Omit to filter only.")] = None,
        tags: Annotated[list[str] | None, Field(description="Only documents carrying every one of these tags")] = None,
        filename: Annotated[str | None, Field(description="Part of the file name, or a glob like '*.pdf'")] = None,
        kind: KindArg = None,
        limit: Limit = 20,
        cursor: CursorArg = None,
        mode: ModeArg = None,
    ) -> SearchOutput:
        """Search indexed documents' titles, tags, paths and text, best first (newest first with
        no query); snippets mark matches ⟦like this⟧. `unmatched_terms`: query words no document
        holds. A folder never indexed is indexed first (`partial` meanwhile)."""
        return service.search(query, tags=tags, filename=filename, kind=kind, limit=limit, cursor=cursor, mode=mode)

    @server.tool("extract_metadata", annotations=READ_ONLY)
    def extract_metadata(path: DocPath) -> DocumentMetadata:
        """A file's metadata (indexed or not): size, times, format, MIME type, title, words, pages,
        frontmatter, author and subject, tags if indexed."""
        return service.extract_metadata(path)

    @server.tool("get_document", annotations=READ_ONLY, toolset="more")
    def get_document(
        path: DocPath,
        offset: Annotated[int, Field(ge=0, description="Start at this character (next_offset of a previous call)")] = 0,
        max_chars: Annotated[int | None, Field(ge=100, description="Cap on characters returned")] = None,
    ) -> DocumentText:
        """A document's extracted text (Markdown without frontmatter, HTML without tags, PDF and
        DOCX text). Long documents come in parts: call again with offset=next_offset."""
        return service.get_document(path, offset=offset, max_chars=max_chars)

    @server.tool("list_documents", annotations=READ_ONLY, toolset="more")
    def list_documents(
        tags: Annotated[list[str] | None, Field(description="Only documents carrying every one of these tags")] = None,
        kind: KindArg = None,
        root: Annotated[str | None, Field(description="Only this root (a name from list_roots)")] = None,
        limit: Limit = 50,
        cursor: CursorArg = None,
    ) -> ListDocumentsOutput:
        """Indexed documents, most recently modified first, with their titles, tags and sizes (a folder
        never indexed is indexed first, `partial` while that runs)."""
        return service.list_documents(tags=tags, kind=kind, root=root, limit=limit, cursor=cursor)

    @server.tool("list_tags", annotations=READ_ONLY, toolset="admin")
    def list_tags() -> TagList:
        """Every tag in use with how many indexed documents carry it, most used first."""
        return service.catalog.list_tags()

    @server.tool("list_roots", annotations=READ_ONLY, toolset="admin")
    def list_roots() -> RootList:
        """The folders this server reads: the main documents folder and any extra roots, with the
        name used as a path prefix ('name:path') and how many documents are indexed from each."""
        return service.catalog.list_roots()

    @server.tool("remove_document", annotations=writes(destructive=True, idempotent=True), toolset="admin")
    def remove_document(path: DocPath) -> RemovedDocument:
        """Remove a document from the search index. The file on disk is not touched; index it
        again to bring it back."""
        return service.remove_document(path)


if TYPE_CHECKING:
    # The type checker holds this module to the contract of a server module (`servers.ServerModule`).
    from deskmcp.documents import server as _this

    _CONTRACT: ServerModule = _this
