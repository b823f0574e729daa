"""Clone URLs the model gives: which addresses a clone may reach, over git://, ssh:// and HTTP, and how
long a remote may keep a call waiting. Everything runs on loopback: real `git daemon` processes, raw
sockets that accept and stay silent, and a name resolver the tests control (DNS rebinding)."""

from __future__ import annotations

import socket
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import anyio
import pytest
from dulwich import porcelain
from dulwich.repo import Repo

from deskmcp.core.errors import PermissionDenied
from deskmcp.diagrams.service import DiagramsService
from deskmcp.diagrams.sources.git import GitRepositories
from deskmcp.diagrams.sources.git_remote import RemotePolicy, non_public_entries, parse_remote
from deskmcp.diagrams.sources.github import GitHubClient
from tests.diagrams.github_stub import GitHubStub, Reply, serve
from tests.helpers.files import write
from tests.helpers.network import free_port
from tests.helpers.tool_calls import Connect, call, fail

pytestmark = pytest.mark.anyio

WHO = b"Test <test@example.com>"
Resolver = Callable[..., list[Any]]


def _repository(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True)
    porcelain.init(str(folder))
    for rel, text in files.items():
        write(folder, rel, text)
    porcelain.add(str(folder), paths=[str(folder / rel) for rel in files])
    porcelain.commit(str(folder), b"first", author=WHO, committer=WHO)
    return folder


