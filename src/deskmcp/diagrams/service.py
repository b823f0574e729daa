"""The diagrams service: listing and reading project files through sources, rendering Mermaid."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from deskmcp.core.errors import BadRequest
from deskmcp.core.pagination import decode_cursor, page, query_key
from deskmcp.core.paths import root_relative
from deskmcp.core.ttlcache import TTLCache
from deskmcp.diagrams.models import FileContent, FileEntry, FileList, MermaidCheck, RenderResult, SourceKind
from deskmcp.diagrams.sources.contract import Entry, normalise, read_text, select
from deskmcp.diagrams.sources.factory import SourceFactory

if TYPE_CHECKING:
    from deskmcp.diagrams.render import Renderer
    from deskmcp.diagrams.render_queue import RenderQueue
    from deskmcp.diagrams.settings import DiagramsSettings
    from deskmcp.diagrams.sources.git import GitRepositories
    from deskmcp.diagrams.sources.github import GitHubClient

MAX_LIST_LIMIT = 5000
LISTING_TTL = 30.0
"""How long the later pages of a listing are served from the first page's walk."""

T = TypeVar("T")


def past_the_end(path: str, start_line: int, lines: int) -> BadRequest:
    """A line range that starts after the last line of the file."""
    if lines == 0:
        advice = "is empty"
    elif lines == 1:
        advice = "has 1 line: read it from start_line 1 (a larger max_chars returns more of a long line)"
    else:
        advice = f"has {lines} lines: pick a start_line from 1 to {lines}"
    return BadRequest(
        f"start_line {start_line} is past the end of '{path}', which {advice}.",
        {"path": path, "start_line": start_line, "lines": lines},
    )


class DiagramsService:
    def __init__(
        self,
        settings: DiagramsSettings,
        *,
        renderer: Renderer | None = None,
        github: GitHubClient | None = None,
        git: GitRepositories | None = None,
    ) -> None:
        self.settings = settings
        self.sources = SourceFactory(settings, github=github, git=git)
        self._listings: TTLCache[tuple[object, ...], list[Entry]] = TTLCache(LISTING_TTL, max_entries=8)
        self._renderer = renderer
        self._owns_renderer = renderer is None
        self._queue: RenderQueue | None = None

    @property
    def renderer(self) -> Renderer:
        if self._renderer is None:
            from deskmcp.diagrams.render import make_renderer

            self._renderer = make_renderer(self.settings)
        return self._renderer

    async def queued(self, work: Callable[[], T]) -> T:
        """Run a render or validation in the render queue (its own threads, a bounded wait line),
        never in the thread pool the other tools share. Past the queue limit: rate_limited."""
        if self._queue is None:
            from deskmcp.diagrams.render_queue import RenderQueue

            self._queue = RenderQueue(self.renderer.concurrency, self.settings.render_queue)
        return await self._queue.run(work)

    def list_files(
        self,
        source: SourceKind = "local",
        root: str = ".",
        glob: str = "**/*",
        recursive: bool = True,
        *,
        repo: str | None = None,
        ref: str | None = None,
        include_ignored: bool = False,
        limit: int = 500,
        cursor: str | None = None,
    ) -> FileList:
        if not 1 <= limit <= MAX_LIST_LIMIT:
            raise BadRequest(f"limit must be between 1 and {MAX_LIST_LIMIT}.", {"limit": limit})
        folder = normalise(self._local_form(source, root), allow_root=True)
        src = self.sources.create(source, repo, ref)
        key = query_key(source, src.label, src.ref, folder, glob, recursive, include_ignored)
        offset = decode_cursor(cursor, key)
        entries = self._listings.get((key,)) if offset else None
        if entries is None:
            entries = select(src.walk(folder, include_ignored=include_ignored), folder, glob, recursive)
            self._listings.set((key,), entries)
        chunk = entries[offset : offset + limit + 1]
        return FileList(
            source=source,
            location=src.label,
            ref=src.ref,
            root=folder or ".",
            files=[FileEntry(path=e.path, type=e.type, size=e.size) for e in chunk[:limit]],  # type: ignore[arg-type]
            total=len(entries),
            next_cursor=page(offset, limit, len(chunk), key),
        )

    def _local_form(self, source: str, user_path: str) -> str:
        """An absolute path inside the project names the same file as its relative form (local only)."""
        if source != "local":
            return user_path
        relative = root_relative(self.settings.root, user_path)
        return user_path if relative is None else relative

    def read_file(
        self,
        path: str,
        source: SourceKind = "local",
        *,
        repo: str | None = None,
        ref: str | None = None,
        max_chars: int | None = None,
        start_line: int = 1,
        end_line: int | None = None,
    ) -> FileContent:
        limit = min(max_chars or self.settings.max_chars, self.settings.max_chars)
        if limit < 1:
            raise BadRequest("max_chars must be at least 1.", {"max_chars": max_chars})
        if start_line < 1 or (end_line is not None and end_line < start_line):
            raise BadRequest(
                "Lines are numbered from 1 and end_line must not be before start_line.",
                {"start_line": start_line, "end_line": end_line},
            )
        rel = normalise(self._local_form(source, path), allow_root=False)
        src = self.sources.create(source, repo, ref)
        stream, size = src.open(rel)
        with stream:
            text = read_text(stream, limit, start_line, end_line)
        if text.lines is not None and start_line > max(text.lines, 1):
            raise past_the_end(rel, start_line, text.lines)
        return FileContent(
            source=source,
            path=rel,
            ref=src.ref,
            content=text.text,
            truncated=text.truncated,
            binary=text.binary,
            encoding=text.encoding,
            replaced=text.replaced,
            size=size,
            start_line=start_line,
            end_line=text.end_line,
        )

    def render_mermaid(
        self, code: str, title: str, fmt: str = "png", *, overwrite: bool = False
    ) -> tuple[RenderResult, bytes]:
        from deskmcp.diagrams.output import save_image

        if fmt not in ("png", "svg"):
            raise BadRequest("format must be 'png' or 'svg'.", {"format": fmt})
        if not code.strip():
            raise BadRequest("code is empty: pass the Mermaid diagram text.", {})
        self.sources.project_root()  # images are saved inside it
        # Refuse a clobber before spending a render on it.
        target = save_image(self.settings, title, fmt, b"", overwrite=overwrite, dry_run=True)
        image = self.renderer.render(code, fmt)
        target = save_image(self.settings, title, fmt, image.data, overwrite=overwrite)
        result = RenderResult(
            path=target,
            format=fmt,  # type: ignore[arg-type]
            bytes=len(image.data),
            width=image.width,
            height=image.height,
            renderer=self.renderer.name,
            diagram_type=image.diagram_type,
            scaled=image.scaled,
        )
        return result, image.data

    def validate_mermaid(self, code: str) -> MermaidCheck:
        if not code.strip():
            raise BadRequest("code is empty: pass the Mermaid diagram text.", {})
        return self.renderer.validate(code)

    def close(self) -> None:
        self.sources.close()
        if self._queue is not None:
            self._queue.close()
        if self._renderer is not None and self._owns_renderer:
            self._renderer.close()
