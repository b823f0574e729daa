"""mail/query.py on its own: every operator, quoting, negation, OR and grouping, and each refusal,
as tables of query -> tree (or -> error). The backends' translations are tested with their servers."""

from __future__ import annotations

from typing import Any

import pytest

from deskmcp.core.errors import BadRequest
from deskmcp.mail.query import (
    And,
    Node,
    Not,
    Or,
    Term,
    free_words,
    mentions_folder,
    parse_day,
    parse_query,
    relative_seconds,
    size_bytes,
)


def w(value: str) -> Term:
    """A free-text word or phrase."""
    return Term(None, value)


OPERATORS: list[tuple[str, Node]] = [
    ("from:alice", Term("from", "alice")),
    ("from:a@b.example", Term("from", "a@b.example")),
    ("to:bob", Term("to", "bob")),
    ("cc:carol", Term("cc", "carol")),
    ("bcc:dave", Term("bcc", "dave")),
    ("subject:budget", Term("subject", "budget")),
    ("is:unread", Term("is", "unread")),
    ("is:read", Term("is", "read")),
    ("is:starred", Term("is", "starred")),
    ("is:unstarred", Term("is", "unstarred")),
    ("label:Work", Term("label", "Work")),
    ("in:inbox", Term("in", "inbox")),
    ("in:anywhere", Term("in", "anywhere")),
    ("has:attachment", Term("has", "attachment")),
    ("filename:report.pdf", Term("filename", "report.pdf")),
    ("after:2024/01/15", Term("after", "2024/01/15")),
    ("before:2024-01-15", Term("before", "2024-01-15")),
    ("after:1700000000", Term("after", "1700000000")),
    ("newer_than:7d", Term("newer_than", "7d")),
    ("older_than:2m", Term("older_than", "2m")),
    ("larger:500K", Term("larger", "500K")),
    ("smaller:10M", Term("smaller", "10M")),
    ("rfc822msgid:<a1@example.org>", Term("rfc822msgid", "<a1@example.org>")),
]


@pytest.mark.parametrize(("query", "tree"), OPERATORS, ids=[q for q, _ in OPERATORS])
def test_each_supported_operator_parses_to_its_term(query: str, tree: Node) -> None:
    assert parse_query(query) == tree


SYNTAX: list[tuple[str, Node | None]] = [
    ("", None),
    ("   ", None),
    ("budget", w("budget")),
    ("budget report", And((w("budget"), w("report")))),
    # quoting
    ('"budget report"', Term(None, "budget report", quoted=True)),
    ('"budget"', Term(None, "budget", quoted=True)),
    ('from:"Ana Silva"', Term("from", "Ana Silva", quoted=True)),
    ('subject:"Q3 plan" draft', And((Term("subject", "Q3 plan", quoted=True), w("draft")))),
    # operator names are case-insensitive, values keep their case
    ("FROM:Alice", Term("from", "Alice")),
    ("Label:Clients", Term("label", "Clients")),
    # negation
    ("-spam", Not(w("spam"))),
    ("NOT spam", Not(w("spam"))),
    ("-from:bob", Not(Term("from", "bob"))),
    ('-"two words"', Not(Term(None, "two words", quoted=True))),
    ("-(a b)", Not(And((w("a"), w("b"))))),
    ("-{a b}", Not(Or((w("a"), w("b"))))),
    ("NOT (a OR b)", Not(Or((w("a"), w("b"))))),
    # OR binds tighter than the implicit AND, and chains flat
    ("a OR b", Or((w("a"), w("b")))),
    ("a | b", Or((w("a"), w("b")))),
    ("a OR b OR c", Or((w("a"), w("b"), w("c")))),
    ("a b OR c", And((w("a"), Or((w("b"), w("c")))))),
    ("from:x OR -is:read", Or((Term("from", "x"), Not(Term("is", "read"))))),
    # AND is the default and may be written
    ("a AND b", And((w("a"), w("b")))),
    # grouping
    ("(a b)", And((w("a"), w("b")))),
    ("(a)", w("a")),
    ("(a OR b) c", And((Or((w("a"), w("b"))), w("c")))),
    ("{a b}", Or((w("a"), w("b")))),
    ("{from:x to:y}", Or((Term("from", "x"), Term("to", "y")))),
    # a group after an operator applies it to each word, as Gmail does
    ("subject:(a b)", And((Term("subject", "a"), Term("subject", "b")))),
    ("subject:(a)", Term("subject", "a")),
    ("from:{ana bob}", Or((Term("from", "ana"), Term("from", "bob")))),
    ("from:(ana OR bob) budget", And((Or((Term("from", "ana"), Term("from", "bob"))), w("budget")))),
    ('subject:("Q3 plan" -draft)', And((Term("subject", "Q3 plan", quoted=True), Not(Term("subject", "draft"))))),
    ("-subject:(a b)", Not(And((Term("subject", "a"), Term("subject", "b"))))),
    ("SUBJECT:(a subject:b)", And((Term("subject", "a"), Term("subject", "b")))),
    ("is:(unread starred)", And((Term("is", "unread"), Term("is", "starred")))),
    ("subject:(a (b OR c))", And((Term("subject", "a"), Or((Term("subject", "b"), Term("subject", "c")))))),
    # words with colons that are not operators stay words
    ("http://example.com", w("http://example.com")),
    ("10:30", w("10:30")),
    ("re:hello", w("re:hello")),
    # a lone dash is a word, not a negation of nothing
    ("-", w("-")),
]


