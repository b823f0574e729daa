"""A first start on a vault too big to index before answering."""

from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from deskmcp.vault.catalog import Catalog
from deskmcp.vault.server import create_server
from deskmcp.vault.service import WAIT_BELOW, VaultService
from tests.helpers.tool_calls import call

pytestmark = pytest.mark.anyio


def many_notes(root: Path, count: int) -> None:
    for i in range(count):
        folder = root / f"f{i % 7}"
        folder.mkdir(exist_ok=True)
        tags = "tags: [bulk]\n" if i % 2 else ""
        (folder / f"note {i}.md").write_text(
            f"---\n{tags}n: {i}\n---\n# Note {i}\n\nAbout quokkas and [[note {i + 1}]]. #bulk\n", encoding="utf-8"
        )


async def test_reads_answer_during_the_first_index_with_how_far_it_is(vault: Path, settings_for: Any):
    many_notes(vault, WAIT_BELOW + 100)
    total = WAIT_BELOW + 100
    service = VaultService(settings_for(vault, watch=False))
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    with ExitStack() as writer:
        # Hold the index's writer: the start-up scan walks the vault, then waits to write.
        writer.enter_context(service.catalog.index.transaction())
        async with Client(create_server(settings_for(vault, watch=False), service)) as client:
            try:
                with anyio.fail_after(10):
                    found = await client.call_tool("search_notes", {"query": "quokkas"}, progress_callback=on_progress)
                    status = await call(client, "vault_status")
                    listed = await call(client, "list_notes", {"limit": 5})
            finally:
                writer.close()
            assert found.structured_content is not None
            assert found.structured_content["notes"] == []
            assert found.structured_content["indexing"] == {"done": 0, "total": total}
            assert status["indexing"] == {"done": 0, "total": total}
            assert listed["indexing"]["total"] == total
            assert progress and progress[0][:2] == (0, total)
            assert "Indexing the vault" in (progress[0][2] or "")
            # The writer is free again: the scan finishes, and the answers are complete and say so.
            with anyio.fail_after(30):
                await anyio.to_thread.run_sync(service.wait_indexed)
            found_all = await call(client, "search_notes", {"query": "quokkas", "limit": 200})
            status = await call(client, "vault_status")
            # every batch of the scan is searchable once it is done, however recent
            each = [await call(client, "search_notes", {"query": f'"note {i}"'}) for i in (0, total // 2, total - 1)]
    assert len(found_all["notes"]) == 200 and found_all.get("indexing") is None
    for i, hits in zip((0, total // 2, total - 1), each, strict=True):
        assert f"f{i % 7}/note {i}.md" in [n["path"] for n in hits["notes"]]
    assert status["notes"] == total and status.get("indexing") is None


async def test_a_small_vault_is_indexed_before_the_first_answer(vault: Path, connect: Any):
    many_notes(vault, 20)
    async with connect(vault, watch=False) as client:
        found = await call(client, "search_notes", {"query": "quokkas", "limit": 50})
    assert len(found["notes"]) == 20 and found.get("indexing") is None


@pytest.mark.e2e
def test_notes_parsed_in_worker_processes_are_indexed_like_the_others(vault: Path, tmp_path: Path):
    many_notes(vault, 120)
    parallel = Catalog(vault, tmp_path / "a.sqlite3", 1 << 20, workers=2)
    parallel.parallel_min = 50
    inline = Catalog(vault, tmp_path / "b.sqlite3", 1 << 20, workers=1)
    try:
        assert parallel.scan().indexed == inline.scan().indexed == 120
        for rel in ("f0/note 0.md", "f3/note 59.md"):
            a, b = parallel.index.get(rel), inline.index.get(rel)
            assert a is not None and b is not None and (a.data, a.columns) == (b.data, b.columns)
        assert parallel.incoming("f1/note 1.md") == inline.incoming("f1/note 1.md")
        assert parallel.tag_counts("", 10) == inline.tag_counts("", 10) == [("bulk", 120)]
    finally:
        parallel.close()
        inline.close()


def test_a_first_index_builds_the_link_tag_and_field_indexes_once_at_its_end(vault: Path, tmp_path: Path):
    many_notes(vault, 60)
    catalog = Catalog(vault, tmp_path / "i.sqlite3", 1 << 20)
    seen: list[set[str]] = []
    apply = catalog.index.apply

    def watched(*args: Any, **kwargs: Any) -> Any:
        with catalog.index.reader() as conn:
            seen.append({r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")})
        return apply(*args, **kwargs)

    catalog.index.apply = watched  # type: ignore[method-assign]
    try:
        assert catalog.scan().indexed == 60
        assert seen and "links_target" not in seen[0]  # written without them
        with catalog.index.reader() as conn:
            names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
            plan = str(conn.execute("EXPLAIN QUERY PLAN SELECT doc_id FROM links WHERE target_lc = 'x'").fetchall())
        assert {"links_target", "links_doc", "tags_tag", "props_kv", "docs_name", "docs_mtime"} <= names
        assert "links_target" in plan
        assert [link["source"] for link in catalog.incoming("f1/note 1.md")] == ["f0/note 0.md"]
        (vault / "f0" / "note 0.md").write_text("# Note 0\n\nNo links now.\n", encoding="utf-8")
        catalog.scan()  # not a first index: nothing is dropped
        assert catalog.incoming("f1/note 1.md") == []
    finally:
        catalog.close()


def test_a_note_written_during_the_first_index_is_not_overwritten_by_it(vault: Path, settings_for: Any):
    many_notes(vault, WAIT_BELOW + 10)
    service = VaultService(settings_for(vault, watch=False))
    try:
        with service.catalog.index.transaction():
            service.start_indexing()  # walked; the scan now waits to write
            assert service.indexing() is not None
        # The write waits for the scan's first batch, then wins over the scan's older reading.
        note = service.read_note("f0/note 0")
        service.write_note("f0/note 0", "Rewritten during the first index: wombats.", expected_hash=note.content_hash)
        assert service.wait_indexed(30)
        hits = service.search_notes("wombats").notes
        assert [h.path for h in hits] == ["f0/note 0.md"]
        assert service.search_notes("quokkas", limit=200).notes
    finally:
        service.close()
