"""The generated demo project and the tour steps that draw its architecture."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from deskmcp.demo import diagrams as demo
from deskmcp.demo.tour import DATA_FOLDERS, resolve
from tests.helpers.tool_calls import Connect, call

pytestmark = pytest.mark.anyio


def test_demo_project_is_shaped_like_deskmcp(tmp_path: Path) -> None:
    demo.generate(tmp_path, random.Random(7))
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert 40 <= len(files) <= 50
    assert (tmp_path / "docs" / "architecture.mmd").read_text(encoding="utf-8").startswith("flowchart")
    assert DATA_FOLDERS["diagrams"] == "project"
    assert demo.environment(tmp_path) == {"DIAGRAMS_PROJECT_ROOT": str(tmp_path / "project")}


@pytest.mark.e2e
async def test_every_demo_step_succeeds_and_the_architecture_png_is_saved(connect: Connect, project: Path) -> None:
    demo.generate(project, random.Random(2026))
    last: Any = None
    results = []
    async with connect() as client:
        for _caption, tool, arguments in demo.STEPS:
            last = await call(client, tool, resolve(arguments, last))
            results.append(last)
    listed, head, check, _source, rendered = results
    assert len(listed["files"]) == 8  # the seven servers and the core
    assert not any(f["path"].startswith("build/") for f in listed["files"])
    assert head["end_line"] == 6
    assert check["valid"] is False and check["line"] == 3
    assert rendered["path"] == "diagrams/deskmcp-architecture.png"
    assert (project / rendered["path"]).read_bytes().startswith(b"\x89PNG")
