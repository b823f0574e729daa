"""A search's total and its parsed text are reused, never stale."""

from pathlib import Path

from deskmcp.core.search.textindex import TextIndex


def test_a_ranked_search_counts_its_total_once_and_a_change_is_counted_again(tmp_path: Path):
    text = TextIndex(tmp_path / "t", ("title", "body"), (2.0, 1.0))
    try:
        text.write((), [(1, ["Budget", "numbers"]), (2, ["Standup", "the budget again"])], "s1")
        query = text.user_query("budget")
        assert text.user_query("budget") is query  # parsed once
        assert [i for i, _ in text.top(query.query, 1, counted=True)] == [1]
        assert text.count(query.query) == 2
        text.write((), [(3, ["Budget three", ""])], "s2")  # the next read commits: a new searcher
        assert text.count(query.query) == 3
        text.top(query.query, 1, counted=True)
        # totals of older searchers are let go: they would keep merged-away segments open
        assert [seen for seen, _, _ in text._counts] == [text.searcher()]
        assert text.user_query("budget", every=True) is not query
    finally:
        text.close()
