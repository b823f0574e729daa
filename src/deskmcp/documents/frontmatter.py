"""YAML frontmatter of Markdown documents: read with the core reader, written for the notes the server creates."""

from __future__ import annotations

import re
from typing import Any

import yaml

from deskmcp.core import frontmatter
from deskmcp.core.errors import ParseError


def split_frontmatter(text: str) -> tuple[dict[str, Any], str]:
    """The frontmatter mapping and the body after it, read as the vault reads notes (YAML 1.2:
    `no` stays a string, `0755` is 755, dates are ISO strings).

    A block that is not valid YAML, or not a mapping, is kept as part of the body: the file
    is still a readable Markdown document, it just has no metadata.
    """
    parts = frontmatter.split(text)
    if not parts.has_block:
        return {}, text
    try:
        values = frontmatter.parse(parts.yaml_text, "the document")
    except ParseError:
        return {}, text
    return values, parts.body.lstrip("\r\n")


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
    header = yaml.dump(
        {"title": title, "tags": tags, "created": created},
        Dumper=frontmatter.SafeDumper,  # strings stay strings when read back (`1e3`, `yes`)
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
    )
    body = content if content.endswith("\n") or not content else content + "\n"
    return f"---\n{header}---\n\n{body}"
