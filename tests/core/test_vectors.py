from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from deskmcp.core.errors import BadRequest
from deskmcp.core.search import fusion
from deskmcp.core.search.index import IndexRecord, IndexSchema, SearchIndex
from deskmcp.core.search.vectors import VectorIndex, sections, turn_windows
from tests.helpers.concept_vectors import ConceptEmbedder

SCHEMA = IndexSchema(
    name="vectest",
    version=1,
    text_fields=("title", "body"),
    columns=(("folder", "TEXT"),),
)


def rec(key: str, title: str, body: str, folder: str = "") -> IndexRecord:
    return IndexRecord(key, f"{title}|{body}|{folder}", {"title": title, "body": body}, {"folder": folder})


def chunker(texts: Mapping[str, str]) -> list[str]:
    return sections(texts.get("title", ""), texts.get("body", ""))


@pytest.fixture
def index(tmp_path: Path) -> Iterator[SearchIndex]:
    idx = SearchIndex(tmp_path / "i.sqlite3", SCHEMA)
    yield idx
    idx.close()


def keys(matches) -> list[str]:
    return [m.key for m in matches]


def test_semantic_search_finds_a_record_sharing_no_word_with_the_query(index: SearchIndex):
    index.sync([rec("cars", "Garage", "the automobile needs new tyres"), rec("food", "Lunch", "soup and bread")])
    vectors = VectorIndex(index, ConceptEmbedder(), chunker)
    assert vectors.sync() == 0
    assert index.search("vehicle") == []
    assert keys(vectors.search("vehicle", limit=1)) == ["cars"]


def test_vectors_follow_adds_edits_deletes_and_renames_of_the_text_index(index: SearchIndex):
    embedder = ConceptEmbedder()
    vectors = VectorIndex(index, embedder, chunker)
    index.sync([rec("a", "A", "car"), rec("b", "B", "soup")])
    vectors.sync()
    assert keys(vectors.search("vehicle", limit=1)) == ["a"]
    index.apply([rec("b", "B", "an automobile"), rec("c", "C", "holiday plans")], ["a"])  # edit, add, delete
    index.apply([rec("d", "D", "holiday plans")], ["c"])  # a rename: new key, old one gone
    embedded_before = embedder.texts
    vectors.sync()
    assert embedder.texts - embedded_before == 2  # only the edited and the new record
    assert keys(vectors.search("vehicle", limit=5))[0] == "b"
    assert keys(vectors.search("vacation", limit=1)) == ["d"]
    assert set(keys(vectors.search("anything", limit=10))) == {"b", "d"}
    assert vectors.count()[0] == 2


def test_vectors_are_kept_in_the_index_database_and_reloaded_without_embedding(tmp_path: Path):
    index = SearchIndex(tmp_path / "i.sqlite3", SCHEMA)
    index.sync([rec("a", "A", "car"), rec("b", "B", "soup")])
    VectorIndex(index, ConceptEmbedder(), chunker).sync()
    index.close()
    again = SearchIndex(tmp_path / "i.sqlite3", SCHEMA)
    embedder = ConceptEmbedder()
    vectors = VectorIndex(again, embedder, chunker)
    assert vectors.sync() == 0
    assert embedder.texts == 0
    assert keys(vectors.search("automobile", limit=1)) == ["a"]
    again.close()


def test_a_model_change_embeds_every_record_again(index: SearchIndex):
    index.sync([rec("a", "A", "car"), rec("b", "B", "soup")])
    VectorIndex(index, ConceptEmbedder(name="one"), chunker).sync()
    other = ConceptEmbedder(dimension=32, name="two")
    vectors = VectorIndex(index, other, chunker)
    vectors.sync()
    assert other.texts == 2
    assert index.get_meta("vectors_model") == other.model_id
    assert keys(vectors.search("automobile", limit=1)) == ["a"]


def test_a_sql_filter_masks_the_semantic_side(index: SearchIndex):
    index.sync([rec("x/a", "A", "car", "x"), rec("y/b", "B", "automobile", "y"), rec("y/c", "C", "soup", "y")])
    vectors = VectorIndex(index, ConceptEmbedder(), chunker)
    vectors.sync()
    assert keys(vectors.search("vehicle", where="d.folder = ?", params=["y"], limit=5)) == ["y/b", "y/c"]
    assert keys(vectors.search("vehicle", where="d.folder = ?", params=["none"], limit=5)) == []


def test_sync_with_a_budget_leaves_the_rest_pending_and_finishes_later(index: SearchIndex):
    index.sync([rec(f"n{i}", f"N{i}", "car") for i in range(10)])
    vectors = VectorIndex(index, ConceptEmbedder(), chunker, batch=3)
    assert vectors.sync(budget=0.0) == 7  # one batch, then the budget is spent
    assert vectors.sync(budget=None) == 0
    assert vectors.count()[0] == 10


def test_related_returns_the_nearest_records_without_the_record_itself(index: SearchIndex):
    index.sync([rec("a", "A", "car repair"), rec("b", "B", "automobile repair"), rec("c", "C", "soup")])
    vectors = VectorIndex(index, ConceptEmbedder(), chunker)
    vectors.sync()
    assert keys(vectors.related("a", limit=2)) == ["b", "c"]


