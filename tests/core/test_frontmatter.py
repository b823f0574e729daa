"""The common-shape frontmatter reader must agree with the YAML parser on everything it accepts."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from deskmcp.core import frontmatter
from deskmcp.core.errors import ParseError

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpora" / "quartz-docs"

# Pieces of frontmatter, usual and odd; one value per item keeps the tables readable.
# fmt: off
KEYS = ["title", "Title", "due date", "a:b", "true", "False", "null", "yes", "on", "x-y", "é", "tags", "_k",
        "k#x", "key ", "1", "2024-01-05", "~", "a b:c", "[x]", "\"q\"", "k" * 1001, "ключ", "a\u00a0b"]
VALUES = [
    "hello", "hello world", "yes", "no", "on", "off", "y", "N", "True", "TRUE", "tRue", "false", "null", "Null",
    "NULL", "nULL", "~", "", "0755", "12", "-5", "+5", "1.5", "1e3", ".inf", ".NaN", "0x1F", "0o17", "09:30",
    "12:30:45", "2024-01-05", "2024-1-5", "2024-02-30", "2024-01-05T10:00:00", "2024-01-05 10:00", "http://a.b/c",
    "a: b", "a:", "a:b", "x:y:z", "a #b", "a#b", "C#", "[a, b]", "[[Kofi Fischer]]", "{a: 1}", '"quoted"',
    "'single'", "'it''s'", '"esc\\n"', '"a # b"', '"a: b"', "it's", "a [b]", "a ]", "a}", "&anchor x", "*alias",
    "!tag x", "!!str 5", "|", ">", "- x", "x -", "x - y", "% x", "@x", "`x", "é", "日本語", "😀", "a\u00a0b",
    "\u00a0a", "a\u2028b", "a\u0085b", "a\ufeffb", "x  ", "a,b", "a, b", "?x", "? x", "=", "<<", "...", "---",
    'a"b', "a'b", '"unterminated', "'a' b", '"a" b', "9999-99-99", "0000-01-01", "1_000", "0b101", "00", "-",
    "1" * 5000, '""', "''", "\"\\\"\"", "a\\b", "ü ö", "a\u200bb",
    "\u3000a", "a\u3000", "a\u00a0",
]
FLOWS = [
    "[meeting, project/x]", "[]", "[ ]", "[ a ,b ]", "[a, b,]", "[a,b]", '["a, b", c]', "[a: b]", "[a:b]", "[a #b]",
    "[a, [b]]", "[a, {b}]", "[yes, No, true, null, 12, 2024-01-05, 13:30]", "[a b, 'c']", "[a]x", "[a] # c",
    "[a, b", "[a]]", "[,]", "[a,,b]", "[it's]", "[a\u00a0]", "[é, ü]", "[-a]", "[a-]", "[a, ?b]", "[~]", "[a, ]",
    "[\"x\"y]", "['a' , 'b']", "[0755, 2024-02-30]", "[12:30:45, 1:2]", "[a\u2028b]",
]
TIMES = ["13:30", "9:05", "13:30:15", "1:2", "123:45", "13:30 ", "13:60", "1:30:00:00", "13:3o", "13:30x"]
VALUES += FLOWS + TIMES
COMMON = [
    "[meeting, project/beacon-app]", "13:30", "active", "Plan B", "2024-01-05", "12", '"[[Kofi Fischer]]"',
    "team/finance", "'x'",
]
# fmt: on


def _pick(rng: random.Random, usual: str, odd: list[str], chance: float = 0.05) -> str:
    return rng.choice(odd) if rng.random() < chance else usual


def _value(rng: random.Random) -> str:
    return rng.choice(VALUES) if rng.random() < 0.2 else rng.choice(COMMON)


def _value_lines(rng: random.Random, key: str) -> list[str]:
    if rng.random() < 0.6:
        sep = _pick(rng, ": ", [":", ":  ", " : ", ":\t"])
        return [f"{key}{sep}{_value(rng)}" + _pick(rng, "", [" ", "  # note"])]
    lines = [f"{key}:" + _pick(rng, "", [" ", " # c"])]
    indent = rng.choice([0, 2, 2, 4])
    for _ in range(rng.randrange(0, 4)):
        pad = indent if rng.random() < 0.95 else rng.choice([0, 1, 3, 6])
        lines.append(" " * pad + _pick(rng, "- ", ["-  ", "-", "-\t"]) + _value(rng))
    return lines


def _block(rng: random.Random) -> str:
    lines: list[str] = []
    for n in range(rng.randrange(1, 7)):
        key = rng.choice(KEYS) if rng.random() < 0.1 else rng.choice(["title", "due date", "status", "owner"]) + str(n)
        lines.extend(_value_lines(rng, key))
        if rng.random() < 0.1:
            lines.append(_pick(rng, "", ["# comment", "  more text", "---", "...", "  ", "  key: nested"], 0.5))
    return _pick(rng, "\n", ["\r\n"], 0.02).join(lines) + "\n"


def _agree(text: str) -> bool:
    """Whether the fast reader took `text` (asserting it read it as YAML does)."""
    fast = frontmatter._parse_simple(text)
    if fast is None:
        return False
    try:
        slow = frontmatter._parse_yaml(text, "note.md")
    except ParseError as exc:
        pytest.fail(f"the fast reader accepted what YAML rejects ({exc}): {text!r} -> {fast!r}")
    assert frontmatter.same(fast, slow), (text, fast, slow)
    assert list(fast) == list(slow), text  # the keys in the same order
    return True


def test_fast_reader_agrees_with_yaml_on_random_blocks() -> None:
    rng = random.Random(20261123)
    taken = sum(_agree(_block(rng)) for _ in range(20_000))
    # Both outcomes must occur often, or the comparison tests nothing.
    assert 3_000 < taken < 17_000, taken


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("title: Plan\nstatus: active\n", {"title": "Plan", "status": "active"}),
        ('owner: "[[Kofi Fischer]]"\ndue: 2026-05-14\n', {"owner": "[[Kofi Fischer]]", "due": "2026-05-14"}),
        ("tags:\n  - a/b\n  - c\nempty:\nn: 0755\n", {"tags": ["a/b", "c"], "empty": None, "n": 755}),
        ("done: true\nwhen: 09:30\n", {"done": True, "when": "09:30"}),  # YAML 1.2: no base-60 numbers
        ("tags: [meeting, project/x]\nnone: []\n", {"tags": ["meeting", "project/x"], "none": []}),
        ("tags: [a, b,]\n", None),
        ("url: https://example.com/a\nshy: yes\n", {"url": "https://example.com/a", "shy": "yes"}),
        ("a: b # comment\n", None),
        ("due: 2026-02-30\n", None),  # an impossible date: YAML's own error, not ours
    ],
)
def test_fast_reader_takes_the_common_shapes(text: str, expected: dict[str, object] | None) -> None:
    assert frontmatter._parse_simple(text) == expected
    assert _agree(text) is (expected is not None)


def test_fast_reader_agrees_on_every_corpus_note() -> None:
    notes = sorted(CORPUS.rglob("*.md"))
    if not notes:
        pytest.skip("the corpus vault is not beside the checkout")
    taken = 0
    for path in notes:
        parts = frontmatter.split(path.read_text(encoding="utf-8", errors="replace"))
        if parts.has_block:
            taken += _agree(parts.yaml_text)
    assert taken > 0


# Strings YAML 1.1 writes plain that YAML 1.2 reads as numbers, and the other way round.
NUMBERISH = ["1e3", "12e45", "1.5e3", "-1E-2", "0o17", ".5", "+.inf", "yes", "No", "on", "0b101", "1_000", "0x1F"]


ODD_TEXT = [
    "two\nlines",
    "x: y\nz",
    "a\rb",
    "a\r\nb",
    "a\u2029b",
    "\ttab",
    " lead",
    "trail ",
    "end\n",
    "\n",
    "a\n\nb\n\n",
    " a\n b",
    "nul\x00",
    "bell\x07",
    "\ufeffbom",
]


@pytest.mark.parametrize("value", sorted({*VALUES, *NUMBERISH, *KEYS, *ODD_TEXT}))
def test_a_string_rendered_reads_back_as_the_same_string(value: str) -> None:
    text = frontmatter.render({"k": value, value: "v"})
    assert frontmatter.parse(text, "note.md") == {"k": value, value: "v"}, text


def test_a_body_written_below_a_block_that_ends_the_file_stays_out_of_the_block() -> None:
    for closing in ("---", "---\n"):
        parts = frontmatter.split("---\nstatus: active\n" + closing)
        written = frontmatter.split(parts.with_body("New body\n").text())
        assert frontmatter.parse(written.yaml_text, "n.md") == {"status": "active"}
        assert written.body == "New body\n"
    crlf = frontmatter.split("---\r\nstatus: active\r\n---").with_body("x")
    assert crlf.text() == "---\r\nstatus: active\r\n---\r\nx"


@pytest.mark.parametrize(
    "text",
    [
        "n: 123456789012345678901234\n",  # the common shape
        "n: 123456789012345678901234 # a long id\n",  # YAML's parser
        "n: [123456789012345678901234]\nm: {k: 1}\n",
    ],
)
def test_whole_numbers_beyond_64_bits_come_back_as_their_digits(text: str) -> None:
    values = frontmatter.parse(text, "n.md")
    n = values["n"]
    assert (n[0] if isinstance(n, list) else n) == "123456789012345678901234"
    # Edits compare such values without failing, and keep the line as written.
    updated = frontmatter.update(text, values, {**values, "x": 10**30}, "n.md")
    assert updated.startswith(text)
    assert frontmatter.parse(updated, "n.md")["x"] == str(10**30)
    assert frontmatter.parse(text, "n.md")["n"] == n
    assert frontmatter.parse("n: 18446744073709551615\n", "n.md") == {"n": 2**64 - 1}
