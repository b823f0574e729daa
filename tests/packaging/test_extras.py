"""The lean default install: the Google libraries, the remote parts and the embedders are extras,
and a setting that needs a missing one is answered by one line naming the command that adds it.

A missing extra is made real in a child process: a meta path finder refuses its packages
(tests/helpers/lean.py), in that process and in the processes it starts."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters

from tests.helpers.lean import EVERY_EXTRA, GOOGLE, REMOTE, lean_environment
from tests.helpers.network import free_port
from tests.helpers.processes import REPO, environment, server_process, write_meeting_cache

GOOGLE_COMMAND = "uv tool install 'deskmcp[google]'"
REMOTE_COMMAND = "uv tool install 'deskmcp[remote]'"


def _names(requirements: list[str]) -> set[str]:
    found = set()
    for requirement in requirements:
        match = re.match(r"[A-Za-z0-9_.-]+", requirement)
        assert match is not None, requirement
        found.add(match.group(0).lower())
    return found


def _pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def test_default_dependencies_leave_out_every_extra() -> None:
    project = _pyproject()["project"]
    default = _names(project["dependencies"])
    extras = {name: _names(requirements) for name, requirements in project["optional-dependencies"].items()}

    assert extras["google"] == {"google-auth", "google-auth-oauthlib", "google-api-python-client"}
    assert {"joserfc", "psycopg", "psycopg-pool"} <= extras["remote"]
    assert {"numpy", "model2vec"} <= extras["semantic"]
    for name, packages in extras.items():
        assert not default & packages, f"the {name} extra's packages are in the default dependencies"


def test_the_dev_group_installs_every_extra_so_the_tests_run() -> None:
    project = _pyproject()
    dev = project["dependency-groups"]["dev"]
    itself = [r for r in dev if isinstance(r, str) and r.startswith("deskmcp[")]
    assert len(itself) == 1
    listed = set(itself[0].removeprefix("deskmcp[").removesuffix("]").split(","))
    assert listed == set(project["project"]["optional-dependencies"])


def _run(args: list[str], env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], env=env, cwd=REPO, capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.mark.e2e
def test_the_blocked_packages_cannot_be_imported_in_the_lean_process(tmp_path: Path) -> None:
    env = lean_environment(tmp_path, environment(tmp_path))
    for module in ("googleapiclient", "google.oauth2", "joserfc", "psycopg", "numpy"):
        done = _run(["-c", f"import {module}"], env)
        assert done.returncode == 1
        assert "ModuleNotFoundError" in done.stderr


@pytest.mark.e2e
def test_serve_all_over_stdio_lists_every_server_without_any_extra(tmp_path: Path) -> None:
    write_meeting_cache(tmp_path / "granola")
    env = lean_environment(tmp_path, environment(tmp_path, DESKMCP_TOOLSETS="all"))
    params = StdioServerParameters(command=sys.executable, args=["-m", "deskmcp", "serve", "all"], env=env)

    async def listed() -> tuple[list[str], dict]:
        with anyio.fail_after(120):
            async with Client(params) as client:
                names = [t.name for t in (await client.list_tools()).tools]
                result = await client.call_tool("granola.meetings.list", {})
                assert result.structured_content is not None
                return names, result.structured_content

    names, meetings = anyio.run(listed)
    assert {"granola_meetings_list", "list_spreadsheets", "list_emails", "search_notes"} <= set(names)
    assert [m["title"] for m in meetings["items"]] == ["Quarterly planning"]


@pytest.mark.e2e
def test_google_sheets_without_the_google_extra_is_one_error_naming_the_command(tmp_path: Path) -> None:
    env = lean_environment(tmp_path, environment(tmp_path, SHEETS_BACKEND="google", GOOGLE_USE_ADC="1"), GOOGLE)
    params = StdioServerParameters(command=sys.executable, args=["-m", "deskmcp", "serve", "all"], env=env)

    async def answer() -> str:
        with anyio.fail_after(120):
            async with Client(params) as client:
                result = await client.call_tool("list_spreadsheets", {})
                assert result.is_error
                return result.content[0].text  # type: ignore[union-attr]

    served = json.loads(anyio.run(answer))
    called = _run(["-m", "deskmcp", "call", "list_spreadsheets"], env)

    assert served["error"] == "bad_request"
    assert served["details"]["command"] == GOOGLE_COMMAND
    assert GOOGLE_COMMAND in served["message"]
    assert called.returncode == 1
    assert "Traceback" not in called.stderr
    assert json.loads(called.stderr.strip().splitlines()[-1]) == served


@pytest.mark.e2e
def test_google_credentials_clients_and_errors_without_the_extra_are_missing_extra(tmp_path: Path) -> None:
    # The functions a Google backend calls, each in turn: every one answers the same bad_request.
    script = textwrap.dedent(
        """
        import json
        from deskmcp.core.errors import DeskError
        from deskmcp.google.auth import GoogleSettings, build_service, credentials
        from deskmcp.google.errors import GoogleApi, map_error

        settings = GoogleSettings(google_use_adc=True)
        answers = {}
        calls = {
            "credentials": lambda: credentials(settings, ["scope"]),
            "build_service": lambda: build_service("sheets", "v4", None),
            "map_error": lambda: map_error(OSError("down"), GoogleApi("Google Sheets", "google_sheets", "", "")),
        }
        for name, call in calls.items():
            try:
                answers[name] = repr(call())
            except DeskError as exc:
                answers[name] = exc.to_dict()
        print(json.dumps(answers))
        """
    )
    done = _run(["-c", script], lean_environment(tmp_path, environment(tmp_path), GOOGLE))

    assert done.returncode == 0, done.stderr
    answers = json.loads(done.stdout)
    assert set(answers) == {"credentials", "build_service", "map_error"}
    for name, answer in answers.items():
        assert answer["error"] == "bad_request", name
        assert answer["details"]["extra"] == "google", name
        assert answer["details"]["command"] == GOOGLE_COMMAND, name
        assert GOOGLE_COMMAND in answer["message"], name


@pytest.mark.e2e
def test_google_sign_in_without_the_extra_is_one_line_naming_the_command(tmp_path: Path) -> None:
    env = environment(tmp_path, GOOGLE_CLIENT_ID="client.apps.googleusercontent.com", GOOGLE_CLIENT_SECRET="s")
    done = _run(["-m", "deskmcp", "auth", "google", "--no-browser"], lean_environment(tmp_path, env, GOOGLE))

    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert GOOGLE_COMMAND in lines[0]


@pytest.mark.e2e
def test_oauth_settings_without_the_remote_extra_are_one_line_naming_the_command(tmp_path: Path) -> None:
    port = free_port()
    env = environment(
        tmp_path,
        DESKMCP_AUTH_ISSUER="https://issuer.example",
        DESKMCP_AUTH_RESOURCE=f"http://127.0.0.1:{port}/mcp",
    )
    done = _run(
        ["-m", "deskmcp", "serve", "all", "--http", "--port", str(port)], lean_environment(tmp_path, env, REMOTE)
    )

    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    refusal = [line for line in done.stderr.splitlines() if REMOTE_COMMAND in line]
    assert len(refusal) == 1
    assert "DESKMCP_AUTH_ISSUER" in refusal[0]


@pytest.mark.e2e
def test_http_serving_with_a_token_needs_no_extra(tmp_path: Path) -> None:
    write_meeting_cache(tmp_path / "granola")
    port = free_port()
    env = lean_environment(tmp_path, environment(tmp_path, DESKMCP_TOKEN="t" * 32), EVERY_EXTRA)
    args = ["serve", "all", "--http", "--port", str(port)]

    with server_process(args, env, "Ctrl-C stops"):
        answer = httpx2.post(
            f"http://127.0.0.1:{port}/api/tools/granola.meetings.list",
            json={},
            headers={"Authorization": "Bearer " + "t" * 32},
            timeout=30,
        )
    assert answer.status_code == 200
    assert [m["title"] for m in answer.json()["items"]] == ["Quarterly planning"]


@pytest.mark.e2e
def test_a_database_url_without_the_remote_extra_is_missing_extra(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        from deskmcp.core.errors import DeskError
        from deskmcp.core.postgres import connection

        try:
            with connection("postgresql://deskmcp@127.0.0.1:1/x", "SELECT 1", unreachable="{exc}"):
                pass
        except DeskError as exc:
            print(exc.to_json())
        """
    )
    done = _run(["-c", script], lean_environment(tmp_path, environment(tmp_path), REMOTE))

    assert done.returncode == 0, done.stderr
    error = json.loads(done.stdout)
    assert error["error"] == "bad_request"
    assert REMOTE_COMMAND in error["message"]
    assert "DESKMCP_DATABASE_URL" in error["message"]
