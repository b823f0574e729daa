from __future__ import annotations

from pathlib import Path

import pytest

from deskmcp.documents.settings import DocumentsSettings


@pytest.fixture
def docs_root(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    return root


@pytest.fixture
def settings(tmp_path: Path, docs_root: Path) -> DocumentsSettings:
    return DocumentsSettings(workspace=tmp_path / "ws", documents_path=docs_root)
