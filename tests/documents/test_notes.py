from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from mcp import Client

from deskmcp.core import files, frontmatter
from deskmcp.documents.server import create_server
from deskmcp.documents.settings import DocumentsSettings
from tests.documents.samples import fails, ok, tree

pytestmark = pytest.mark.anyio


def _frontmatter(path: Path) -> tuple[dict[str, object], str]:
    text = path.read_text(encoding="utf-8")
    _, header, body = text.split("---\n", 2)
    return yaml.safe_load(header), body


async def test_create_note_writes_markdown_with_frontmatter_and_indexes_it(
    settings: DocumentsSettings, docs_root: Path
) -> None:
    async with Client(create_server(settings)) as c:
        created = await ok(
            c, "create_note", title="Q3 Planning: Café notes!", content="Discuss the *albatross* launch.", tags=["Q3"]
        )
        found = await ok(c, "search_documents", query="albatross", tags=["q3"])
    assert created["path"] == "q3-planning-cafe-notes.md"
    assert created["renamed"] is False
    meta, body = _frontmatter(docs_root / "q3-planning-cafe-notes.md")
    assert meta == {"title": "Q3 Planning: Café notes!", "tags": ["q3"], "created": created["created"]}
    assert body.strip() == "Discuss the *albatross* launch."
    assert [h["path"] for h in found["items"]] == ["q3-planning-cafe-notes.md"]
    assert found["items"][0]["title"] == "Q3 Planning: Café notes!"


async def test_a_title_and_tags_that_look_like_numbers_stay_text(settings: DocumentsSettings, docs_root: Path) -> None:
    async with Client(create_server(settings)) as c:
        created = await ok(c, "create_note", title="1e3", content="Exponent.", tags=["2e5", "0o17"])
        meta = await ok(c, "extract_metadata", path=created["path"])
    header = frontmatter.parse(frontmatter.split((docs_root / created["path"]).read_text()).yaml_text, "n")
    assert header["title"] == "1e3" and header["tags"] == ["2e5", "0o17"]
    assert meta["frontmatter"]["title"] == "1e3"
    assert sorted(meta["tags"]) == ["0o17", "2e5"]


async def test_a_second_note_with_the_same_title_gets_a_new_name(settings: DocumentsSettings, docs_root: Path) -> None:
    async with Client(create_server(settings)) as c:
        first = await ok(c, "create_note", title="Standup", content="first")
        second = await ok(c, "create_note", title="Standup", content="second")
        third = await ok(c, "create_note", title="standup", content="third")
    assert [first["path"], second["path"], third["path"]] == ["standup.md", "standup-2.md", "standup-3.md"]
    assert [first["renamed"], second["renamed"], third["renamed"]] == [False, True, True]
    assert _frontmatter(docs_root / "standup.md")[1].strip() == "first"
    assert _frontmatter(docs_root / "standup-2.md")[1].strip() == "second"


async def test_create_note_never_replaces_a_file_the_user_wrote(settings: DocumentsSettings, docs_root: Path) -> None:
    (docs_root / "ideas.md").write_text("my own ideas", encoding="utf-8")
    async with Client(create_server(settings)) as c:
        created = await ok(c, "create_note", title="Ideas", content="generated")
    assert created["path"] == "ideas-2.md"
    assert (docs_root / "ideas.md").read_text(encoding="utf-8") == "my own ideas"


async def test_create_note_in_a_subfolder_creates_it(settings: DocumentsSettings, docs_root: Path) -> None:
    async with Client(create_server(settings)) as c:
        created = await ok(c, "create_note", title="!!!", content="x", folder="journal/2025")
    assert created["path"] == "journal/2025/note.md"
    assert (docs_root / "journal" / "2025" / "note.md").is_file()


async def test_interrupted_note_write_leaves_no_note_and_no_temp_file(
    settings: DocumentsSettings, docs_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def power_cut(src: Path, dst: Path) -> None:
        raise OSError(5, "Input/output error")

    async with Client(create_server(settings)) as c:
        monkeypatch.setattr(files, "replace_file", power_cut)
        error = await fails(c, "create_note", title="Lost", content="never saved")
        monkeypatch.undo()
        listing = await ok(c, "list_documents")
        retry = await ok(c, "create_note", title="Lost", content="saved now")
    assert error["error"] == "io_error"
    assert "try again" in error["message"]
    assert listing["total"] == 0
    assert retry["path"] == "lost.md"
    assert tree(docs_root) == ["lost.md"]


async def test_create_note_rejects_an_empty_title(settings: DocumentsSettings) -> None:
    async with Client(create_server(settings)) as c:
        blank = await fails(c, "create_note", title="   ", content="x")
        missing = await fails(c, "create_note", content="x")
    assert blank["error"] == "bad_request"
    assert missing["error"] == "bad_request"


async def test_create_note_refuses_a_file_as_its_folder(settings: DocumentsSettings, docs_root: Path) -> None:
    (docs_root / "plain.txt").write_text("x", encoding="utf-8")
    async with Client(create_server(settings)) as c:
        error = await fails(c, "create_note", title="T", content="x", folder="plain.txt")
    assert error["error"] == "bad_request"
