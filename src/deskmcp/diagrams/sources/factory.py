"""Choose and build the source a tool call names: the one place that knows the backends."""

from __future__ import annotations

from typing import TYPE_CHECKING

from deskmcp.core.errors import BadRequest
from deskmcp.diagrams.sources.contract import Source
from deskmcp.diagrams.sources.local import LocalSource

if TYPE_CHECKING:
    from deskmcp.diagrams.settings import DiagramsSettings
    from deskmcp.diagrams.sources.git import GitRepositories
    from deskmcp.diagrams.sources.github import GitHubClient


class SourceFactory:
    """Builds a `Source` per call; the clients behind the remote ones (HTTP, clone cache) are shared."""

    def __init__(
        self, settings: DiagramsSettings, *, github: GitHubClient | None = None, git: GitRepositories | None = None
    ) -> None:
        self.settings = settings
        self._github = github
        self._git = git

    @property
    def git(self) -> GitRepositories:
        if self._git is None:
            from deskmcp.diagrams.sources.git import GitRepositories

            self._git = GitRepositories(self.settings)
        return self._git

    @property
    def github(self) -> GitHubClient:
        if self._github is None:
            from deskmcp.diagrams.sources.github import GitHubClient

            self._github = GitHubClient.from_settings(self.settings)
        return self._github

    def create(self, kind: str, repo: str | None = None, ref: str | None = None) -> Source:
        if kind == "local":
            if repo or ref:
                raise BadRequest(
                    "The local source reads PROJECT_ROOT as it is: omit repo and ref, or use source='git'.",
                    {"source": kind},
                )
            self.settings.root.mkdir(parents=True, exist_ok=True)
            return LocalSource(self.settings.root)
        if kind == "github":
            if not repo:
                raise BadRequest("source='github' needs repo, e.g. 'owner/name'.", {"source": kind})
            from deskmcp.diagrams.sources.github import GitHubSource

            return GitHubSource(self.github, repo, ref)
        if kind == "git":
            return self.git.open(repo or ".", ref)
        raise BadRequest(f"Unknown source {kind!r}. Sources: local, git, github.", {"source": kind})

    def close(self) -> None:
        if self._github is not None:
            self._github.close()
