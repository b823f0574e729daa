import sqlite3
import subprocess
import sys
import threading
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from deskmcp.core.errors import BadRequest, IOFailure
from deskmcp.core.search import index as index_module
from deskmcp.core.search import sqlite as index_sqlite
from deskmcp.core.search.index import TEXT_MATCH, IndexRecord, IndexSchema, SearchIndex, text_match
from deskmcp.core.search.sqlite import check_pages
from tests.helpers.files import damage_a_page, locked_by_another

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
def index(tmp_path: Path) -> Iterator[SearchIndex]:
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


def test_accents_match_composed_or_decomposed_either_way(index: SearchIndex):
    decomposed = unicodedata.normalize("NFD", "Crème brûlée")
    index.sync([rec("nfd", decomposed, "for the " + unicodedata.normalize("NFD", "café")), rec("nfc", "Café", "")])
    for query in ("brûlée", decomposed, "brulee"):
        hits = index.search(query)
        assert [h.key for h in hits] == ["nfd"], query
        assert "⟦brûlée⟧" in (hits[0].snippet or ""), hits[0].snippet
    assert sorted(h.key for h in index.search(unicodedata.normalize("NFD", "café"))) == ["nfc", "nfd"]
    assert index.unmatched_terms("brûlée") == []
    # The text index rebuilt from the texts SQLite holds finds them the same way.
    index.rebuild_text()
    assert [h.key for h in index.search("brûlée")] == ["nfd"]


def test_user_text_with_fts_syntax_is_searched_as_words(index: SearchIndex):
    index.sync([rec("a", "NOT a drill", "title:body AND OR *")])
    assert [h.key for h in index.search('NOT "drill')] == ["a"]
    assert [h.key for h in index.search("title:body")] == ["a"]
    with pytest.raises(BadRequest):
        index.search('*** "" ---')


def test_text_match_selects_records_by_words_in_any_field_or_one_field(index: SearchIndex):
    index.sync([rec("a", "budget review", "next week"), rec("b", "weekly notes", "budget NOT approved")])
    keys = lambda spec: [h.key for h in index.select(where=TEXT_MATCH, params=[spec])]  # noqa: E731
    assert keys(text_match("budget")) == ["a", "b"]
    assert keys(text_match('"next week"')) == ["a"]
    assert keys(text_match("budget", "title")) == ["a"]
    assert keys(text_match("NOT approved")) == ["b"]  # operators are words
    assert index.match_count(text_match("budget")) == 2
    with pytest.raises(BadRequest):
        text_match('*** "" ---')


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


def test_tables_another_process_made_first_are_kept(tmp_path: Path):
    # Two replicas opening the same new index: both see no schema, one makes the tables, and the
    # other reaches its write transaction after. It decides there, finds the schema made, and
    # keeps it (it used to act on its earlier look: drop what it had seen, then fail on
    # `CREATE TABLE meta` or drop the first one's records).
    path = tmp_path / "p.sqlite3"
    first = SearchIndex(path, SCHEMA)
    first.sync([rec("a", "kept", "")])
    late = sqlite3.connect(path, isolation_level=None)
    try:
        first._create(late, f"{SCHEMA.name}:{SCHEMA.version}:{index_module.STORAGE}")
    finally:
        late.close()
    assert [h.key for h in first.search("kept")] == ["a"]
    assert first.count() == 1
    first.close()


def test_a_corrupt_index_file_is_moved_aside_and_rebuilt(tmp_path: Path):
    path = tmp_path / "p.sqlite3"
    path.write_bytes(b"this is not a database" * 100)
    idx = SearchIndex(path, SCHEMA)
    idx.sync([rec("a", "fresh", "")])
    assert [h.key for h in idx.search("fresh")] == ["a"]
    assert any(p.name.startswith("p.sqlite3.corrupt-") for p in tmp_path.iterdir())
    idx.close()


def test_damaged_indexes_set_aside_in_the_same_second_are_all_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(index_sqlite, "time", SimpleNamespace(time=lambda: 1_800_000_000.0))
    path = tmp_path / "p.sqlite3"
    for n in range(3):
        path.write_bytes(f"damaged copy {n}".encode() * 100)
        SearchIndex(path, SCHEMA).close()
    kept = sorted(p.name for p in tmp_path.iterdir() if ".corrupt-" in p.name)
    assert kept == ["p.sqlite3.corrupt-1800000000", "p.sqlite3.corrupt-1800000000-2", "p.sqlite3.corrupt-1800000000-3"]
    assert {(tmp_path / name).read_bytes()[:14] for name in kept} == {b"damaged copy %d" % n for n in range(3)}


