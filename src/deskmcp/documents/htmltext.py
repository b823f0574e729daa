"""Readable text from HTML: no tags, scripts or styles; the title from <title> or the first <h1>."""

from __future__ import annotations

import re
from html.parser import HTMLParser

_SKIP = frozenset({"script", "style", "noscript", "template", "svg", "head", "iframe", "object"})
_BLOCK = frozenset(
    {
        "p", "div", "br", "li", "ul", "ol", "tr", "table", "section", "article", "header", "footer",
        "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "hr", "dd", "dt", "nav", "aside", "main",
    }
)  # fmt: skip
_META = frozenset({"description", "keywords", "author"})
_SPACES = re.compile(r"[ \t\f\v\u00a0]+")
_BLANKS = re.compile(r"\n\s*\n+")


class _TextParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title_parts: list[str] = []
        self.h1_parts: list[str] = []
        self.properties: dict[str, str] = {}
        self._skip: list[str] = []
        self._in_title = False
        self._in_h1 = False
        self._h1_done = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        elif tag == "meta":
            values = {k.lower(): v or "" for k, v in attrs}
            name = values.get("name", "").lower()
            if name in _META and values.get("content"):
                self.properties[name] = values["content"].strip()
        elif tag in _SKIP and tag != "head":
            self._skip.append(tag)
        elif tag == "h1" and not self._h1_done:
            self._in_h1 = True
        if tag in _BLOCK:
            self.parts.append("\n")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        # <br/>, <meta .../>: never opens a skipped section.
        if tag in _SKIP:
            return
        self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif self._skip and tag == self._skip[-1]:
            self._skip.pop()
        elif tag == "h1" and self._in_h1:
            self._in_h1 = False
            self._h1_done = True
        if tag in _BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title_parts.append(data)
            return
        if self._skip:
            return
        if self._in_h1:
            self.h1_parts.append(data)
        self.parts.append(data)


def _clean(text: str) -> str:
    lines = (_SPACES.sub(" ", line).strip() for line in text.splitlines())
    return _BLANKS.sub("\n\n", "\n".join(lines)).strip()


def html_text(source: str) -> tuple[str, str | None, dict[str, str]]:
    """(text, title or None, meta properties) of an HTML document. Malformed markup is tolerated."""
    parser = _TextParser()
    parser.feed(source)
    parser.close()
    title = _clean(" ".join(parser.title_parts)) or _clean(" ".join(parser.h1_parts)) or None
    return _clean("".join(parser.parts)), title, parser.properties
