"""The git source: any repository, read from its object store at a ref, never checked out.

A repository is either a folder inside the project (`.` for the project itself) or a clone URL.
Remote repositories are cloned bare under the workspace once and fetched again when older than
`DIAGRAMS_GIT_CACHE_TTL`; the working folder of a local repository is never touched. Pure Python (dulwich).
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import shutil
import stat
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO
from urllib.parse import urlsplit, urlunsplit

from deskmcp.core.clock import SYSTEM_CLOCK, Clock
from deskmcp.core.errors import BadRequest, ExternalServiceError, NotFound, PermissionDenied, Timeout
from deskmcp.core.paths import is_within, safe_join
from deskmcp.core.ttlcache import TTLCache
from deskmcp.diagrams.sources.contract import FileInfo
from deskmcp.diagrams.sources.git_blob import open_blob
from deskmcp.diagrams.sources.git_remote import (
    DEFAULT_PORTS,
    IPAddress,
    RemotePolicy,
    RemoteURL,
    TransferDeadline,
    git_protocol_client,
    guarded_pool_manager,
    parse_remote,
)

if TYPE_CHECKING:
    from dulwich.repo import Repo

    from deskmcp.diagrams.settings import DiagramsSettings

_REMOTE = re.compile(r"^(?:https?|git|ssh|file)://|^[\w.-]+@[\w.-]+:", re.IGNORECASE)
USED_MARKER = ".deskmcp-used"
"""Touched on every use of a clone: the cache evicts the least recently used first."""
_SHA = re.compile(r"^[0-9a-f]{40}$")


def is_remote(repo: str) -> bool:
    return bool(_REMOTE.match(repo.strip()))


def public_url(url: str) -> str:
    """The URL without credentials, for messages and labels."""
    parts = urlsplit(url)
    if parts.username or parts.password:
        host = parts.hostname or ""
        if parts.port:
            host += f":{parts.port}"
        return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
    return url


def _remote_failure(shown: str, exc: Exception, timeout: float) -> Exception:
    from dulwich.errors import HangupException, NotGitRepository
    from urllib3.exceptions import MaxRetryError, NewConnectionError
    from urllib3.exceptions import TimeoutError as Urllib3Timeout

    # dulwich and urllib3 wrap the timeout (MaxRetryError.reason, a re-raise): look down the chain
    reason: BaseException | None = exc
    timed_out = False
    seen = 0
    while reason is not None and seen < 8:
        if isinstance(reason, NewConnectionError):
            break  # a refused connection (urllib3 makes it a subclass of its connect timeout)
        if isinstance(reason, TimeoutError | Urllib3Timeout):
            timed_out = True
            break
        reason = reason.reason if isinstance(reason, MaxRetryError) else (reason.__cause__ or reason.__context__)
        seen += 1
    if timed_out:
        return Timeout(
            f"{shown} did not answer within {timeout:g} s (DIAGRAMS_GIT_TIMEOUT); try again later.",
            {"repo": shown, "timeout_seconds": timeout},
        )
    if isinstance(exc, NotGitRepository):
        return NotFound(f"{shown} is not a git repository (or needs credentials).", {"repo": shown})
    if isinstance(exc, HangupException):
        return ExternalServiceError(f"{shown} hung up during the transfer; try again later.", {"repo": shown})
    return ExternalServiceError(f"Could not clone or fetch {shown}: {public_url(str(exc))}.", {"repo": shown})


class GitRepositories:
    """Opens repositories (project folders or cached clones) and remembers their listings."""

    def __init__(self, settings: DiagramsSettings, clock: Clock = SYSTEM_CLOCK) -> None:
        self.settings = settings
        self.cache_dir = settings.git_cache
        self.ttl = settings.git_cache_ttl
        self.timeout = settings.git_timeout
        self.deadline = settings.git_deadline
        self.max_blob_bytes = settings.git_max_blob_mb * 2**20
        self.max_clones = settings.git_cache_repos
        self.max_cache_bytes = settings.git_cache_mb * 2**20
        self.policy = RemotePolicy.from_settings(settings)
        self.clock = clock
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}
        """One lock per remote: a slow remote holds up the calls to it, not those to other remotes."""
        self._fetched: dict[str, float] = {}
        self._listings: TTLCache[tuple[str, str], list[FileInfo]] = TTLCache(3600, max_entries=8, clock=clock)

    def _lock_for(self, key: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())

    def open(self, repo: str, ref: str | None) -> GitSource:
        from dulwich.errors import NotGitRepository
        from dulwich.repo import Repo

        if is_remote(repo):
            path = self._clone(repo.strip())
            label = public_url(repo.strip())
            remote = True
        else:
            path = safe_join(self.settings.root, repo, allow_root=True)
            label = repo if repo not in ("", ".") else "."
            remote = False
            if not path.is_dir():
                raise NotFound(f"No folder {repo!r} in the project.", {"repo": repo})
        try:
            handle = Repo(str(path))
        except NotGitRepository as exc:
            raise NotFound(
                f"{label!r} is not a git repository. Pass a folder holding one, or a clone URL.", {"repo": repo}
            ) from exc
        if not remote:
            # a `.git` file or symlink may point anywhere: the repository itself must be in the project
            root = self.settings.root.resolve()
            for folder in (handle.controldir(), handle.commondir()):
                if not is_within(root, Path(folder).resolve()):
                    handle.close()
                    raise PermissionDenied(
                        f"The repository of {label!r} is stored outside the project; it is not read.", {"repo": repo}
                    )
        try:
            return GitSource(self, handle, str(path), label, ref, remote=remote)
        except BaseException:
            handle.close()
            raise

    def _clone(self, url: str) -> Path:
        from dulwich.errors import GitProtocolError, HangupException, NotGitRepository
        from dulwich.repo import Repo
        from urllib3.exceptions import HTTPError

        remote = parse_remote(url)
        shown = public_url(remote.url)
        addresses = self.policy.check(remote, shown)
        target = self.cache_dir / hashlib.sha256(remote.key.encode()).hexdigest()[:20]
        with self._lock_for(remote.key):
            now = self.clock.monotonic()
            try:
                if not (target / "objects").is_dir():
                    self.cache_dir.mkdir(parents=True, exist_ok=True)
                    staging = Path(tempfile.mkdtemp(prefix=".clone-", dir=self.cache_dir))
                    try:
                        with Repo.init_bare(str(staging)) as fresh:
                            self._fetch_into(fresh, remote, shown, addresses)
                        if target.exists():
                            shutil.rmtree(target)
                        staging.replace(target)
                    finally:
                        if staging.exists():
                            shutil.rmtree(staging, ignore_errors=True)
                    self._fetched[remote.key] = now
                    self._evict(keep=target)
                elif now - self._fetched.get(remote.key, -float("inf")) >= self.ttl:
                    with Repo(str(target)) as cached:
                        self._fetch_into(cached, remote, shown, addresses)
                    self._fetched[remote.key] = now
            except (GitProtocolError, HangupException, NotGitRepository, OSError, HTTPError) as exc:
                raise _remote_failure(shown, exc, self.timeout) from exc
            except ValueError as exc:  # dulwich reading an answer that is no git reference list
                raise ExternalServiceError(
                    f"{shown} answered, but not as a git repository ({exc}): a web page or another service "
                    "may be at that address. Check the clone URL (e.g. https://host/owner/name.git).",
                    {"repo": shown, "answer": str(exc)[:200]},
                ) from exc
        with contextlib.suppress(OSError):
            (target / USED_MARKER).touch()
        return target

    def _evict(self, keep: Path) -> None:
        """Remove the least recently used clones until at most `DIAGRAMS_GIT_CACHE_REPOS` of them,
        together at most `DIAGRAMS_GIT_CACHE_MB`, remain (the one just cloned always stays)."""
        clones: list[tuple[float, int, Path]] = []
        for folder in self.cache_dir.iterdir():
            if folder.name.startswith(".") or not folder.is_dir():
                continue  # a clone being staged
            marker = folder / USED_MARKER
            used = marker.stat().st_mtime if marker.exists() else folder.stat().st_mtime
            size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file() and not f.is_symlink())
            clones.append((used, size, folder))
        clones.sort(key=lambda clone: clone[0])
        total = sum(size for _, size, _ in clones)
        count = len(clones)
        for _used, size, folder in clones:
            if count <= self.max_clones and total <= self.max_cache_bytes:
                break
            if folder == keep:
                continue
            shutil.rmtree(folder, ignore_errors=True)
            count -= 1
            total -= size

    def _fetch_into(self, repo: Repo, remote: RemoteURL, shown: str, addresses: list[tuple[int, IPAddress]]) -> None:
        """Fetch `remote` into `repo`, connecting only to `addresses` (git://) or to checked ones (HTTP),
        within `DIAGRAMS_GIT_TIMEOUT` per connect and read and `DIAGRAMS_GIT_DEADLINE` in all."""
        from dulwich.client import get_transport_and_path
        from dulwich.errors import GitProtocolError
        from urllib3.exceptions import HTTPError

        with TransferDeadline(self.deadline) as deadline:
            try:
                if remote.scheme == "git":
                    client: Any = git_protocol_client(remote, addresses, self.timeout, deadline)
                    path = urlsplit(remote.url).path
                elif remote.scheme in ("http", "https"):
                    port = remote.port or DEFAULT_PORTS[remote.scheme]
                    known = {(remote.host, port): addresses}
                    pool = guarded_pool_manager(self.policy, shown, self.timeout, deadline, known)
                    client, path = get_transport_and_path(remote.url, pool_manager=pool)
                else:
                    client, path = get_transport_and_path(remote.url)
                result = client.fetch(path, repo)
            except (GitProtocolError, OSError, HTTPError, ValueError) as exc:
                if deadline.expired:  # whatever the cut connection made the transfer fail with
                    raise Timeout(
                        f"{shown} took longer than {self.deadline:g} s in all (DIAGRAMS_GIT_DEADLINE); "
                        "try again later, or raise DIAGRAMS_GIT_DEADLINE for a very large repository.",
                        {"repo": shown, "deadline_seconds": self.deadline},
                    ) from exc
                raise
        _store_remote_refs(repo, result.refs, getattr(result, "symrefs", None))

    def listing(self, key: tuple[str, str], compute: Any) -> list[FileInfo]:
        return self._listings.get_or_set(key, compute)


def _store_remote_refs(repo: Repo, refs: Any, symrefs: Any) -> None:
    """Record what the remote's branches and tags point at now (a fetch by URL leaves refs alone),
    and which branch its HEAD names."""
    from dulwich.refs import Ref

    for name, sha in dict(refs or {}).items():
        if sha is None or not isinstance(name, bytes):
            continue
        if name.startswith(b"refs/heads/"):
            repo.refs[Ref(b"refs/remotes/origin/" + name.removeprefix(b"refs/heads/"))] = sha
        elif name.startswith(b"refs/tags/") and not name.endswith(b"^{}"):
            repo.refs[Ref(name)] = sha
    head = dict(symrefs or {}).get(b"HEAD")
    if isinstance(head, bytes) and head.startswith(b"refs/heads/"):
        repo.refs.set_symbolic_ref(Ref(b"HEAD"), Ref(head))


def _resolve(repo: Repo, ref: str | None, *, remote: bool) -> bytes:
    """The commit id `ref` names: branch, tag, remote branch, or (abbreviated) commit id."""
    from dulwich.objects import Commit, ObjectID, Tag
    from dulwich.refs import Ref

    names: list[bytes] = []
    if ref is None:
        head = repo.refs.read_ref(Ref(b"HEAD"))
        if remote and head and head.startswith(b"ref: refs/heads/"):
            names.append(b"refs/remotes/origin/" + head.removeprefix(b"ref: refs/heads/"))
        names.append(b"HEAD")
    else:
        raw = ref.encode()
        if remote:
            names.append(b"refs/remotes/origin/" + raw)
        names += [raw, b"refs/heads/" + raw, b"refs/tags/" + raw, b"refs/remotes/" + raw]
    for name in names:
        try:
            sha = repo.refs[Ref(name)]
        except KeyError:
            continue
        obj = repo[sha]
        while isinstance(obj, Tag):
            obj = repo[obj.object[1]]
        if isinstance(obj, Commit):
            return obj.id
    if ref is not None and re.fullmatch(r"[0-9a-fA-F]{4,40}", ref):
        wanted = ObjectID(ref.lower().encode())
        if _SHA.match(ref.lower()) and repo.object_store.contains_loose(wanted) | repo.object_store.contains_packed(
            wanted
        ):
            obj = repo[wanted]
            if isinstance(obj, Commit):
                return obj.id
        matches = [sha for sha in repo.object_store if sha.startswith(wanted)]
        commits = [sha for sha in matches if isinstance(repo[sha], Commit)]
        if len(commits) == 1:
            return commits[0]
        if len(commits) > 1:
            raise BadRequest(f"The commit id {ref!r} is ambiguous; give more digits.", {"ref": ref})
    if ref is None:
        raise NotFound("The repository has no commits yet.", {})
    raise NotFound(f"No branch, tag or commit {ref!r}. Omit ref for the current HEAD.", {"ref": ref})


class GitSource:
    kind: str = "git"

    def __init__(
        self, repos: GitRepositories, repo: Repo, path: str, label: str, ref: str | None, *, remote: bool
    ) -> None:
        self.repos = repos
        self.repo = repo
        self.path = path
        commit_id = _resolve(repo, ref, remote=remote)
        self.ref: str | None = commit_id.decode()
        self.label = f"git:{label}@{ref or 'HEAD'}"
        self._tree = repo[commit_id].tree  # type: ignore[attr-defined]

    def _lookup(self, path: str) -> tuple[int, bytes] | None:
        from dulwich.object_store import tree_lookup_path

        try:
            mode, sha = tree_lookup_path(self.repo.object_store.__getitem__, self._tree, path.encode())
        except (KeyError, NotADirectoryError):
            return None
        return mode, sha

    def _files(self) -> list[FileInfo]:
        from dulwich.object_store import iter_tree_contents

        out: list[FileInfo] = []
        for entry in iter_tree_contents(self.repo.object_store, self._tree):
            if entry.path is None or entry.mode is None or stat.S_ISDIR(entry.mode) or entry.mode == 0o160000:
                continue  # 0o160000: a submodule, another repository
            out.append(FileInfo(entry.path.decode("utf-8", "replace")))
        return out

    def walk(self, root: str, *, include_ignored: bool) -> list[FileInfo]:
        try:
            if root:
                found = self._lookup(root)
                if found is None:
                    raise NotFound(f"No folder {root!r} at {self.ref}. Call list_files with root='.'.", {"root": root})
                if not stat.S_ISDIR(found[0]):
                    raise BadRequest(f"{root!r} is a file, not a folder; read it with read_file.", {"root": root})
            assert self.ref is not None
            return self.repos.listing((self.path, self.ref), self._files)
        finally:
            self.repo.close()

    def open(self, path: str) -> tuple[BinaryIO, int | None]:
        try:
            found = self._lookup(path)
            if found is None:
                raise NotFound(f"No file {path!r} at {self.ref}. Call list_files for valid paths.", {"path": path})
            mode, sha = found
            if stat.S_ISDIR(mode):
                raise BadRequest(f"{path!r} is a folder; list it with list_files(root={path!r}).", {"path": path})
            if mode == 0o160000:
                raise BadRequest(f"{path!r} is a submodule (another repository).", {"path": path})
            return open_blob(self.repo, sha, path, self.repos.max_blob_bytes)
        finally:
            self.repo.close()  # the stream reads the object files itself
