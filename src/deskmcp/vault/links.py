"""What Obsidian sees in a note's Markdown: wikilinks, tags and headings.

Code (fenced blocks and `inline code`) is blanked out first, so a `#define` or a
`[[example]]` in a code sample is neither a tag nor a link. Line numbers are kept.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from deskmcp.core.search.terms import fold

_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
_INLINE_CODE = re.compile(r"(`+)[^`\n]*?\1")
_WIKILINK = re.compile(r"(!?)\[\[([^\[\]\n]+?)\]\]")
_MD_LINK = re.compile(r"(!?)\[([^\]\n]*)\]\(<?([^)<>\s]+?\.md)(#[^)\s>]*)?>?(?:\s+\"[^\"]*\")?\)", re.IGNORECASE)
_TAG = re.compile(r"(?:^|(?<=[\s(\[,;]))#([\w\-/]+)", re.UNICODE)
# `_TAG` found from its `#`: a pattern that starts with a literal is searched for by that character
# instead of being tried at every position of a long line. A `#` then counts only where `_TAG`'s
# lookbehind allows it (the run a match consumes holds no `#`, so no match of `_TAG` is skipped).
_TAG_FROM_HASH = re.compile(r"#([\w\-/]+)", re.UNICODE)
_TAG_AFTER = re.compile(r"[\s(\[,;]", re.UNICODE)
# `_WIKILINK` found from its `[[` the same way, the `!` of an embed read from the character before.
_WIKILINK_FROM_BRACKETS = re.compile(r"\[\[([^\[\]\n]+?)\]\]")
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
_URL_SCHEME = re.compile(r"^[a-z][a-z0-9+.\-]*:", re.IGNORECASE)
WIKILINK, MD_LINK, URL_SCHEME = _WIKILINK, _MD_LINK, _URL_SCHEME
"""Exported for rewriting links (`relink`): the same patterns find and rewrite them."""


@dataclass(frozen=True)
class Link:
    target: str
    """As written, without heading or alias (`Projects/Alpha`, `../people/Ann.md`)."""
    target_key: str
    """Normalised for resolution: lower case, `/`-separated, no `.md`, relative parts joined."""
    heading: str | None
    alias: str | None
    embed: bool
    line: int


def line_context(lines: list[str], number: int) -> str:
    """What a link's `context` shows: its line (1-based in `lines`), trimmed to 240 characters."""
    return lines[number - 1].strip()[:240] if 0 < number <= len(lines) else ""


def _spaces(match: re.Match[str]) -> str:
    return " " * len(match.group(0))


def blank_code(body: str) -> list[str]:
    """The body's lines with code replaced by spaces (line count unchanged)."""
    lines = body.split("\n")
    if "\r" in body:
        lines = [line.rstrip("\r") for line in lines]
    if "`" not in body and "~~~" not in body:
        return lines  # no code to blank: most notes
    fence: str | None = None
    out: list[str] = []
    for line in lines:
        match = _FENCE.match(line)
        if fence is not None:
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                fence = None
            out.append("")
            continue
        if match:
            fence = match.group(1)
            out.append("")
            continue
        out.append(_INLINE_CODE.sub(_spaces, line) if "`" in line else line)
    return out


def link_key(target: str, source_folder: str) -> str:
    """The form a link is resolved by: folder-relative forms joined with the source's folder."""
    text = target.strip().replace("\\", "/")
    if text.lower().endswith(".md"):
        text = text[:-3]
    if text.startswith(("./", "../")):
        text = posixpath.normpath(posixpath.join(source_folder, text))
        if text.startswith(".."):
            text = text.lstrip("./")
    return fold(text.lstrip("/"))


