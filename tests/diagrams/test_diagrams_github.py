"""The github source against a stand-in GitHub API on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from deskmcp.diagrams.service import DiagramsService
from deskmcp.diagrams.sources.github import GitHubClient, parse_repo
from tests.diagrams.github_stub import GitHubStub, Reply, serve
from tests.helpers.clock import ManualClock
from tests.helpers.tool_calls import Connect, call, fail

pytestmark = pytest.mark.anyio

START = 1_800_000_000.0
COMMIT = "a" * 40
TREE = {
    "sha": "t" * 40,
    "truncated": False,
    "tree": [
        {"path": "README.md", "type": "blob", "sha": "b1", "size": 12},
        {"path": "src", "type": "tree", "sha": "t2"},
        {"path": "src/app.py", "type": "blob", "sha": "b2", "size": 19},
        {"path": "src/logo.png", "type": "blob", "sha": "b3", "size": 10},
        {"path": "vendor/lib", "type": "commit", "sha": "c9"},
    ],
}


@pytest.fixture(scope="session")
def github_server() -> Iterator[GitHubStub]:
    with serve(GitHubStub()) as stub:
        yield stub


@pytest.fixture
def github(github_server: GitHubStub) -> Iterator[GitHubStub]:
    github_server.reset()
    yield github_server
    github_server.reset()


def _repo(stub: GitHubStub, *, branch: str = "trunk", tree: dict[str, Any] | None = None) -> None:
    stub.route("/repos/octo/demo", Reply(body={"full_name": "octo/demo", "default_branch": branch}))
    stub.route(f"/repos/octo/demo/commits/{branch}", Reply(body=COMMIT))
    stub.route(f"/repos/octo/demo/git/trees/{COMMIT}?recursive=1", Reply(body=tree or TREE))
    stub.route("/repos/octo/demo/git/blobs/b1", Reply(body=b"# Demo repo\n"))
    stub.route("/repos/octo/demo/git/blobs/b2", Reply(body=b"import os\nprint(1)\n"))
    stub.route("/repos/octo/demo/git/blobs/b3", Reply(body=b"\x89PNG\r\n\x1a\n\x00\x00"))


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
def connect_github(connect: Connect, settings_for: Any, project: Path, github: GitHubStub, clock: ManualClock) -> Any:
    def build(token: str | None = None, timeout: float = 5.0) -> Any:
        client = GitHubClient(github.url, token, timeout=timeout, max_wait=30, clock=clock)
        settings = settings_for(project, github_api_url=github.url)
        return connect(service=DiagramsService(settings, github=client))

    return build


def test_repository_names_are_read_from_the_usual_forms() -> None:
    assert parse_repo("octo/demo") == ("octo", "demo")
    assert parse_repo("https://github.com/octo/demo.git") == ("octo", "demo")
    assert parse_repo("https://github.example.com/octo/demo/tree/main/src") == ("octo", "demo")
    assert parse_repo("git@github.com:octo/demo.git") == ("octo", "demo")
    for bad in ("octo", "../etc/passwd", "octo/demo/../../x y", "a/b c"):
        with pytest.raises(Exception, match="not a GitHub repository"):
            parse_repo(bad)


async def test_list_files_reads_the_default_branch_when_no_ref_is_given(
    connect_github: Any, github: GitHubStub
) -> None:
    _repo(github, branch="trunk")
    async with connect_github() as client:
        listed = await call(client, "list_files", {"source": "github", "repo": "octo/demo"})
    assert [f["path"] for f in listed["files"]] == ["README.md", "src/app.py", "src/logo.png"]
    assert listed["ref"] == COMMIT
    assert listed["files"][0]["size"] == 12
    assert "/repos/octo/demo/commits/trunk" in [s.path for s in github.seen]
    assert all(s.headers["x-github-api-version"] == "2022-11-28" for s in github.seen)
    assert all("authorization" not in s.headers for s in github.seen)


async def test_list_files_at_a_ref_with_root_and_glob_and_a_token(connect_github: Any, github: GitHubStub) -> None:
    _repo(github)
    github.route("/repos/octo/demo/commits/v1.0", Reply(body=COMMIT))
    async with connect_github(token="ghp_secret") as client:
        listed = await call(
            client,
            "list_files",
            {"source": "github", "repo": "octo/demo", "ref": "v1.0", "root": "src", "glob": "*.py"},
        )
        flat = await call(client, "list_files", {"source": "github", "repo": "octo/demo", "recursive": False})
    assert [f["path"] for f in listed["files"]] == ["src/app.py"]
    assert [(f["path"], f["type"]) for f in flat["files"]] == [("README.md", "file"), ("src", "dir")]
    assert github.seen[0].headers["authorization"] == "Bearer ghp_secret"
    assert github.seen[0].path == "/repos/octo/demo/commits/v1.0"  # a ref needs no default branch


async def test_list_files_walks_sub_trees_when_github_truncates_the_tree(
    connect_github: Any, github: GitHubStub
) -> None:
    _repo(github, tree={"sha": "root", "truncated": True, "tree": TREE["tree"][:2]})
    github.route(
        f"/repos/octo/demo/git/trees/{COMMIT}",
        Reply(
            body={
                "sha": "root",
                "truncated": False,
                "tree": [
                    {"path": "README.md", "type": "blob", "sha": "b1", "size": 12},
                    {"path": "docs", "type": "tree", "sha": "tdocs"},
                    {"path": "src", "type": "tree", "sha": "tsrc"},
                ],
            }
        ),
    )
    github.route(
        "/repos/octo/demo/git/trees/tsrc?recursive=1",
        Reply(body={"sha": "tsrc", "truncated": False, "tree": [{"path": "app.py", "type": "blob", "sha": "b2"}]}),
    )
    github.route(
        "/repos/octo/demo/git/trees/tdocs?recursive=1",
        Reply(body={"sha": "tdocs", "truncated": True, "tree": []}),
    )
    github.route(
        "/repos/octo/demo/git/trees/tdocs",
        Reply(body={"sha": "tdocs", "truncated": False, "tree": [{"path": "a", "type": "tree", "sha": "tda"}]}),
    )
    github.route(
        "/repos/octo/demo/git/trees/tda?recursive=1",
        Reply(body={"sha": "tda", "tree": [{"path": "guide.md", "type": "blob", "sha": "b4", "size": 3}]}),
    )
    async with connect_github() as client:
        listed = await call(client, "list_files", {"source": "github", "repo": "octo/demo"})
    assert [f["path"] for f in listed["files"]] == ["README.md", "docs/a/guide.md", "src/app.py"]


async def test_read_file_fetches_the_blob_of_the_listed_commit(connect_github: Any, github: GitHubStub) -> None:
    _repo(github)
    async with connect_github() as client:
        text = await call(client, "read_file", {"source": "github", "repo": "octo/demo", "path": "src/app.py"})
        line = await call(
            client, "read_file", {"source": "github", "repo": "octo/demo", "path": "src/app.py", "start_line": 2}
        )
        png = await call(client, "read_file", {"source": "github", "repo": "octo/demo", "path": "src/logo.png"})
        missing = await fail(client, "read_file", {"source": "github", "repo": "octo/demo", "path": "nope.md"})
        folder = await fail(client, "read_file", {"source": "github", "repo": "octo/demo", "path": "src"})
    assert text["content"] == "import os\nprint(1)\n"
    assert text["ref"] == COMMIT
    assert line["content"] == "print(1)\n"
    assert png["binary"] is True
    assert missing["error"] == "not_found"
    assert folder["error"] == "bad_request"
    accepts = [s.headers["accept"] for s in github.seen if "/git/blobs/" in s.path]
    assert accepts and all(a == "application/vnd.github.raw" for a in accepts)


async def test_a_missing_repository_or_ref_is_not_found(connect_github: Any, github: GitHubStub) -> None:
    _repo(github)
    github.route("/repos/octo/demo/commits/nope", Reply(422, {"message": "No commit found for SHA: nope"}))
    async with connect_github() as client:
        repo = await fail(client, "list_files", {"source": "github", "repo": "octo/missing"})
        ref = await fail(client, "list_files", {"source": "github", "repo": "octo/demo", "ref": "nope"})
        traversal = await fail(client, "read_file", {"source": "github", "repo": "octo/demo", "path": "../x"})
    assert repo["error"] == "not_found"
    assert "GITHUB_TOKEN" in repo["message"]
    assert ref["error"] == "not_found"
    assert "nope" in ref["message"]
    assert traversal["error"] == "permission_denied"


async def test_the_primary_rate_limit_is_rate_limited_with_the_reset_time(
    connect_github: Any, github: GitHubStub, clock: ManualClock
) -> None:
    reset = int(START + 900)
    github.route(
        "/repos/octo/demo",
        Reply(
            403,
            {"message": "API rate limit exceeded for 127.0.0.1."},
            {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset), "x-ratelimit-limit": "60"},
        ),
    )
    async with connect_github() as client:
        error = await fail(client, "list_files", {"source": "github", "repo": "octo/demo"})
    assert error["error"] == "rate_limited"
    assert error["details"]["retry_after"] == 900
    assert error["details"]["reset_at"] == "2027-01-15T08:15:00Z"
    assert "status" not in error["message"]
    assert clock.sleeps == []  # 15 minutes is past the longest wait: answered at once


@pytest.mark.parametrize("status", [403, 429])
async def test_a_secondary_rate_limit_is_waited_out_as_retry_after_says(
    connect_github: Any, github: GitHubStub, clock: ManualClock, status: int
) -> None:
    _repo(github)
    github.route(
        "/repos/octo/demo",
        Reply(status, {"message": "You have exceeded a secondary rate limit."}, {"retry-after": "7"}),
        Reply(body={"default_branch": "trunk"}),
    )
    async with connect_github() as client:
        listed = await call(client, "list_files", {"source": "github", "repo": "octo/demo"})
    assert listed["total"] == 3
    assert clock.sleeps == [7.0]


async def test_a_secondary_limit_without_retry_after_waits_at_least_a_minute(
    connect_github: Any, github: GitHubStub, clock: ManualClock
) -> None:
    github.route("/repos/octo/demo", Reply(403, {"message": "You have exceeded a secondary rate limit."}))
    async with connect_github() as client:
        error = await fail(client, "list_files", {"source": "github", "repo": "octo/demo"})
    assert error["error"] == "rate_limited"
    assert error["details"]["retry_after"] == 60


async def test_server_errors_are_retried_with_backoff(
    connect_github: Any, github: GitHubStub, clock: ManualClock
) -> None:
    _repo(github)
    github.route(
        "/repos/octo/demo", Reply(500, {"message": "boom"}), Reply(502), Reply(body={"default_branch": "trunk"})
    )
    async with connect_github() as client:
        listed = await call(client, "list_files", {"source": "github", "repo": "octo/demo"})
    assert listed["total"] == 3
    assert len(clock.sleeps) == 2


async def test_server_errors_past_the_retries_are_an_external_service_error(
    connect_github: Any, github: GitHubStub
) -> None:
    github.route("/repos/octo/demo", Reply(503, {"message": "unavailable"}))
    async with connect_github() as client:
        error = await fail(client, "list_files", {"source": "github", "repo": "octo/demo"})
    assert error["error"] == "external_service_error"
    assert error["details"]["status"] == 503
    assert len([s for s in github.seen if s.path == "/repos/octo/demo"]) == 4


async def test_a_slow_server_is_a_timeout(connect_github: Any, github: GitHubStub) -> None:
    github.release.clear()
    github.route("/repos/octo/demo", Reply(body={"default_branch": "trunk"}, hold=True))
    try:
        async with connect_github(timeout=0.3) as client:
            error = await fail(client, "list_files", {"source": "github", "repo": "octo/demo"})
    finally:
        github.release.set()
    assert error["error"] == "timeout"
