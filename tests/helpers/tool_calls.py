"""Calling a tool through an MCP client in tests: the result of a call that must succeed, or the
taxonomy error body of one that must fail. Every server's tests use these two, and `Connect`, the type
of the fixtures that build a client over a fresh server."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from mcp import Client

Connect = Callable[..., Client]
"""A fixture's builder: keyword overrides of the server's settings in, an unentered client out."""


async def call(client: Client, name: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    """The structured result of a tool call that must succeed."""
    result = await client.call_tool(name, args or {})
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def fail(client: Client, name: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    """The taxonomy error body of a tool call that must fail."""
    result = await client.call_tool(name, args or {})
    assert result.is_error, result.structured_content
    return json.loads(result.content[0].text)  # type: ignore[union-attr]
