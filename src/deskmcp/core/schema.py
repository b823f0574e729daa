"""What a tool definition costs the model: compact descriptions and JSON schemas.

Every tool's description and schemas are sent to the model on every turn, so the published
form keeps what a model uses (types, constraints, enums, defaults, descriptions) and drops what
pydantic adds for humans (titles), and writes an optional argument (default null) as its plain
type: leaving it out is how a model says "none". The server still accepts an explicit null.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

_LIST_ITEM = re.compile(r"^(?:[-*•]|\d+[.)])\s")

# Keywords whose value is a schema, a list of schemas, or a map of name -> schema.
_SCHEMA_VALUED = ("items", "additionalProperties", "not", "contains", "propertyNames")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties")


def compact_description(text: str | None) -> str:
    """A docstring as the model should read it: no indentation, one line per paragraph or list item."""
    if not text:
        return ""
    blocks: list[str] = []
    for paragraph in inspect.cleandoc(text).split("\n\n"):
        lines: list[str] = []
        for raw in paragraph.splitlines():
            line = raw.strip()
            if not line:
                continue
            if lines and not _LIST_ITEM.match(line):
                lines[-1] = f"{lines[-1]} {line}"
            else:
                lines.append(line)
        if lines:
            blocks.append("\n".join(lines))
    return "\n".join(blocks)


def compact_schema(schema: Any) -> Any:
    """`schema` without titles, with nullable `anyOf`s folded into a type list (a new object)."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key == "$defs" and isinstance(value, dict):
            # a model's docstring: the argument that uses it carries the description the model reads
            out[key] = {name: _without_description(compact_schema(sub)) for name, sub in value.items()}
        elif key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: compact_schema(sub) for name, sub in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [compact_schema(sub) for sub in value]
        elif key in _SCHEMA_VALUED and isinstance(value, dict):
            out[key] = compact_schema(value)
        elif key == "description" and isinstance(value, str):
            out[key] = compact_description(value)
        else:
            out[key] = value
    return _fold_nullable(out)


def _without_description(schema: Any) -> Any:
    return {k: v for k, v in schema.items() if k != "description"} if isinstance(schema, dict) else schema


def _fold_nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """`{"anyOf": [{"type": "string"}, {"type": "null"}]}` -> `{"type": ["string", "null"]}`, and with
    `"default": null` (an optional argument: leaving it out means null) just `{"type": "string"}`."""
    branches = schema.get("anyOf")
    if not isinstance(branches, list) or len(branches) != 2 or {"type": "null"} not in branches:
        return schema
    other = branches[0] if branches[1] == {"type": "null"} else branches[1]
    kind = other.get("type") if isinstance(other, dict) else None
    if not isinstance(kind, str) or kind == "null":
        return schema
    folded = {k: v for k, v in schema.items() if k != "anyOf"}
    optional = "default" in folded and folded["default"] is None
    if optional:
        del folded["default"]
    for key, value in other.items():
        folded.setdefault(key, value)
    if not optional:
        folded["type"] = [kind, "null"]
        if "enum" in folded and None not in folded["enum"]:
            folded["enum"] = [*folded["enum"], None]
    return folded


def argument_names(input_schema: dict[str, Any]) -> list[str]:
    properties = input_schema.get("properties")
    return list(properties) if isinstance(properties, dict) else []
