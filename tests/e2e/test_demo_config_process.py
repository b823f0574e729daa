"""The client configuration `deskmcp demo` prints starts real servers that answer a client."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from rich.console import Console

from deskmcp.demo.tour import demo_servers, show_client_config

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


async def test_every_printed_demo_entry_starts_a_server_that_answers_initialize(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    workspace = tmp_path / ("a-rather-long-folder-name-for-the-demo-workspace-" * 3) / "demo"
    out = io.StringIO()
    show_client_config(Console(file=out), workspace, demo_servers())
    printed = out.getvalue()
    entries = json.loads(printed[printed.index("\n{") + 1 :])["mcpServers"]
    # What a client passes on: its own basic environment plus the entry's "env". A client started
    # from the desktop has a bare PATH, not the shell's: "command" must work without it.
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DESKMCP_", "GRANOLA_", "VAULT_", "MAIL_", "UV"))}
    base["PATH"] = "/usr/bin:/bin"

    for name, entry in entries.items():
        assert os.path.isabs(entry["command"]), entry["command"]
        params = StdioServerParameters(command=entry["command"], args=entry["args"], env={**base, **entry["env"]})
        with anyio.fail_after(120):
            async with Client(params) as client:
                tools = (await client.list_tools()).tools
        assert tools, name
        assert all("." not in t.name for t in tools), name  # safe names, the default