@contextmanager
def git_daemon(base: Path, address: str, port: int) -> Iterator[None]:
    """`git daemon` serving every repository under `base` on `address:port`, until the block ends."""
    proc = subprocess.Popen(
        [
            "git",
            "daemon",
            "--reuseaddr",
            "--verbose",
            "--export-all",
            f"--base-path={base}",
            f"--listen={address}",
            f"--port={port}",
            str(base),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
    )
    assert proc.stderr is not None
    try:
        for line in proc.stderr:  # the daemon says so once it listens
            if "Ready to rumble" in line:
                break
        else:
            raise RuntimeError("git daemon did not start")
        threading.Thread(target=proc.stderr.read, daemon=True).start()  # keep its pipe drained
        yield
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def rebinding(name: str, *answers: str) -> tuple[Resolver, list[str]]:
    """A resolver that answers `name` with `answers` in turn (the last one repeats), as a DNS server
    with a zero TTL that changes its answer; other names resolve as usual. Also returns the log of
    the lookups of `name`."""
    real = socket.getaddrinfo
    asked: list[str] = []

    def resolve(host: Any, port: Any, *args: Any, **kwargs: Any) -> list[Any]:
        if isinstance(host, bytes):
            host = host.decode()
        if host != name:
            return real(host, port, *args, **kwargs)
        address = answers[min(len(asked), len(answers) - 1)]
        asked.append(address)
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        where = (address, int(port or 0), 0, 0) if family == socket.AF_INET6 else (address, int(port or 0))
        return [(family, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", where)]

    return resolve, asked


@pytest.fixture
def silent() -> Iterator[socket.socket]:
    """A loopback TCP port that accepts connections (the kernel completes them) and never answers."""
    listener = socket.create_server(("127.0.0.1", 0), backlog=16)
    try:
        yield listener
    finally:
        listener.close()


@pytest.mark.e2e
async def test_git_protocol_connects_to_the_address_it_checked_not_to_a_second_lookup_security(
    connect: Connect, settings_for: Any, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 127.0.0.2 is listed; 127.0.0.1 is not, so a clone may reach the first and never the second
    _repository(tmp_path / "allowed" / "repo", {"where.txt": "listed address\n"})
    _repository(tmp_path / "internal" / "repo", {"where.txt": "loopback secret\n"})
    port = free_port()
    resolve, asked = rebinding("repo.rebind.test", "127.0.0.2", "127.0.0.1")
    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    settings = settings_for(project, git_allowed_schemes="git", git_allowed_hosts="*.rebind.test,127.0.0.2/32")
    repos = GitRepositories(settings)
    repos.policy.resolve = resolve
    with git_daemon(tmp_path / "allowed", "127.0.0.2", port), git_daemon(tmp_path / "internal", "127.0.0.1", port):
        async with connect(service=DiagramsService(settings, git=repos)) as client:
            with anyio.fail_after(60):
                read = await call(
                    client,
                    "read_file",
                    {"source": "git", "repo": f"git://repo.rebind.test:{port}/repo", "path": "where.txt"},
                )
    assert read["content"] == "listed address\n"
    assert asked == ["127.0.0.2"]  # looked up once: the address checked is the address connected to


@pytest.mark.e2e
async def test_a_silent_git_protocol_remote_times_out_releases_its_lock_and_holds_up_no_other_remote(
    connect: Connect, tmp_path: Path, silent: socket.socket
) -> None:
    _repository(tmp_path / "served" / "repo", {"main.py": "v = 1\n"})
    port = free_port()
    quiet_url = f"git://127.0.0.1:{silent.getsockname()[1]}/repo"
    hanging: list[dict[str, Any]] = []
    read: dict[str, Any] = {}
    with git_daemon(tmp_path / "served", "127.0.0.1", port):
        async with connect(git_timeout=1, git_allowed_schemes="git", git_allowed_hosts="127.0.0.1") as client:

            async def clone_silent() -> None:
                hanging.append(await fail(client, "list_files", {"source": "git", "repo": quiet_url}))

            with anyio.fail_after(30):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(clone_silent)
                    served = f"git://127.0.0.1:{port}/repo"
                    read.update(await call(client, "read_file", {"source": "git", "repo": served, "path": "main.py"}))
                # the lock of the silent remote was released: a second call is answered too
                hanging.append(await fail(client, "list_files", {"source": "git", "repo": quiet_url}))
    assert read["content"] == "v = 1\n"
    assert [error["error"] for error in hanging] == ["timeout", "timeout"], hanging
    assert "DIAGRAMS_GIT_TIMEOUT" in hanging[0]["message"]


async def test_a_git_protocol_remote_is_cut_off_at_the_overall_deadline(
    connect: Connect, silent: socket.socket
) -> None:
    # reads may wait 60 s each, but the whole transfer only 1 s: a remote that keeps the connection
    # alive (or trickles) is stopped at the deadline, not after the last byte it chooses to send
    url = f"git://127.0.0.1:{silent.getsockname()[1]}/repo"
    async with connect(
        git_timeout=60, git_deadline=1, git_allowed_schemes="git", git_allowed_hosts="127.0.0.1"
    ) as client:
        with anyio.fail_after(30):
            error = await fail(client, "list_files", {"source": "git", "repo": url})
    assert error["error"] == "timeout", error
    assert "DIAGRAMS_GIT_DEADLINE" in error["message"]


async def test_an_http_remote_is_cut_off_at_the_overall_deadline(connect: Connect, silent: socket.socket) -> None:
    url = f"http://127.0.0.1:{silent.getsockname()[1]}/repo.git"
    async with connect(
        git_timeout=60, git_deadline=1, git_allowed_schemes="http", git_allowed_hosts="127.0.0.1"
    ) as client:
        with anyio.fail_after(30):
            error = await fail(client, "list_files", {"source": "git", "repo": url})
    assert error["error"] == "timeout", error
    assert "DIAGRAMS_GIT_DEADLINE" in error["message"]


async def test_ssh_clone_urls_are_refused_even_when_listed_and_say_why_security(
    connect: Connect, silent: socket.socket
) -> None:
    port = silent.getsockname()[1]
    urls = [f"ssh://git@127.0.0.1:{port}/owner/name.git", "git@127.0.0.1:owner/name.git"]
    async with connect(git_allowed_schemes="ssh,https", git_allowed_hosts="127.0.0.1") as client:
        with anyio.fail_after(30):
            errors = [await fail(client, "list_files", {"source": "git", "repo": url}) for url in urls]
    for url, error in zip(urls, errors, strict=True):
        assert error["error"] == "permission_denied", (url, error)
        assert "ssh" in error["message"] and "https://" in error["message"], error
    silent.setblocking(False)
    with pytest.raises(BlockingIOError):
        silent.accept()  # nothing connected: no ssh was started


EMBEDDING_NON_PUBLIC = [
    "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
    "64:ff9b::a00:1",  # NAT64 of 10.0.0.1
    "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254
    "64:ff9b:1::7f00:1",  # local-use NAT64
    "2002:7f00:1::",  # 6to4 of 127.0.0.1
    "2002:c0a8:1::1",  # 6to4 of 192.168.0.1
    "::ffff:127.0.0.1",  # IPv4-mapped
    "::127.0.0.1",  # IPv4-compatible
    "::a00:1",  # IPv4-compatible 10.0.0.1
    "2001:0:4136:e378:8000:63bf:80ff:fffe",  # Teredo, client 127.0.0.1
]


@pytest.mark.parametrize("address", EMBEDDING_NON_PUBLIC)
def test_ipv6_addresses_embedding_a_non_public_ipv4_address_are_refused_security(address: str) -> None:
    resolve, _ = rebinding("repo.example.test", address)
    policy = RemotePolicy("https", "", resolve)
    with pytest.raises(PermissionDenied, match="DIAGRAMS_GIT_ALLOWED_HOSTS"):
        policy.check(parse_remote("https://repo.example.test/r.git"), "https://repo.example.test/r.git")
    with pytest.raises(PermissionDenied):  # the check made on a connection (HTTPS) is the same one
        policy.check_address("repo.example.test", address, "https://repo.example.test/r.git")


def test_ipv6_addresses_embedding_a_public_ipv4_address_stay_allowed() -> None:
    policy = RemotePolicy("https", "")
    for address in ("64:ff9b::5db8:d822", "2002:5db8:d822::1", "::ffff:93.184.216.34", "2606:4700::1111"):
        policy.check_address("repo.example.test", address, "https://repo.example.test/r.git")
    listed = RemotePolicy("https", "64:ff9b::/96")
    assert (
        str(listed.check_address("repo.example.test", "64:ff9b::7f00:1", "https://r.test/r.git")) == "64:ff9b::7f00:1"
    )


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def redirecting_remote(origin: Path, to_host: str) -> Iterator[str]:
    """A smart-HTTP git server on loopback; requests under /moved/ are redirected to `to_host`
    (same port, same path without /moved)."""
    from dulwich.server import DictBackend
    from dulwich.web import make_wsgi_chain

    app = make_wsgi_chain(DictBackend({b"/": Repo(str(origin))}))
    port_box: list[int] = []

    def redirect(environ: dict[str, Any], start_response: Any) -> Any:
        path = environ.get("PATH_INFO", "")
        if path.startswith("/moved/"):
            query = environ.get("QUERY_STRING", "")
            target = f"http://{to_host}:{port_box[0]}{path.removeprefix('/moved')}" + (f"?{query}" if query else "")
            start_response("302 Found", [("Location", target), ("Content-Length", "0")])
            return [b""]
        return app(environ, start_response)

    server: WSGIServer = make_server("127.0.0.1", 0, redirect, handler_class=_Quiet)
    port_box.append(server.server_address[1])
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port_box[0]}/moved/"
    finally:
        server.shutdown()
        server.server_close()


async def test_an_http_clone_connects_to_the_address_it_checked_not_to_a_second_lookup_security(
    connect: Connect, settings_for: Any, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dulwich.server import DictBackend
    from dulwich.web import make_wsgi_chain

    origin = _repository(tmp_path / "origin", {"where.txt": "listed address\n"})
    app = make_wsgi_chain(DictBackend({b"/": Repo(str(origin))}))
    server: WSGIServer = make_server("127.0.0.2", 0, app, handler_class=_Quiet)
    port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    # 127.0.0.1 on the same port accepts and stays silent: a connection there is seen, never served
    internal = socket.create_server(("127.0.0.1", port))
    internal.setblocking(False)
    resolve, asked = rebinding("repo.rebind.test", "127.0.0.2", "127.0.0.1")
    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    settings = settings_for(project, git_allowed_schemes="http", git_allowed_hosts="*.rebind.test,127.0.0.2/32")
    repos = GitRepositories(settings)
    repos.policy.resolve = resolve
    try:
        async with connect(service=DiagramsService(settings, git=repos)) as client:
            with anyio.fail_after(60):
                result = await client.call_tool(
                    "read_file",
                    {"source": "git", "repo": f"http://repo.rebind.test:{port}/", "path": "where.txt"},
                )
        with pytest.raises(BlockingIOError):
            internal.accept()  # nothing ever connected to 127.0.0.1
    finally:
        internal.close()
        server.shutdown()
        server.server_close()
    assert not result.is_error, result.content
    assert result.structured_content is not None and result.structured_content["content"] == "listed address\n"
    assert asked == ["127.0.0.2"]


async def test_a_clone_redirected_to_a_host_not_listed_is_refused_and_names_it_security(
    connect: Connect, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    origin = _repository(tmp_path / "origin", {"main.py": "secret = 1\n"})
    # elsewhere.test resolves to an address the list allows, but the name itself is not listed
    resolve, _ = rebinding("elsewhere.test", "127.0.0.1")
    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    with redirecting_remote(origin, "elsewhere.test") as url:
        async with connect(git_allowed_schemes="http", git_allowed_hosts="127.0.0.1") as client:
            with anyio.fail_after(30):
                error = await fail(client, "read_file", {"source": "git", "repo": url, "path": "main.py"})
    assert error["error"] == "permission_denied", error
    assert "elsewhere.test" in error["message"]
    assert "secret" not in str(error)


async def test_a_github_api_redirect_to_another_host_is_refused_and_names_it_security(
    connect: Connect, settings_for: Any, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    resolve, _ = rebinding("elsewhere.test", "127.0.0.1")
    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    with serve(GitHubStub()) as stub:
        port = stub.url.split(":")[2].split("/")[0]
        moved = f"http://elsewhere.test:{port}{stub.prefix}/repos/octo/moved"
        stub.route("/repos/octo/demo", Reply(status=301, headers={"Location": moved}))
        stub.route("/repos/octo/moved", Reply(body={"full_name": "octo/moved", "default_branch": "main"}))
        stub.route("/repos/octo/demo/commits/main", Reply(body="a" * 40))
        stub.route("/repos/octo/demo/git/trees/" + "a" * 40 + "?recursive=1", Reply(body={"tree": []}))
        github = GitHubClient(stub.url, "tok", timeout=5, max_wait=0)
        settings = settings_for(project, github_api_url=stub.url)
        async with connect(service=DiagramsService(settings, github=github)) as client:
            with anyio.fail_after(30):
                error = await fail(client, "list_files", {"source": "github", "repo": "octo/demo"})
    assert error["error"] == "permission_denied", error
    assert "elsewhere.test" in error["message"]
    assert not any(seen.headers.get("host", "").startswith("elsewhere.test") for seen in stub.seen)


def test_security_allowed_hosts_entries_reaching_beyond_public_addresses_are_named() -> None:
    hosts = (
        "git.example.com, 8.8.8.0/24, 127.0.0.1, 10.0.0.0/8, 0.0.0.0/0, 172.0.0.0/8, 100.64.1.1, fe80::1, "
        "[::1], ::ffff:127.0.0.1, localhost, api.localhost, 2001:4860::/32"
    )

    assert non_public_entries(hosts) == [
        "127.0.0.1", "10.0.0.0/8", "0.0.0.0/0", "172.0.0.0/8", "100.64.1.1", "fe80::1", "[::1]",
        "::ffff:127.0.0.1", "localhost", "api.localhost",
    ]  # fmt: skip


def test_security_public_only_refuses_a_listed_host_resolving_to_loopback() -> None:
    def resolve(host: str, port: int, **_: Any) -> list[Any]:
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]

    listed = RemotePolicy("https", "git.internal", resolve)
    shared = RemotePolicy("https", "git.internal", resolve, public_only=True)
    remote = parse_remote("https://git.internal/repo.git")

    assert [str(a) for _, a in listed.check(remote, "repo")] == ["127.0.0.1"]  # the deployment's own choice
    with pytest.raises(PermissionDenied, match="only public hosts"):
        shared.check(remote, "repo")
