"""The GitHub source: a repository read through the REST API at one commit.

Listing uses the git trees API (`recursive=1`), walking sub-trees one by one when GitHub
answers `truncated: true` (very large repositories); reads fetch raw blobs by the sha the tree
gave, so a listing and the reads after it see the same commit. Every request goes through the
core HTTP policies (`core/http.py`): rate limits as GitHub documents them, backoff on 5xx, TLS verified.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, BinaryIO
from urllib.parse import quote, urlsplit

from deskmcp.core.clock import SYSTEM_CLOCK, Clock
from deskmcp.core.errors import BadRequest, ExternalServiceError, NotFound, PermissionDenied
from deskmcp.core.http import new_client, request
from deskmcp.core.retry import RetryPolicy
from deskmcp.core.throttle import Throttle
from deskmcp.core.ttlcache import TTLCache
from deskmcp.diagrams.sources.contract import FileInfo

if TYPE_CHECKING:
    import httpx2

    from deskmcp.diagrams.settings import DiagramsSettings

API_VERSION = "2022-11-28"
_OWNER = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})"
_NAME = r"[A-Za-z0-9._-]{1,100}"
_REPO_FORMS = (
    re.compile(rf"^(?P<owner>{_OWNER})/(?P<name>{_NAME})$"),
    re.compile(
        rf"^(?:https?://[^/\s]+|[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)/(?P<owner>{_OWNER})/(?P<name>{_NAME})(?:/.*)?$"
    ),
    re.compile(rf"^git@[^:\s]+:(?P<owner>{_OWNER})/(?P<name>{_NAME})$"),
)
SMALL_BLOB = 1 << 20


def parse_repo(repo: str) -> tuple[str, str]:
    """`owner/name`, a github.com (or Enterprise) URL, or an SSH remote -> (owner, name)."""
    text = repo.strip()
    for form in _REPO_FORMS:
        match = form.match(text)
        if match:
            name = match.group("name").removesuffix(".git")
            if name and name not in (".", ".."):
                return match.group("owner"), name
    raise BadRequest(
        f"{repo!r} is not a GitHub repository. Pass 'owner/name' or https://github.com/owner/name.", {"repo": repo}
    )


@dataclass
class Tree:
    """Every file of one commit: path -> (blob sha, size), and every folder."""

    commit: str
    files: dict[str, tuple[str, int | None]] = field(default_factory=dict)
    folders: set[str] = field(default_factory=set)


class GitHubClient:
    """A thin client of the endpoints the source needs, with caches keyed by commit."""

    def __init__(
        self,
        api_url: str = "https://api.github.com",
        token: str | None = None,
        *,
        timeout: float = 20.0,
        max_wait: float = 30.0,
        transport: httpx2.BaseTransport | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": API_VERSION,
            "User-Agent": "deskmcp-diagrams",
        }
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self.base = api_url.rstrip("/")
        self.http = new_client(timeout=timeout, headers=headers, transport=transport, follow_redirects=True)
        self.http.event_hooks["request"].append(self._stay_on_api_host)
        self.retry = RetryPolicy(attempts=4, base=1.0, cap=16.0, max_wait=max_wait, clock=clock)
        # GitHub asks integrators to avoid concurrent bursts (secondary limits): two at a time
        self.throttle = Throttle(concurrency=2, clock=clock)
        self._branches: TTLCache[str, str] = TTLCache(300, max_entries=256, clock=clock)
        self._commits: TTLCache[tuple[str, str], str] = TTLCache(60, max_entries=256, clock=clock)
        self._trees: TTLCache[tuple[str, str], Tree] = TTLCache(3600, max_entries=8, clock=clock)
        self._blobs: TTLCache[str, bytes] = TTLCache(3600, max_entries=64, clock=clock)

    def _stay_on_api_host(self, request: httpx2.Request) -> None:
        """Refuse a redirect away from the API host (or from https to http): GitHub's own redirects
        (a renamed repository) stay on it, so another host is not GitHub."""
        api = urlsplit(self.base)
        host = request.url.host
        if host != (api.hostname or "") or (api.scheme == "https" and request.url.scheme != "https"):
            raise PermissionDenied(
                f"GitHub redirected the request to {request.url.scheme}://{host}, which is not the API host "
                f"{api.hostname} (DIAGRAMS_GITHUB_API_URL); it was not followed.",
                {"host": host, "api_host": api.hostname},
            )

    @classmethod
    def from_settings(cls, settings: DiagramsSettings) -> GitHubClient:
        return cls(
            settings.github_api_url,
            settings.github_token,
            timeout=settings.http_timeout,
            max_wait=settings.max_wait,
        )

    def get(self, path: str, *, accept: str | None = None, params: dict[str, str] | None = None) -> httpx2.Response:
        headers = {"Accept": accept} if accept else None
        return request(
            self.http,
            "GET",
            self.base + path,
            service="GitHub",
            retry=self.retry,
            throttle=self.throttle,
            headers=headers,
            params=params,
        )

    def _json(self, path: str, **kwargs: Any) -> Any:
        response = self.get(path, **kwargs)
        try:
            return response.json()
        except ValueError as exc:
            raise ExternalServiceError("GitHub answered with something that is not JSON.", {"path": path}) from exc

    def default_branch(self, repo: str) -> str:
        def fetch() -> str:
            try:
                info = self._json(f"/repos/{repo}")
            except NotFound as exc:
                raise NotFound(
                    f"No GitHub repository {repo!r} (a private one needs GITHUB_TOKEN).", {"repo": repo}
                ) from exc
            branch = info.get("default_branch") if isinstance(info, dict) else None
            if not isinstance(branch, str) or not branch:
                raise ExternalServiceError(f"GitHub did not say which branch {repo} uses.", {"repo": repo})
            return branch

        return self._branches.get_or_set(repo, fetch)

    def commit(self, repo: str, ref: str) -> str:
        def fetch() -> str:
            try:
                response = self.get(f"/repos/{repo}/commits/{quote(ref, safe='')}", accept="application/vnd.github.sha")
            except (NotFound, BadRequest) as exc:
                raise NotFound(
                    f"No branch, tag or commit {ref!r} in {repo}. Omit ref for the default branch.",
                    {"repo": repo, "ref": ref},
                ) from exc
            sha = response.text.strip()
            if not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", sha):
                raise ExternalServiceError(f"GitHub gave no commit for {ref!r}.", {"repo": repo, "ref": ref})
            return sha

        return self._commits.get_or_set((repo, ref), fetch)

    def tree(self, repo: str, commit: str) -> Tree:
        return self._trees.get_or_set((repo, commit), lambda: self._fetch_tree(repo, commit))

    def _fetch_tree(self, repo: str, commit: str) -> Tree:
        tree = Tree(commit)
        self._add_tree(repo, tree, commit, "", recursive=True)
        return tree

    def _add_tree(self, repo: str, tree: Tree, sha: str, prefix: str, *, recursive: bool) -> None:
        params = {"recursive": "1"} if recursive else None
        body = self._json(f"/repos/{repo}/git/trees/{sha}", params=params)
        entries = body.get("tree") if isinstance(body, dict) else None
        if not isinstance(entries, list):
            raise ExternalServiceError("GitHub answered a tree request without a tree.", {"repo": repo})
        if recursive and body.get("truncated"):
            # Too big for one answer: take this level alone and descend folder by folder.
            self._add_tree(repo, tree, sha, prefix, recursive=False)
            return
        for entry in entries:
            path = entry.get("path")
            kind = entry.get("type")
            if not isinstance(path, str) or not path:
                continue
            full = f"{prefix}{path}"
            if kind == "blob":
                size = entry.get("size")
                tree.files[full] = (str(entry.get("sha")), size if isinstance(size, int) else None)
            elif kind == "tree":
                tree.folders.add(full)
                if not recursive:
                    self._add_tree(repo, tree, str(entry.get("sha")), full + "/", recursive=True)
            # "commit" entries are submodules: another repository, not files of this one

    def blob(self, repo: str, sha: str) -> bytes:
        cached = self._blobs.get(sha)
        if cached is not None:
            return cached
        data = self.get(f"/repos/{repo}/git/blobs/{sha}", accept="application/vnd.github.raw").content
        if len(data) <= SMALL_BLOB:
            self._blobs.set(sha, data)
        return data

    def close(self) -> None:
        self.http.close()


class GitHubSource:
    kind: str = "github"

    def __init__(self, client: GitHubClient, repo: str, ref: str | None) -> None:
        owner, name = parse_repo(repo)
        self.client = client
        self.repo = f"{owner}/{name}"
        wanted = ref or client.default_branch(self.repo)
        self.ref: str | None = client.commit(self.repo, wanted)
        self.label = f"github:{self.repo}@{wanted}"

    def _tree(self) -> Tree:
        assert self.ref is not None
        return self.client.tree(self.repo, self.ref)

    def walk(self, root: str, *, include_ignored: bool) -> list[FileInfo]:
        tree = self._tree()
        if root and root not in tree.folders:
            if root in tree.files:
                raise BadRequest(f"{root!r} is a file, not a folder; read it with read_file.", {"root": root})
            raise NotFound(f"No folder {root!r} in {self.repo}. Call list_files with root='.'.", {"root": root})
        return [FileInfo(path, size) for path, (_sha, size) in tree.files.items()]

    def open(self, path: str) -> tuple[BinaryIO, int | None]:
        tree = self._tree()
        found = tree.files.get(path)
        if found is None:
            if path in tree.folders:
                raise BadRequest(f"{path!r} is a folder; list it with list_files(root={path!r}).", {"path": path})
            raise NotFound(f"No file {path!r} in {self.repo}. Call list_files for valid paths.", {"path": path})
        sha, size = found
        data = self.client.blob(self.repo, sha)
        return io.BytesIO(data), size if size is not None else len(data)
