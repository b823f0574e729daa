"""The tool surface every server shares: strict arguments, compact results and definitions, toolsets."""

from __future__ import annotations

import json
from typing import Annotated, Any

import pytest
from mcp import Client
from mcp.types import ToolListChangedNotification
from pydantic import BaseModel, Field

from deskmcp.core.errors import BadRequest
from deskmcp.core.schema import compact_description, compact_schema
from deskmcp.core.server import READ_ONLY, DeskServer, writes
from deskmcp.core.toolsets import declare, select

pytestmark = pytest.mark.anyio


class Count(BaseModel):
    total: int
    items: list[str]


def build(*, output_schemas: bool = False, tool_names: Any = "spec") -> DeskServer:
    server = DeskServer("deskmcp-demo", tool_names=tool_names, output_schemas=output_schemas)

    @server.tool("demo.count", annotations=READ_ONLY)
    def count(
        word: Annotated[str, Field(description="A word; see demo.clear for the opposite")],
        limit: Annotated[int, Field(ge=1, le=10, description="Page size")] = 5,
        folder: Annotated[str | None, Field(description="Only this folder")] = None,
    ) -> Count:
        """Count things.

        Indented second paragraph,
        on two lines.
        """
        return Count(total=3985, items=[word] * min(limit, 2))

    @server.tool("demo.clear", annotations=writes(destructive=True, idempotent=True), toolset="admin")
    def clear() -> Count:
        """Clear everything."""
        return Count(total=0, items=[])

    server.declare_toolsets("demo", {"read": "Counting", "admin": "Clearing"}, ("read",))
    return server


def error_of(result: Any) -> dict[str, Any]:
    assert result.is_error
    return json.loads(result.content[0].text)


async def test_an_unknown_argument_is_a_bad_request_naming_the_valid_ones() -> None:
    async with Client(build()) as client:
        result = await client.call_tool("demo.count", {"word": "a", "bogus_arg": 1})

    error = error_of(result)
    assert error["error"] == "bad_request"
    assert "'bogus_arg'" in error["message"]
    assert "word, limit, folder" in error["message"]
    assert error["details"] == {"unknown": ["bogus_arg"], "valid": ["word", "limit", "folder"]}


async def test_result_text_is_the_structured_content_as_compact_json() -> None:
    async with Client(build()) as client:
        result = await client.call_tool("demo.count", {"word": "a"})

    text = result.content[0].text  # type: ignore[union-attr]
    assert json.loads(text) == result.structured_content == {"total": 3985, "items": ["a", "a"]}
    assert text == '{"total":3985,"items":["a","a"]}'


async def test_a_result_compact_json_cannot_write_keeps_the_sdk_text() -> None:
    server = DeskServer("deskmcp-demo")

    @server.tool("demo.big", annotations=READ_ONLY)
    def big() -> Count:
        """A total beyond 64 bits."""
        return Count(total=10**30, items=[])

    async with Client(server) as client:
        result = await client.call_tool("demo.big", {})

    assert not result.is_error
    assert result.structured_content == {"total": 10**30, "items": []}
    assert json.loads(result.content[0].text) == result.structured_content  # type: ignore[union-attr]


async def test_definitions_are_compact_and_strict_without_output_schemas_by_default() -> None:
    async with Client(build()) as client:
        tool = next(t for t in (await client.list_tools()).tools if t.name == "demo.count")

    assert tool.description == "Count things.\nIndented second paragraph, on two lines."
    assert tool.output_schema is None
    schema = tool.input_schema
    assert "title" not in schema
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["word"]
    assert schema["properties"]["folder"] == {"description": "Only this folder", "type": "string"}
    assert schema["properties"]["limit"] == {
        "default": 5,
        "description": "Page size",
        "maximum": 10,
        "minimum": 1,
        "type": "integer",
    }


async def test_output_schemas_are_published_when_configured() -> None:
    async with Client(build(output_schemas=True)) as client:
        tool = next(t for t in (await client.list_tools()).tools if t.name == "demo.count")

    assert tool.output_schema is not None
    assert set(tool.output_schema["properties"]) == {"total", "items"}
    assert "title" not in tool.output_schema


async def test_safe_names_reach_parameter_descriptions_too() -> None:
    async with Client(build(tool_names="safe")) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}

    assert set(tools) == {"demo_count", "demo_clear"}
    listed = json.dumps([t.model_dump(mode="json") for t in tools.values()])
    assert "demo.clear" not in listed
    assert "see demo_clear" in tools["demo_count"].input_schema["properties"]["word"]["description"]


async def test_an_unknown_tool_is_named_as_the_client_wrote_it() -> None:
    async with Client(build(tool_names="safe")) as client:
        unknown = await client.call_tool("demo.nothing", {"word": "a"})

    error = error_of(unknown)
    assert error["error"] == "not_found" and "'demo.nothing'" in error["message"], error


