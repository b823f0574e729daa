"""YAML frontmatter: reading it from Markdown, and writing the notes the server creates."""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import Any

import yaml

_OPEN = re.compile(r"\A\ufeff?---[ \t]*\r?\n")
_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*\r?$", re.MULTILINE)


def _plain(value: Any) -> Any:
    """YAML values as JSON-safe ones (dates become ISO strings)."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def split_frontmatter(text: str) -> tuple[dict[str, Any], str]:
    """The frontmatter mapping and the body after it.

    A block that is not valid YAML, or not a mapping, is kept as part of the body: the file
    is still a readable Markdown document, it just has no metadata.
    """
    opening = _OPEN.match(text)
    if not opening:
        return {}, text
    closing = _CLOSE.search(text, opening.end())
    if not closing:
        return {}, text
    try:
        data = yaml.safe_load(text[opening.end() : closing.start()])
    except yaml.YAMLError:
        return {}, text
    if not isinstance(data, dict):
        return {}, text
    body = text[closing.end() :].lstrip("\r\n")
    return _plain(data), body


def frontmatter_tags(meta: dict[str, Any]) -> list[str]:
    """Tags declared in frontmatter (`tags:` or `tag:`, a list or a comma/space separated string)."""
    raw = meta.get("tags", meta.get("tag"))
    if isinstance(raw, str):
        return [t for t in re.split(r"[,\s]+", raw) if t]
    if isinstance(raw, list):
        return [str(t) for t in raw if t is not None and str(t).strip()]
    return []


def render_note(title: str, tags: list[str], created: str, content: str) -> str:
    """A Markdown note: YAML frontmatter (title, tags, created), then the content."""
    header = yaml.safe_dump(
        {"title": title, "tags": tags, "created": created},
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
    )
    body = content if content.endswith("\n") or not content else content + "\n"
    return f"---\n{header}---\n\n{body}"
