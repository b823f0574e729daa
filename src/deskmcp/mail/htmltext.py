"""Readable text from an HTML mail body: no tags, scripts or styles; links kept as `text (url)`."""

from __future__ import annotations

import re
from html.parser import HTMLParser

_SKIP = frozenset({"script", "style", "head", "title", "noscript", "template", "svg"})
_BLOCK = frozenset(
    {"p", "div", "br", "li", "tr", "table", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "hr", "section"}
)
_SPACES = re.compile(r"[ \t\f\v\u00a0]+")
_BLANKS = re.compile(r"\n[ \t]*(?:\n[ \t]*)+")


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0
        self._href: str | None = None
        self._link_text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP:
            self._skip += 1
        elif tag in _BLOCK:
            self.parts.append("\n")
        if tag == "li":
            self.parts.append("- ")
        if tag == "a":
            self._href = dict(attrs).get("href")
            self._link_text = []

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self._skip = max(0, self._skip - 1)
        elif tag in _BLOCK:
            self.parts.append("\n")
        if tag == "a" and self._href:
            text = "".join(self._link_text).strip()
            href = self._href
            if href.startswith(("http://", "https://")) and href != text:
                self.parts.append(f" ({href})")
            self._href = None

    def handle_data(self, data: str) -> None:
        if self._skip:
            return
        self.parts.append(data)
        if self._href is not None:
            self._link_text.append(data)


def html_to_text(html: str) -> str:
    parser = _Text()
    try:
        parser.feed(html)
        parser.close()
    except (AssertionError, ValueError):  # malformed markup: keep what was read
        pass
    text = _SPACES.sub(" ", "".join(parser.parts))
    lines = "\n".join(line.strip() for line in text.splitlines())
    return _BLANKS.sub("\n\n", lines).strip()
