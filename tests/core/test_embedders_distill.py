"""`deskmcp models distill`: a static model made from a BERT encoder's vector of each token."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from deskmcp.cli import app
from deskmcp.core.errors import BadRequest, NotFound
from deskmcp.core.search.embedders import open_embedder
from deskmcp.core.search.embedders.bert import BertEmbedder
from deskmcp.core.search.embedders.distill import distill_model
from deskmcp.core.search.embedders.static import StaticEmbedder
from tests.helpers.embedders import VOCABULARY, add_static_model, add_tiny_bert

WORDS = ["cat", "kitten", "budget", "invoice", "rain", "meeting", "the"]


def _cosines(rows: np.ndarray) -> np.ndarray:
    rows = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    return rows @ rows.T


def test_a_distilled_model_keeps_the_encoders_token_geometry(tmp_path: Path) -> None:
    store = tmp_path / "models"
    add_tiny_bert(store)
    manifest = distill_model("tiny-bert", "tiny-fast", store=store)

    assert manifest.kind == "static"
    assert manifest.dimension == 32  # at most the encoder's width
    assert manifest.source.startswith("distilled from tiny-bert@sha256:")
    static = open_embedder("tiny-fast", store=store)
    assert isinstance(static, StaticEmbedder)
    bert = open_embedder("tiny-bert", store=store)
    assert isinstance(bert, BertEmbedder)

    # Each token's vector is the encoder's mean over [CLS] token [SEP], centred and rotated by the
    # PCA and scaled by its weight: the angles between the centred vectors are kept.
    vocab = bert.tokenizer.get_vocab()
    pooled = bert.encode_ids([[vocab["[CLS]"], vocab[w], vocab["[SEP]"]] for w in VOCABULARY])
    centred = pooled - pooled.mean(axis=0)
    expected = _cosines(centred[[VOCABULARY.index(w) for w in WORDS]])
    assert np.abs(static.encode(WORDS) @ static.encode(WORDS).T - expected).max() < 1e-4


def test_distill_reduces_to_the_dimensions_asked(tmp_path: Path) -> None:
    store = tmp_path / "models"
    add_tiny_bert(store)
    manifest = distill_model("tiny-bert", "tiny-8", store=store, dimensions=8)

    assert manifest.dimension == 8
    rows = open_embedder("tiny-8", store=store).encode(["cat and budget", "rain"])
    assert rows.shape == (2, 8)
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)


def test_distill_needs_a_bert_encoder_of_the_store(tmp_path: Path) -> None:
    store = tmp_path / "models"
    add_static_model(store)
    with pytest.raises(BadRequest, match="BERT"):
        distill_model("tiny-static", "again", store=store)
    with pytest.raises(NotFound):
        distill_model("absent", "again", store=store)
    assert sorted(p.name for p in store.iterdir()) == ["tiny-static"]


def test_models_distill_on_the_command_line_adds_the_static_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "models"
    monkeypatch.setenv("DESKMCP_MODELS_DIR", str(store))
    add_tiny_bert(store)
    result = CliRunner().invoke(app, ["models", "distill", "tiny-bert", "tiny-fast", "--dimensions", "16"])

    assert result.exit_code == 0, result.output
    assert "tiny-fast@sha256:" in result.stdout
    assert open_embedder("tiny-fast").dimension == 16