@pytest.mark.parametrize(("query", "tree"), SYNTAX, ids=[repr(q) for q, _ in SYNTAX])
def test_quoting_negation_or_and_grouping_parse_to_the_expected_tree(query: str, tree: Node | None) -> None:
    assert parse_query(query) == tree


ERRORS: list[tuple[str, str, dict[str, Any]]] = [
    ("category:social", "The search operator 'category:' is not supported", {"operator": "category"}),
    ("from:", "needs a value: write from:word", {"operator": "from"}),
    ('from:""', "needs a value", {"operator": "from"}),
    ("subject:(a from:b)", "put 'from:' outside the parentheses", {"operator": "subject"}),
    ("subject:()", "Empty parentheses", {}),
    ("subject:(a", "Missing ')'", {}),
    ("is:(unread important)", "use is:unread", {"operator": "is"}),
    ("category:(a b)", "The search operator 'category:' is not supported", {"operator": "category"}),
    ("is:important", "use is:unread, is:read, is:starred, is:unstarred", {"operator": "is"}),
    ("has:drive", "use has:attachment", {"operator": "has"}),
    ("after:yesterday", "write YYYY/MM/DD", {"value": "yesterday"}),
    ("before:2024/13/45", "write YYYY/MM/DD", {"value": "2024/13/45"}),
    ("newer_than:7w", "write 7d, 2m or 1y", {"value": "7w"}),
    ("older_than:d", "write 7d, 2m or 1y", {"value": "d"}),
    ("larger:big", "write 500K or 10M", {"value": "big"}),
    ("smaller:1G", "write 500K or 10M", {"value": "1G"}),
    ("OR a", "OR needs a term on each side", {}),
    ("a OR", "ends where a term was expected", {}),
    ("NOT", "ends where a term was expected", {}),
    ("(a", "Missing ')'", {}),
    ("{a", "Missing '}'", {}),
    ("a)", "Unbalanced ')'", {}),
    ("()", "Empty parentheses", {}),
    ("{}", "Empty parentheses", {}),
]


@pytest.mark.parametrize(("query", "message", "details"), ERRORS, ids=[q for q, _, _ in ERRORS])
def test_a_query_that_cannot_be_searched_is_a_bad_request_saying_what_to_write(
    query: str, message: str, details: dict[str, Any]
) -> None:
    with pytest.raises(BadRequest) as info:
        parse_query(query)
    assert message in info.value.message
    assert info.value.details == {"query": query, **details}


def test_the_unsupported_operator_message_lists_every_supported_operator() -> None:
    with pytest.raises(BadRequest) as info:
        parse_query("category:social")
    for op in ("from", "to", "cc", "bcc", "subject", "is", "label", "in", "has", "filename", "rfc822msgid"):
        assert f"{op}:" in info.value.message


def test_a_query_over_2000_characters_is_refused_quoting_only_its_start() -> None:
    with pytest.raises(BadRequest) as info:
        parse_query("a" * 2001)
    assert "longer than 2000" in info.value.message
    assert info.value.details["query"] == "a" * 100


DAYS = [
    ("2024/01/15", "2024-01-15T00:00:00+00:00"),
    ("2024-01-15", "2024-01-15T00:00:00+00:00"),
    ("2024/1/5", "2024-01-05T00:00:00+00:00"),
    ("1700000000", "2023-11-14T22:13:20+00:00"),
]


@pytest.mark.parametrize(("value", "moment"), DAYS)
def test_dates_read_as_utc_midnight_or_the_epoch_instant(value: str, moment: str) -> None:
    assert parse_day(value).isoformat() == moment


@pytest.mark.parametrize(("value", "days"), [("1d", 1), ("7d", 7), ("2m", 60), ("1y", 365), ("3D", 3)])
def test_relative_ages_count_a_month_as_30_days_and_a_year_as_365(value: str, days: int) -> None:
    assert relative_seconds(value) == days * 86400


@pytest.mark.parametrize(("value", "size"), [("7", 7), ("2k", 2048), ("500K", 512_000), ("10M", 10 * 1024 * 1024)])
def test_sizes_are_bytes_with_binary_k_and_m(value: str, size: int) -> None:
    assert size_bytes(value) == size


@pytest.mark.parametrize(
    ("query", "named"),
    [("in:trash", True), ("label:TRASH", True), ("-in:trash a", True), ("(a OR in:trash)", True), ("trash", False)],
)
def test_mentions_folder_finds_in_or_label_anywhere_in_the_tree(query: str, named: bool) -> None:
    assert mentions_folder(parse_query(query), ("trash",)) is named


def test_free_words_keep_positive_free_text_only() -> None:
    assert free_words(parse_query('a -b (c OR "d e") from:x')) == ["a", "c", "d e"]
    assert free_words(None) == []
