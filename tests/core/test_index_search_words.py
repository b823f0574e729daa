"""How the index reads a person's search text: any word ranks, stop words are never needed,
"phrases" stay phrases, +word is required, -word excluded, and words found nowhere are named."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from deskmcp.core.errors import BadRequest
from deskmcp.core.search.index import IndexRecord, IndexSchema, SearchIndex

SCHEMA = IndexSchema(
    name="words",
    version=1,
    text_fields=("title", "body"),
    weights=(5.0, 1.0),
    columns=(("day", "TEXT"),),
)


def rec(key: str, body: str, *, title: str = "", day: str = "2024-01-01") -> IndexRecord:
    texts = {"title": title, "body": body}
    return IndexRecord(key=key, fingerprint=f"{title}|{body}|{day}", texts=texts, columns={"day": day})


@pytest.fixture
def index(tmp_path: Path) -> Iterator[SearchIndex]:
    idx = SearchIndex(tmp_path / "w.sqlite3", SCHEMA)
    yield idx
    idx.close()


def keys(index: SearchIndex, query: str, **kwargs: object) -> list[str]:
    return [h.key for h in index.search(query, **kwargs)]  # type: ignore[arg-type]


def test_a_query_with_stop_words_and_a_word_found_nowhere_finds_the_records_holding_the_other_words(
    index: SearchIndex,
):
    index.sync([rec("a", "the remote control budget was agreed"), rec("b", "lunch plans")])
    assert keys(index, "What was the budget for the zorblax?") == ["a"]
    assert index.count(query="What was the budget for the zorblax?") == 1


def test_a_record_holding_only_stop_words_of_the_query_is_not_a_match(index: SearchIndex):
    index.sync([rec("a", "what was the plan"), rec("b", "budget")])
    assert keys(index, "what was the budget") == ["b"]
    assert keys(index, "what was the") == ["a"]  # stop words alone are searched for


def test_records_holding_every_word_rank_above_records_holding_some(index: SearchIndex):
    # "review" is common (weighs little), "budget" rare: a record saying budget three times
    # outscores one holding both words on bm25 alone.
    filler = [rec(f"f{i}", f"review notes item{i} x") for i in range(8)]
    index.sync([*filler, rec("many", "budget budget budget x"), rec("both", "budget review x y")])
    ranked = keys(index, "budget review", limit=3)
    assert ranked[:2] == ["both", "many"]


def test_a_quoted_phrase_matches_only_its_words_in_order(index: SearchIndex):
    index.sync([rec("a", "annual renewals are due"), rec("b", "renewals annual report")])
    assert keys(index, '"annual renewals"') == ["a"]
    assert keys(index, '"annual renewals" zorblax') == ["a"]
    assert set(keys(index, "annual renewals")) == {"a", "b"}


def test_a_plus_word_must_match_and_a_minus_word_must_not(index: SearchIndex):
    index.sync([rec("a", "budget review"), rec("b", "budget draft"), rec("c", "review only")])
    assert set(keys(index, "budget review")) == {"a", "b", "c"}
    assert set(keys(index, "+budget review")) == {"a", "b"}
    assert keys(index, "+budget +review") == ["a"]
    assert set(keys(index, "budget -draft")) == {"a"}
    assert keys(index, 'review -"budget review"') == ["c"]
    assert keys(index, "+the budget") == []  # a stop word written +word is required too
    assert index.count(query="+budget -draft") == 1


def test_a_query_that_only_excludes_words_is_a_bad_request_saying_so(index: SearchIndex):
    index.sync([rec("a", "budget")])
    with pytest.raises(BadRequest, match="only excludes"):
        index.search("-budget -draft")


def test_unmatched_terms_name_the_words_no_record_holds_as_written(index: SearchIndex):
    index.sync([rec("a", "budget review", day="2024-01-01"), rec("b", "cloud costs", day="2025-01-01")])
    assert index.unmatched_terms('Budget zorblax "costs cloud" -nothing') == ["zorblax", '"costs cloud"']
    assert index.unmatched_terms("budget cloud") == []
    # within a filter: cloud is held, but not by any record the filter keeps
    assert index.unmatched_terms("budget cloud", where="d.day < ?", params=["2025-01-01"]) == ["cloud"]
    assert keys(index, "zorblax quux") == []
    assert index.unmatched_terms("zorblax quux") == ["zorblax", "quux"]


def test_snippets_mark_the_words_searched_for_and_not_the_stop_words(index: SearchIndex):
    index.sync([rec("a", "the budget of the team is the first thing on the list")])
    snippet = index.search("what is the budget")[0].snippet or ""
    assert "⟦budget⟧" in snippet
    assert "⟦the⟧" not in snippet


def test_every_word_search_requires_each_word_but_the_stop_words(index: SearchIndex):
    index.sync([rec("a", "budget review", day="2024-01-02"), rec("b", "budget", day="2024-01-01")])
    ordered = {"order_by": "d.day DESC", "every_word": True}
    assert keys(index, "the budget review", **ordered) == ["a"]
    assert keys(index, "budget", **ordered) == ["a", "b"]
    assert keys(index, "budget -review", **ordered) == ["b"]
    assert index.count(query="the budget review", every_word=True) == 1


def test_unmatched_terms_within_a_filter_look_past_the_best_matches_the_filter_drops(index: SearchIndex):
    strong = [rec(f"s{i:03}", "budget budget cloud", day="2024-01-01") for i in range(100)]
    weak = rec("w", "a long text that names the budget once " + "filler " * 40, day="2025-06-01")
    index.sync([*strong, weak])
    later = {"where": "d.day >= ?", "params": ["2025-01-01"]}
    assert index.unmatched_terms("budget cloud", **later) == ["cloud"]  # type: ignore[arg-type]
    assert keys(index, "budget cloud", **later) == ["w"]


def test_unmatched_terms_after_a_search_are_what_a_count_of_each_term_says(index: SearchIndex):
    # A search's best matches are looked at first to show a term is held somewhere: a term
    # held only by a record outside them, or by none, is still found out.
    strong = [rec(f"s{i}", "budget budget budget review", title="budget") for i in range(6)]
    index.sync([*strong, rec("w", "a long text that names the cloud once " + "filler " * 40)])
    best = keys(index, "budget review cloud zorblax", limit=3)
    assert len(best) == 3 and "w" not in best
    assert index.unmatched_terms("budget review cloud zorblax") == ["zorblax"]
    assert keys(index, "cloud zorblax") == ["w"]
    index.sync(strong)  # the only record naming the cloud is gone: what that search saw is not used
    assert index.unmatched_terms("cloud zorblax") == ["cloud", "zorblax"]
    assert keys(index, "budget cloud", limit=2)
    assert index.unmatched_terms("budget cloud") == ["cloud"]
