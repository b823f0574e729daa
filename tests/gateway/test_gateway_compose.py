"""Composition of every server on one DeskServer, driven through the SDK's in-memory client."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from mcp import Client

from deskmcp.core.errors import BadRequest
from deskmcp.gateway import NameClash, compose, parse_names, select
from deskmcp.servers import SERVERS, ServerSpec


def test_compose_registers_every_available_server_on_one_registry(workspace: Path) -> None:
    composition = compose()

    assert composition.included == list(SERVERS)
    assert composition.skipped == {}
    owners = composition.server.tool_owners
    assert owners["granola.meetings.search"] == "meetings"
    assert owners["granola.cache.status"] == "meetings"


def test_compose_skips_an_unconfigured_server_with_exactly_one_log_line(
    empty_workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="deskmcp"):
        composition = compose()

    assert "meetings" not in composition.included
    assert list(composition.skipped) == ["meetings"]
    assert "Granola cache" in composition.skipped["meetings"]
    about_meetings = [r for r in caplog.records if "meetings" in r.getMessage()]
    assert len(about_meetings) == 1
    assert about_meetings[0].getMessage().startswith("skipping server meetings: ")
    assert "meetings" not in set(composition.server.tool_owners.values())


def test_compose_keeps_an_unconfigured_server_when_asked_so_its_tools_explain(empty_workspace: Path) -> None:
    composition = compose(keep_unavailable=True)

    assert composition.included == list(SERVERS)
    assert "granola.cache.status" in composition.server.tool_owners


def test_compose_refuses_two_servers_claiming_one_tool_name(workspace: Path) -> None:
    twice = [ServerSpec("first", "", "deskmcp.meetings.server"), ServerSpec("second", "", "deskmcp.meetings.server")]

    with pytest.raises(NameClash, match=r"'granola\.meetings\.list' is registered by both 'first' and 'second'"):
        compose(twice)


def test_select_honours_only_and_exclude_in_registry_order() -> None:
    assert [s.name for s in select()] == list(SERVERS)
    assert [s.name for s in select(only=["meetings"])] == ["meetings"]
    assert select(exclude=["meetings"]) == [s for s in SERVERS.values() if s.name != "meetings"]


def test_select_and_parse_names_reject_an_unknown_server_with_the_valid_names() -> None:
    with pytest.raises(BadRequest, match="meetings"):
        select(only=["calendar"])
    with pytest.raises(BadRequest) as caught:
        parse_names("meetings, calendar")
    assert caught.value.details["unknown"] == ["calendar"]
    assert parse_names(" meetings ,") == ["meetings"]


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_composed_server_lists_and_calls_tools_in_both_protocol_modes(workspace: Path, mode: str) -> None:
    server = compose(toolsets="all").server

    async with Client(server, mode=mode) as client:
        listed = await client.list_tools()
        found = await client.call_tool("granola.meetings.search", {"q": "roadmap"})
        missing = await client.call_tool("granola.meetings.get", {"id": "m-nope"})
        unknown = await client.call_tool("no.such.tool", {})

    # tool_owners holds the names as registered; clients see them as published (safe, the default)
    assert {t.name for t in listed.tools} == {name.replace(".", "_") for name in server.tool_owners}
    assert not found.is_error
    assert found.structured_content is not None
    assert [hit["id"] for hit in found.structured_content["items"]] == ["m-roadmap"]
    assert missing.is_error
    assert json.loads(missing.content[0].text)["error"] == "not_found"  # type: ignore[union-attr]
    assert unknown.is_error
    assert json.loads(unknown.content[0].text)["error"] == "not_found"  # type: ignore[union-attr]


@pytest.mark.anyio
@pytest.mark.parametrize("names", ["spec", "safe"])
async def test_a_skipped_servers_tools_answer_naming_the_server_and_why(
    empty_workspace: Path, monkeypatch: pytest.MonkeyPatch, names: str
) -> None:
    monkeypatch.setenv("DESKMCP_TOOL_NAMES", names)
    composition = compose()
    reason = composition.skipped["meetings"]
    tool = "granola.meetings.list" if names == "spec" else "granola_meetings_list"

    async with Client(composition.server) as client:
        listed = {t.name for t in (await client.list_tools()).tools}
        result = await client.call_tool(tool, {})
        unknown = await client.call_tool("no.such.tool", {})
        instructions = client.instructions or ""

    assert tool not in listed
    assert result.is_error
    error = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert error["error"] == "not_found"
    assert "meetings server" in error["message"]
    assert reason in error["message"]
    assert error["details"] == {"tool": tool, "server": "meetings", "reason": reason}
    assert "Unknown tool" in unknown.content[0].text  # type: ignore[union-attr]
    assert f"- meetings: {reason}" in instructions


def test_describing_a_skipped_servers_tools_creates_nothing(empty_workspace: Path, tmp_path: Path) -> None:
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    composition = compose()
    assert {"granola.cache.status", "granola_cache_status"} <= set(composition.server.withheld_tools)
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


READ_ONLY_SWITCHES = {
    "vault": ("VAULT_READ_ONLY", "1", "write_note", {"path": "new", "body": "x"}),
    "sheets": ("SHEETS_READ_ONLY", "1", "create_spreadsheet", {"title": "New"}),
    "mail": ("MAIL_MODE", "read_only", "send_email", {"to": "a@example.org", "subject": "s", "body": "b"}),
}


@pytest.mark.anyio
@pytest.mark.parametrize("composed", [False, True], ids=["alone", "composed"])
async def test_read_only_vault_sheets_and_mail_offer_only_read_only_tools_and_name_their_setting(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, composed: bool
) -> None:
    for variable, value, _, _ in READ_ONLY_SWITCHES.values():
        monkeypatch.setenv(variable, value)
    monkeypatch.setenv("DESKMCP_TOOLSETS", "all")
    specs = [SERVERS[name] for name in READ_ONLY_SWITCHES]
    servers = [compose(specs).server] if composed else [spec.create_server(spec.settings()) for spec in specs]
    tools: dict[str, bool | None] = {}
    errors: dict[str, dict[str, object]] = {}
    for server in servers:
        async with Client(server) as client:
            tools.update(
                {t.name: t.annotations and t.annotations.read_only_hint for t in (await client.list_tools()).tools}
            )
            for name, (_, _, tool, arguments) in READ_ONLY_SWITCHES.items():
                if tool in server.withheld_tools:
                    result = await client.call_tool(tool, arguments)
                    errors[name] = json.loads(result.content[0].text)  # type: ignore[union-attr]

    assert {"read_note", "read_values", "list_emails"} <= set(tools)
    assert {name for name, read_only in tools.items() if not read_only} == set()
    assert set(errors) == set(READ_ONLY_SWITCHES)
    for name, (variable, value, tool, _) in READ_ONLY_SWITCHES.items():
        assert errors[name]["error"] == "permission_denied"
        assert f"{name} is read-only ({variable}={value}): {tool} is not available" in str(errors[name]["message"])
    assert not (workspace / "vault" / "new.md").exists()
    assert not (workspace / "sheets" / "New.xlsx").exists()


def test_without_read_only_settings_the_writing_tools_are_offered(workspace: Path) -> None:
    import anyio

    server = compose([SERVERS[name] for name in READ_ONLY_SWITCHES], toolsets="all").server
    names = {t.name for t in anyio.run(server.list_tools)}
    assert {tool for _, _, tool, _ in READ_ONLY_SWITCHES.values()} <= names
    assert server.withheld_tools == {}
