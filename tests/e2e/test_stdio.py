"""`deskmcp serve meetings` as a real subprocess, driven over stdio by the SDK's client."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.meetings.fixtures import ALPHA, write

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


def server_params(tmp_path: Path, *args: str) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRANOLA_", "DESKMCP_"))}
    env.update(
        {
            "GRANOLA_CACHE_PATH": str(tmp_path / "granola"),
            "DESKMCP_WORKSPACE": str(tmp_path / "ws"),
            "DESKMCP_TIMEZONE": "UTC",
        }
    )
    return StdioServerParameters(command=sys.executable, args=["-m", "deskmcp.cli", "serve", *args], env=env)


async def test_serve_meetings_over_stdio_answers_a_real_client(tmp_path: Path):
    write(tmp_path / "granola")
    with anyio.fail_after(60):
        async with Client(server_params(tmp_path, "meetings")) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            found = await client.call_tool("granola.meetings.search", {"q": "budget"})
            missing = await client.call_tool("granola.meetings.get", {"id": "nope"})
    assert "granola_meetings_search" in tools
    assert found.structured_content is not None
    assert [h["id"] for h in found.structured_content["items"]] == [ALPHA]
    assert missing.is_error
    assert json.loads(missing.content[0].text)["error"] == "not_found"  # type: ignore[union-attr]


async def test_serve_meetings_reuses_the_persisted_index_on_restart(tmp_path: Path):
    write(tmp_path / "granola")
    for _ in range(2):
        with anyio.fail_after(60):
            async with Client(server_params(tmp_path, "meetings")) as client:
                status = await client.call_tool("granola.cache.status", {})
        assert status.structured_content is not None
        assert status.structured_content["meetings"] == 3
    assert (tmp_path / "ws" / ".deskmcp" / "index" / "meetings.sqlite3").is_file()
