from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from deskmcp.documents.server import create_server
from deskmcp.documents.settings import DocumentsSettings
from tests.documents.samples import fails, ok, pdf_bytes, write_docx

pytestmark = pytest.mark.anyio


async def test_markdown_title_and_tags_come_from_frontmatter(settings: DocumentsSettings, docs_root: Path) -> None:
    (docs_root / "plan.md").write_text(
        "---\ntitle: Launch plan\ntags: [Launch, q3]\nreviewed: 2024-05-01\n---\n"
        "# Ignored heading\n\nShip the rocket.\n",
        encoding="utf-8",
    )
    async with Client(create_server(settings)) as c:
        indexed = await ok(c, "index_document", path="plan.md", tags=["work"])
        meta = await ok(c, "extract_metadata", path="plan.md")
        text = await ok(c, "get_document", path="plan.md")
    assert indexed["title"] == "Launch plan"
    assert indexed["tags"] == ["work", "launch", "q3"]
    assert meta["frontmatter"] == {"title": "Launch plan", "tags": ["Launch", "q3"], "reviewed": "2024-05-01"}
    assert meta["mime_type"] == "text/markdown"
    assert meta["pages"] is None
    assert "reviewed" not in text["text"]
    assert "Ship the rocket." in text["text"]


async def test_markdown_without_frontmatter_takes_its_first_heading_as_title(
    settings: DocumentsSettings, docs_root: Path
) -> None:
    (docs_root / "readme.md").write_text("Intro line\n\n# Real Title\n\nbody\n", encoding="utf-8")
    async with Client(create_server(settings)) as c:
        meta = await ok(c, "extract_metadata", path="readme.md")
    assert meta["title"] == "Real Title"
    assert meta["word_count"] == 5


async def test_plain_text_in_latin1_is_decoded_and_searchable(settings: DocumentsSettings, docs_root: Path) -> None:
    (docs_root / "old.txt").write_bytes("Café menu\nCrème brûlée tonight\n".encode("latin-1"))
    async with Client(create_server(settings)) as c:
        await ok(c, "index_document", path="old.txt")
        found = await ok(c, "search_documents", query="creme")
        text = await ok(c, "get_document", path="old.txt")
    assert [h["path"] for h in found["items"]] == ["old.txt"]
    assert text["title"] == "Café menu"
    assert "Crème brûlée" in text["text"]


async def test_html_loses_tags_scripts_and_styles_and_takes_its_title(
    settings: DocumentsSettings, docs_root: Path
) -> None:
    (docs_root / "page.html").write_text(
        "<!doctype html><html><head><title>Team &amp; Roadmap</title><style>body{color:red}</style>"
        '<meta name="author" content="Grace"><script>var token = "zebrafish";</script></head>'
        "<body><h1>Roadmap</h1><p>We plan <b>three</b> releases.</p><script>alert('zebrafish')</script></body></html>",
        encoding="utf-8",
    )
    async with Client(create_server(settings)) as c:
        await ok(c, "index_document", path="page.html")
        text = await ok(c, "get_document", path="page.html")
        meta = await ok(c, "extract_metadata", path="page.html")
        hidden = await ok(c, "search_documents", query="zebrafish")
        shown = await ok(c, "search_documents", query="releases")
    assert text["title"] == "Team & Roadmap"
    assert text["text"] == "Roadmap\n\nWe plan three releases."
    assert meta["properties"] == {"author": "Grace"}
    assert hidden["items"] == []
    assert [h["path"] for h in shown["items"]] == ["page.html"]


async def test_html_without_title_element_uses_its_first_h1(settings: DocumentsSettings, docs_root: Path) -> None:
    (docs_root / "bare.htm").write_text("<div><h1>Only <i>Heading</i></h1><h1>Second</h1><p>x</p>", encoding="utf-8")
    async with Client(create_server(settings)) as c:
        meta = await ok(c, "extract_metadata", path="bare.htm")
    assert meta["title"] == "Only Heading"


