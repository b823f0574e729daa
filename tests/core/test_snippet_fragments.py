"""A long ASCII text's snippet is taken from the fragments where a query word can begin: it must
be exactly the snippet the generator takes from the whole text, which these tests compare on
texts made to catch every edge (words across a fragment's end, leading blanks, words longer than
a fragment, stems whose words do not begin like them)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import tantivy

from deskmcp.core.search import snippets
from deskmcp.core.search.textindex import TextIndex

WORDS = (
    "budget budgets budgeting Budget BUDGET rebudget remote remotes control controlled marketing market"
    " strategy strategies strategic the a of and to in disorders company companies planning plan x y 1 22"
    " 333 foo_bar budget_2 CI_REF_BUDGET using used uses use user dying die lying possibility possible"
    " possibly relational relate hopping hope skies sky conditional condition"
)
VOCABULARY = WORDS.split()
SEPARATORS = [" ", " ", " ", "  ", ", ", ". ", "\n", "\n\n", " - ", "/", "'", "(", ") ", "...", "\t", "_"]
QUERIES = [
    "budget",
    "remote control",
    "marketing strategy",
    "disorders",
    "use",
    "die",
    "lie",
    "possible",
    "possibility",
    "relational",
    "hoping",
    "sky",
    "conditional",
    "1 budget",
]


@pytest.fixture(scope="module")
def text_index(tmp_path_factory: pytest.TempPathFactory) -> TextIndex:
    rng = random.Random(7)
    index = TextIndex(Path(tmp_path_factory.mktemp("snippets")) / "text", ("title", "body"), (1.0, 1.0))
    docs = [(i + 1, ["t", " ".join(rng.choice(VOCABULARY) for _ in range(60))]) for i in range(40)]
    index.begin()
    index.write([], docs, "1")
    index.commit()
    return index


def _text(rng: random.Random) -> str:
    parts = [" " * rng.randint(1, 150)] if rng.random() < 0.2 else []
    length = rng.randint(300, 4000)
    while sum(map(len, parts)) < length:
        parts.append(rng.choice(VOCABULARY) if rng.random() < 0.9 else "w" * rng.randint(1, 60))
        parts.append(rng.choice(SEPARATORS))
    return "".join(parts)


def _whole(generator: tantivy.SnippetGenerator, text: str) -> tuple[str, list[tuple[int, int]], int, int]:
    snippet = generator.snippet_from_doc(tantivy.Document(body=text))
    if not snippet.fragment():
        return "", [], 0, 0
    where = snippet.fragment_range()
    return snippet.fragment(), [(r.start, r.end) for r in snippet.highlighted()], where.start, where.end


@pytest.mark.parametrize("seed", range(4))
def test_the_fragments_given_yield_the_snippet_of_the_whole_text(text_index: TextIndex, seed: int):
    rng = random.Random(seed)
    fast = 0
    for _ in range(150):
        asked = text_index.user_query(rng.choice(QUERIES))
        prefixes = sorted({p for w in asked.words for p in snippets._prefixes(w.lower())})
        width = rng.choice([40, 64, 128, 128, 200])
        text = _text(rng)
        generator = tantivy.SnippetGenerator.create(text_index.searcher(), asked.marked, text_index.schema, "body")
        generator.set_max_num_chars(width)
        fast += snippets._fragments(text, width) is not None
        assert snippets._best_fragment(generator, "body", text, prefixes, width) == _whole(generator, text)
    assert fast > 100  # most texts took the fast way (the others have a word longer than a fragment)


def test_fragments_are_cut_where_the_generator_cuts_them():
    text = "  ab cd ef gh ij"
    # from 0: "  ab cd" ends at 7 (width 7); "ef" would end at 10, past 0 + 7: the next one starts there
    assert snippets._fragments(text, 7) == [(0, 7), (8, 13), (14, 16)]
    assert snippets._fragments("abcdefgh ij", 7) is None  # a word longer than a fragment


def test_a_word_the_stemmer_spells_otherwise_keeps_its_fragment(text_index: TextIndex):
    filler = "the plan of the market and the company " * 30
    text = filler + "we are using it now " + filler
    asked = text_index.user_query("use")
    generator = tantivy.SnippetGenerator.create(text_index.searcher(), asked.marked, text_index.schema, "body")
    generator.set_max_num_chars(128)
    fragment, ranges, _, _ = snippets._best_fragment(generator, "body", text, snippets._prefixes("use"), 128)
    assert [fragment.encode()[a:b] for a, b in ranges] == [b"using"]
