"""The OpenAPI 3.1 description of the tool API, generated from the same tool list `GET /tools` serves.

Each tool becomes `POST /api/tools/{name}` whose request body is the tool's input schema and
whose 200 response is its output schema. Pydantic puts shared definitions in a schema's
`$defs` with `#/$defs/...` references; those only resolve inside the schema itself, so they
move to `components.schemas` (prefixed with the tool name) and the references follow.
"""

from __future__ import annotations

import re
from typing import Any

from deskmcp import __version__

ERROR_STATUSES = {
    "400": "bad_request: the arguments do not match the input schema, or the body is not a JSON object",
    "401": "auth_required: missing or wrong bearer token",
    "403": "permission_denied: a path outside its root, or a missing scope",
    "404": "not_found: unknown tool or unknown item",
    "409": "conflict: the target already exists",
    "413": "request body larger than the server's limit (plain text)",
    "422": "parse_error: a source file or cache could not be parsed",
    "429": "rate_limited",
    "500": "internal_error or io_error",
    "502": "external_service_error or send_failed",
    "503": "mcp_unavailable",
    "504": "timeout",
}

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["error", "message", "details"],
    "properties": {
        "error": {"type": "string", "description": "Taxonomy code, e.g. not_found"},
        "message": {"type": "string", "description": "What went wrong and how to recover"},
        "details": {"type": "object"},
    },
}

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def component_name(tool: str, definition: str) -> str:
    return _UNSAFE.sub("_", f"{tool}.{definition}")


def hoist_definitions(schema: dict[str, Any], tool: str, components: dict[str, Any]) -> dict[str, Any]:
    """A copy of `schema` without `$defs`, whose references point into `components` (filled in)."""

    def rewrite(node: Any) -> Any:
        if isinstance(node, dict):
            out = {}
            for key, value in node.items():
                if key == "$ref" and isinstance(value, str) and value.startswith("#/$defs/"):
                    out[key] = "#/components/schemas/" + component_name(tool, value.removeprefix("#/$defs/"))
                elif key != "$defs":
                    out[key] = rewrite(value)
            return out
        if isinstance(node, list):
            return [rewrite(item) for item in node]
        return node

    for name, definition in (schema.get("$defs") or {}).items():
        components[component_name(tool, name)] = rewrite(definition)
    return rewrite(schema)


def _operation(tool: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
    name = tool["name"]
    description = tool.get("description") or ""
    input_schema = hoist_definitions(tool.get("inputSchema") or {"type": "object"}, name, components)
    output = tool.get("outputSchema")
    output_schema = hoist_definitions(output, name, components) if output else {"type": "object"}
    responses: dict[str, Any] = {
        "200": {
            "description": "The tool's structured result",
            "content": {"application/json": {"schema": output_schema}},
        }
    }
    for status, meaning in ERROR_STATUSES.items():
        responses[status] = {
            "description": meaning,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
        }
    operation: dict[str, Any] = {
        "operationId": _UNSAFE.sub("_", name),
        "summary": description.strip().splitlines()[0] if description.strip() else name,
        "description": description,
        "tags": [name.split(".")[0]],
        "requestBody": {"required": False, "content": {"application/json": {"schema": input_schema}}},
        "responses": responses,
    }
    if tool.get("annotations"):
        operation["x-mcp-annotations"] = tool["annotations"]
    return operation


def openapi_document(tools: list[dict[str, Any]], *, bearer: bool) -> dict[str, Any]:
    """OpenAPI 3.1 for the tool API, from `GET /tools`' list (MCP tool definitions as JSON)."""
    components: dict[str, Any] = {"Error": ERROR_SCHEMA}
    paths: dict[str, Any] = {
        "/": {
            "get": {
                "operationId": "health",
                "summary": "Health: version, servers composed, servers skipped",
                "security": [],
                "responses": {"200": {"description": "The server is up"}},
            }
        },
        "/tools": {
            "get": {
                "operationId": "list_tools",
                "summary": "Every tool with its input schema, output schema and annotations",
                "responses": {"200": {"description": "MCP tool definitions"}},
            }
        },
    }
    for tool in tools:
        paths[f"/api/tools/{tool['name']}"] = {"post": _operation(tool, components)}
    document: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {
            "title": "deskmcp tool API",
            "version": __version__,
            "description": "Call any deskmcp tool over plain HTTP. The same tools speak MCP at /mcp.",
        },
        "paths": paths,
        "components": {"schemas": components},
    }
    if bearer:
        document["components"]["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
        document["security"] = [{"bearer": []}]
    return document
