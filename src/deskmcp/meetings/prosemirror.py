"""ProseMirror JSON (Granola's notes and panels) to Markdown."""

from __future__ import annotations

from typing import Any


def to_markdown(node: object) -> str:
    """Render a ProseMirror document (dict, or JSON already parsed) as Markdown text."""
    if not isinstance(node, dict):
        return ""
    blocks = _blocks(node.get("content"), indent="")
    return "\n\n".join(b for b in blocks if b.strip()).strip()


def _children(node: dict[str, Any]) -> list[Any]:
    content = node.get("content")
    return content if isinstance(content, list) else []


def _blocks(content: object, indent: str) -> list[str]:
    if not isinstance(content, list):
        return []
    out: list[str] = []
    for child in content:
        if isinstance(child, dict):
            out.append(_block(child, indent))
    return out


def _block(node: dict[str, Any], indent: str) -> str:
    kind = node.get("type")
    attrs = node.get("attrs") if isinstance(node.get("attrs"), dict) else {}
    assert isinstance(attrs, dict)
    if kind == "heading":
        level = attrs.get("level", 1)
        level = level if isinstance(level, int) and 1 <= level <= 6 else 1
        return f"{indent}{'#' * level} {_inline(_children(node))}"
    if kind in ("bulletList", "bullet_list"):
        return _list(node, indent, ordered=False)
    if kind in ("orderedList", "ordered_list"):
        return _list(node, indent, ordered=True)
    if kind in ("taskList", "task_list"):
        return _list(node, indent, ordered=False, tasks=True)
    if kind == "blockquote":
        inner = "\n\n".join(_blocks(node.get("content"), ""))
        return "\n".join(f"{indent}> {line}" if line else f"{indent}>" for line in inner.splitlines())
    if kind in ("codeBlock", "code_block"):
        lang = attrs.get("language") or ""
        return f"{indent}```{lang}\n{_plain(node)}\n{indent}```"
    if kind in ("horizontalRule", "horizontal_rule"):
        return f"{indent}---"
    if kind == "doc":
        return "\n\n".join(_blocks(node.get("content"), indent))
    if kind == "text":  # a text node standing where a block would
        return f"{indent}{_marked(str(node.get('text', '')), node.get('marks'))}"
    # paragraph and anything unknown: keep the text; an unknown node holding blocks keeps theirs.
    if any(isinstance(c, dict) and c.get("type") in _BLOCKS for c in _children(node)):
        return "\n\n".join(b for b in _blocks(node.get("content"), indent) if b.strip())
    return f"{indent}{_inline(_children(node))}"


_BLOCKS = frozenset(
    {
        "paragraph",
        "heading",
        "bulletList",
        "bullet_list",
        "orderedList",
        "ordered_list",
        "taskList",
        "task_list",
        "listItem",
        "list_item",
        "taskItem",
        "task_item",
        "blockquote",
        "codeBlock",
        "code_block",
        "horizontalRule",
        "horizontal_rule",
        "table",
        "tableRow",
        "table_row",
        "tableCell",
        "table_cell",
        "tableHeader",
        "table_header",
        "doc",
    }
)
"""Nodes that hold or are blocks; anything else inside a paragraph is inline (text, a mention,
an emoji, an image) and is rendered in the paragraph's line."""


def _list(node: dict[str, Any], indent: str, *, ordered: bool, tasks: bool = False) -> str:
    lines: list[str] = []
    number = 1
    for item in _children(node):
        if not isinstance(item, dict):
            continue
        marker = f"{number}." if ordered else "-"
        if tasks or item.get("type") in ("taskItem", "task_item"):
            item_attrs = item.get("attrs") if isinstance(item.get("attrs"), dict) else {}
            checked = bool(item_attrs.get("checked")) if isinstance(item_attrs, dict) else False
            marker = f"{marker} [{'x' if checked else ' '}]"
        number += 1
        parts = _children(item)
        first, rest = (parts[0], parts[1:]) if parts else ({}, [])
        head = (
            _inline(_children(first))
            if isinstance(first, dict) and first.get("type") == "paragraph"
            else (_block(first, "").strip() if isinstance(first, dict) else "")
        )
        lines.append(f"{indent}{marker} {head}".rstrip())
        for sub in rest:
            if isinstance(sub, dict):
                lines.append(_block(sub, indent + "  "))
    return "\n".join(lines)


def _inline(content: list[Any]) -> str:
    text: list[str] = []
    for child in content:
        if not isinstance(child, dict):
            continue
        kind = child.get("type")
        if kind in ("hardBreak", "hard_break"):
            text.append("\n")
        elif kind == "text":
            text.append(_marked(str(child.get("text", "")), child.get("marks")))
        elif kind == "mention":
            attrs = child.get("attrs") if isinstance(child.get("attrs"), dict) else {}
            label = attrs.get("label") or attrs.get("id") if isinstance(attrs, dict) else None
            text.append(f"@{label}" if label else "")
        elif kind == "emoji":
            attrs = child.get("attrs") if isinstance(child.get("attrs"), dict) else {}
            assert isinstance(attrs, dict)
            shown = attrs.get("emoji") or attrs.get("native") or (f":{attrs['name']}:" if attrs.get("name") else "")
            text.append(str(shown) if shown else _inline(_children(child)))
        elif kind == "image":
            attrs = child.get("attrs") if isinstance(child.get("attrs"), dict) else {}
            assert isinstance(attrs, dict)
            src = attrs.get("src")
            text.append(f"![{attrs.get('alt') or ''}]({src})" if src else "")
        else:
            text.append(_inline(_children(child)) or str(child.get("text") or ""))
    return "".join(text)


def _marked(text: str, marks: object) -> str:
    if not isinstance(marks, list) or not text.strip():
        return text
    for mark in marks:
        if not isinstance(mark, dict):
            continue
        kind = mark.get("type")
        if kind in ("bold", "strong"):
            text = f"**{text}**"
        elif kind in ("italic", "em"):
            text = f"*{text}*"
        elif kind == "code":
            text = f"`{text}`"
        elif kind == "strike":
            text = f"~~{text}~~"
        elif kind == "link":
            attrs = mark.get("attrs") if isinstance(mark.get("attrs"), dict) else {}
            href = attrs.get("href") if isinstance(attrs, dict) else None
            if href:
                text = f"[{text}]({href})"
    return text


def _plain(node: dict[str, Any]) -> str:
    parts: list[str] = []
    for child in _children(node):
        if isinstance(child, dict):
            parts.append(str(child.get("text", "")) if child.get("type") == "text" else _plain(child))
    return "".join(parts)
