"""The diagrams MCP server: project files from a folder, a git repository or GitHub; Mermaid rendering."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Annotated

import orjson
from mcp.types import CallToolResult, ImageContent, TextContent, ToolAnnotations
from pydantic import Field

from deskmcp.core.pagination import CursorArg
from deskmcp.core.paths import shown_path
from deskmcp.core.server import DeskServer, writes
from deskmcp.diagrams.models import FileContent, FileList, MermaidCheck, SourceKind
from deskmcp.diagrams.service import MAX_LIST_LIMIT, DiagramsService
from deskmcp.diagrams.settings import DiagramsSettings
from deskmcp.servers import SERVERS, ServerModule, UserPolicy

INSTRUCTIONS = """Read a software project and draw Mermaid diagrams of it. list_files finds files
(source 'local' is the project folder; 'git' reads a repository at a ref without checkout; 'github'
reads owner/name through the API), read_file reads one with a path from list_files (bounded; use
start_line to read on). Write Mermaid from what you read, check it with validate_mermaid, then
render_mermaid saves a PNG or SVG under the diagrams folder and shows it. Errors are JSON objects
with an `error` code and a `message` saying how to recover."""

TOOLSETS: dict[str, str] = {
    "read": "list and read project files (local folder, git repository, GitHub)",
    "render": "validate and render Mermaid diagrams",
}
DEFAULT_TOOLSETS: tuple[str, ...] = ("read", "render")

USERS = UserPolicy(
    # A user's clones never reach this server's own network, nor its files.
    forbidden=frozenset({"git_public_only"}),
    fixed={"git_public_only": True},
    refused_schemes={"git_allowed_schemes": frozenset({"file"})},
)

READS_SOURCES = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=True)

SourceArg = Annotated[SourceKind, Field(description="'local' project folder, 'git' repository or 'github'")]
RepoArg = Annotated[
    str | None,
    Field(description="github: 'owner/name'; git: clone URL or project path (default '.')"),
]
RefArg = Annotated[str | None, Field(description="Branch, tag or commit (default branch)")]

Settings = DiagramsSettings


def create_service(settings: DiagramsSettings) -> DiagramsService:
    return DiagramsService(settings)


def unavailable(settings: DiagramsSettings) -> str | None:
    if settings.project_root is not None and not settings.project_root.is_dir():
        where = shown_path(settings.project_root, settings.shown_root)
        return f"the project folder {where} does not exist; create it or fix DIAGRAMS_PROJECT_ROOT"
    return None


def create_server(settings: DiagramsSettings, service: DiagramsService | None = None) -> DeskServer:
    """The diagrams tools alone on a server of their own (tests, benchmarks): `servers.create_server`."""
    return SERVERS["diagrams"].create_server(settings, service)


def register(server: DeskServer, service: DiagramsService) -> None:
    server.close_on_shutdown(service)

    @server.tool("list_files", annotations=READS_SOURCES, toolset="read")
    def list_files(
        source: SourceArg = "local",
        root: Annotated[str, Field(description="Folder to list, relative to the source")] = ".",
        glob: Annotated[str, Field(description="e.g. '**/*.py'; without '/' it matches file names")] = "**/*",
        recursive: Annotated[bool, Field(description="false: only root's files and sub-folders")] = True,
        repo: RepoArg = None,
        ref: RefArg = None,
        include_ignored: Annotated[bool, Field(description="Also list .gitignore'd files (local)")] = False,
        limit: Annotated[int, Field(ge=1, le=MAX_LIST_LIMIT, description="Page size")] = 500,
        cursor: CursorArg = None,
    ) -> FileList:
        """Files of a project sorted by path, with sizes, total and next_cursor. Read one with read_file."""
        return service.list_files(
            source,
            root,
            glob,
            recursive,
            repo=repo,
            ref=ref,
            include_ignored=include_ignored,
            limit=limit,
            cursor=cursor,
        )

    @server.tool("read_file", annotations=READS_SOURCES, toolset="read")
    def read_file(
        path: Annotated[str, Field(description="File path from list_files")],
        source: SourceArg = "local",
        repo: RepoArg = None,
        ref: RefArg = None,
        max_chars: Annotated[int | None, Field(ge=1, description="Most characters")] = None,
        start_line: Annotated[int, Field(ge=1, description="First line (1-based)")] = 1,
        end_line: Annotated[int | None, Field(ge=1, description="Last line, inclusive")] = None,
    ) -> FileContent:
        """A text file's content (truncated=true: read on from end_line+1); a binary file: binary=true, no content."""
        return service.read_file(
            path, source, repo=repo, ref=ref, max_chars=max_chars, start_line=start_line, end_line=end_line
        )

    @server.tool("validate_mermaid", annotations=READS_SOURCES, toolset="render")
    async def validate_mermaid(code: Annotated[str, Field(description="Mermaid diagram text")]) -> MermaidCheck:
        """Check Mermaid syntax without rendering: valid, the diagram type, or the parser's message and line."""
        return await service.queued(lambda: service.validate_mermaid(code))

    @server.tool(
        "render_mermaid", annotations=writes(destructive=True, idempotent=False, open_world=True), toolset="render"
    )
    async def render_mermaid(
        code: Annotated[str, Field(description="Mermaid diagram text")],
        title: Annotated[str, Field(description="Title; the file name is made from it")],
        format: Annotated[str, Field(pattern="^(png|svg)$", description="'png' or 'svg'")] = "png",
        overwrite: Annotated[bool, Field(description="Replace an existing file of that name")] = False,
    ) -> CallToolResult:
        """Render Mermaid to an image saved in the diagrams folder, and return it. A syntax error is a
        bad_request with the parser's message and line."""
        result, data = await service.queued(lambda: service.render_mermaid(code, title, format, overwrite=overwrite))
        mime = "image/png" if result.format == "png" else "image/svg+xml"
        summary = result.model_dump(mode="json")
        return CallToolResult(
            content=[
                ImageContent(type="image", data=base64.b64encode(data).decode(), mime_type=mime),
                TextContent(type="text", text=orjson.dumps(summary).decode()),
            ],
            structured_content=summary,
        )


if TYPE_CHECKING:
    # The type checker holds this module to the contract of a server module (`servers.ServerModule`).
    from deskmcp.diagrams import server as _this

    _CONTRACT: ServerModule = _this
