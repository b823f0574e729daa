"""The client configuration `deskmcp demo` prints: what it runs, on which data, and that it parses."""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from deskmcp.demo import tour
from deskmcp.demo.tour import client_config, demo_servers, server_command, show_client_config
from deskmcp.servers import SERVERS


def served_by(entry: dict[str, Any]) -> set[str]:
    """The servers an entry's `serve ...` arguments run."""
    args = entry["args"][entry["args"].index("serve") + 1 :]
    if args[0] != "all":
        return {args[0]}
    excluded = set(args[args.index("--exclude") + 1].split(",")) if "--exclude" in args else set()
    return set(SERVERS) - excluded


def long_workspace(tmp_path: Path) -> Path:
    return tmp_path / ("a-rather-long-folder-name-for-the-demo-workspace-" * 3) / "demo"


def test_demo_client_configuration_gives_each_server_the_data_its_tour_used(tmp_path: Path) -> None:
    workspace = tmp_path / "demo"
    entries = json.loads(client_config(workspace, demo_servers()))["mcpServers"]
    seen: list[str] = []
    for server in demo_servers():
        owners = [entry for entry in entries.values() if server.name in served_by(entry)]
        assert len(owners) == 1, server.name
        env = owners[0]["env"]
        assert env["DESKMCP_WORKSPACE"] == str(workspace)
        assert "DESKMCP_TOOL_NAMES" not in env  # safe names are the default
        for key, value in server.environment(workspace).items():
            assert env[key] == value, (server.name, key)
        seen.append(server.name)
    assert entries["deskmcp"]["env"]["VAULT_PATH"] == str(workspace / "vault")
    assert "MAIL_MAILDIR" not in entries["deskmcp"]["env"]  # the mail tour's <workspace>/mail
    triage = next(e for e in entries.values() if served_by(e) == {"orchestrator"})
    assert triage["env"]["VAULT_PATH"] == str(workspace / "triage" / "vault")
    assert triage["env"]["MAIL_MAILDIR"] == str(workspace / "triage" / "mail")
    assert sorted(seen) == sorted(s.name for s in demo_servers())


def test_demo_client_configuration_prints_as_valid_json_at_80_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    workspace = long_workspace(tmp_path)
    out = io.StringIO()
    show_client_config(Console(file=out), workspace, demo_servers())
    printed = out.getvalue()
    block = printed[printed.index("\n{") + 1 :]

    config = json.loads(block)
    assert config["mcpServers"]["deskmcp"]["env"]["DESKMCP_WORKSPACE"] == str(workspace)
    assert any(len(line) > 80 for line in block.splitlines())  # long lines were left whole


def test_demo_client_configuration_runs_the_installed_executable_outside_a_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    installed = tmp_path / "venv" / "lib" / "python3" / "site-packages" / "deskmcp" / "demo" / "tour.py"
    executable = tmp_path / "venv" / "bin" / "deskmcp"
    executable.parent.mkdir(parents=True)
    executable.write_text("#!/bin/sh\n", encoding="utf-8")
    executable.chmod(0o755)
    link = tmp_path / "bin" / "deskmcp"
    link.parent.mkdir()
    link.symlink_to(executable)
    monkeypatch.setattr(tour, "__file__", str(installed))
    monkeypatch.setattr(sys, "argv", [str(link), "demo"])

    assert server_command() == [str(executable.resolve())]
    config = json.loads(client_config(tmp_path / "demo", demo_servers()))
    assert config["mcpServers"]["deskmcp"]["command"] == str(executable.resolve())

    monkeypatch.setattr(sys, "argv", ["-c"])
    monkeypatch.setenv("PATH", str(link.parent))
    assert server_command() == [str(executable.resolve())]

    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    assert server_command() == [sys.executable, "-m", "deskmcp"]
    assert "uvx" not in json.dumps(client_config(tmp_path / "demo", demo_servers()))


def test_demo_client_configuration_in_a_checkout_runs_uv_by_its_full_path_in_the_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkout = Path(tour.__file__).resolve().parents[3]
    uv = tmp_path / "tools" / "uv"
    uv.parent.mkdir()
    uv.write_text("#!/bin/sh\n", encoding="utf-8")
    uv.chmod(0o755)
    monkeypatch.setenv("PATH", str(uv.parent))

    # Clients do not read the shell's PATH: the command is uv's full path, found when printing.
    assert server_command() == [str(uv), "run", "--no-dev", "--directory", str(checkout), "deskmcp"]
    config = json.loads(client_config(tmp_path / "demo", demo_servers()))
    assert config["mcpServers"]["deskmcp"]["command"] == str(uv)
    assert os.path.isfile(checkout / "pyproject.toml")

    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    assert server_command() == [sys.executable, "-m", "deskmcp"]
