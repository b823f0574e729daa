"""DeskServer: the error contract, and client-safe tool names."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest
from mcp import Client
from mcp.types import CallToolResult, TextContent

from deskmcp.core.errors import NotFound
from deskmcp.core.server import READ_ONLY, DeskServer, writes
from deskmcp.gateway import compose

pytestmark = pytest.mark.anyio


def build(tool_names: str = "spec") -> DeskServer:
    server = DeskServer(
        "t",
        instructions="Start with notes.lookup, then notes.lookup_all.",
        tool_names=tool_names,  # type: ignore[arg-type]
    )

    @server.tool("notes.lookup", annotations=READ_ONLY)
    def lookup(key: str) -> dict[str, str]:
        """Find one note; keys come from notes.lookup_all."""
        if key != "a":
            raise NotFound(f"No note {key!r}. Call notes.lookup_all for keys.", {"key": key})
        return {"key": key}

    @server.tool("notes.lookup_all", annotations=READ_ONLY)
    def lookup_all() -> dict[str, list[str]]:
        """Every key."""
        return {"keys": ["a"]}

    @server.prompt("find", description="Find a note")
    def find() -> str:
        return "Call notes.lookup_all, then notes.lookup."

    return server


async def test_spec_names_are_published_unchanged():
    async with Client(build()) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        result = await client.call_tool("notes.lookup", {"key": "a"})
    assert names == {"notes.lookup", "notes.lookup_all"}
    assert result.structured_content == {"key": "a"}


async def test_safe_names_replace_dots_everywhere_the_client_reads_a_tool_name():
    async with Client(build("safe")) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        found = await client.call_tool("notes_lookup", {"key": "a"})
        missing = await client.call_tool("notes_lookup", {"key": "b"})
        prompt = await client.get_prompt("find", {})
        instructions = client.instructions
    assert set(tools) == {"notes_lookup", "notes_lookup_all"}
    assert tools["notes_lookup"].description == "Find one note; keys come from notes_lookup_all."
    assert found.structured_content == {"key": "a"}
    assert json.loads(missing.content[0].text)["message"] == "No note 'b'. Call notes_lookup_all for keys."  # type: ignore[union-attr]
    assert prompt.messages[0].content.text == "Call notes_lookup_all, then notes_lookup."  # type: ignore[union-attr]
    assert instructions == "Start with notes_lookup, then notes_lookup_all."


async def test_an_unknown_tool_is_not_found_and_a_bad_argument_a_bad_request():
    async with Client(build()) as client:
        unknown = await client.call_tool("notes.nope", {})
        bad = await client.call_tool("notes.lookup", {"key": 5})
    assert json.loads(unknown.content[0].text)["error"] == "not_found"  # type: ignore[union-attr]
    body = json.loads(bad.content[0].text)  # type: ignore[union-attr]
    assert body["error"] == "bad_request"
    assert body["details"]["problems"][0]["field"] == "key"


async def test_a_crashing_tool_is_an_internal_error_without_its_traceback():
    server = DeskServer("t")

    @server.tool("boom")
    def boom() -> str:
        raise RuntimeError("secret path /home/user/x")

    async with Client(server) as client:
        result = await client.call_tool("boom", {})
    body = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert body["error"] == "internal_error"
    assert "secret" not in body["message"]


async def test_call_tool_answers_a_desk_error_as_an_error_result_with_the_exact_json_body():
    result = await build().call_tool("notes.lookup", {"key": "b"})
    assert isinstance(result, CallToolResult)
    assert result.is_error
    assert [c.text for c in result.content if isinstance(c, TextContent)] == [
        '{"error":"not_found","message":"No note \'b\'. Call notes.lookup_all for keys.","details":{"key":"b"}}'
    ]


async def test_an_anticipated_error_is_not_logged_as_a_crash(caplog: pytest.LogCaptureFixture):
    with caplog.at_level(logging.INFO):
        async with Client(build()) as client:
            result = await client.call_tool("notes.lookup", {"key": "b"})
    assert result.is_error
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


@pytest.mark.parametrize("setting", ["safe", None])
async def test_deskmcp_tool_names_safe_makes_every_composed_tool_name_client_safe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setting: str | None
):
    # `safe` is the default: a client that accepts only ^[a-zA-Z0-9_-]{1,64}$ needs no setting.
    if setting is None:
        monkeypatch.delenv("DESKMCP_TOOL_NAMES", raising=False)
    else:
        monkeypatch.setenv("DESKMCP_TOOL_NAMES", setting)
    composition = compose(workspace=tmp_path, keep_unavailable=True)
    names = [t.name for t in await composition.server.list_tools()]
    assert "granola_meetings_list" in names
    assert all(re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", n) for n in names)


async def test_deskmcp_tool_names_spec_keeps_the_dotted_names_for_clients_that_group_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("DESKMCP_TOOL_NAMES", "spec")
    composition = compose(workspace=tmp_path, keep_unavailable=True)
    async with Client(composition.server) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        listed = await client.call_tool("granola.meetings.list", {})
    assert "granola.meetings.list" in names and "granola_meetings_list" not in names
    assert "Unknown tool" not in listed.content[0].text  # type: ignore[union-attr]


async def test_published_annotations_leave_out_only_what_the_specification_defaults_already_say():
    server = build()

    @server.tool("notes.send", annotations=writes(destructive=False, idempotent=False, open_world=True))
    def send() -> dict[str, str]:
        """Send."""
        return {}

    @server.tool("notes.delete", annotations=writes(destructive=True, idempotent=True))
    def delete() -> dict[str, str]:
        """Delete."""
        return {}

    async with Client(server) as client:
        tools = {t.name: t.annotations for t in (await client.list_tools()).tools}
    dumped = {name: a.model_dump(by_alias=True, exclude_none=True) for name, a in tools.items() if a}
    assert dumped["notes.lookup"] == {"readOnlyHint": True, "openWorldHint": False}
    assert dumped["notes.send"] == {"destructiveHint": False}
    assert dumped["notes.delete"] == {"destructiveHint": True, "idempotentHint": True, "openWorldHint": False}
    # what a client reads with the specification's defaults is what was registered
    assert server.tool_annotations("notes.send") == writes(destructive=False, idempotent=False, open_world=True)
