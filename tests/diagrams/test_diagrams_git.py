"""The git source: repositories the tests create, read at a ref without checkout; remote clones cached."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import anyio
import httpx2
import pytest
from dulwich import porcelain
from dulwich.repo import Repo

from deskmcp.diagrams.service import DiagramsService
from deskmcp.diagrams.sources.git import GitRepositories, public_url
from deskmcp.diagrams.sources.git_remote import parse_remote
from tests.helpers.clock import ManualClock
from tests.helpers.files import write
from tests.helpers.tool_calls import Connect, call, fail

pytestmark = pytest.mark.anyio

WHO = b"Test <test@example.com>"


def commit(repo: Path, files: dict[str, str | bytes], message: str) -> str:
    for rel, data in files.items():
        write(repo, rel, data)
    porcelain.add(str(repo), paths=[str(repo / rel) for rel in files])
    sha = porcelain.commit(str(repo), message.encode(), author=WHO, committer=WHO)
    return sha.decode()


@pytest.fixture
def history(project: Path) -> dict[str, str]:
    """The project folder as a repository: v1 (tagged), then a second commit on main."""
    porcelain.init(str(project))
    first = commit(project, {"README.md": "first\n", "src/app.py": "print(1)\n", "logo.bin": b"\x00\x01"}, "one")
    porcelain.tag_create(str(project), b"v1", annotated=True, message=b"v1", author=WHO)
    second = commit(project, {"README.md": "second\n", "docs/guide.md": "guide\n"}, "two")
    # the working folder differs from every commit: the git source must not read it
    write(project, "README.md", "uncommitted edit\n")
    write(project, "scratch.txt", "not committed\n")
    return {"first": first, "second": second}


async def test_list_files_reads_the_repository_at_head_not_the_working_folder(
    connect: Connect, history: dict[str, str]
) -> None:
    async with connect() as client:
        listed = await call(client, "list_files", {"source": "git"})
        text = await call(client, "read_file", {"source": "git", "path": "README.md"})
    assert [f["path"] for f in listed["files"]] == ["README.md", "docs/guide.md", "logo.bin", "src/app.py"]
    assert listed["ref"] == history["second"]
    assert text["content"] == "second\n"


async def test_git_source_reads_any_ref_branch_tag_or_commit(
    connect: Connect, project: Path, history: dict[str, str]
) -> None:
    porcelain.branch_create(str(project), "old", objectish=history["first"])
    current = porcelain.active_branch(str(project)).decode()
    async with connect() as client:
        by_tag = await call(client, "read_file", {"source": "git", "path": "README.md", "ref": "v1"})
        by_branch = await call(client, "list_files", {"source": "git", "ref": "old"})
        by_short_sha = await call(
            client, "read_file", {"source": "git", "path": "README.md", "ref": history["first"][:8]}
        )
        binary = await call(client, "read_file", {"source": "git", "path": "logo.bin", "ref": "v1"})
        missing_ref = await fail(client, "list_files", {"source": "git", "ref": "nope"})
        missing_file = await fail(client, "read_file", {"source": "git", "path": "docs/guide.md", "ref": "v1"})
        folder = await fail(client, "read_file", {"source": "git", "path": "src"})
        sub = await call(client, "list_files", {"source": "git", "root": "src", "ref": current})
    assert by_tag["content"] == "first\n"
    assert by_tag["ref"] == history["first"]
    assert [f["path"] for f in by_branch["files"]] == ["README.md", "logo.bin", "src/app.py"]
    assert by_short_sha["content"] == "first\n"
    assert binary["binary"] is True
    assert missing_ref["error"] == "not_found"
    assert missing_file["error"] == "not_found"
    assert folder["error"] == "bad_request"
    assert [f["path"] for f in sub["files"]] == ["src/app.py"]


async def test_git_source_decodes_and_bounds_text_as_the_local_source_does(connect: Connect, project: Path) -> None:
    porcelain.init(str(project))
    files: dict[str, str | bytes] = {
        "notes.md": "# Café\n".encode("latin-1"),
        "utf16.txt": "hello\r\n".encode("utf-16"),
        "late.txt": b"a" * 10_000 + "é".encode("latin-1") + b"\n",
    }
    commit(project, files, "encodings")
    async with connect() as client:
        answers = {
            source: [await call(client, "read_file", {"source": source, "path": path}) for path in files]
            for source in ("local", "git")
        }
        past = await fail(client, "read_file", {"source": "git", "path": "notes.md", "start_line": 5})
    for local, git in zip(answers["local"], answers["git"], strict=True):
        assert (git["content"], git["encoding"], git["replaced"]) == (
            local["content"],
            local["encoding"],
            local["replaced"],
        )
    assert [a["encoding"] for a in answers["git"]] == ["cp1252", "utf-16-le", "cp1252"]
    assert answers["git"][0]["content"] == "# Café\n"
    assert (past["error"], past["details"]["lines"]) == ("bad_request", 1)


async def test_git_source_opens_a_repository_in_a_project_folder_and_refuses_escapes(
    connect: Connect, project: Path, tmp_path: Path
) -> None:
    inner = project / "libs" / "inner"
    inner.mkdir(parents=True)
    porcelain.init(str(inner))
    commit(inner, {"x.py": "x = 1\n"}, "inner")
    write(project, "plain/a.txt", "a")
    async with connect() as client:
        listed = await call(client, "list_files", {"source": "git", "repo": "libs/inner"})
        not_repo = await fail(client, "list_files", {"source": "git", "repo": "plain"})
        outside = await fail(client, "list_files", {"source": "git", "repo": str(tmp_path)})
        traversal = await fail(client, "list_files", {"source": "git", "repo": "../"})
    assert [f["path"] for f in listed["files"]] == ["x.py"]
    assert not_repo["error"] == "not_found"
    assert outside["error"] == "permission_denied"
    assert traversal["error"] == "permission_denied"


async def test_git_source_rejects_a_gitfile_pointing_outside_the_project(
    connect: Connect, project: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    porcelain.init(str(elsewhere))
    commit(elsewhere, {"secret.txt": "top secret\n"}, "private")
    write(project, "decoy/.git", f"gitdir: {elsewhere / '.git'}\n")
    async with connect() as client:
        error = await fail(client, "read_file", {"source": "git", "repo": "decoy", "path": "secret.txt"})
    assert error["error"] == "permission_denied"
    assert "top secret" not in str(error)


def test_public_url_hides_credentials() -> None:
    assert public_url("https://user:tok@example.com:8443/a/b.git") == "https://example.com:8443/a/b.git"
    assert public_url("https://example.com/a.git") == "https://example.com/a.git"


LOOPBACK_HTTP: dict[str, Any] = {"git_allowed_schemes": "http", "git_allowed_hosts": "127.0.0.1"}
"""The settings that let the tests clone from their loopback servers (refused by default)."""


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def remote(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A repository served over git's smart HTTP protocol on loopback."""
    from dulwich.server import DictBackend
    from dulwich.web import make_wsgi_chain

    origin = tmp_path / "origin"
    origin.mkdir()
    porcelain.init(str(origin))
    commit(origin, {"main.py": "v = 1\n"}, "first")
    app = make_wsgi_chain(DictBackend({b"/": Repo(str(origin))}))
    server: WSGIServer = make_server("127.0.0.1", 0, app, handler_class=_Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", origin
    finally:
        server.shutdown()
        server.server_close()


async def test_a_remote_repository_is_cloned_once_and_fetched_again_after_the_ttl(
    connect: Connect, settings_for: Any, project: Path, remote: tuple[str, Path], tmp_path: Path
) -> None:
    url, origin = remote
    clock = ManualClock()
    settings = settings_for(project, git_cache_ttl=300, **LOOPBACK_HTTP)
    repos = GitRepositories(settings, clock=clock)
    async with connect(service=DiagramsService(settings, git=repos)) as client:
        first = await call(client, "read_file", {"source": "git", "repo": url, "path": "main.py"})
        commit(origin, {"main.py": "v = 2\n"}, "second")
        cached = await call(client, "read_file", {"source": "git", "repo": url, "path": "main.py"})
        clock.advance(301)
        fresh = await call(client, "read_file", {"source": "git", "repo": url, "path": "main.py"})
        listed = await call(client, "list_files", {"source": "git", "repo": url})
    assert first["content"] == "v = 1\n"
    assert cached["content"] == "v = 1\n"  # within the TTL: the cached clone answers
    assert fresh["content"] == "v = 2\n"
    assert [f["path"] for f in listed["files"]] == ["main.py"]
    clones = list(settings.git_cache.iterdir())
    assert len(clones) == 1 and (clones[0] / "objects").is_dir()
    assert not (clones[0] / "main.py").exists()  # bare: nothing checked out


async def test_an_unreachable_remote_is_an_external_service_error(connect: Connect) -> None:
    async with connect(**LOOPBACK_HTTP) as client:
        error = await fail(client, "list_files", {"source": "git", "repo": "http://127.0.0.1:9/nothing.git"})
    assert error["error"] in ("external_service_error", "not_found")
    assert "127.0.0.1:9" in error["message"]


@pytest.fixture
def silent() -> Iterator[tuple[str, socket.socket]]:
    """A loopback TCP port that accepts connections (the kernel completes them) and never answers."""
    listener = socket.create_server(("127.0.0.1", 0), backlog=16)
    listener.setblocking(False)
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/repo.git", listener
    finally:
        listener.close()


def _nobody_connected(listener: socket.socket) -> bool:
    try:
        conn, _ = listener.accept()
    except BlockingIOError:
        return True
    conn.close()
    return False


async def test_git_source_refuses_schemes_that_are_not_allowed_security(
    connect: Connect, tmp_path: Path, history: dict[str, str]
) -> None:
    urls = [
        "ssh://git@example.com/owner/name.git",
        "git@example.com:owner/name.git",
        "http://example.com/owner/name.git",
        "git://example.com/owner/name.git",
        f"file://{tmp_path / 'project'}",
    ]
    async with connect() as client:
        errors = [await fail(client, "list_files", {"source": "git", "repo": url}) for url in urls]
    for url, error in zip(urls, errors, strict=True):
        assert error["error"] == "permission_denied", url
        assert "DIAGRAMS_GIT_ALLOWED_SCHEMES" in error["message"], url
    async with connect(git_allowed_schemes="https,file") as client:
        listed = await call(client, "list_files", {"source": "git", "repo": f"file://{tmp_path / 'project'}"})
    assert listed["ref"] == history["second"]


async def test_git_source_refuses_loopback_private_and_link_local_remotes_security(
    connect: Connect, silent: tuple[str, socket.socket]
) -> None:
    port = silent[1].getsockname()[1]
    urls = [
        f"https://127.0.0.1:{port}/repo.git",
        f"https://localhost:{port}/repo.git",  # a name: refused on what it resolves to
        f"https://[::1]:{port}/repo.git",
        "https://10.1.2.3/repo.git",
        "https://192.168.0.10/repo.git",
        "https://169.254.169.254/latest/meta-data",
    ]
    async with connect() as client:
        errors = [await fail(client, "list_files", {"source": "git", "repo": url}) for url in urls]
    for url, error in zip(urls, errors, strict=True):
        assert error["error"] == "permission_denied", url
        assert "DIAGRAMS_GIT_ALLOWED_HOSTS" in error["message"], url
    assert _nobody_connected(silent[1])


async def test_git_source_clones_only_from_listed_hosts_when_a_list_is_set_security(connect: Connect) -> None:
    async with connect(git_allowed_hosts="git.example.com,*.corp.example") as client:
        error = await fail(client, "list_files", {"source": "git", "repo": "https://github.com/owner/name.git"})
    assert error["error"] == "permission_denied"
    assert "github.com" in error["message"]


async def test_a_silent_remote_times_out_without_holding_up_another_remote(
    connect: Connect, settings_for: Any, project: Path, remote: tuple[str, Path], silent: tuple[str, socket.socket]
) -> None:
    url, _origin = remote
    hanging: dict[str, Any] = {}
    read: dict[str, Any] = {}
    async with connect(git_timeout=2, **LOOPBACK_HTTP) as client:

        async def clone_silent() -> None:
            hanging.update(await fail(client, "list_files", {"source": "git", "repo": silent[0]}))

        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                tg.start_soon(clone_silent)
                read.update(await call(client, "read_file", {"source": "git", "repo": url, "path": "main.py"}))
                assert hanging == {}  # still waiting on the silent remote
    assert read["content"] == "v = 1\n"
    assert hanging["error"] == "timeout", hanging
    assert "DIAGRAMS_GIT_TIMEOUT" in hanging["message"]


def test_clone_urls_are_cached_under_one_normalised_name() -> None:
    same = [
        "https://github.com/Owner/Name",
        "HTTPS://GitHub.COM:443/Owner/Name.git",
        "https://github.com/Owner/Name.git/",
        "https://github.com/Owner/Name/",
    ]
    assert {parse_remote(url).key for url in same} == {"https://github.com/Owner/Name"}
    assert parse_remote("https://github.com:8443/Owner/Name").key != parse_remote(same[0]).key
    assert parse_remote("git@github.com:Owner/Name.git").key == "ssh://github.com/Owner/Name"


async def test_two_spellings_of_one_remote_share_one_clone(
    connect: Connect, settings_for: Any, project: Path, remote: tuple[str, Path]
) -> None:
    url, _origin = remote
    settings = settings_for(project, **LOOPBACK_HTTP)
    async with connect(service=DiagramsService(settings)) as client:
        await call(client, "list_files", {"source": "git", "repo": url})
        await call(client, "list_files", {"source": "git", "repo": url.replace("http://", "HTTP://").rstrip("/")})
    assert len(list(settings.git_cache.iterdir())) == 1


@pytest.mark.parametrize("packed", [False, True], ids=["loose", "packed"])
async def test_reading_a_large_git_file_streams_it_instead_of_holding_it_whole(
    connect: Connect, project: Path, packed: bool
) -> None:
    porcelain.init(str(project))
    blob = bytes(range(256)) * (96 << 10)  # 24 MiB, binary from its first byte
    text = "".join(f"line {i}\n" for i in range(1, 2_000_001))  # 17 MiB of text
    commit(project, {"big.bin": blob, "big.txt": text}, "large files")
    if packed:
        porcelain.repack(str(project))
    async with connect() as client:
        tracemalloc.start()
        try:
            binary = await call(client, "read_file", {"source": "git", "path": "big.bin"})
            head = await call(client, "read_file", {"source": "git", "path": "big.txt", "max_chars": 14})
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        tail = await call(client, "read_file", {"source": "git", "path": "big.txt", "start_line": 1_999_999})
    assert (binary["binary"], binary["size"]) == (True, len(blob))
    assert (head["content"], head["truncated"], head["size"]) == ("line 1\nline 2\n", True, len(text))
    assert tail["content"] == "line 1999999\nline 2000000\n"
    assert peak < 8 << 20  # a few chunks, not the 24 MiB blob


async def test_the_clone_cache_keeps_the_most_recently_used_clones_within_its_bound(
    connect: Connect, settings_for: Any, project: Path, tmp_path: Path
) -> None:
    urls = []
    for name in ("a", "b", "c"):
        origin = tmp_path / name
        origin.mkdir()
        porcelain.init(str(origin))
        commit(origin, {f"{name}.txt": f"{name}\n"}, name)
        urls.append(f"file://{origin}")
    settings = settings_for(project, git_allowed_schemes="file", git_cache_repos=2)
    async with connect(service=DiagramsService(settings)) as client:
        for url in urls:
            await call(client, "list_files", {"source": "git", "repo": url})
        again = await call(client, "read_file", {"source": "git", "repo": urls[0], "path": "a.txt"})
    assert again["content"] == "a\n"  # evicted, then cloned again
    assert len([p for p in settings.git_cache.iterdir() if not p.name.startswith(".")]) == 2


async def test_a_silent_remote_leaves_no_connection_open_after_its_timeout(
    connect: Connect, silent: tuple[str, socket.socket]
) -> None:
    url, listener = silent
    async with connect(git_timeout=1, **LOOPBACK_HTTP) as client:
        with anyio.fail_after(60):
            error = await fail(client, "list_files", {"source": "git", "repo": url})
    assert error["error"] == "timeout", error

    listener.setblocking(True)
    listener.settimeout(5)
    accepted = []
    while True:
        try:
            conn, _ = listener.accept() if not accepted else _accept_waiting(listener)
        except (TimeoutError, BlockingIOError):
            break
        accepted.append(conn)
    assert accepted, "the clone connected to the silent remote"
    for conn in accepted:
        with conn:
            conn.settimeout(5)
            # The request, then b"": the clone's side closed its end (one left open times out here).
            while conn.recv(4096):
                pass


def _accept_waiting(listener: socket.socket) -> tuple[socket.socket, Any]:
    """The next connection already waiting on `listener`, or BlockingIOError."""
    listener.setblocking(False)
    try:
        return listener.accept()
    finally:
        listener.setblocking(True)


@pytest.fixture
def not_git() -> Iterator[str]:
    """An HTTP server on loopback answering every request 200 with a web page."""

    def page(_environ: dict[str, Any], start_response: Any) -> list[bytes]:
        start_response("200 OK", [("Content-Type", "text/html; charset=utf-8")])
        return [b"<!doctype html><title>Welcome</title><p>Nothing to clone here.</p>"]

    server: WSGIServer = make_server("127.0.0.1", 0, page, handler_class=_Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/repo.git"
    finally:
        server.shutdown()
        server.server_close()


async def test_an_allowed_host_answering_something_that_is_not_git_is_an_external_service_error(
    connect: Connect, not_git: str
) -> None:
    async with connect(**LOOPBACK_HTTP) as client:
        error = await fail(client, "list_files", {"source": "git", "repo": not_git})

    assert error["error"] == "external_service_error", error
    assert "not as a git repository" in error["message"], error
    assert "info/refs" in error["details"]["answer"], error


def _client_sockets_to(port: int) -> list[str]:
    """The TCP states (`ESTABLISHED`, `FIN_WAIT2`, ...) of this process's open sockets connected to
    loopback `port`, read from /proc (the accepting side, also in this process, is left out)."""
    states = {"01": "ESTABLISHED", "04": "FIN_WAIT1", "05": "FIN_WAIT2", "06": "TIME_WAIT", "08": "CLOSE_WAIT"}
    mine = set()
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/self/fd/{fd}")
            if target.startswith("socket:["):
                mine.add(target[8:-1])
    found = []
    for table in ("/proc/self/net/tcp", "/proc/self/net/tcp6"):
        with contextlib.suppress(OSError), open(table, encoding="utf-8") as rows:
            for row in list(rows)[1:]:
                fields = row.split()
                remote_port = int(fields[2].rsplit(":", 1)[1], 16)
                if remote_port == port and fields[9] in mine:
                    found.append(states.get(fields[3], fields[3]))
    return found


@pytest.mark.skipif(not Path("/proc/self/net/tcp").exists(), reason="reads the socket table of Linux's /proc")
def test_a_silent_remote_leaves_no_socket_open_in_the_http_server_after_its_timeout(project: Path) -> None:
    """Two callers give up before the clone's 3 s timeout, a third waits for its answer: by then
    none of the three clones holds a connection to the silent remote."""
    from deskmcp.diagrams.settings import DiagramsSettings
    from deskmcp.gateway import compose
    from deskmcp.servers import SERVERS
    from deskmcp.serving.app import create_app
    from tests.helpers.network import serving
    from tests.helpers.silent import silent_listener

    settings = DiagramsSettings(workspace=project.parent, project_root=project, git_timeout=3, **LOOPBACK_HTTP)
    app = create_app(compose([SERVERS["diagrams"]], settings={"diagrams": settings}))
    with silent_listener() as port, serving(app) as base:

        def list_files(n: int, wait: float) -> dict[str, Any]:
            repo = f"http://127.0.0.1:{port}/repo{n}.git"
            return httpx2.post(
                f"{base}/api/tools/list_files", json={"source": "git", "repo": repo}, timeout=wait
            ).json()

        for n in range(2):
            with pytest.raises(httpx2.ReadTimeout):
                list_files(n, 1)  # the caller gives up; the clone goes on until its own timeout
        while_cloning = _client_sockets_to(port)
        answer = list_files(2, 60)  # 60 s: the hang guard
        left = _client_sockets_to(port)
        print(f"sockets to the silent remote: {while_cloning} while cloning, {left or 'none'} after the timeouts")

    assert while_cloning == ["ESTABLISHED", "ESTABLISHED"]
    assert answer["error"] == "timeout", answer
    assert left == [], left