def test_hybrid_hits_carry_their_lexical_and_semantic_ranks(index: SearchIndex):
    index.sync(
        [rec("words", "Vehicle log", "mileage"), rec("meaning", "Garage", "the automobile"), rec("z", "Z", "soup")]
    )
    vectors = VectorIndex(index, ConceptEmbedder(), chunker)
    result = fusion.search(index, vectors, "vehicle", mode="hybrid", limit=3)
    assert result.mode == "hybrid"
    ranks = {r.hit.key: (r.lexical_rank, r.semantic_rank) for r in result.hits}
    assert ranks["words"][0] == 1
    assert ranks["meaning"][0] is None and ranks["meaning"][1] is not None
    assert result.hits[0].hit.key == "words"
    meaning = next(r for r in result.hits if r.hit.key == "meaning")
    assert "automobile" in (meaning.hit.snippet or "")


def test_hybrid_snippets_of_word_matches_are_those_lexical_search_gives(index: SearchIndex):
    long = " ".join(["filler"] * 200) + " the vehicle inspection is due " + " ".join(["filler"] * 200)
    index.sync([rec(f"n{i}", f"Note {i}", long if i % 2 else f"vehicle number {i}") for i in range(12)])
    vectors = VectorIndex(index, ConceptEmbedder(), chunker)
    lexical = {h.key: h.snippet for h in index.search("vehicle", limit=20)}
    result = fusion.search(index, vectors, "vehicle", mode="hybrid", limit=4, offset=2)
    assert len(result.hits) == 4
    for ranked in result.hits:
        assert ranked.hit.snippet == lexical[ranked.hit.key]
        assert "⟦vehicle⟧" in (ranked.hit.snippet or "")


def test_hybrid_weighs_the_semantic_side_by_the_models_own_fusion_weight(index: SearchIndex):
    from deskmcp.core.search.embedders.static import StaticEmbedder

    class WordsOnly(ConceptEmbedder):
        fusion_weight = 0.0

    index.sync(
        [rec("words", "Vehicle log", "mileage"), rec("meaning", "Garage", "the automobile"), rec("z", "Z", "soup")]
    )

    def score_of_meaning(vectors: VectorIndex) -> float:
        hits = fusion.search(index, vectors, "vehicle", mode="hybrid", limit=3).hits
        return next(r.hit.score or 0.0 for r in hits if r.hit.key == "meaning")

    assert fusion.weight_for(VectorIndex(index, ConceptEmbedder(), chunker)) == fusion.SEMANTIC_WEIGHT
    assert score_of_meaning(VectorIndex(index, ConceptEmbedder(), chunker)) > 0.0
    assert fusion.weight_for(VectorIndex(index, WordsOnly(), chunker)) == 0.0
    assert score_of_meaning(VectorIndex(index, WordsOnly(), chunker)) == 0.0
    assert StaticEmbedder.fusion_weight == 0.1  # a static model's weaker ranking weighs less


def test_lexical_mode_ranks_only_by_words(index: SearchIndex):
    index.sync([rec("words", "Vehicle log", "mileage"), rec("meaning", "Garage", "the automobile")])
    vectors = VectorIndex(index, ConceptEmbedder(), chunker)
    result = fusion.search(index, vectors, "vehicle", mode="lexical")
    assert [(r.hit.key, r.lexical_rank, r.semantic_rank) for r in result.hits] == [("words", 1, None)]


def test_hybrid_without_a_model_is_lexical_and_semantic_without_one_says_how_to_set_it_up():
    assert fusion.pick_mode(None, has_model=False) == "lexical"
    assert fusion.pick_mode("hybrid", has_model=False) == "lexical"
    assert fusion.pick_mode(None, has_model=True) == "hybrid"
    with pytest.raises(BadRequest, match="DESKMCP_EMBEDDER"):
        fusion.pick_mode("semantic", has_model=False)


def test_convex_fusion_weighs_normalised_scores_and_rrf_weighs_ranks():
    lexical = [("a", 10.0), ("b", 9.9), ("c", 1.0)]
    semantic = [("c", 0.9), ("b", 0.5), ("a", 0.1)]
    convex = fusion.fuse(lexical, semantic, weight=0.3)
    assert [f.key for f in convex] == ["b", "a", "c"]
    assert (convex[0].lexical_rank, convex[0].semantic_rank) == (2, 2)
    rrf = fusion.fuse(lexical, [("c", 0.9), ("a", 0.5)], fusion="rrf")
    assert [f.key for f in rrf] == ["a", "c", "b"]


def test_chunkers_cut_notes_at_headings_and_transcripts_at_whole_turns():
    parts = sections("Title", "intro\n# One\nfirst\n## Two\nsecond")
    assert parts == ["Title\nintro", "Title\n# One first", "Title\n## Two second"]
    turns = turn_windows("A: one two\nB: three four\nC: five", words=6)
    assert turns == ["A: one two\nB: three four", "C: five"]
