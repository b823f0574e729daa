"""The MCP Bundle (packaging/mcpb): its manifest says what deskmcp offers, the official CLI
validates and packs it, and the packed bundle, started as its manifest says, serves deskmcp.

The pack and start tests need Node.js and the pinned `@anthropic-ai/mcpb` (`npm ci` in
packaging/mcpb, as .ci/run does) and take deskmcp's dependencies from uv's cache (`--offline`);
without them they skip, saying so."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.helpers.processes import REPO

MCPB_DIR = REPO / "packaging" / "mcpb"
MCPB = MCPB_DIR / "node_modules" / ".bin" / "mcpb"
MANIFEST = json.loads((MCPB_DIR / "manifest.json").read_text(encoding="utf-8"))
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
UV = shutil.which("uv")
# Read at import, before the tests' fixtures point HOME (by which uv finds its cache) elsewhere.
UV_CACHE = subprocess.run([UV, "cache", "dir"], capture_output=True, text=True).stdout.strip() if UV else ""
SECRET_WORDS = ("KEY", "TOKEN", "PASSWORD", "SECRET")


def test_the_manifest_describes_the_package_as_pyproject_does() -> None:
    assert MANIFEST["manifest_version"] == "0.4"
    assert MANIFEST["name"] == PROJECT["name"]
    assert MANIFEST["version"] == PROJECT["version"]
    assert MANIFEST["description"] == PROJECT["description"]
    assert MANIFEST["license"] == PROJECT["license"]
    assert (MCPB_DIR / MANIFEST["icon"]).read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert set(MANIFEST["compatibility"]["platforms"]) == {"darwin", "win32", "linux"}
    assert MANIFEST["compatibility"]["runtimes"]["python"] == PROJECT["requires-python"]


def test_every_setting_the_server_reads_comes_from_a_question_and_every_secret_is_masked() -> None:
    env = MANIFEST["server"]["mcp_config"]["env"]
    questions = MANIFEST["user_config"]
    asked = {value.removeprefix("${user_config.").removesuffix("}") for value in env.values()}
    assert asked == set(questions)  # no question unused, no setting without its question
    for variable, value in env.items():
        key = value.removeprefix("${user_config.").removesuffix("}")
        secret = any(word in variable for word in SECRET_WORDS)
        assert questions[key].get("sensitive", False) is secret, variable
        # An unanswered optional question must not reach the server as the literal "${user_config...}".
        assert questions[key].get("required") or "default" in questions[key], key
    assert {"VAULT_PATH", "DOCUMENTS_PATH", "MAIL_MAILDIR", "GRANOLA_API_KEY"} <= set(env)
    for folder in ("vault_path", "documents_path", "mail_maildir"):
        assert questions[folder]["type"] == "directory"


def _need_mcpb() -> None:
    if shutil.which("node") is None:
        pytest.skip("Node.js is not installed: the mcpb CLI cannot run")
    if not MCPB.is_file():
        pytest.skip(f"the mcpb CLI is not installed: run `npm ci` in {MCPB_DIR}")
    if UV is None:
        pytest.skip("uv is not on PATH")


def _uv_environment(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DESKMCP_", "VIRTUAL_ENV", "UV"))}
    env.update(UV_CACHE_DIR=UV_CACHE, UV_OFFLINE="1", UV_PYTHON=str(Path(sys.executable).resolve()))
    env["HOME"] = str(tmp_path / "home")
    return env


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _need_mcpb()
    out = tmp_path_factory.mktemp("bundle")
    env = _uv_environment(out)
    done = subprocess.run(
        [sys.executable, str(MCPB_DIR / "pack.py"), "--out", str(out), "--offline"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0 and "offline" in done.stderr:
        pytest.skip(f"uv's cache cannot resolve the bundle's dependencies offline: {done.stderr[-1000:]}")
    assert done.returncode == 0, done.stderr
    return Path(done.stdout.strip())


@pytest.mark.e2e
def test_the_official_cli_validates_the_manifest() -> None:
    _need_mcpb()
    done = subprocess.run([str(MCPB), "validate", str(MCPB_DIR / "manifest.json")], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "validation passes" in done.stdout


@pytest.mark.e2e
def test_the_bundle_holds_the_wheel_its_lock_and_no_development_files(bundle: Path) -> None:
    with zipfile.ZipFile(bundle) as packed:
        names = set(packed.namelist())
        manifest = json.loads(packed.read("manifest.json"))
        pyproject = tomllib.loads(packed.read("pyproject.toml").decode("utf-8"))
    wheel = f"wheels/deskmcp-{PROJECT['version']}-py3-none-any.whl"
    assert {"manifest.json", "icon.png", "server/main.py", "pyproject.toml", "uv.lock", wheel} <= names
    assert manifest == MANIFEST
    assert pyproject["tool"]["uv"]["sources"]["deskmcp"] == {"path": wheel}
    assert not [n for n in names if n.startswith(("tests/", "node_modules/", ".venv/", "src/"))]


@pytest.mark.e2e
@pytest.mark.slow
def test_the_packed_bundle_started_as_its_manifest_says_serves_the_folders_it_was_given(
    bundle: Path, tmp_path: Path
) -> None:
    unpacked = tmp_path / "installed"
    subprocess.run([str(MCPB), "unpack", str(bundle), str(unpacked)], capture_output=True, check=True)
    vault = tmp_path / "My notes"
    vault.mkdir()
    (vault / "Budget.md").write_text("# Budget\n\nThe bundle reads this vault.\n", encoding="utf-8")
    answers = {"vault_path": str(vault), "workspace": str(tmp_path / "workspace")}
    # What the host would run: the manifest's mcp_config filled in by mcpb's own code.
    printed = subprocess.run(
        ["node", str(MCPB_DIR / "config.mjs"), str(unpacked), json.dumps(answers)],
        capture_output=True,
        text=True,
        check=True,
    )
    config = json.loads(printed.stdout)
    assert config["env"]["VAULT_PATH"] == str(vault)
    assert config["env"]["GRANOLA_API_KEY"] == ""  # unanswered: empty, which deskmcp reads as unset
    assert config["command"] == "uv"
    env = {**_uv_environment(tmp_path), **config["env"]}
    params = StdioServerParameters(command=UV or "uv", args=config["args"], env=env)

    async def session() -> tuple[list[str], dict]:
        with anyio.fail_after(300):
            async with Client(params) as client:
                names = [t.name for t in (await client.list_tools()).tools]
                result = await client.call_tool("read_note", {"path": "Budget.md"})
                assert not result.is_error, result.content
                assert result.structured_content is not None
                return names, result.structured_content

    names, note = anyio.run(session)
    assert {"search_notes", "read_note", "search_documents"} <= set(names)
    assert all(name.replace("_", "").replace("-", "").isalnum() for name in names)
    assert "The bundle reads this vault." in json.dumps(note)
