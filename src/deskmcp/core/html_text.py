"""Readable text from HTML, one converter for mail bodies and HTML documents.

What the reader keeps: paragraphs and headings as blocks separated by a blank line; line
breaks, `<div>`s and table rows as lines; list items as `- item` (`1. item` in ordered
lists); table cells separated by ` | `; links as `text (url)` when the address is a web
address that the text does not already show. What it drops: tags, comments, `<head>`,
scripts, styles and other content that is not text. Entities are decoded, runs of spaces
collapsed. Broken markup never fails: what was read is kept.

`read_html` also answers the document's title (`<title>`, else the first `<h1>`) and its
`<meta>` description, keywords and author.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

# content that is never text; <head> is skipped too, but its <title> and <meta> are read
_SKIP = frozenset({"script", "style", "head", "title", "noscript", "template", "svg", "iframe", "object"})
_PARAGRAPH = frozenset(
    {
        "p", "h1", "h2", "h3", "h4", "h5", "h6", "table", "ul", "ol", "dl", "blockquote", "pre", "hr",
        "section", "article", "header", "footer", "nav", "aside", "main", "figure", "form", "address",
    }
)  # fmt: skip
_LINE = frozenset({"br", "div", "li", "tr", "dt", "dd", "caption", "figcaption", "details", "summary"})
_CELL = frozenset({"td", "th"})
_META = frozenset({"description", "keywords", "author"})
_SPACES = re.compile(r"[ \t\f\v\r\u00a0]+")
_BLANKS = re.compile(r"\n{3,}")
_SOURCE_SPACE = re.compile(r"[ \t\n\r\f\v]+")
_WEB = ("http://", "https://")


@dataclass(frozen=True)
class HtmlText:
    """The text of an HTML source, its title (None when it has none) and its meta properties."""

    text: str
    title: str | None = None
    properties: dict[str, str] = field(default_factory=dict)


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.title_parts: list[str] = []
        self.h1_parts: list[str] = []
        self.properties: dict[str, str] = {}
        self._skip: list[str] = []
        self._in_title = False
        self._in_h1 = False
        self._h1_done = False
        self._pre = 0  # open <pre> elements, whose line breaks are kept
        self._pending = 0  # newlines owed before the next text (a block boundary)
        self._prefix = ""  # a list marker waiting for its item's first text
        self._lists: list[int | None] = []  # one entry per open list: the next number, None when unordered
        self._cells = 0  # cells already written in the current table row
        self._links: list[tuple[str | None, list[str]]] = []  # open <a>: href, text read inside

    # -- output ------------------------------------------------------------------------------

    def _break(self, newlines: int) -> None:
        self._pending = max(self._pending, newlines)

    def _write(self, text: str) -> None:
        if self._pending:
            if not text.strip():
                return  # the whitespace between blocks means nothing
            if self.out:
                self.out.append("\n" * self._pending)
            self._pending = 0
        if self._prefix and text.strip():
            self.out.append(self._prefix)
            self._prefix = ""
            text = text.lstrip()
        self.out.append(text)

    # -- parser callbacks --------------------------------------------------------------------

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        elif tag == "meta":
            values = {key.lower(): value or "" for key, value in attrs}
            name = values.get("name", "").lower()
            if name in _META and values.get("content"):
                self.properties[name] = values["content"].strip()
        if tag in _SKIP:
            self._skip.append(tag)
        if self._skip:
            return
        if tag == "h1" and not self._h1_done:
            self._in_h1 = True
        self._break(self._block(tag))
        if tag == "pre":
            self._pre += 1
        if tag in ("ul", "ol"):
            self._lists.append(1 if tag == "ol" else None)
        elif tag == "li":
            self._prefix = self._marker()
        elif tag == "tr":
            self._cells = 0
        elif tag in _CELL:
            if self._cells and not self._pending:
                self._write(" | ")
            self._cells += 1
        elif tag == "a":
            self._links.append((dict(attrs).get("href"), []))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        # <br/>, <meta .../>, <svg/>: a self-closed tag never opens a skipped section (nor a link)
        if tag in _SKIP or tag == "a":
            return
        self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if tag in _SKIP:
            # close up to the matching open tag; an unmatched end tag is ignored
            if tag in self._skip:
                while self._skip.pop() != tag:
                    pass
            return
        if self._skip:
            return
        if tag == "h1" and self._in_h1:
            self._in_h1 = False
            self._h1_done = True
        if tag in ("ul", "ol") and self._lists:
            self._lists.pop()
        self._break(self._block(tag))
        if tag == "pre":
            self._pre = max(0, self._pre - 1)
        elif tag == "li":
            self._prefix = ""
        elif tag == "a" and self._links:
            href, words = self._links.pop()
            text = "".join(words).strip()
            if href and href.startswith(_WEB) and href != text:
                self._write(f" ({href})")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title_parts.append(data)
        if self._skip:
            return
        if self._in_h1:
            self.h1_parts.append(data)
        for _href, words in self._links:
            words.append(data)
        if self._pre:
            self._write(data.strip("\n") if not self.out or self._pending else data)
        else:
            # a line break in the source is a space on the page; breaks come from the tags
            self._write(_SOURCE_SPACE.sub(" ", data))

    def _block(self, tag: str) -> int:
        """Newlines a tag puts between the text before and after it (0 for inline tags)."""
        if tag in ("ul", "ol") and self._lists:
            return 1  # a list inside a list item continues its lines
        if tag in _PARAGRAPH:
            return 2
        return 1 if tag in _LINE else 0

    def _marker(self) -> str:
        if not self._lists or self._lists[-1] is None:
            return "- "
        number = self._lists[-1]
        self._lists[-1] = number + 1
        return f"{number}. "


def _clean(text: str) -> str:
    lines = (_SPACES.sub(" ", line).strip() for line in text.split("\n"))
    return _BLANKS.sub("\n\n", "\n".join(lines)).strip()


def read_html(source: str) -> HtmlText:
    """The readable text of `source`, with its title and meta properties."""
    reader = _Reader()
    try:
        reader.feed(source)
        reader.close()
    except (AssertionError, ValueError):  # markup the parser gives up on: keep what was read
        pass
    title = _clean(" ".join(reader.title_parts)) or _clean(" ".join(reader.h1_parts)) or None
    return HtmlText(_clean("".join(reader.out)), title, reader.properties)


def html_to_text(source: str) -> str:
    """The readable text of `source` (see the module's description for what is kept)."""
    return read_html(source).text
