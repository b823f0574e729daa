"""Choose and build the source a tool call names: the one place that knows the backends."""

from __future__ import annotations

from typing import TYPE_CHECKING

from deskmcp.core.errors import BadRequest
from deskmcp.diagrams.sources.contract import Source
from deskmcp.diagrams.sources.local import LocalSource

if TYPE_CHECKING:
    from deskmcp.diagrams.settings import DiagramsSettings


class SourceFactory:
    """Builds a `Source` per call; the clients behind the remote ones (HTTP, clone cache) are shared."""

    def __init__(self, settings: DiagramsSettings) -> None:
        self.settings = settings

    def create(self, kind: str, repo: str | None = None, ref: str | None = None) -> Source:
        if kind == "local":
            if repo or ref:
                raise BadRequest(
                    "The local source reads PROJECT_ROOT as it is: omit repo and ref, or use source='git'.",
                    {"source": kind},
                )
            self.settings.root.mkdir(parents=True, exist_ok=True)
            return LocalSource(self.settings.root)
        raise BadRequest(f"Unknown source {kind!r}. Sources: local, git, github.", {"source": kind})

    def close(self) -> None:
        pass
