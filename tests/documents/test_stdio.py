"""`deskmcp serve documents` as a real subprocess, driven over stdio by the SDK's client."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.documents.samples import pdf_bytes

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


async def test_serve_documents_over_stdio_indexes_searches_and_reports_errors(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "report.pdf").write_bytes(pdf_bytes([["Quarterly figures for the flamingo programme"]]))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DOCUMENTS_", "DESKMCP_"))}
    env.update({"DOCUMENTS_PATH": str(docs), "DESKMCP_WORKSPACE": str(tmp_path / "ws"), "DESKMCP_TOOLSETS": "all"})
    params = StdioServerParameters(command=sys.executable, args=["-m", "deskmcp.cli", "serve", "documents"], env=env)
    with anyio.fail_after(60):
        async with Client(params) as client:
            indexed = await client.call_tool("index_document", {"path": "report.pdf", "tags": ["finance"]})
            found = await client.call_tool("search_documents", {"query": "flamingo"})
            escape = await client.call_tool("get_document", {"path": "../ws/x.md"})
    assert not indexed.is_error
    assert found.structured_content is not None
    assert [h["path"] for h in found.structured_content["items"]] == ["report.pdf"]
    assert escape.is_error
    assert json.loads(escape.content[0].text)["error"] == "permission_denied"  # type: ignore[union-attr]
    assert (tmp_path / "ws" / ".deskmcp" / "index" / "documents.sqlite3").is_file()
