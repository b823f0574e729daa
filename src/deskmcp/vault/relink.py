"""Rewriting the links to a note that moves, the way Obsidian does.

`[[wikilinks]]` (with `#heading`, `|alias`, `![[embeds]]`) keep their heading, alias and
style: a bare name stays a bare name when the new name is unique in the vault, a path
becomes the new path. Markdown links (`[text](../Projects/Alpha.md#heading)`) get the
relative path from the linking note to the new place, `%20`-encoded as before. Inside the
moved note, relative Markdown links to other notes are rebased on its new folder. Code
(fenced blocks, `inline code`) is left alone; links in frontmatter are not rewritten.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from urllib.parse import quote, unquote

from deskmcp.vault import links as md

Resolve = Callable[[str, str], str | None]
"""(link key, linking note) -> the note the link resolves to, before the move."""


def _wiki_target(written: str, destination: str, bare_ok: bool) -> str:
    stem = destination[: -len(".md")]
    keep_suffix = written.lower().endswith(".md")
    if "/" not in written.replace("\\", "/") and bare_ok:
        stem = posixpath.basename(stem)
    return stem + ".md" if keep_suffix else stem


def _href(written: str, target: str, folder: str) -> str:
    """A Markdown link's path from a note in `folder` to `target`, in the written style."""
    if written.startswith("/"):
        new = "/" + target
    else:
        new = posixpath.relpath(target, folder or ".")
        if written.startswith("./") and not new.startswith("../"):
            new = "./" + new
    return quote(new, safe="/") if "%" in written or " " in new else new


def relink(body: str, note: str, moved: str, destination: str, resolve: Resolve, *, bare_ok: bool) -> str:
    """`body` of `note` with its links to `moved` pointing at `destination` instead.

    When `note` is the moved note itself, its relative Markdown links are also rebased.
    """
    folder = posixpath.dirname(note)
    new_folder = posixpath.dirname(destination) if note == moved else folder
    lines = body.split("\n")
    blanked = md.blank_code(body)
    for number, clean in enumerate(blanked):
        if "[" not in clean:
            continue
        line = lines[number]
        edits: list[tuple[int, int, str]] = []
        for match in md.WIKILINK.finditer(clean):
            target_part, bar, alias = match.group(2).partition("|")
            target, hash_mark, heading = target_part.partition("#")
            if not target.strip() or resolve(md.link_key(target, folder), note) != moved:
                continue
            inner = _wiki_target(target.strip(), destination, bare_ok)
            inner += f"#{heading}" if hash_mark else ""
            inner += f"|{alias}" if bar else ""
            edits.append((match.start(2), match.end(2), inner))
        for match in md.MD_LINK.finditer(clean):
            written = match.group(3)
            href = unquote(written)
            if md.URL_SCHEME.match(href):
                continue
            resolved = resolve(md.link_key(href, folder), note)
            if resolved == moved:
                edits.append((match.start(3), match.end(3), _href(written, destination, new_folder)))
            elif note == moved and new_folder != folder and not href.startswith("/"):
                target = resolved or posixpath.normpath(posixpath.join(folder, href))
                edits.append((match.start(3), match.end(3), _href(written, target, new_folder)))
        for start, end, text in sorted(edits, reverse=True):
            line = line[:start] + text + line[end:]
        lines[number] = line
    return "\n".join(lines)