def test_an_index_whose_pages_are_damaged_is_moved_aside_and_rebuilt(tmp_path: Path):
    # A valid database with one damaged page opens and answers most reads: SQLite's own check
    # finds the damage, and the index is rebuilt rather than served until a read trips on it.
    path = tmp_path / "p.sqlite3"
    idx = SearchIndex(path, SCHEMA)
    idx.sync([rec(f"k{i}", f"title {i}", "word " * 50 + f"w{i}") for i in range(3000)])
    idx.close()
    damage_a_page(path)
    idx = SearchIndex(path, SCHEMA)
    assert idx.count() == 0
    assert any(p.name.startswith("p.sqlite3.corrupt-") for p in tmp_path.iterdir())
    idx.sync([rec("a", "fresh", "")])
    assert [h.key for h in idx.search("fresh")] == ["a"]
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
    from deskmcp.core.search.index import TEXT_MATCH, fts_any_prefix

    index.sync([rec("a", "Alice Okafor", "alice@example.com"), rec("b", "Bob Stone", ""), rec("c", "Carol", "")])
    query = fts_any_prefix("title", ["ali", "BOB st"])
    with index.reader() as conn:
        keys = {r[0] for r in conn.execute(f"SELECT d.key FROM docs d WHERE {TEXT_MATCH}", (query,))}
    assert keys == {"a", "b"}
    assert [h.key for h in index.select(where=TEXT_MATCH, params=[fts_any_prefix("title", ["alice"])])] == ["a"]
    with pytest.raises(BadRequest):
        fts_any_prefix("title", ["--", "  "])


def test_search_folds_diacritics_both_ways_and_marks_accented_words(index: SearchIndex):
    index.sync([rec("a", "Dessert", "The crème brûlée at the café was naïve."), rec("b", "Plain", "creme fraiche")])
    assert [h.key for h in index.search("brulee")] == ["a"]
    hits = index.search("café")
    assert [h.key for h in hits] == ["a"]
    assert "⟦café⟧" in (hits[0].snippet or "")
    assert {h.key for h in index.search("crème")} == {"a", "b"}


def test_a_quoted_phrase_matches_its_words_in_order_only(index: SearchIndex):
    index.sync([rec("a", "", "annual renewals are due"), rec("b", "", "renewals annual report")])
    assert [h.key for h in index.search('"annual renewals"')] == ["a"]
    assert {h.key for h in index.search("annual renewals")} == {"a", "b"}
    assert [h.key for h in index.search('"annual renewal"')] == ["a"]  # stemmed inside phrases too


def test_a_search_pages_with_offsets_without_gaps_or_repeats(index: SearchIndex):
    index.sync([rec(f"{i:02}", f"doc {i}", "word " * (i % 7 + 1)) for i in range(30)])
    everything = [h.key for h in index.search("word", limit=30)]
    pages = [h.key for off in range(0, 30, 7) for h in index.search("word", limit=7, offset=off)]
    assert pages == everything
    assert sorted(everything) == [f"{i:02}" for i in range(30)]
    assert index.count(query="word") == 30


def test_a_narrow_filter_still_finds_its_low_ranked_matches(index: SearchIndex):
    strong = [rec(f"s{i:03}", "budget", "budget budget", day="2024-01-01") for i in range(300)]
    weak = [
        rec(f"w{i}", "other", "a long body that mentions the budget once " + "filler " * 50, day="2025-06-01")
        for i in range(3)
    ]
    index.sync(strong + weak)
    hits = index.search("budget", where="d.day >= ?", params=["2025-01-01"], limit=2)
    assert [h.key for h in hits] == ["w0", "w1"] or {h.key for h in hits} <= {"w0", "w1", "w2"}
    rest = index.search("budget", where="d.day >= ?", params=["2025-01-01"], limit=2, offset=2)
    assert {h.key for h in hits + rest} == {"w0", "w1", "w2"}
    assert all("⟦budget⟧" in (h.snippet or "") for h in hits + rest)
    assert index.count(query="budget", where="d.day >= ?", params=["2025-01-01"]) == 3


