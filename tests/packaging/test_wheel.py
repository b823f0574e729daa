"""The wheel as people install it: run by uvx, installed as a uv tool, `python -m deskmcp`; and the
client entry `deskmcp demo` prints for each.

The wheel is built from this checkout; its dependencies come from uv's cache (`--offline`): the
tests reach no network. `.ci/run` fills the cache first (`uvx --from dist/...whl deskmcp --version`);
where the cache cannot serve them the tests skip, saying so."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from deskmcp.demo.tour import NothingToUse, resolve
from tests.helpers.processes import REPO

UV = shutil.which("uv")
# Read at import, before the tests' fixtures point HOME (by which uv finds its cache) elsewhere.
UV_CACHE = subprocess.run([UV, "cache", "dir"], capture_output=True, text=True).stdout.strip() if UV else ""


def test_a_reference_to_an_empty_answer_is_nothing_to_use() -> None:
    # With five generated meetings, the demo's search finds none: the transcript step that
    # follows it has no id to use and is skipped (it raised IndexError, ending the demo).
    with pytest.raises(NothingToUse) as raised:
        resolve({"id": "$last.items.0.id", "end_seconds": 60}, {"items": []})
    assert raised.value.reference == "$last.items.0.id"
    for last in (None, {}, {"items": {"0": 1}}, {"items": "text"}):
        with pytest.raises(NothingToUse):
            resolve("$last.items.0.id", last)
    assert resolve({"id": "$last.items.0.id", "n": 1}, {"items": [{"id": "m-1"}]}) == {"id": "m-1", "n": 1}


def test_python_dash_m_deskmcp_is_the_deskmcp_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "deskmcp", "--version"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("deskmcp ")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if UV is None:
        pytest.skip("uv is not on PATH")
    out = tmp_path_factory.mktemp("dist")
    # --offline: the build backend (hatchling) comes from uv's cache too.
    subprocess.run(
        [UV, "build", "--offline", "--wheel", "--out-dir", str(out)], cwd=REPO, capture_output=True, check=True
    )
    return next(out.glob("deskmcp-*.whl"))


def _bare_environment(tmp_path: Path) -> dict[str, str]:
    """A desktop client's environment: no deskmcp settings, no virtual environment, a bare PATH."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DESKMCP_", "GRANOLA_", "VAULT_", "MAIL_", "VIRTUAL_ENV", "UV_", "PYTHON"))
        and k not in ("UV", "PATH")
    }
    env.update(PATH="/usr/bin:/bin", HOME=str(tmp_path / "home"), XDG_DATA_HOME=str(tmp_path / "data"))
    # uv's own cache (where .ci/run put the dependencies) and this Python, whose wheels it holds.
    env["UV_CACHE_DIR"] = UV_CACHE
    env["UV_PYTHON"] = str(Path(sys.executable).resolve())
    return env


def _skip_unless_cached(done: subprocess.CompletedProcess[str]) -> None:
    if done.returncode != 0 and ("offline" in done.stderr or "not found in the cache" in done.stderr):
        pytest.skip(f"uv's cache cannot install the wheel's dependencies offline: {done.stderr.strip()[-1500:]}")


def _entries(printed: str) -> dict[str, dict]:
    return json.loads(printed[printed.index("\n{") + 1 : printed.rindex("}") + 1])["mcpServers"]


async def _tools_of(entry: dict, env: dict[str, str]) -> list[str]:
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env={**env, **entry["env"]})
    with anyio.fail_after(180):
        async with Client(params) as client:
            return [t.name for t in (await client.list_tools()).tools]


@pytest.mark.e2e
@pytest.mark.slow
def test_uvx_runs_the_demo_from_the_wheel_and_prints_a_uvx_entry_that_starts(wheel: Path, tmp_path: Path) -> None:
    assert UV is not None
    env = _bare_environment(tmp_path)
    workspace = tmp_path / "demo"
    # uvx installs the wheel without extras: the demo runs on the lean install.
    demo = subprocess.run(
        [
            UV,
            "tool",
            "run",
            "--offline",
            "--from",
            str(wheel),
            "deskmcp",
            "demo",
            "--meetings",
            "5",
            "-w",
            str(workspace),
        ],
        env={**env, "COLUMNS": "100"},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    _skip_unless_cached(demo)
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    assert "skipped: the previous answer has no $last.items.0.id" in demo.stdout
    entries = _entries(demo.stdout)

    for name, entry in entries.items():
        assert Path(entry["command"]).name in ("uvx", "uv"), name
        assert os.path.isabs(entry["command"]), name
        assert entry["args"][entry["args"].index("--from") + 1] == str(wheel), name
        offline = {**entry, "args": ["--offline", *entry["args"]]} if Path(entry["command"]).name == "uvx" else entry
        tools = anyio.run(_tools_of, offline, env)
        assert tools, name
        assert all("." not in tool for tool in tools), name


@pytest.mark.e2e
@pytest.mark.slow
def test_an_installed_tool_prints_its_own_executable_as_the_entry(wheel: Path, tmp_path: Path) -> None:
    assert UV is not None
    env = {
        **_bare_environment(tmp_path),
        "UV_TOOL_DIR": str(tmp_path / "tools"),
        "UV_TOOL_BIN_DIR": str(tmp_path / "bin"),
    }
    installed = subprocess.run(
        [UV, "tool", "install", "--offline", str(wheel)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    _skip_unless_cached(installed)
    assert installed.returncode == 0, installed.stderr
    executable = tmp_path / "bin" / "deskmcp"
    tool_python = tmp_path / "tools" / "deskmcp" / "bin" / "python"
    probe = "from deskmcp.demo.tour import server_command; print(server_command())"
    printed = subprocess.run(
        [str(tool_python), "-c", probe],
        env={**env, "PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    version = subprocess.run([str(executable), "--version"], env=env, capture_output=True, text=True, check=True)

    assert printed.stdout.strip() == repr([str(executable.resolve())])
    assert version.stdout.startswith("deskmcp ")
    # The lean install: no Google client library came with it.
    site = next((tmp_path / "tools" / "deskmcp" / "lib").glob("python3.*/site-packages"))
    assert not list(site.glob("googleapiclient*")) and not list(site.glob("google_auth*"))
