"""A loopback stand-in for Granola's hosted MCP server: the SDK's `MCPServer` over streamable
HTTP, its tools named and shaped as published (see `deskmcp.meetings.granola_mcp`), behind
deskmcp's own OAuth gate with the tests' oidc-provider as authorization server.

Tools: `list_meetings` `{}`, `get_meetings` `{"meeting_ids": [...]}`, `get_meeting_transcript`
`{"meeting_id": ...}`. Answers are JSON text content (no structuredContent), the documented
transport of the hosted server's answers: `{"meetings": [...]}` (each meeting with the public
API's note fields, listed with id/title/created_at/updated_at only) and `{"transcript": [...]}`.
`structured` sends the same data as structuredContent instead. `free_plan` refuses transcripts
as an error result saying so; `garbled` answers a tool with text deskmcp cannot read.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import orjson
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent

from tests.helpers.authorization_server import CLIENT_SECRET, INTROSPECTOR, AuthorizationServer
from tests.helpers.network import free_port, serving

HANDSHAKES = frozenset({"initialize", "server/discover"})


@dataclass
class HostedGranola:
    url: str
    notes: list[dict[str, Any]] = field(default_factory=list)
    free_plan: bool = False
    garbled: set[str] = field(default_factory=set)
    structured: bool = False
    """Send answers as structuredContent, with text that is not JSON beside them."""
    calls: list[tuple[str, Any]] = field(default_factory=list)
    handshakes: int = 0
    """Requests that open an MCP session (`initialize`, or `server/discover` as the SDK 2.x client
    opens one): sessions opened."""


class _ReadScope:
    """Every tool of the stand-in needs the basic `read` scope."""

    def __init__(self) -> None:
        self.tool_toolsets: dict[str, str] = {}

    def tool_scope(self, name: str) -> str:
        del name
        return "read"


def _text(tool: str, hosted: HostedGranola, data: Any) -> Any:
    if hosted.structured:
        return CallToolResult(content=[TextContent(type="text", text="Meetings below.")], structured_content=data)
    text = "Here are your meetings:" if tool in hosted.garbled else orjson.dumps(data).decode()
    return [TextContent(type="text", text=text)]


@contextmanager
def hosted_granola(issuer: AuthorizationServer) -> Iterator[HostedGranola]:
    """The stand-in on a free loopback port, its tokens from `issuer`."""
    from deskmcp.serving.auth.gate import AuthorizationGate, ResourceServer
    from deskmcp.serving.auth.settings import AuthorizationSettings

    port = free_port()
    hosted = HostedGranola(url=f"http://127.0.0.1:{port}/mcp")
    server = MCPServer("granola")

    @server.tool("list_meetings")
    def list_meetings() -> Any:
        hosted.calls.append(("list_meetings", None))
        listed = [{k: n[k] for k in ("id", "title", "created_at", "updated_at")} for n in hosted.notes]
        return _text("list_meetings", hosted, {"meetings": listed})

    @server.tool("get_meetings")
    def get_meetings(meeting_ids: list[str]) -> Any:
        hosted.calls.append(("get_meetings", list(meeting_ids)))
        found = [{k: v for k, v in n.items() if k != "transcript"} for n in hosted.notes if n["id"] in meeting_ids]
        return _text("get_meetings", hosted, {"meetings": found})

    @server.tool("get_meeting_transcript")
    def get_meeting_transcript(meeting_id: str) -> Any:
        hosted.calls.append(("get_meeting_transcript", meeting_id))
        if hosted.free_plan:
            raise ToolError("Transcripts are only available on paid Granola plans. Upgrade to access them.")
        note = next((n for n in hosted.notes if n["id"] == meeting_id), None)
        if note is None:
            raise ToolError(f"Meeting {meeting_id} not found")
        return _text("get_meeting_transcript", hosted, {"transcript": note.get("transcript") or []})

    settings = AuthorizationSettings(
        issuer=issuer.issuer, resource=hosted.url, client_id=INTROSPECTOR, client_secret=CLIENT_SECRET
    )
    app = AuthorizationGate(
        server.streamable_http_app(),
        ResourceServer(settings),
        _ReadScope(),
        mcp_path="/mcp",
        open_paths=frozenset(),
        max_body_bytes=1 << 20,
    )

    async def recording(scope: Any, receive: Any, send: Any) -> None:
        """Count the requests that open a session (read from the body, then handed on)."""
        if scope["type"] != "http" or scope["method"] != "POST":
            await app(scope, receive, send)
            return
        messages = []
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request" or not message.get("more_body"):
                break
        body = b"".join(m.get("body", b"") for m in messages)
        try:
            sent = orjson.loads(body)
        except orjson.JSONDecodeError:
            sent = None
        if isinstance(sent, dict) and sent.get("method") in HANDSHAKES:
            hosted.handshakes += 1
        pending = iter(messages)

        async def replay() -> Any:
            return next(pending, None) or await receive()

        await app(scope, replay, send)

    with serving(recording, port=port):
        yield hosted