def test_a_broad_filter_keeps_the_best_ranked_first(index: SearchIndex):
    index.sync([rec(f"{i:02}", "plan" if i == 7 else "other", "plan", tags=("t",)) for i in range(40)])
    where = "EXISTS (SELECT 1 FROM tags t WHERE t.doc_id = d.id AND t.tag = ?)"
    hits = index.search("plan", where=where, params=["t"], limit=5)
    assert hits[0].key == "07"
    assert len(hits) == 5


def test_a_text_search_can_be_ordered_by_a_column_instead_of_score(index: SearchIndex):
    index.sync([rec(k, "plan", "", day=f"2024-01-0{i}") for i, k in enumerate("abcde", start=1)] + [rec("z", "x", "")])
    hits = index.search("plan", where="d.day < ?", params=["2024-01-05"], order_by="d.day DESC", limit=2, offset=1)
    assert [h.key for h in hits] == ["c", "b"]
    assert hits[0].score is None


def test_updated_and_deleted_records_leave_the_text_index(index: SearchIndex):
    index.sync([rec("a", "alpha", "first words"), rec("b", "beta", "gone soon")])
    index.sync([rec("a", "alpha", "second words")])
    assert index.search("first") == []
    assert index.search("gone") == []
    assert [h.key for h in index.search("second")] == ["a"]
    assert index.count(query="words") == 1
    index.clear()
    assert index.search("second") == []
    assert index.count() == 0


@pytest.mark.e2e
def test_a_crash_between_the_record_and_text_commits_loses_nothing(tmp_path: Path):
    path = tmp_path / "c.sqlite3"
    idx = SearchIndex(path, SCHEMA)
    idx.sync([rec("a", "", "old words"), rec("b", "", "doomed record")])
    idx.close()
    # A real process that commits records, then dies before the text index commits.
    script = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "sys.path.insert(0, sys.argv[2])\n"
        "from test_index import SCHEMA, rec\n"
        "from deskmcp.core.search.index import SearchIndex\n"
        "idx = SearchIndex(Path(sys.argv[1]), SCHEMA)\n"
        "idx.apply([rec('a', '', 'new words'), rec('c', '', 'added late')], ['b'])\n"
        "assert idx._text.pending\n"
        "os._exit(0)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(path), str(Path(__file__).parent)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    again = SearchIndex(path, SCHEMA)
    assert [h.key for h in again.search("new")] == ["a"]
    assert again.search("old") == []
    assert again.search("doomed") == []
    assert [h.key for h in again.search("late")] == ["c"]
    again.close()


def test_an_unreadable_text_index_is_rebuilt_from_the_records(tmp_path: Path):
    path = tmp_path / "u.sqlite3"
    idx = SearchIndex(path, SCHEMA)
    idx.sync([rec("a", "kept", "words survive")])
    idx.close()
    for file in (tmp_path / "u.sqlite3.text").iterdir():
        if file.is_file():
            file.write_bytes(b"garbage")
    again = SearchIndex(path, SCHEMA)
    assert [h.key for h in again.search("survive")] == ["a"]
    assert "⟦survive⟧" in (again.search("survive")[0].snippet or "")
    again.close()


def test_a_rebuild_reads_the_stored_texts_not_the_sources(tmp_path: Path):
    path = tmp_path / "r.sqlite3"
    idx = SearchIndex(path, SCHEMA)
    idx.sync([rec(str(i), f"title {i}", f"body {i} shared") for i in range(50)])
    assert idx.rebuild_text() == 50
    assert idx.count(query="shared") == 50
    assert [h.key for h in idx.search("title 7", limit=1)] == ["7"]
    idx.close()


def test_a_new_empty_index_opens_without_building_its_text_index_and_fills_it_on_the_first_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    path = tmp_path / "new.sqlite3"

    def refused(self: SearchIndex) -> int:
        raise AssertionError("an empty index was rebuilt")

    with monkeypatch.context() as patched:
        patched.setattr(SearchIndex, "rebuild_text", refused)
        first = SearchIndex(path, SCHEMA)
        again = SearchIndex(path, SCHEMA)  # a second process opening it meanwhile
    assert first.search("anything") == [] and first.count() == 0
    first.apply([rec("a", "one", "shared words")])
    assert [h.key for h in first.search("shared")] == ["a"]  # (the read commits the write)
    assert [h.key for h in again.search("shared")] == ["a"]
    again.close()
    first.close()
    reopened = SearchIndex(path, SCHEMA)
    assert [h.key for h in reopened.search("words")] == ["a"]
    reopened.close()