def links(lines: list[str], source_folder: str) -> list[Link]:
    """Outgoing `[[wikilinks]]` (with `#heading` and `|alias`) and Markdown links to `.md` files."""
    found: list[Link] = []
    for number, line in enumerate(lines, start=1):
        if "[" not in line:
            continue
        # each pattern needs its literal pair ("[[", "]("): most lines holding a "[" have neither
        for match in _WIKILINK_FROM_BRACKETS.finditer(line) if "[[" in line else ():
            inner = match.group(1)
            target_part, _, alias = inner.partition("|")
            target, _, heading = target_part.partition("#")
            if not target.strip():
                continue  # [[#heading]] points into the note itself
            found.append(
                Link(
                    target=target.strip(),
                    target_key=link_key(target, source_folder),
                    heading=heading.strip() or None,
                    alias=alias.strip() or None,
                    embed=match.start() > 0 and line[match.start() - 1] == "!",
                    line=number,
                )
            )
        for match in _MD_LINK.finditer(line) if "](" in line else ():
            href = unquote(match.group(3))
            if _URL_SCHEME.match(href):
                continue
            heading = unquote(match.group(4) or "").lstrip("#")
            found.append(
                Link(
                    target=href,
                    target_key=link_key(href, source_folder),
                    heading=heading or None,
                    alias=match.group(2).strip() or None,
                    embed=bool(match.group(1)),
                    line=number,
                )
            )
    return found


def inline_tags(lines: list[str]) -> list[str]:
    """`#tags` in the body (not headings, not numbers like #123, not URL anchors)."""
    tags: list[str] = []
    for line in lines:
        if "#" not in line:
            continue
        for match in _TAG_FROM_HASH.finditer(line):
            at = match.start()
            if at and _TAG_AFTER.match(line, at - 1) is None:
                continue
            tag = match.group(1).strip("/")
            if tag and not tag.replace("/", "").isdigit():
                tags.append(tag)
    return tags


def frontmatter_tags(frontmatter: dict[str, Any]) -> list[str]:
    """`tags:` (or `tag:`) as a list or a comma/space separated string, `#` optional."""
    found: list[str] = []
    for key in ("tags", "tag"):
        value = frontmatter.get(key)
        items: list[Any]
        if isinstance(value, str):
            items = re.split(r"[,\s]+", value)
        elif isinstance(value, list):
            items = value
        else:
            continue
        for item in items:
            if isinstance(item, str | int | float) and not isinstance(item, bool):
                tag = str(item).strip().lstrip("#").strip("/")
                if tag:
                    found.append(tag)
    return found


def unique_tags(tags: list[str]) -> list[str]:
    """Tags in first-seen order, duplicates (case-insensitive) removed."""
    seen: set[str] = set()
    out: list[str] = []
    for tag in tags:
        if fold(tag) not in seen:
            seen.add(fold(tag))
            out.append(tag)
    return out


def note_tags(frontmatter: dict[str, Any], lines: list[str]) -> list[str]:
    """A note's tags: its frontmatter `tags:`, then its inline `#tags` (`lines` from `blank_code`), each once."""
    return unique_tags(frontmatter_tags(frontmatter) + inline_tags(lines))


def headings(lines: list[str]) -> list[str]:
    return [m.group(2) for line in lines if line.startswith("#") and (m := _HEADING.match(line))]


def title(frontmatter: dict[str, Any], path: str) -> str:
    """The frontmatter `title` when it is text, else the file name without `.md`."""
    value = frontmatter.get("title")
    if isinstance(value, str) and value.strip():
        return value.strip()
    name = posixpath.basename(path)
    return name[:-3] if name.lower().endswith(".md") else name


def scalar_values(value: Any) -> list[str]:
    """A frontmatter value as the lower-case strings a `field:value` filter compares with."""
    if isinstance(value, list):
        return [s for item in value for s in scalar_values(item)]
    if isinstance(value, dict):
        return []
    if value is None:
        return [""]
    if isinstance(value, bool):
        return ["true" if value else "false"]
    return [fold(str(value).strip())]


def text_values(value: Any) -> list[str]:
    """Every scalar inside a frontmatter value, for full-text search."""
    if isinstance(value, dict):
        return [s for v in value.values() for s in text_values(v)]
    if isinstance(value, list):
        return [s for v in value for s in text_values(v)]
    return [] if value is None else [str(value)]
