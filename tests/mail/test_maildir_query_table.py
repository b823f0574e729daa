"""mail/backends/maildir_query.py on its own: a parsed query -> the SQL filter of the Maildir index,
as tables of query -> (clause, params), plus the listing's trash and spam rule, the common-word
form, the words whose counts decide it, and the CJK character pairs."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from deskmcp.core.errors import BadRequest
from deskmcp.core.search.index import TEXT_MATCH, fts_any_prefix, text_match
from deskmcp.mail.backends.maildir_query import (
    LABEL_SEP,
    ROWS,
    cjk_grams,
    exact_words,
    listing,
    term_clause,
    where,
    word_alternatives,
)
from deskmcp.mail.query import Term, parse_query

NOW = 1_800_000_000.0
DAY = 86_400


def translate(query: str, *, common: bool = False) -> tuple[str, list[Any]]:
    node = parse_query(query)
    assert node is not None
    return where(node, common=common, now=NOW)


TERMS: list[tuple[str, tuple[str, list[Any]]]] = [
    ("budget", (TEXT_MATCH, [text_match("budget")])),
    ('"quarterly review"', (TEXT_MATCH, [text_match('"quarterly review"')])),
    ("from:alice", (TEXT_MATCH, [text_match("alice", "sender")])),
    ("to:bob", (TEXT_MATCH, [text_match("bob", "tos")])),
    ("cc:carol", (TEXT_MATCH, [text_match("carol", "ccs")])),
    ("bcc:dave", (TEXT_MATCH, [text_match("dave", "bccs")])),
    ("subject:budget", (TEXT_MATCH, [text_match("budget", "subject")])),
    ("filename:report.pdf", (TEXT_MATCH, [text_match("report.pdf", "filenames")])),
    ("is:unread", ("d.unread = 1", [])),
    ("is:read", ("d.unread = 0", [])),
    ("is:starred", ("d.starred = 1", [])),
    ("is:unstarred", ("d.starred = 0", [])),
    ("has:attachment", ("d.has_att = 1", [])),
    ("after:2026/11/02", ("d.ts >= ?", [datetime(2026, 11, 2, tzinfo=UTC).timestamp()])),
    ("before:2026-11-02", ("d.ts < ?", [datetime(2026, 11, 2, tzinfo=UTC).timestamp()])),
    ("newer_than:7d", ("d.ts >= ?", [NOW - 7 * DAY])),
    ("older_than:2m", ("d.ts < ?", [NOW - 60 * DAY])),
    ("larger:1M", ("d.size > ?", [1024 * 1024])),
    ("smaller:10K", ("d.size < ?", [10 * 1024])),
    ("rfc822msgid:abc@example.org", ("d.rfc = ?", ["<abc@example.org>"])),
    ("rfc822msgid:<abc@example.org>", ("d.rfc = ?", ["<abc@example.org>"])),
    ("in:anywhere", ("1", [])),
    ("label:starred", ("d.starred = 1", [])),
    ("in:unread", ("d.unread = 1", [])),
    ("label:read", ("d.unread = 0", [])),
    ("in:drafts", ("d.folder = ?", [".Drafts"])),
    ("subject:会議", ("instr(lower(d.subject), ?) > 0", ["会議"])),
    ("from:山田", ("instr(lower(d.sender), ?) > 0", ["山田"])),
    ("会議の議事録", (TEXT_MATCH, [text_match('"会議 議の の議 議事 事録"', "grams")])),
    ("会", (TEXT_MATCH, [fts_any_prefix("grams", ["会"])])),
    ("filename:資料", (TEXT_MATCH, [text_match('"資料"', "grams")])),
]


@pytest.mark.parametrize(("query", "expected"), TERMS, ids=[q for q, _ in TERMS])
def test_each_operator_translates_to_its_index_clause(query: str, expected: tuple[str, list[Any]]) -> None:
    assert translate(query) == expected


LABELS: list[tuple[str, str, set[str]]] = [
    ("in:inbox", "", {"inbox"}),
    ("label:TRASH", ".trash", {"trash"}),
    ("in:spam", ".junk", {"spam"}),
    ("label:Projects/Alpha", ".projects.alpha", {"projects/alpha"}),
    ("label:follow-up", ".follow-up", {"follow-up", "follow up", "follow_up"}),
]


@pytest.mark.parametrize(("query", "directory", "labels"), LABELS, ids=[q for q, _, _ in LABELS])
def test_a_label_matches_its_folder_or_a_stored_label_in_any_spelling(
    query: str, directory: str, labels: set[str]
) -> None:
    clause, params = translate(query)
    assert clause == "lower(d.folder) = ? OR " + " OR ".join(["instr(lower(d.labels), ?) > 0"] * len(labels))
    assert params[0] == directory
    assert sorted(params[1:]) == sorted(f"{LABEL_SEP}{label}{LABEL_SEP}" for label in labels)


def test_and_or_and_negation_nest_their_clauses_in_order() -> None:
    clause, params = translate("from:alice (budget OR forecast) -is:read")
    assert clause == (f"({TEXT_MATCH}) AND (({TEXT_MATCH}) OR ({TEXT_MATCH})) AND (NOT (d.unread = 0))")
    assert params == [text_match("alice", "sender"), text_match("budget"), text_match("forecast")]


def test_common_words_are_written_so_the_date_order_drives_the_query() -> None:
    assert translate("budget is:unread", common=True) == (
        f"(+{TEXT_MATCH}) AND (d.unread = 1)",
        [text_match("budget")],
    )


@pytest.mark.parametrize(
    ("query", "hides_trash_and_spam"),
    [("", True), ("budget", True), ("in:trash", False), ("label:spam budget", False), ("in:anywhere", False)],
)
def test_a_listing_leaves_out_trash_and_spam_unless_the_query_names_them(
    query: str, hides_trash_and_spam: bool
) -> None:
    node = parse_query(query)
    clause, params = listing(node, now=NOW)
    inner = where(node, now=NOW) if node is not None else ("1", [])
    if hides_trash_and_spam:
        assert (clause, params) == (f"({inner[0]}) AND d.folder NOT IN (?, ?)", [*inner[1], ".Trash", ".Junk"])
    else:
        assert (clause, params) == inner


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("budget", [Term(None, "budget")]),
        ("is:unread (from:alice OR subject:plan) budget", [Term("from", "alice"), Term("subject", "plan")]),
        ("is:unread budget", [Term(None, "budget")]),
        ("is:unread has:attachment", None),
        ("会議", None),
        ("budget OR is:starred", None),
    ],
)
def test_the_words_whose_counts_decide_a_common_query_are_the_first_all_text_part(
    query: str, words: list[Term] | None
) -> None:
    node = parse_query(query)
    assert node is not None
    assert word_alternatives(node) == words


def test_an_operator_the_local_mailbox_cannot_answer_is_a_bad_request_naming_it() -> None:
    with pytest.raises(BadRequest) as raised:
        term_clause(Term("category", "updates"))
    assert raised.value.details == {"operator": "category"}
    assert "local mailbox" in raised.value.message


def test_cjk_runs_are_indexed_as_overlapping_pairs_then_their_last_character() -> None:
    assert cjk_grams("会議の") == "会議 議の の"
    assert cjk_grams("Budget 会議 and 資料です") == "会議 議 資料 料で です す"
    assert cjk_grams("no cjk here") == ""


def test_quoted_subject_and_free_terms_ask_the_phrase_rows_others_stay_stemmed() -> None:
    asked: list[tuple[str, tuple[str, ...]]] = []

    def phrases(value: str, fields: tuple[str, ...]) -> list[int]:
        asked.append((value, fields))
        return [3, 7]

    def clause(query: str) -> tuple[str, list[Any]]:
        node = parse_query(query)
        assert node is not None
        return where(node, now=NOW, phrases=phrases)

    assert clause('"quarter review"') == (ROWS, ["[3,7]"])
    assert clause('subject:"Q3"') == (ROWS, ["[3,7]"])
    assert clause('from:"Ana Silva"') == (TEXT_MATCH, [text_match('"Ana Silva"', "sender")])
    assert clause("quarter review") == (
        f"({TEXT_MATCH}) AND ({TEXT_MATCH})",
        [text_match("quarter"), text_match("review")],
    )
    assert asked == [("quarter review", ("subject", "body")), ("Q3", ("subject",))]


@pytest.mark.parametrize(
    ("phrase", "text", "found"),
    [
        ("quarter review", "The Quarter  Review is on", True),
        ("quarter review", "quarter-review", True),
        ("quarter review", "quarterly review", False),
        ("quarter review", "review quarter", False),
        ("quarter review", "quarter big review", False),
        ("meeting", "meetings", False),
        ("meeting", "a meeting.", True),
        ("résumé", "resume", False),
    ],
)
def test_exact_words_match_adjacent_words_in_order_case_insensitive_not_stemmed(
    phrase: str, text: str, found: bool
) -> None:
    pattern = exact_words(phrase)
    assert pattern is not None
    assert bool(pattern.search(text)) is found
