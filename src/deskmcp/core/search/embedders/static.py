"""Static models in model2vec's format, run by the model2vec library.

A static model is one vector per vocabulary token; a text's vector is the mean of its tokens'
vectors. The folder holds `model.safetensors` (tensor `embeddings`, one row per token),
`tokenizer.json` and `config.json`. model2vec is only ever given a local folder, with the
Hugging Face hub switched off, so loading never reaches the network.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from deskmcp.core.search.embedders.rows import normalise_rows
from deskmcp.core.settings import set_variable

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    from model2vec import StaticModel


def load_static_model(folder: Path) -> StaticModel:
    """The model2vec model in `folder`; ValueError when its weights are not usable."""
    set_variable("HF_HUB_OFFLINE", "1")  # read by huggingface_hub, which model2vec imports, at import time
    import numpy as np
    from model2vec import StaticModel

    model = StaticModel.from_pretrained(folder.resolve(), force_download=False)
    if model.embedding.ndim != 2 or not np.issubdtype(model.embedding.dtype, np.floating):
        raise ValueError(f"its embeddings have shape {model.embedding.shape} and type {model.embedding.dtype}")
    if not np.isfinite(model.embedding).all():
        raise ValueError("its embeddings hold values that are not finite numbers (NaN or infinity)")
    return model


def static_dimension(folder: Path) -> int:
    """The width of the embeddings in `folder`'s weights, read from the file's header."""
    from safetensors import safe_open

    with safe_open(str(folder / "model.safetensors"), framework="numpy") as weights:
        shape = weights.get_slice("embeddings").get_shape()
    if len(shape) != 2:
        raise ValueError(f"its embeddings have shape {shape}, not (tokens, dimension)")
    return int(shape[1])


class StaticEmbedder:
    """An `Embedder` over a model2vec `StaticModel`. A text none of whose tokens the model knows
    (an empty one) gets a zero row: it is close to nothing."""

    fusion_weight = 0.1
    """The semantic weight hybrid search gives this kind of model (`core.search.fusion`): a static model
    ranks too weakly for the default 0.3, which fell below plain BM25 on QMSum."""

    def __init__(self, model_id: str, model: StaticModel) -> None:
        self._model_id = model_id
        self._model = model
        # model2vec sets the tokenizer's truncation around every encode: one call at a time.
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimension(self) -> int:
        return int(self._model.dim)

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        with self._lock:
            vectors = self._model.encode(list(texts), use_multiprocessing=False, normalize=False)
        return normalise_rows(np.asarray(vectors, dtype=np.float32))
