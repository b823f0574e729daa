"""The tool API, for programs that don't speak MCP: `GET /` (health), `GET /tools`,
`POST /api/tools/{name}` and `GET /openapi.json`. It calls the same `DeskServer.call_tool` as
`/mcp`, so a tool behaves and fails the same way whichever door it was called through.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import orjson
from mcp.server.transport_security import (
    TransportSecurityMiddleware,
)
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, TextContent
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from deskmcp import __version__
from deskmcp.core.errors import (
    BadRequest,
    InternalError,
    from_payload,
)
from deskmcp.gateway import Composition
from deskmcp.serving.openapi import openapi_document

if TYPE_CHECKING:
    pass
from deskmcp.serving.middleware import bearer_ok
from deskmcp.serving.options import MCP_PATH, HttpOptions, security_settings
from deskmcp.serving.responses import error_response, json_response

log = logging.getLogger("deskmcp.http")


def tool_result_body(result: object) -> tuple[int, Any]:
    """The HTTP status and JSON body for what `DeskServer.call_tool` returned."""
    if not isinstance(result, CallToolResult):
        # An InputRequiredResult: the tool wants to ask the user something, which needs MCP.
        exc = BadRequest("This tool needs interactive input; call it through the MCP endpoint /mcp.")
        return exc.http_status, exc.to_dict()
    if result.is_error:
        text = "".join(c.text for c in result.content if isinstance(c, TextContent))
        try:
            payload = orjson.loads(text)
        except orjson.JSONDecodeError:
            payload = {"error": "internal_error", "message": text}
        exc = from_payload(payload if isinstance(payload, dict) else {"message": text})
        return exc.http_status, exc.to_dict()
    if result.structured_content is not None:
        return 200, result.structured_content
    return 200, {"content": [c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in result.content]}


class ToolApi:
    """The REST handlers, bound to one composition."""

    def __init__(self, composition: Composition, options: HttpOptions) -> None:
        self.composition = composition
        self.server = composition.server
        self.options = options
        self.security = TransportSecurityMiddleware(security_settings(options))

    async def tools(self) -> list[dict[str, Any]]:
        """The enabled tools, output schemas included (programs use them); toolsets may change."""
        listed = self.server.tools_for_principal(await self.server.tool_definitions(output_schemas=True))
        return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed]

    async def health(self, request: Request) -> Response:
        if (rejected := await self.security.validate_request(request)) is not None:
            return rejected
        body: dict[str, Any] = {
            "status": "ok",
            "name": "deskmcp",
            "version": __version__,
            "servers": self.composition.included,
            "skipped": sorted(self.composition.skipped),
            "tools": len(await self.tools()),
            "mcp": MCP_PATH,
            "auth": "oauth" if self.options.authorization else "bearer" if self.options.token else "none",
        }
        # Skip reasons name local paths: only for callers who hold the token (or when none is needed).
        if self.options.authorization is None and bearer_ok(request.headers, self.options.token):
            body["skipped_reasons"] = self.composition.skipped
        return json_response(body)

    async def list_tools(self, request: Request) -> Response:
        if (rejected := await self.security.validate_request(request)) is not None:
            return rejected
        return json_response(await self.tools())

    async def openapi(self, request: Request) -> Response:
        if (rejected := await self.security.validate_request(request)) is not None:
            return rejected
        bearer = self.options.token is not None or self.options.authorization is not None
        return json_response(openapi_document(await self.tools(), bearer=bearer))

    async def call(self, request: Request) -> Response:
        # is_post: a JSON content type is required, which a cross-site form or "simple" request cannot send.
        if (rejected := await self.security.validate_request(request, is_post=True)) is not None:
            return rejected
        name = request.path_params["name"]
        try:
            raw = await request.body()
        except ClientDisconnect:  # gone before its request was whole: nothing to run, no one to answer
            log.info("a client left while sending its call of %s", name)
            return Response(status_code=400)
        try:
            arguments = orjson.loads(raw) if raw.strip() else {}
        except orjson.JSONDecodeError as exc:
            return error_response(BadRequest(f"The body is not valid JSON ({exc}). Send a JSON object of arguments."))
        if not isinstance(arguments, dict):
            return error_response(
                BadRequest('The body must be a JSON object of arguments, e.g. {} or {"q": "budget"}.')
            )
        try:
            # DeskServer.call_tool answers the taxonomy's errors as results; only the SDK's and crashes raise.
            result = await self.server.call_tool(name, arguments)
        except MCPError as exc:
            return error_response(InternalError(f"Tool {name} failed: {exc.error.message}", {"tool": name}))
        except Exception:  # the outermost handler: log the traceback, never send it
            log.exception("tool %s crashed behind the tool API", name)
            return error_response(
                InternalError(f"Tool {name} failed unexpectedly; the server log has the details.", {"tool": name})
            )
        status, body = tool_result_body(result)
        return json_response(body, status)


def tool_routes(api: ToolApi) -> list[BaseRoute]:
    return [
        Route("/tools", api.list_tools, methods=["GET"]),
        Route("/openapi.json", api.openapi, methods=["GET"]),
        Route("/api/tools/{name}", api.call, methods=["POST"]),
    ]
