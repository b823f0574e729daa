"""The vault MCP server: tools over `VaultService` (an Obsidian-style folder of Markdown notes)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import anyio.to_thread
from mcp.server.mcpserver import Context
from pydantic import Field

from deskmcp.core.pagination import CursorArg
from deskmcp.core.paths import shown_path
from deskmcp.core.search.embedders import configured_embedder
from deskmcp.core.search.fusion import ModeArg
from deskmcp.core.search.index import QUERY_WORDS
from deskmcp.core.server import READ_ONLY, DeskServer, writes
from deskmcp.servers import SERVERS, ServerModule, UserPolicy
from deskmcp.vault.models import BacklinkList, LinkList, MoveResult, NoteContent, NoteList, TagList, VaultStatus
from deskmcp.vault.service import VaultService
from deskmcp.vault.settings import VaultSettings

INSTRUCTIONS = """Access to the user's notes vault (Obsidian-style Markdown with YAML frontmatter,
[[wikilinks]] and #tags). Find notes with search_notes (words), list_notes (a folder and a
'field:value' frontmatter filter), recent_notes or list_note_tags; then read_note with a path from
those results. To change a note, read it first and pass its content_hash as expected_hash
to write_note, append_note or patch_frontmatter: a note changed by someone else meanwhile is
refused with a conflict instead of being overwritten. Paths are vault-relative ('.md' optional).
The email triage folders (Needs_Action, Drafts, Approved, Done, Logs by default) are read-only here:
only the person approves a reply, by moving it to Approved/ themselves or by asking for triage_approve.
Errors are JSON objects with an `error` code and a `message` saying how to recover."""

NotePath = Annotated[str, Field(description="Vault-relative path, e.g. 'Projects/Alpha.md'")]
ExpectedHash = Annotated[
    str | None,
    Field(description="content_hash from read_note: a conflict if the note changed since"),
]
FilterArg = Annotated[
    str | None,
    Field(description="Frontmatter 'field:value' (e.g. 'status:pending'); 'field:': the field is set"),
]
TagArg = Annotated[str | None, Field(description="Only notes with this tag (nested tags too)")]
FolderArg = Annotated[str | None, Field(description="Only notes under this vault folder")]

Settings = VaultSettings
T = TypeVar("T")

TOOLSETS = {
    "read": "Read, list and search notes",
    "write": "Write and move notes",
    "edit": "Append to a note, set one frontmatter field",
    "browse": "Recent notes, tags, links, backlinks, vault status",
}
DEFAULT_TOOLSETS = ("read", "write")

USERS = UserPolicy()


def create_service(settings: VaultSettings) -> VaultService:
    return VaultService(settings, embedder=configured_embedder(settings))


def unavailable(settings: VaultSettings) -> str | None:
    """None when the vault folder exists (or is the default one, created on start)."""
    if settings.vault_path is not None and not settings.vault_path.is_dir():
        where = shown_path(settings.vault_path, settings.shown_root)
        return f"the vault folder {where} does not exist; create it or fix VAULT_PATH"
    return None


def create_server(settings: VaultSettings, service: VaultService | None = None) -> DeskServer:
    """The vault tools alone on a server of their own (tests, benchmarks): `servers.create_server`."""
    return SERVERS["vault"].create_server(settings, service)


def register(server: DeskServer, service: VaultService) -> None:
    """Add the vault tools to `server` (in read-only mode `servers.keep_read_only` then withholds the
    writing ones)."""

    @asynccontextmanager
    async def watching():  # start-up scan and file watcher for the server's life
        await anyio.to_thread.run_sync(service.start_watching)
        try:
            yield service
        finally:
            await anyio.to_thread.run_sync(service.close)

    server.add_service_context(watching)

    async def indexed(ctx: Context, answer: Callable[[], T]) -> T:
        """`answer()` in a worker thread; while the vault is being indexed, a client that
        asked for progress (a progressToken) is told how far it is first."""
        progress = service.indexing()
        if progress is not None:
            await ctx.report_progress(
                progress.done,
                progress.total or None,
                f"Indexing the vault: {progress.done:,} of {progress.total:,} notes; results cover those so far.",
            )
        return await anyio.to_thread.run_sync(answer)

    @server.tool("read_note", annotations=READ_ONLY)
    def read_note(
        path: NotePath,
        strict: Annotated[bool, Field(description="Corrupt frontmatter is a parse_error")] = False,
    ) -> NoteContent:
        """A note's frontmatter (JSON, dates as ISO strings), body and content_hash. Invalid YAML
        frontmatter: the body still comes, with frontmatter_error saying what and where."""
        return service.read_note(path, strict=strict)

    @server.tool("list_notes", annotations=READ_ONLY)
    async def list_notes(
        ctx: Context,
        directory: Annotated[str | None, Field(description="Vault folder, e.g. 'Projects'; omit for all")] = None,
        filter: FilterArg = None,
        tag: TagArg = None,
        recursive: Annotated[bool, Field(description="Include notes in sub-folders")] = True,
        limit: Annotated[int, Field(ge=1, le=1000, description="Page size")] = 100,
        cursor: CursorArg = None,
    ) -> NoteList:
        """Notes by path with title, tags and modification time, the total matching and next_cursor."""
        return await indexed(
            ctx,
            partial(service.list_notes, directory, filter, tag=tag, recursive=recursive, limit=limit, cursor=cursor),
        )

    @server.tool("search_notes", annotations=READ_ONLY)
    async def search_notes(
        ctx: Context,
        query: Annotated[str, Field(min_length=1, description=QUERY_WORDS)],
        folder: FolderArg = None,
        tag: TagArg = None,
        filter: FilterArg = None,
        limit: Annotated[int, Field(ge=1, le=200, description="Page size")] = 20,
        cursor: CursorArg = None,
        mode: ModeArg = None,
    ) -> NoteList:
        """Search titles, paths, headings, tags, frontmatter values and bodies, best first;
        snippets mark matches ⟦like this⟧. `unmatched_terms`: query words no note holds. During the
        first index, `indexing` says how far (results cover the notes done).
        """
        return await indexed(
            ctx,
            partial(
                service.search_notes,
                query,
                folder=folder,
                tag=tag,
                filter=filter,
                limit=limit,
                cursor=cursor,
                mode=mode,
            ),
        )

    @server.tool("related_notes", annotations=READ_ONLY, toolset="browse")
    async def related_notes(
        ctx: Context,
        path: NotePath,
        folder: FolderArg = None,
        limit: Annotated[int, Field(ge=1, le=100, description="How many notes")] = 10,
    ) -> NoteList:
        """The notes nearest in meaning to this one (needs an embedding model), nearest first."""
        return await indexed(ctx, partial(service.related_notes, path, folder=folder, limit=limit))

    @server.tool("recent_notes", annotations=READ_ONLY, toolset="browse")
    async def recent_notes(
        ctx: Context,
        folder: FolderArg = None,
        limit: Annotated[int, Field(ge=1, le=200, description="How many notes")] = 20,
    ) -> NoteList:
        """The most recently modified notes, newest first."""
        return await indexed(ctx, partial(service.recent_notes, folder=folder, limit=limit))

    @server.tool("list_note_tags", annotations=READ_ONLY, toolset="browse")
    async def list_note_tags(
        ctx: Context,
        prefix: Annotated[str | None, Field(description="Only tags starting with this (e.g. 'project/')")] = None,
        limit: Annotated[int, Field(ge=1, le=1000, description="Most tags returned")] = 200,
    ) -> TagList:
        """Tags used in the vault (frontmatter tags and inline #tags) with how many notes carry each,
        most used first. Pass one as `tag` to list_notes or search_notes."""
        return await indexed(ctx, partial(service.list_note_tags, prefix=prefix, limit=limit))

    @server.tool("get_links", annotations=READ_ONLY, toolset="browse")
    async def get_links(ctx: Context, path: NotePath) -> LinkList:
        """A note's outgoing links ([[wikilinks]], [[note|alias]], [[note#heading]], embeds and
        Markdown links to .md files), each with the note it resolves to (null when missing)."""
        return await indexed(ctx, partial(service.get_links, path))

    @server.tool("get_backlinks", annotations=READ_ONLY, toolset="browse")
    async def get_backlinks(ctx: Context, path: NotePath) -> BacklinkList:
        """Notes that link to this note, with the line of each link, resolved the way Obsidian does
        (exact path, then same folder, then the shortest path with that name)."""
        return await indexed(ctx, partial(service.get_backlinks, path))

    @server.tool("vault_status", annotations=READ_ONLY, toolset="browse")
    async def vault_status(ctx: Context) -> VaultStatus:
        """The vault folder in use, how many notes are indexed (and `indexing` progress during a first
        index), whether edits on disk are watched, and whether the vault is read-only. Call this first
        when other tools fail."""
        return await indexed(ctx, service.status)

    @server.tool("write_note", annotations=writes(destructive=True, idempotent=True))
    def write_note(
        path: NotePath,
        body: Annotated[str, Field(description="Markdown body (everything after the frontmatter)")],
        frontmatter: Annotated[
            dict[str, Any] | None,
            Field(description="{} removes the block; omit to keep the current one"),
        ] = None,
        expected_hash: ExpectedHash = None,
        overwrite: Annotated[bool, Field(description="Replace an existing note without expected_hash")] = False,
    ) -> NoteContent:
        """Create a note, or replace one you read (its content_hash as expected_hash); folders are
        created, protected ones (vault_status) refused; unchanged frontmatter lines are kept as they were."""
        return service.write_note(path, body, frontmatter, expected_hash=expected_hash, overwrite=overwrite)

    @server.tool("append_note", annotations=writes(destructive=False, idempotent=False), toolset="edit")
    def append_note(
        path: NotePath,
        text: Annotated[str, Field(description="Markdown to add at the end of the note")],
        create: Annotated[bool, Field(description="Create the note if it does not exist")] = False,
        expected_hash: ExpectedHash = None,
    ) -> NoteContent:
        """Append text to the end of a note (on a new line); the rest of the note is untouched."""
        return service.append_note(path, text, create=create, expected_hash=expected_hash)

    @server.tool("patch_frontmatter", annotations=writes(destructive=False, idempotent=True), toolset="edit")
    def patch_frontmatter(
        path: NotePath,
        key: Annotated[str, Field(min_length=1, description="The frontmatter field to set, e.g. 'status'")],
        value: Annotated[Any, Field(description="Its new value (any JSON value)")] = None,
        remove: Annotated[bool, Field(description="Delete the field instead of setting it")] = False,
        expected_hash: ExpectedHash = None,
    ) -> NoteContent:
        """Set (or remove) one frontmatter field. Every other line of the note stays exactly as it was."""
        return service.patch_frontmatter(path, key, value, remove=remove, expected_hash=expected_hash)

    @server.tool("move_note", annotations=writes(destructive=False, idempotent=False))
    def move_note(
        source: Annotated[str, Field(description="Vault-relative path of the note to move")],
        destination: Annotated[str, Field(description="Vault-relative new path; folders are created")],
        update_links: Annotated[
            bool, Field(description="Also rewrite [[wikilinks]] and Markdown links to it in other notes")
        ] = False,
    ) -> MoveResult:
        """Move or rename a note, never over another (conflict); protected folders (vault_status) refused.
        update_links rewrites the links to it, all or nothing (`updated` lists those notes)."""
        return service.move_note(source, destination, update_links=update_links)


if TYPE_CHECKING:
    # The type checker holds this module to the contract of a server module (`servers.ServerModule`).
    from deskmcp.vault import server as _this

    _CONTRACT: ServerModule = _this
