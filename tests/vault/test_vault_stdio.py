"""`deskmcp serve vault` as a real process, over stdio, the way an MCP client starts it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.helpers.files import write
from tests.helpers.tool_calls import call

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


async def test_serve_vault_over_stdio_reads_writes_and_searches(tmp_path: Path, vault: Path) -> None:
    write(vault, "Projects/Alpha.md", "---\nstatus: active\n---\nThe heliotrope plan.\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VAULT_", "DESKMCP_"))}
    env.update({"VAULT_PATH": str(vault), "DESKMCP_WORKSPACE": str(tmp_path / "ws"), "DESKMCP_TOOLSETS": "all"})
    params = StdioServerParameters(command=sys.executable, args=["-m", "deskmcp.cli", "serve", "vault"], env=env)
    with anyio.fail_after(60):
        async with Client(params) as client:
            found = await call(client, "search_notes", {"query": "heliotrope"})
            assert [n["path"] for n in found["notes"]] == ["Projects/Alpha.md"]
            note = await call(client, "read_note", {"path": "Projects/Alpha"})
            await call(
                client,
                "patch_frontmatter",
                {"path": "Projects/Alpha", "key": "status", "value": "done", "expected_hash": note["content_hash"]},
            )
            listed = await call(client, "list_notes", {"filter": "status:done"})
            assert [n["path"] for n in listed["notes"]] == ["Projects/Alpha.md"]
    assert (vault / "Projects" / "Alpha.md").read_text(encoding="utf-8").startswith("---\nstatus: done\n---\n")
