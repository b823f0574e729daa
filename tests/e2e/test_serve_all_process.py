"""`deskmcp serve all` as a real process: over streamable HTTP on loopback, and over stdio."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters

from deskmcp.servers import SERVERS
from tests.helpers.network import free_port
from tests.helpers.processes import environment, server_process, write_meeting_cache

pytestmark = pytest.mark.e2e


def test_serve_all_http_process_answers_tool_api_and_mcp(tmp_path: Path) -> None:
    write_meeting_cache(tmp_path / "granola")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    args = ["serve", "all", "--http", "--port", str(port), "--log-level", "INFO"]

    async def mcp_titles() -> list[str]:
        async with Client(base + "/mcp") as client:
            result = await client.call_tool("granola.meetings.list", {})
            assert result.structured_content is not None
            return [m["title"] for m in result.structured_content["items"]]

    with server_process(args, environment(tmp_path), "Application startup complete"):
        health = httpx2.get(base + "/", timeout=30).json()
        rest = httpx2.post(base + "/api/tools/granola.meetings.list", json={}, timeout=30).json()
        titles = anyio.run(mcp_titles)

    assert health["servers"] == list(SERVERS)
    assert [m["title"] for m in rest["items"]] == ["Quarterly planning"]
    assert titles == ["Quarterly planning"]


def test_serve_all_logs_one_line_for_a_skipped_server(tmp_path: Path) -> None:
    (tmp_path / "granola").mkdir()
    port = free_port()
    args = ["serve", "all", "--http", "--port", str(port), "--log-level", "INFO"]

    with server_process(args, environment(tmp_path), "Application startup complete") as seen:
        health = httpx2.get(f"http://127.0.0.1:{port}/", timeout=30).json()

    assert health["skipped"] == ["meetings"]
    skipping = [line for line in seen if "skipping server" in line]
    assert len(skipping) == 1
    assert "meetings" in skipping[0]


def test_serve_all_http_prints_its_address_on_start(tmp_path: Path) -> None:
    write_meeting_cache(tmp_path / "granola")
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"

    with server_process(["serve", "all", "--http", "--port", str(port)], environment(tmp_path), url) as seen:
        health = httpx2.get(f"http://127.0.0.1:{port}/", timeout=30)

    assert health.status_code == 200
    assert any(f"http://127.0.0.1:{port}/tools" in line for line in seen)
    assert not any("Bearer" in line for line in seen)


def test_serve_all_http_off_loopback_prints_its_address_and_the_generated_token(tmp_path: Path) -> None:
    write_meeting_cache(tmp_path / "granola")
    port = free_port()
    args = ["serve", "all", "--http", "--host", "0.0.0.0", "--port", str(port)]

    with server_process(args, environment(tmp_path), "Authorization: Bearer") as seen:
        token = seen[-1].split("Bearer ", 1)[1].split("'", 1)[0]
        denied = httpx2.get(f"http://127.0.0.1:{port}/tools", timeout=30)
        allowed = httpx2.get(f"http://127.0.0.1:{port}/tools", headers={"Authorization": f"Bearer {token}"}, timeout=30)

    assert any(f"http://127.0.0.1:{port}/mcp" in line and "0.0.0.0" in line for line in seen)
    assert denied.status_code == 401
    assert allowed.status_code == 200


@pytest.mark.parametrize("name", ["all", "meetings"])
def test_serve_over_stdio_lists_and_calls_tools(tmp_path: Path, name: str) -> None:
    write_meeting_cache(tmp_path / "granola")
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "deskmcp.cli", "serve", name], env=environment(tmp_path)
    )

    async def session() -> tuple[set[str], str]:
        with anyio.fail_after(60):
            async with Client(params) as client:
                tools = await client.list_tools()
                got = await client.call_tool("granola.meetings.get", {"id": "m-1"})
                assert got.structured_content is not None
                return {t.name for t in tools.tools}, got.structured_content["title"]

    names, title = anyio.run(session)

    assert "granola_meetings_search" in names
    assert title == "Quarterly planning"