def test_settle_lets_another_index_write_at_once_instead_of_after_the_idle_pause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    import deskmcp.core.search.textindex as textindex

    monkeypatch.setattr(textindex, "IDLE_RELEASE", 3600.0)
    monkeypatch.setattr(textindex, "LOCK_WAIT", 0.3)
    monkeypatch.setattr(textindex, "WANTED_FRESH", 0.0)  # the holder does not hear the waiter
    path = tmp_path / "s.sqlite3"
    first = SearchIndex(path, SCHEMA)
    first.apply([rec("a", "one", "bulk")])
    assert [h.key for h in first.search("bulk")] == ["a"]  # committed, the writer kept
    second = SearchIndex(path, SCHEMA)
    with pytest.raises(IOFailure):  # the first still holds its writer
        second.apply([rec("b", "two", "bulk")])
    first.settle()
    second.apply([rec("b", "two", "bulk")])
    assert {h.key for h in second.search("bulk")} == {"a", "b"}
    second.close()
    first.close()


def test_a_writer_another_index_waits_for_is_let_go_at_once_rather_than_after_the_idle_pause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    import deskmcp.core.search.textindex as textindex

    # Two replicas serving one user's index: the one holding the writer would keep it until its
    # writes pause (here never), and the other's write would give up after LOCK_WAIT.
    monkeypatch.setattr(textindex, "IDLE_RELEASE", 3600.0)
    monkeypatch.setattr(textindex, "LOCK_WAIT", 5.0)
    path = tmp_path / "w.sqlite3"
    first = SearchIndex(path, SCHEMA)
    first.apply([rec("a", "one", "steady")])
    second = SearchIndex(path, SCHEMA)

    second.apply([rec("b", "two", "steady")])
    first.apply([rec("c", "three", "steady")])  # and back: the second lets go in turn

    assert {h.key for h in first.search("steady")} == {"a", "b", "c"}
    assert {h.key for h in second.search("steady")} == {"a", "b", "c"}
    second.close()
    first.close()


def test_two_indexes_on_the_same_files_take_turns_and_see_each_others_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    import deskmcp.core.search.textindex as textindex

    monkeypatch.setattr(textindex, "IDLE_RELEASE", 0.3)  # each waits for the other's idle writer to let go
    path = tmp_path / "l.sqlite3"
    first = SearchIndex(path, SCHEMA)
    first.apply([rec("a", "one", "shared")])
    second = SearchIndex(path, SCHEMA)  # waits for the first one's pending commit, rebuilds nothing
    second.apply([rec("b", "two", "shared")])
    assert {h.key for h in second.search("shared")} == {"a", "b"}
    assert {h.key for h in first.search("shared")} == {"a", "b"}
    first.apply([], ["b"])
    assert [h.key for h in second.search("shared")] == ["a"]
    second.close()
    first.close()


def test_user_text_with_query_parser_syntax_is_searched_as_words(index: SearchIndex):
    index.sync([rec("a", "title", "field:value (group) +must -not ~fuzzy [range TO x] ^2 \\escape")])
    for text in ("field:value", "(group)", "+must", "~fuzzy", "[range TO x]", "^2", "\\escape", "body:*"):
        hits = index.search(text)
        assert [h.key for h in hits] == (["a"] if text != "body:*" else []), text
    # +word and -word are the two signs a search reads: required, excluded
    assert [h.key for h in index.search("+field -not")] == []
    assert [h.key for h in index.search("+field -absent")] == ["a"]


def test_texts_compressed_with_a_trained_dictionary_survive_reopen_and_rebuild(tmp_path: Path):
    path = tmp_path / "z.sqlite3"
    idx = SearchIndex(path, SCHEMA)
    idx.sync(
        [
            rec(f"{i:03}", f"Weekly sync {i}", f"## Notes\nWe reviewed the budget ({i}) and the roadmap.")
            for i in range(100)
        ]
    )
    with idx.reader() as conn:
        assert conn.execute("SELECT count(*) FROM zdicts").fetchone()[0] == 1
    idx.apply([rec("new", "Late entry", "crème brûlée after the dictionary")])
    idx.close()
    again = SearchIndex(path, SCHEMA)
    assert again.rebuild_text() == 101
    assert "⟦roadmap⟧" in (again.search("roadmap", limit=1)[0].snippet or "")
    assert "⟦brûlée⟧" in (again.search("brulee")[0].snippet or "")
    again.close()