async def test_a_tool_published_under_its_safe_name_answers_to_its_dotted_name_too() -> None:
    # Clients configured before safe names became the default keep calling the dotted names.
    async with Client(build(tool_names="safe")) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        dotted = await client.call_tool("demo.count", {"word": "a"})
        published = await client.call_tool("demo_count", {"word": "a"})
        refused = await client.call_tool("demo.count", {"letter": "a"})

    assert "demo_count" in names and "demo.count" not in names
    assert not dotted.is_error and not published.is_error
    assert dotted.structured_content == published.structured_content
    assert "demo_count" in error_of(refused)["message"]  # errors name the tool as it is listed


async def test_a_tool_outside_the_enabled_toolsets_is_neither_listed_nor_callable() -> None:
    server = build()
    server.select_toolsets("default")
    async with Client(server) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        refused = await client.call_tool("demo.clear", {})

    assert names == ["demo.count"]
    error = error_of(refused)
    assert error["error"] == "not_found"
    assert error["details"] == {"tool": "demo.clear", "toolset": "demo.admin"}
    assert "DESKMCP_TOOLSETS" in error["message"]


async def test_dynamic_mode_lists_toolsets_and_announces_each_change() -> None:
    server = build()
    server.select_toolsets("dynamic")
    notices: list[Any] = []

    async def on_message(message: Any) -> None:
        notices.append(message)

    async with Client(server, mode="legacy", message_handler=on_message) as client:
        before = {t.name for t in (await client.list_tools()).tools}
        toolsets = (await client.call_tool("list_toolsets", {})).structured_content
        enabled = (await client.call_tool("enable_toolset", {"toolset": "demo.admin"})).structured_content
        after = {t.name for t in (await client.list_tools()).tools}
        again = (await client.call_tool("enable_toolset", {"toolset": "demo.admin"})).structured_content
        unknown = await client.call_tool("enable_toolset", {"toolset": "nope"})
        cleared = await client.call_tool("demo.clear", {})

    assert before == {"list_toolsets", "enable_toolset", "disable_toolset"}
    assert toolsets is not None and enabled is not None and again is not None
    assert {t["id"]: t["enabled"] for t in toolsets["toolsets"]} == {"demo.read": False, "demo.admin": False}
    assert next(t for t in toolsets["toolsets"] if t["id"] == "demo.admin")["tools"] == ["demo.clear"]
    assert enabled["changed"] is True
    assert after == before | {"demo.clear"}
    assert again["changed"] is False
    assert error_of(unknown)["error"] == "bad_request"
    assert not cleared.is_error
    changes = [m for m in notices if isinstance(getattr(m, "root", m), ToolListChangedNotification)]
    assert len(changes) == 1


def test_toolset_words_select_servers_sets_and_exclusions() -> None:
    sets = declare("vault", {"read": "r", "write": "w", "browse": "b"}, ("read", "write")) + declare(
        "meetings", {"read": "r", "more": "m"}, ("read",)
    )

    assert select(None, sets).enabled == {"vault.read", "vault.write", "meetings.read"}
    assert select("all", sets).enabled == {t.id for t in sets}
    assert select("vault", sets).enabled == {"vault.read", "vault.write", "vault.browse"}
    assert select("default,vault.browse,-meetings", sets).enabled == {"vault.read", "vault.write", "vault.browse"}
    assert select("-vault.write", sets).enabled == {"vault.read", "meetings.read"}
    assert select("dynamic", sets).dynamic and select("dynamic", sets).enabled == frozenset()
    assert select("dynamic,meetings.more", sets).enabled == {"meetings.more"}
    assert select("mail.read,default", sets, absent=["mail"]).enabled == select("default", sets).enabled
    with pytest.raises(BadRequest, match=r"vault\.read"):
        select("vault.nope", sets)


def test_a_default_toolset_must_be_declared() -> None:
    with pytest.raises(ValueError, match="extra"):
        declare("vault", {"read": "r"}, ("read", "extra"))


def test_compact_description_joins_wrapped_lines_and_keeps_list_items() -> None:
    text = """First line
        goes on.

        - one item
          wrapped
        - two
    """
    assert compact_description(text) == "First line goes on.\n- one item wrapped\n- two"


def test_compact_schema_keeps_a_property_named_title_and_folds_only_optional_nulls() -> None:
    schema = {
        "title": "Args",
        "type": "object",
        "properties": {
            "title": {"title": "Title", "type": "string"},
            "maybe": {"anyOf": [{"type": "integer"}, {"type": "null"}], "title": "Maybe"},
            "gone": {"anyOf": [{"type": "string", "enum": ["a"]}, {"type": "null"}], "default": None},
        },
    }

    assert compact_schema(schema) == {
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "maybe": {"type": ["integer", "null"]},
            "gone": {"type": "string", "enum": ["a"]},
        },
    }
