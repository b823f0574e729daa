"""`deskmcp models distill SOURCE NAME`: a fast static model made from a BERT sentence encoder.

As model2vec distils: every token of the encoder's vocabulary is run through the encoder alone,
as `[CLS] token [SEP]`, and its vector is the mean of the three output states. The vectors are
reduced by PCA (numpy's eigendecomposition of their covariance) to `dimensions` (256 by default,
at most the encoder's width), and each is weighted by `w = c / (c + p)`, `p` the token's
probability under Zipf's law by vocabulary rank, which damps the most common tokens. The result
is saved in model2vec's format with the encoder's tokenizer and added to the store like an
import, so the static backend loads it. A text then costs a table lookup per token.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from deskmcp.core.errors import BadRequest, Conflict
from deskmcp.core.search.embedders.bert import BertEmbedder
from deskmcp.core.search.embedders.importing import import_model
from deskmcp.core.search.embedders.loading import open_embedder
from deskmcp.core.search.embedders.store import WEIGHTS, Manifest, check_name, find_model, model_folder, staging_folder

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

DIMENSIONS = 256
SIF_COEFFICIENT = 1e-4
BLOCK = 2048
"""Tokens encoded between two progress reports."""


def distill_model(
    source: str,
    name: str,
    *,
    store: Path | None = None,
    dimensions: int = DIMENSIONS,
    progress: Callable[[int, int], None] | None = None,
) -> Manifest:
    """Distil store model `source` (a BERT encoder) into the static model `name`; `progress(done,
    total)` is called as tokens are encoded."""
    import numpy as np
    from safetensors.numpy import save_file

    check_name(name)
    if dimensions < 1:
        raise BadRequest(f"--dimensions must be at least 1, not {dimensions}.", {"dimensions": dimensions})
    if model_folder(name, store).exists():
        raise Conflict(
            f"A model named {name!r} is already in the store. Remove it first (`deskmcp models remove {name}`) "
            "or choose another name.",
            {"name": name},
        )
    encoder = open_embedder(source, store=store)
    if not isinstance(encoder, BertEmbedder):
        raise BadRequest(
            f"Model {source!r} is not a BERT sentence encoder: distil from one (e.g. all-MiniLM-L6-v2, "
            "`deskmcp models pull all-MiniLM-L6-v2`).",
            {"source": source},
        )
    vectors = token_vectors(encoder, progress)
    vectors = pca(vectors, min(dimensions, vectors.shape[1], vectors.shape[0]))
    vectors *= zipf_weights(vectors.shape[0])[:, None]

    work = staging_folder(name, store, purpose="distill")
    try:
        save_file({"embeddings": np.ascontiguousarray(vectors, dtype=np.float32)}, str(work / WEIGHTS))
        shutil.copyfile(find_model(source, store) / "tokenizer.json", work / "tokenizer.json")
        config = {
            "model_type": "model2vec",
            "architectures": ["StaticModel"],
            "tokenizer_name": source,
            "apply_pca": dimensions,
            "sif_coefficient": SIF_COEFFICIENT,
            "hidden_dim": int(vectors.shape[1]),
            "normalize": True,
        }
        (work / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
        return import_model(work, name=name, store=store, source=f"distilled from {encoder.model_id}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def token_vectors(encoder: BertEmbedder, progress: Callable[[int, int], None] | None = None) -> npt.NDArray[np.float32]:
    """One row per vocabulary id: the encoder's mean-pooled output for `[CLS] token [SEP]`."""
    import numpy as np

    tokenizer = encoder.tokenizer
    size = tokenizer.get_vocab_size(with_added_tokens=True)
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    if cls is None or sep is None:
        raise BadRequest("The encoder's tokenizer has no [CLS] or [SEP] token; only BERT tokenizers can be distilled.")
    out = np.zeros((size, encoder.dimension), dtype=np.float32)
    for start in range(0, size, BLOCK):
        ids = range(start, min(size, start + BLOCK))
        out[start : start + len(ids)] = encoder.encode_ids([[cls, i, sep] for i in ids])
        if progress is not None:
            progress(start + len(ids), size)
    return np.nan_to_num(out)


def pca(vectors: npt.NDArray[np.float32], dimensions: int) -> npt.NDArray[np.float32]:
    """`vectors` centred and projected on their `dimensions` directions of largest variance."""
    import numpy as np

    centred = vectors.astype(np.float64) - vectors.mean(axis=0, dtype=np.float64)
    covariance = centred.T @ centred / max(1, len(centred) - 1)
    _, directions = np.linalg.eigh(covariance)  # ascending eigenvalues
    return (centred @ directions[:, ::-1][:, :dimensions]).astype(np.float32)


def zipf_weights(count: int) -> npt.NDArray[np.float32]:
    """SIF weights `c / (c + p)`, with `p` the probability Zipf's law gives each vocabulary rank."""
    import numpy as np

    inverse_rank = 1 / np.arange(2, count + 2, dtype=np.float64)
    probability = inverse_rank / inverse_rank.sum()
    return (SIF_COEFFICIENT / (SIF_COEFFICIENT + probability)).astype(np.float32)