def test_a_snippet_from_a_long_field_shows_the_match_far_into_it(index: SearchIndex):
    filler = "lorem ipsum dolor sit amet " * 400
    index.sync(
        [
            rec("a", "Transcript", filler + "then the companies discussed budgets at length " + filler),
            rec("b", "Résumé", "é " + filler + "the café budget " + filler),
        ]
    )
    snippet = index.search("company budget")[0].snippet or ""
    assert "⟦companies⟧" in snippet or "⟦budgets⟧" in snippet
    assert snippet.startswith("…") and snippet.endswith("…")
    assert "⟦café⟧" in (index.search("cafe")[0].snippet or "")


def test_a_long_field_is_windowed_at_a_word_that_begins_there_not_inside_another(index: SearchIndex):
    filler = "lorem ipsum dolor sit amet " * 400
    text = "Zoë " + filler + "the rebudgeting talk " + filler + "then the Budget review " + filler
    index.sync([rec("c", "Réunion", text)])
    snippet = index.search("budget")[0].snippet or ""
    assert "⟦Budget⟧ review" in snippet
    assert snippet.startswith("…") and snippet.endswith("…")


def test_a_long_non_ascii_field_is_windowed_where_the_word_begins_after_many_accented_letters(index: SearchIndex):
    # the word is looked for in the UTF-8 bytes: its place there is not its place in the text
    filler = "lorem ipsum dolor sit amet " * 200
    text = "é " * 3000 + filler + "Zoëbudget and " + filler + "then the Budget review " + filler
    index.sync([rec("c", "Réunion", text)])
    snippet = index.search("budget")[0].snippet or ""
    assert "⟦Budget⟧ review" in snippet
    assert snippet.startswith("…") and snippet.endswith("…")


@pytest.mark.parametrize("other", ["", "é "])
def test_a_word_after_an_underscore_is_marked_in_the_snippet(index: SearchIndex, other: str):
    # the analyser splits words at `_`: `REF_SLUG` holds the word `slug`, and so does its snippet
    index.sync([rec("a", "Hosting", other + "deploy with $CI_COMMIT_REF_SLUG as the folder")])
    assert "⟦SLUG⟧" in (index.search("slug")[0].snippet or "")


def test_deferred_writes_reach_searches_after_the_commit_interval_and_others_at_once(
    index: SearchIndex, monkeypatch: pytest.MonkeyPatch
):
    import deskmcp.core.search.textindex as textindex

    index.apply([rec("a", "alpha", "first batch")])
    assert [h.key for h in index.search("alpha")] == ["a"]
    monkeypatch.setattr(textindex, "DEFERRED_COMMIT", 3600.0)
    index.apply([rec("b", "beta", "second batch")], deferred=True)
    assert index.search("beta") == []  # a bulk batch waits for the interval...
    assert index.count() == 2  # ...while the records themselves are there
    index.apply([rec("c", "gamma", "a write of its own")])
    assert sorted(h.key for h in index.search("batch")) == ["a", "b"]  # ...or for a write that cannot wait
    index.apply([rec("d", "delta", "third batch")], deferred=True)
    index.flush()
    assert [h.key for h in index.search("delta")] == ["d"]
    monkeypatch.setattr(textindex, "DEFERRED_COMMIT", 0.0)
    index.apply([rec("e", "epsilon", "fourth batch")], deferred=True)
    assert [h.key for h in index.search("epsilon")] == ["e"]


def test_one_apply_with_a_key_twice_keeps_the_last_record(index: SearchIndex):
    index.apply([rec("a", "first", "old text", tags=("x",)), rec("b", "other", "")])
    stats = index.apply([rec("a", "second", "new text", tags=("y",)), rec("c", "third", ""), rec("a", "third", "")])
    assert (stats.added, stats.updated) == (1, 1)
    assert index.count() == 3
    assert sorted(h.key for h in index.search("third")) == ["a", "c"]
    assert index.search("second") == [] and index.search("first") == []
    assert index.count(where="EXISTS (SELECT 1 FROM tags t WHERE t.doc_id = d.id)") == 0


def mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def test_index_files_are_private_to_the_user_security(tmp_path: Path):
    path = tmp_path / "state" / "index" / "p.sqlite3"
    idx = SearchIndex(path, SCHEMA)
    idx.sync([rec("a", "salary review", "confidential")])
    wal = Path(f"{path}-wal")
    assert wal.exists()
    assert mode(path) == 0o600
    assert mode(wal) == 0o600
    assert mode(Path(f"{path}-shm")) == 0o600
    assert mode(path.parent) == 0o700
    assert mode(idx.text_path) == 0o700
    idx.close()


