"""`deskmcp connect URL` as a real stdio process in front of a real `deskmcp serve all --http`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.helpers.network import free_port
from tests.helpers.processes import environment, server_process, write_meeting_cache

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


def connect_params(url: str, workspace: Path, **env: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "deskmcp.cli", "connect", url, "--workspace", str(workspace / "client")],
        env=environment(workspace, **env),
    )


def remote(workspace: Path, port: int, token: str) -> object:
    args = ["serve", "all", "--http", "--port", str(port), "--log-level", "INFO"]
    return server_process(args, environment(workspace, DESKMCP_TOKEN=token), ready="Uvicorn running")


async def test_connect_forwards_tools_and_answers_mcp_unavailable_while_the_remote_is_down(tmp_path: Path) -> None:
    write_meeting_cache(tmp_path / "granola")
    (tmp_path / "sheets").mkdir()
    (tmp_path / "sheets" / "team.csv").write_text("name,role\nAda,lead\n", encoding="utf-8")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    params = connect_params(url, tmp_path, DESKMCP_REMOTE_TOKEN="t0ken")
    with anyio.fail_after(240):
        async with Client(params) as client:
            # Started before the remote: no tools known yet, and a call says the remote is down.
            early = await client.call_tool("read_values", {"spreadsheet_id": "team.csv", "ranges": ["A1:B2"]})
            assert early.is_error
            assert json.loads(early.content[0].text)["error"] == "mcp_unavailable"  # type: ignore[union-attr]

            with remote(tmp_path, port, "t0ken"):
                names = {t.name for t in (await client.list_tools()).tools}
                assert {"read_values", "list_spreadsheets"} <= names
                result = await client.call_tool("read_values", {"spreadsheet_id": "team.csv", "ranges": ["A1:B2"]})
                assert not result.is_error, result.content
                assert result.structured_content is not None
                assert result.structured_content["ranges"][0]["values"] == [["name", "role"], ["Ada", "lead"]]
                error = await client.call_tool("get_spreadsheet", {"spreadsheet_id": "nope.csv"})
                assert json.loads(error.content[0].text)["error"] == "not_found"  # type: ignore[union-attr]

            # Remote stopped: the tools stay listed, calls answer mcp_unavailable.
            still = {t.name for t in (await client.list_tools()).tools}
            assert "read_values" in still
            down = await client.call_tool("list_spreadsheets", {})
            assert down.is_error
            body = json.loads(down.content[0].text)  # type: ignore[union-attr]
            assert body["error"] == "mcp_unavailable"
            assert url in body["message"]


async def test_connect_with_a_wrong_token_answers_auth_required(tmp_path: Path) -> None:
    write_meeting_cache(tmp_path / "granola")
    port = free_port()
    params = connect_params(f"http://127.0.0.1:{port}", tmp_path, DESKMCP_REMOTE_TOKEN="wrong")
    with anyio.fail_after(240), remote(tmp_path, port, "right"):
        async with Client(params) as client:
            result = await client.call_tool("list_spreadsheets", {})
    assert result.is_error
    assert json.loads(result.content[0].text)["error"] == "auth_required"  # type: ignore[union-attr]
