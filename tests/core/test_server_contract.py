"""The server contract: every server module is a `ServerModule`, and one `create_server` builds any
of them."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from deskmcp.servers import SERVERS, ServerModule, create_server, server_name

pytestmark = pytest.mark.anyio


def test_every_server_module_keeps_the_server_contract():
    for name, spec in SERVERS.items():
        module = spec.load()
        assert isinstance(module, ServerModule), name
        assert server_name(module) == name
        assert set(module.DEFAULT_TOOLSETS) <= set(module.TOOLSETS), name


async def test_create_server_builds_one_server_with_its_instructions_and_only_its_tools(tmp_path: Path):
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "a.md").write_text("# A\n", encoding="utf-8")
    spec = SERVERS["vault"]
    module = spec.load()
    server = create_server(module, spec.settings(workspace=tmp_path / "ws", vault_path=vault))
    async with Client(server) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        instructions = client.instructions
    assert server.name == "deskmcp-vault"
    assert instructions == module.INSTRUCTIONS
    assert "read_note" in names
    assert set(server.tool_toolsets.values()) <= {f"vault.{t}" for t in module.TOOLSETS}
