import threading
from pathlib import Path

import pytest

from deskmcp.core.errors import BadRequest
from deskmcp.core.index import IndexRecord, IndexSchema, SearchIndex, fts_query

SCHEMA = IndexSchema(
    name="test",
    version=1,
    text_fields=("title", "body"),
    weights=(5.0, 1.0),
    columns=(("day", "TEXT"),),
    side_tables=(
        "CREATE TABLE tags (doc_id INTEGER NOT NULL REFERENCES docs(id) ON DELETE CASCADE, tag TEXT)",
        "CREATE INDEX tags_doc ON tags(doc_id)",
    ),
)


def rec(key: str, title: str, body: str, day: str = "2024-01-01", tags: tuple[str, ...] = ()) -> IndexRecord:
    return IndexRecord(
        key=key,
        fingerprint=f"{title}|{body}|{day}|{tags}",
        texts={"title": title, "body": body},
        columns={"day": day},
        data=key.encode(),
        side={"tags": [(t,) for t in tags]},
    )


@pytest.fixture
def index(tmp_path: Path) -> SearchIndex:
    idx = SearchIndex(tmp_path / "i.sqlite3", SCHEMA)
    yield idx
    idx.close()


def test_search_ranks_title_matches_above_body_matches_and_marks_snippets(index: SearchIndex):
    index.sync([rec("a", "Budget review", "numbers"), rec("b", "Standup", "we discussed the budget briefly")])
    hits = index.search("budget")
    assert [h.key for h in hits] == ["a", "b"]
    assert hits[0].score is not None and hits[0].score > hits[1].score  # type: ignore[operator]
    assert "⟦budget⟧" in (hits[1].snippet or "").lower()


def test_search_stems_words(index: SearchIndex):
    index.sync([rec("a", "Meetings planned", "")])
    assert [h.key for h in index.search("meeting plan")] == ["a"]


def test_user_text_with_fts_syntax_is_searched_as_words(index: SearchIndex):
    index.sync([rec("a", "NOT a drill", "title:body AND OR *")])
    assert [h.key for h in index.search('NOT "drill')] == ["a"]
    assert [h.key for h in index.search("title:body")] == ["a"]
    with pytest.raises(BadRequest):
        index.search('*** "" ---')


def test_fts_query_quotes_terms_and_keeps_phrases():
    assert fts_query('budget "next week" x"y') == '"budget" "next week" "x""y"'


def test_sync_touches_only_changed_records_and_removes_missing_ones(index: SearchIndex):
    first = index.sync([rec("a", "one", ""), rec("b", "two", ""), rec("c", "three", "")])
    assert (first.added, first.updated, first.deleted) == (3, 0, 0)
    second = index.sync([rec("a", "one", ""), rec("b", "two changed", "")])
    assert (second.added, second.updated, second.deleted, second.unchanged) == (0, 1, 1, 1)
    assert index.search("three") == []
    assert [h.key for h in index.search("changed")] == ["b"]
    assert index.count() == 2


def test_filters_combine_with_the_text_query_through_side_tables(index: SearchIndex):
    index.sync([rec("a", "plan", "", tags=("work",)), rec("b", "plan", "", tags=("home",))])
    hits = index.search(
        "plan", where="EXISTS (SELECT 1 FROM tags t WHERE t.doc_id = d.id AND t.tag = ?)", params=["home"]
    )
    assert [h.key for h in hits] == ["b"]


def test_updating_a_record_replaces_its_side_rows(index: SearchIndex):
    index.sync([rec("a", "plan", "", tags=("x", "y"))])
    index.sync([rec("a", "plan", "", tags=("z",))])
    with index.reader() as conn:
        assert [r[0] for r in conn.execute("SELECT tag FROM tags")] == ["z"]


def test_select_orders_and_pages_without_a_query(index: SearchIndex):
    index.sync([rec(k, k, "", day=f"2024-01-0{i}") for i, k in enumerate("abcde", start=1)])
    page1 = index.select(order_by="d.day DESC", limit=2)
    page2 = index.select(order_by="d.day DESC", limit=2, offset=2)
    assert [h.key for h in page1 + page2] == ["e", "d", "c", "b"]
    assert page1[0].columns["day"] == "2024-01-05"


def test_index_persists_across_reopen(tmp_path: Path):
    path = tmp_path / "p.sqlite3"
    idx = SearchIndex(path, SCHEMA)
    idx.sync([rec("a", "persisted", "")], meta={"source": "v1"})
    idx.close()
    again = SearchIndex(path, SCHEMA)
    assert [h.key for h in again.search("persisted")] == ["a"]
    assert again.get_meta("source") == "v1"
    again.close()


def test_a_schema_change_rebuilds_the_index(tmp_path: Path):
    path = tmp_path / "p.sqlite3"
    SearchIndex(path, SCHEMA).sync([rec("a", "old", "")])
    newer = IndexSchema(name="test", version=2, text_fields=("title", "body", "extra"))
    idx = SearchIndex(path, newer)
    assert idx.count() == 0
    idx.close()


def test_a_corrupt_index_file_is_moved_aside_and_rebuilt(tmp_path: Path):
    path = tmp_path / "p.sqlite3"
    path.write_bytes(b"this is not a database" * 100)
    idx = SearchIndex(path, SCHEMA)
    idx.sync([rec("a", "fresh", "")])
    assert [h.key for h in idx.search("fresh")] == ["a"]
    assert any(p.name.startswith("p.sqlite3.corrupt-") for p in tmp_path.iterdir())
    idx.close()


def test_a_failed_apply_leaves_the_index_unchanged(index: SearchIndex):
    index.sync([rec("a", "kept", "")])
    bad = IndexRecord(key="b", fingerprint="x", texts={"title": "new"}, side={"nope": [(1,)]})
    with pytest.raises(ValueError, match="unknown side table"):
        index.apply([rec("c", "also new", ""), bad])
    assert index.count() == 1
    assert index.search("new") == []


def test_concurrent_readers_and_a_writer_see_consistent_results(index: SearchIndex):
    index.sync([rec(str(i), f"doc {i}", "common words") for i in range(200)])
    errors: list[BaseException] = []

    def read() -> None:
        try:
            for _ in range(50):
                hits = index.search("common", limit=500)
                assert len(hits) in (200, 201)
        except BaseException as exc:  # collected for the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=read) for _ in range(4)]
    for t in threads:
        t.start()
    index.apply([rec("new", "doc new", "common words")])
    for t in threads:
        t.join(timeout=30)
    assert errors == []
    assert index.count() == 201


def test_any_prefix_filter_matches_any_value_by_word_prefix(index: SearchIndex):
    from deskmcp.core.index import TEXT_MATCH, fts_any_prefix

    index.sync([rec("a", "Alice Okafor", "alice@example.com"), rec("b", "Bob Stone", ""), rec("c", "Carol", "")])
    query = fts_any_prefix("title", ["ali", "BOB st"])
    with index.reader() as conn:
        keys = {r[0] for r in conn.execute(f"SELECT d.key FROM docs d WHERE {TEXT_MATCH}", (query,))}
    assert keys == {"a", "b"}
    assert [h.key for h in index.select(where=TEXT_MATCH, params=[fts_any_prefix("title", ["alice"])])] == ["a"]
    with pytest.raises(BadRequest):
        fts_any_prefix("title", ["--", "  "])
