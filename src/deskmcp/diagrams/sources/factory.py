"""Choose and build the source a tool call names: the one place that knows the backends."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from deskmcp.core.errors import BadRequest, NotFound
from deskmcp.core.paths import shown_path
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

    def project_root(self) -> Path:
        """The project folder. A configured DIAGRAMS_PROJECT_ROOT that is missing is reported, never created
        (a typo must not become an empty project); the default folder is created on first use."""
        root = self.settings.root
        if self.settings.project_root is None:
            root.mkdir(parents=True, exist_ok=True)
        elif not root.is_dir():
            where = shown_path(root.absolute(), self.settings.shown_root)
            raise NotFound(
                f"The project folder {where} (DIAGRAMS_PROJECT_ROOT) does not exist. Create it, or set "
                "DIAGRAMS_PROJECT_ROOT "
                "to the folder of your project and restart the server.",
                {"variable": "DIAGRAMS_PROJECT_ROOT", "path": where},
            )
        return root

    def create(self, kind: str, repo: str | None = None, ref: str | None = None) -> Source:
        if kind == "local":
            if repo or ref:
                raise BadRequest(
                    "The local source reads DIAGRAMS_PROJECT_ROOT as it is: omit repo and ref, or use source='git'.",
                    {"source": kind},
                )
            return LocalSource(self.project_root(), self.settings.shown_root)
        if kind == "github":
            if not repo:
                raise BadRequest("source='github' needs repo, e.g. 'owner/name'.", {"source": kind})
            from deskmcp.diagrams.sources.github import GitHubSource

            return GitHubSource(self.github, repo, ref)
        if kind == "git":
            from deskmcp.diagrams.sources.git import is_remote

            if not is_remote(repo or "."):
                self.project_root()  # a repository given as a path lives in the project
            return self.git.open(repo or ".", ref)
        raise BadRequest(f"Unknown source {kind!r}. Sources: local, git, github.", {"source": kind})

    def close(self) -> None:
        if self._github is not None:
            self._github.close()
