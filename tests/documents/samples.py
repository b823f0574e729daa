"""Sample documents built byte by byte for the tests, and a compact way to call tools."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import docx
from mcp import Client


def _pdf_string(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def pdf_bytes(pages: list[list[str]], title: str | None = None) -> bytes:
    """A minimal valid PDF (Helvetica text, one line per entry), written by hand with its xref table."""
    n = len(pages)
    objects: dict[int, bytes] = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: ("<< /Type /Pages /Kids [" + " ".join(f"{4 + 2 * i} 0 R" for i in range(n)) + f"] /Count {n} >>").encode(),
        3: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    }
    for i, lines in enumerate(pages):
        page_id, content_id = 4 + 2 * i, 5 + 2 * i
        ops = ["BT", "/F1 12 Tf", "14 TL", "72 720 Td"]
        ops += [f"({_pdf_string(line)}) Tj T*" for line in lines]
        ops.append("ET")
        stream = "\n".join(ops).encode("latin-1")
        objects[page_id] = (
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {content_id} 0 R >>"
        ).encode()
        objects[content_id] = f"<< /Length {len(stream)} >>\nstream\n".encode() + stream + b"\nendstream"
    info_id = 4 + 2 * n
    objects[info_id] = f"<< /Title ({_pdf_string(title or '')}) /Author (Test Suite) >>".encode("latin-1")
    out = bytearray(b"%PDF-1.4\n")
    offsets: dict[int, int] = {}
    for number in sorted(objects):
        offsets[number] = len(out)
        out += f"{number} 0 obj\n".encode() + objects[number] + b"\nendobj\n"
    xref = len(out)
    size = max(objects) + 1
    out += f"xref\n0 {size}\n0000000000 65535 f \n".encode()
    for number in range(1, size):
        out += f"{offsets[number]:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {size} /Root 1 0 R /Info {info_id} 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def write_docx(path: Path, *, title: str | None, heading: str, paragraphs: list[str], table: list[list[str]]) -> None:
    document = docx.Document()
    if title:
        document.core_properties.title = title
    document.core_properties.author = "Ada Lovelace"
    document.add_heading(heading, level=1)
    for text in paragraphs:
        document.add_paragraph(text)
    if table:
        grid = document.add_table(rows=len(table), cols=len(table[0]))
        for r, row in enumerate(table):
            for c, value in enumerate(row):
                grid.cell(r, c).text = value
    document.save(str(path))


def tree(folder: Path, *, skip: str | None = None) -> list[str]:
    """Every path under `folder`, relative and sorted (leaving out any under a part named `skip`)."""
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if skip is None or skip not in p.parts)


async def ok(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    """Call a tool that must succeed; its structured result."""
    result = await client.call_tool(tool, args)
    text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
    assert not result.is_error, text
    assert result.structured_content is not None
    return result.structured_content


async def fails(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    """Call a tool that must fail; the taxonomy's error object."""
    result = await client.call_tool(tool, args)
    assert result.is_error
    return json.loads(result.content[0].text)  # type: ignore[union-attr]
