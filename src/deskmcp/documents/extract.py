"""Text and properties out of each supported format: Markdown, plain text, HTML, PDF and DOCX.

`extract` is pure: it takes the bytes already read (within the size limit) and returns the
text, a title and what the format records about itself, or raises `ParseError`.
"""

from __future__ import annotations

import codecs
import io
import logging
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from deskmcp.core.errors import BadRequest, IOFailure, ParseError
from deskmcp.core.html_text import read_html
from deskmcp.documents.frontmatter import split_frontmatter

Kind = Literal["markdown", "text", "html", "pdf", "docx"]

KINDS: dict[str, Kind] = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".txt": "text",
    ".text": "text",
    ".rst": "text",
    ".log": "text",
    ".csv": "text",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".pdf": "pdf",
    ".docx": "docx",
}
MIME_TYPES: dict[Kind, str] = {
    "markdown": "text/markdown",
    "text": "text/plain",
    "html": "text/html",
    "pdf": "application/pdf",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
}
# A DOCX is a zip: refuse one that would inflate past this multiple of the file size limit.
INFLATE_FACTOR = 20

_WORD = re.compile(r"\w+", re.UNICODE)
_HEADING = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.MULTILINE)
_PAGES = re.compile(rb"<Pages>(\d+)</Pages>")

log = logging.getLogger(__name__)


@dataclass
class Extracted:
    kind: Kind
    title: str
    text: str
    pages: int | None = None
    frontmatter: dict[str, Any] = field(default_factory=dict)
    properties: dict[str, str] = field(default_factory=dict)

    @property
    def word_count(self) -> int:
        return len(_WORD.findall(self.text))


def kind_of(path: Path) -> Kind:
    kind = KINDS.get(path.suffix.lower())
    if kind is None:
        supported = ", ".join(sorted(KINDS))
        raise BadRequest(
            f"{path.name} is not a supported document type. Supported extensions: {supported}.",
            {"path": path.name, "extension": path.suffix},
        )
    return kind


def is_supported(path: Path) -> bool:
    return path.suffix.lower() in KINDS


def decode_text(data: bytes, name: str) -> str:
    """Text of a text file: UTF-8 (with or without BOM), UTF-16 with BOM, else Latin-1."""
    if data.startswith(codecs.BOM_UTF8):
        return data[3:].decode("utf-8", errors="replace")
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16", errors="replace")
    if b"\x00" in data[:8192]:
        raise ParseError(
            f"{name} looks like a binary file, not text. Rename it with its real extension or remove it.",
            {"path": name},
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def _first_line_title(text: str) -> str | None:
    for line in text.splitlines():
        line = line.strip()
        if line:
            return line if len(line) <= 120 else None
    return None


def _markdown(data: bytes, name: str, stem: str) -> Extracted:
    meta, body = split_frontmatter(decode_text(data, name))
    title = meta.get("title")
    if not isinstance(title, str) or not title.strip():
        heading = _HEADING.search(body)
        title = heading.group(1) if heading else stem
    return Extracted("markdown", title.strip(), body, frontmatter=meta)


def _text(data: bytes, name: str, stem: str) -> Extracted:
    text = decode_text(data, name)
    return Extracted("text", _first_line_title(text) or stem, text)


def _html(data: bytes, name: str, stem: str) -> Extracted:
    page = read_html(decode_text(data, name))
    return Extracted("html", page.title or stem, page.text, properties=page.properties)


def _pdf(data: bytes, name: str, stem: str) -> Extracted:
    from pypdf import PdfReader
    from pypdf.errors import DependencyError, PyPdfError

    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted and not reader.decrypt(""):
            raise ParseError(f"{name} is an encrypted PDF. Save an unencrypted copy to index it.", {"path": name})
        pages = [page.extract_text() or "" for page in reader.pages]
        info = reader.metadata
        properties = {}
        if info is not None:
            for key, value in (("author", info.author), ("subject", info.subject), ("creator", info.creator)):
                if value:
                    properties[key] = str(value)
            pdf_title = str(info.title).strip() if info.title else ""
        else:
            pdf_title = ""
    # pypdf reports damaged files through its own errors and, for some damage, plain
    # Python ones raised while walking the object tree.
    except (PyPdfError, DependencyError, ValueError, KeyError, TypeError, IndexError, AttributeError,
            RecursionError, OverflowError, ZeroDivisionError, NotImplementedError) as exc:  # fmt: skip
        raise ParseError(
            f"{name} is not a readable PDF ({type(exc).__name__}: {exc}). Check that the file is complete.",
            {"path": name},
        ) from exc
    text = "\n\n".join(p.strip() for p in pages)
    title = pdf_title or _first_line_title(text) or stem
    return Extracted("pdf", title, text, pages=len(pages), properties=properties)


def _check_inflated_size(data: bytes, name: str, limit: int) -> bytes | None:
    """The DOCX's docProps/app.xml (for its page count), after refusing zip bombs."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        inflated = sum(info.file_size for info in archive.infolist())
        if inflated > limit * INFLATE_FACTOR:
            raise IOFailure(
                f"{name} would expand to {inflated:,} bytes, too large to read safely.",
                {"path": name, "expanded": inflated},
            )
        try:
            return archive.read("docProps/app.xml")
        except KeyError:
            return None


def _docx(data: bytes, name: str, stem: str, limit: int) -> Extracted:
    import docx
    from docx.opc.exceptions import OpcError
    from lxml.etree import LxmlError

    try:
        app_xml = _check_inflated_size(data, name, limit)
        document = docx.Document(io.BytesIO(data))
        lines: list[str] = []
        heading: str | None = None
        for paragraph in document.paragraphs:
            text = paragraph.text.strip()
            if not text:
                continue
            style = paragraph.style.name if paragraph.style is not None else ""
            if heading is None and style in ("Title", "Heading 1"):
                heading = text
            lines.append(text)
        for table in document.tables:
            for row in table.rows:
                cells = [cell.text.strip() for cell in row.cells if cell.text.strip()]
                if cells:
                    lines.append(" | ".join(cells))
        core = document.core_properties
        properties = {
            key: str(value)
            for key, value in (("author", core.author), ("subject", core.subject), ("keywords", core.keywords))
            if value
        }
        core_title = (core.title or "").strip()
    except (zipfile.BadZipFile, OpcError, LxmlError, KeyError, ValueError, TypeError, AttributeError) as exc:
        raise ParseError(
            f"{name} is not a readable DOCX ({type(exc).__name__}: {exc}). Open and re-save it in a word processor.",
            {"path": name},
        ) from exc
    pages_match = _PAGES.search(app_xml or b"")
    return Extracted(
        "docx",
        core_title or heading or stem,
        "\n".join(lines),
        pages=int(pages_match.group(1)) if pages_match else None,
        properties=properties,
    )


def extract(path: Path, data: bytes, *, limit: int) -> Extracted:
    """Extract `data`, the content of `path`, according to its extension."""
    kind = kind_of(path)
    name, stem = path.name, path.stem
    if kind == "markdown":
        return _markdown(data, name, stem)
    if kind == "text":
        return _text(data, name, stem)
    if kind == "html":
        return _html(data, name, stem)
    if kind == "pdf":
        return _pdf(data, name, stem)
    return _docx(data, name, stem, limit)