async def test_pdf_text_pages_and_title_are_extracted(settings: DocumentsSettings, docs_root: Path) -> None:
    (docs_root / "report.pdf").write_bytes(
        pdf_bytes([["Annual report", "Revenue grew (a lot)"], ["Appendix about pelicans"]], title="Annual Report 2024")
    )
    async with Client(create_server(settings)) as c:
        indexed = await ok(c, "index_document", path="report.pdf")
        meta = await ok(c, "extract_metadata", path="report.pdf")
        found = await ok(c, "search_documents", query="pelicans")
        text = await ok(c, "get_document", path="report.pdf")
    assert indexed["pages"] == 2
    assert meta["pages"] == 2
    assert meta["title"] == "Annual Report 2024"
    assert meta["properties"]["author"] == "Test Suite"
    assert "Revenue grew (a lot)" in text["text"]
    assert found["items"][0]["path"] == "report.pdf"
    assert "⟦pelicans⟧" in found["items"][0]["snippet"]


async def test_docx_paragraphs_tables_and_core_title_are_extracted(
    settings: DocumentsSettings, docs_root: Path
) -> None:
    write_docx(
        docs_root / "hiring.docx",
        title="Hiring Plan 2025",
        heading="Hiring",
        paragraphs=["We will hire two backend engineers."],
        table=[["Role", "Headcount"], ["Designer", "1"]],
    )
    async with Client(create_server(settings)) as c:
        await ok(c, "index_document", path="hiring.docx", tags=["hr"])
        meta = await ok(c, "extract_metadata", path="hiring.docx")
        found = await ok(c, "search_documents", query="designer")
        text = await ok(c, "get_document", path="hiring.docx")
    assert meta["title"] == "Hiring Plan 2025"
    assert meta["properties"]["author"] == "Ada Lovelace"
    assert meta["kind"] == "docx"
    assert "Designer | 1" in text["text"]
    assert "two backend engineers" in text["text"]
    assert [h["path"] for h in found["items"]] == ["hiring.docx"]


async def test_docx_without_core_title_uses_its_first_heading(settings: DocumentsSettings, docs_root: Path) -> None:
    write_docx(docs_root / "memo.docx", title=None, heading="Budget memo", paragraphs=["Numbers."], table=[])
    async with Client(create_server(settings)) as c:
        meta = await ok(c, "extract_metadata", path="memo.docx")
    assert meta["title"] == "Budget memo"


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("broken.pdf", b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R\ngarbage without end"),
        ("truncated.pdf", pdf_bytes([["fine text"]])[:150]),
        ("broken.docx", b"PK\x03\x04 this is not really a zip archive"),
        ("notword.docx", b"plain text pretending to be a Word file"),
        ("binary.txt", b"\x00\x01\x02\x03 binary junk \x00\x00"),
    ],
)
async def test_malformed_file_is_a_parse_error_and_leaves_the_index_unchanged(
    settings: DocumentsSettings, docs_root: Path, name: str, content: bytes
) -> None:
    (docs_root / "good.md").write_text("# Good\n\nkeeps its place\n", encoding="utf-8")
    async with Client(create_server(settings)) as c:
        await ok(c, "index_document", path="good.md", tags=["keep"])
        before = await ok(c, "list_documents")
        (docs_root / name).write_bytes(content)
        error = await fails(c, "index_document", path=name, tags=["bad"])
        after = await ok(c, "list_documents")
        tags = await ok(c, "list_tags")
        found = await ok(c, "search_documents", query="keeps")
    assert error["error"] == "parse_error"
    assert name in error["message"]
    assert after == before
    assert tags["tags"] == [{"tag": "keep", "count": 1}]
    assert [h["path"] for h in found["items"]] == ["good.md"]


async def test_a_file_that_becomes_corrupt_keeps_its_previous_index_entry(
    settings: DocumentsSettings, docs_root: Path
) -> None:
    target = docs_root / "report.pdf"
    target.write_bytes(pdf_bytes([["original walrus text"]]))
    async with Client(create_server(settings)) as c:
        await ok(c, "index_document", path="report.pdf")
        target.write_bytes(b"%PDF-1.4 damaged")
        error = await fails(c, "index_document", path="report.pdf")
        found = await ok(c, "search_documents", query="walrus")
    assert error["error"] == "parse_error"
    assert [h["path"] for h in found["items"]] == ["report.pdf"]


async def test_unsupported_extension_is_a_bad_request_naming_the_supported_ones(
    settings: DocumentsSettings, docs_root: Path
) -> None:
    (docs_root / "photo.jpg").write_bytes(b"\xff\xd8\xff")
    async with Client(create_server(settings)) as c:
        error = await fails(c, "index_document", path="photo.jpg")
    assert error["error"] == "bad_request"
    assert ".pdf" in error["message"]