def test_index_files_left_readable_by_others_are_narrowed_on_open_security(tmp_path: Path):
    path = tmp_path / "p.sqlite3"
    SearchIndex(path, SCHEMA).close()
    path.chmod(0o644)
    text = path.with_name(f"{path.name}.text")
    text.chmod(0o755)
    for file in text.iterdir():
        file.chmod(0o644)
    again = SearchIndex(path, SCHEMA)
    assert mode(path) == 0o600
    assert mode(text) == 0o700
    assert all(mode(f) == 0o600 for f in text.iterdir() if f.is_file())
    again.close()


def _indexes(index: SearchIndex) -> set[str]:
    with index.reader() as conn:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")}


def test_a_first_fill_builds_the_side_indexes_at_its_end_and_answers_the_same_meanwhile(index: SearchIndex):
    with index.bulk() as empty:
        assert empty
        assert "tags_doc" not in _indexes(index)  # dropped while the records go in
        index.apply([rec(f"k{i}", f"note {i}", "shared words", tags=("t",) if i % 2 else ()) for i in range(100)])
        assert index.count() == 100
        assert index.count(where="EXISTS (SELECT 1 FROM tags t WHERE t.doc_id = d.id AND t.tag = 't')") == 50
        assert len(index.search("shared", limit=200)) == 100
    assert _indexes(index) == {"tags_doc"}
    with index.reader() as conn:
        plan = " ".join(str(r) for r in conn.execute("EXPLAIN QUERY PLAN SELECT * FROM tags WHERE doc_id = 3"))
    assert "tags_doc" in plan


def test_a_fill_of_an_index_holding_records_keeps_its_side_indexes(index: SearchIndex):
    index.apply([rec("a", "one", "")])
    with index.bulk() as empty:
        assert not empty
        assert _indexes(index) == {"tags_doc"}
        index.apply([rec("b", "two", "")])
    assert _indexes(index) == {"tags_doc"}


def test_a_first_fill_that_fails_or_is_killed_leaves_the_side_indexes_built(tmp_path: Path):
    index = SearchIndex(tmp_path / "i.sqlite3", SCHEMA)
    with pytest.raises(RuntimeError), index.bulk():
        index.apply([rec("a", "one", "", tags=("x",))])
        raise RuntimeError("stopped")
    assert _indexes(index) == {"tags_doc"}
    # a process killed inside the fill never builds them: the next open does
    with index.transaction() as conn:
        conn.execute("DROP INDEX tags_doc")
    index.close()
    reopened = SearchIndex(tmp_path / "i.sqlite3", SCHEMA)
    try:
        assert _indexes(reopened) == {"tags_doc"}
        assert [h.key for h in reopened.search("one")] == ["a"]
    finally:
        reopened.close()


def test_the_page_check_takes_reports_about_values_for_what_they_are(tmp_path: Path):
    # SQLite 3.40 reports a NULL in every row of a WITHOUT ROWID table whose NOT NULL column comes
    # before a key column, though none is there: that is no damaged page, and nothing is set aside.
    conn = sqlite3.connect(tmp_path / "t.sqlite3")
    conn.execute(
        "CREATE TABLE t (a INTEGER NOT NULL, b TEXT NOT NULL, c TEXT NOT NULL, PRIMARY KEY (a, c)) WITHOUT ROWID"
    )
    conn.executemany("INSERT INTO t VALUES (?, ?, ?)", [(i, "x", "y") for i in range(50)])
    conn.commit()
    check_pages(conn)
    conn.close()


def test_an_index_locked_by_another_connection_is_not_taken_for_damaged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(index_module, "BUSY_WAIT", 0.2)
    path = tmp_path / "p.sqlite3"
    idx = SearchIndex(path, SCHEMA)
    idx.sync([rec("a", "kept", "")])
    idx.close()
    with locked_by_another(path), pytest.raises(sqlite3.OperationalError, match="locked"):
        SearchIndex(path, SCHEMA)
    assert not [p.name for p in tmp_path.iterdir() if ".corrupt-" in p.name]
    idx = SearchIndex(path, SCHEMA)
    assert [h.key for h in idx.search("kept")] == ["a"]
    idx.close()
