from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest
from mcp import Client

from deskmcp.demo.documents import STEPS, generate
from deskmcp.documents.server import create_server
from deskmcp.documents.settings import DocumentsSettings


def test_demo_folder_has_every_format_and_about_forty_files(tmp_path: Path) -> None:
    generate(tmp_path / "docs", random.Random(7))
    files = [p for p in (tmp_path / "docs").rglob("*") if p.is_file()]
    kinds = Counter(p.suffix for p in files)
    assert 35 <= len(files) <= 50
    assert {".md", ".txt", ".html", ".pdf", ".docx"} <= set(kinds)


@pytest.mark.anyio
@pytest.mark.parametrize("seed", [7, 2026])
async def test_demo_steps_all_succeed_on_the_generated_folder(tmp_path: Path, seed: int) -> None:
    generate(tmp_path / "docs", random.Random(seed))
    settings = DocumentsSettings(workspace=tmp_path / "ws", documents_path=tmp_path / "docs")
    results = {}
    async with Client(create_server(settings)) as c:
        for _caption, tool, args in STEPS:
            result = await c.call_tool(tool, args)
            assert not result.is_error, result.content
            results[tool, str(args)] = result.structured_content
    assert 4 <= len(STEPS) <= 6
    indexed = next(v for (tool, _), v in results.items() if tool == "index_folder")
    assert indexed is not None
    assert indexed["failed"] == []
    assert indexed["added"] >= 35
    searches = [v for (tool, _), v in results.items() if tool == "search_documents"]
    assert all(v and v["items"] for v in searches)
    finance = searches[1]
    assert finance is not None
    assert [h["path"] for h in finance["items"]] == ["reports/quarterly-report-q3.pdf"]