async def test_oversized_file_is_refused_before_it_is_read(
    tmp_path: Path, docs_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = DocumentsSettings(workspace=tmp_path / "ws", documents_path=docs_root, max_file_mb=0.01)
    (docs_root / "huge.txt").write_text("word " * 10_000, encoding="utf-8")

    def never_read(*_args: object, **_kwargs: object) -> bytes:
        raise AssertionError("the file was read")

    monkeypatch.setattr("deskmcp.documents.service.read_bytes_limited", never_read)
    async with Client(create_server(settings)) as c:
        error = await fails(c, "index_document", path="huge.txt")
        listing = await ok(c, "list_documents")
    assert error["error"] == "io_error"
    assert error["details"]["size"] == 50_000
    assert listing["total"] == 0


async def test_get_document_returns_long_text_in_parts(settings: DocumentsSettings, docs_root: Path) -> None:
    body = "".join(f"line {i:04d}\n" for i in range(500))
    (docs_root / "long.txt").write_text(body, encoding="utf-8")
    async with Client(create_server(settings)) as c:
        parts: list[str] = []
        offset: int | None = 0
        while offset is not None:
            chunk = await ok(c, "get_document", path="long.txt", offset=offset, max_chars=1000)
            assert len(chunk["text"]) <= 1000
            parts.append(chunk["text"])
            offset = chunk["next_offset"]
    assert "".join(parts) == body
    assert len(parts) == 5


async def test_missing_file_is_not_found_with_a_way_forward(settings: DocumentsSettings) -> None:
    async with Client(create_server(settings)) as c:
        error = await fails(c, "extract_metadata", path="nowhere/ghost.md")
    assert error["error"] == "not_found"
    assert "list_documents" in error["message"]


async def test_encrypted_pdf_is_a_parse_error_that_says_so(settings: DocumentsSettings, docs_root: Path) -> None:
    from pypdf import PdfWriter

    writer = PdfWriter()
    writer.add_blank_page(200, 200)
    writer.encrypt(user_password="secret", owner_password="owner", algorithm="RC4-128")
    with (docs_root / "locked.pdf").open("wb") as handle:
        writer.write(handle)
    async with Client(create_server(settings)) as c:
        error = await fails(c, "index_document", path="locked.pdf")
    assert error["error"] == "parse_error"
    assert "encrypted" in error["message"]


async def test_docx_that_would_inflate_too_far_is_refused(tmp_path: Path, docs_root: Path) -> None:
    import zipfile

    settings = DocumentsSettings(workspace=tmp_path / "ws", documents_path=docs_root, max_file_mb=0.05)
    with zipfile.ZipFile(docs_root / "bomb.docx", "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/document.xml", b"\0" * 3_000_000)
    assert (docs_root / "bomb.docx").stat().st_size < 50_000
    async with Client(create_server(settings)) as c:
        error = await fails(c, "index_document", path="bomb.docx")
    assert error["error"] == "io_error"
    assert error["details"]["expanded"] == 3_000_000


async def test_html_document_keeps_its_bullets_links_and_table_cells(
    settings: DocumentsSettings, docs_root: Path
) -> None:
    (docs_root / "links.html").write_text(
        "<h1>Links</h1><ul><li>the <a href='https://x.test/plan'>plan</a></li><li>notes</li></ul>"
        "<table><tr><th>Owner</th><th>Due</th></tr><tr><td>Grace</td><td>May</td></tr></table>",
        encoding="utf-8",
    )
    async with Client(create_server(settings)) as c:
        text = await ok(c, "get_document", path="links.html")
    assert text["text"] == "Links\n\n- the plan (https://x.test/plan)\n- notes\n\nOwner | Due\nGrace | May"


async def test_markdown_frontmatter_reads_as_the_vault_reads_it_yaml_1_2(
    settings: DocumentsSettings, docs_root: Path
) -> None:
    (docs_root / "flags.md").write_text(
        "---\ndraft: no\nmode: 0755\nstarts: 09:30\nshared: true\ntags: [ops, yes]\n---\nBody.\n", encoding="utf-8"
    )
    async with Client(create_server(settings)) as c:
        indexed = await ok(c, "index_document", path="flags.md")
        meta = await ok(c, "extract_metadata", path="flags.md")
    assert meta["frontmatter"] == {
        "draft": "no",
        "mode": 755,
        "starts": "09:30",
        "shared": True,
        "tags": ["ops", "yes"],
    }
    assert indexed["tags"] == ["ops", "yes"]
