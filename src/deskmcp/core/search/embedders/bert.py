"""BERT-style sentence encoders (all-MiniLM-L6-v2 and its kind), run on numpy.

The folder holds `model.safetensors` (a Hugging Face `BertModel`'s tensors), `config.json` (its
sizes) and `tokenizer.json` (a `tokenizers` WordPiece tokenizer that adds [CLS] and [SEP]);
`sentence_bert_config.json`, when present, may lower the 256-token limit. A text's vector is the
mean of the last layer's token states over the attention mask, L2-normalised: what
sentence-transformers computes for these models, without torch.

Texts are encoded in batches of similar length (sorted by token count), each padded only to its
longest member, so a batch of short texts costs little; padding is masked out of attention and
pooling, so a text's vector does not depend on its batch.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from deskmcp.core.search.embedders.rows import normalise_rows

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    from tokenizers import Tokenizer

    Array = npt.NDArray[np.float32]

MAX_TOKENS = 256
TOKENS_PER_BATCH = 4096
"""Padded tokens per forward pass: bounds the attention scores' memory (batch x heads x length^2)."""


@dataclass(frozen=True)
class BertConfig:
    hidden: int
    heads: int
    layers: int
    eps: float
    max_positions: int

    @classmethod
    def read(cls, folder: Path) -> BertConfig:
        raw: dict[str, Any] = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        if raw.get("hidden_act", "gelu") != "gelu":
            raise ValueError(f"its activation is {raw.get('hidden_act')!r}; only BERT's gelu is supported")
        if raw.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError("only absolute position embeddings are supported")
        config = cls(
            hidden=int(raw["hidden_size"]),
            heads=int(raw["num_attention_heads"]),
            layers=int(raw["num_hidden_layers"]),
            eps=float(raw.get("layer_norm_eps", 1e-12)),
            max_positions=int(raw.get("max_position_embeddings", 512)),
        )
        if config.hidden % config.heads:
            raise ValueError(f"its hidden size {config.hidden} is not a multiple of its {config.heads} heads")
        return config


@dataclass(frozen=True)
class _Layer:
    """One encoder layer; matrices stored transposed (in x out), so a layer is `x @ w + b`."""

    qkv_w: Array
    qkv_b: Array
    out_w: Array
    out_b: Array
    norm1: tuple[Array, Array]
    up_w: Array
    up_b: Array
    down_w: Array
    down_b: Array
    norm2: tuple[Array, Array]


class BertEmbedder:
    """An `Embedder` computing a BERT encoder's mean-pooled sentence vectors with numpy."""

    def __init__(
        self,
        model_id: str,
        config: BertConfig,
        tokenizer: Tokenizer,
        tensors: dict[str, Array],
        *,
        max_tokens: int = MAX_TOKENS,
    ) -> None:
        import numpy as np

        self._model_id = model_id
        self.config = config
        self.max_tokens = max(2, min(max_tokens, MAX_TOKENS, config.max_positions))
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=self.max_tokens)
        self.tokenizer = tokenizer
        self.pad_id = tokenizer.token_to_id("[PAD]") or 0

        def get(name: str) -> Array:
            for key in (name, f"bert.{name}"):
                if key in tensors:
                    return np.ascontiguousarray(tensors[key], dtype=np.float32)
            raise KeyError(f"its weights have no tensor {name!r}")

        def linear(prefix: str) -> tuple[Array, Array]:
            return np.ascontiguousarray(get(f"{prefix}.weight").T), get(f"{prefix}.bias")

        def norm(prefix: str) -> tuple[Array, Array]:
            return get(f"{prefix}.weight"), get(f"{prefix}.bias")

        self.words = get("embeddings.word_embeddings.weight")
        self.positions = get("embeddings.position_embeddings.weight")
        self.token_type = get("embeddings.token_type_embeddings.weight")[0]
        self.embedding_norm = norm("embeddings.LayerNorm")
        self.layers: list[_Layer] = []
        for i in range(config.layers):
            p = f"encoder.layer.{i}"
            parts = [linear(f"{p}.attention.self.{n}") for n in ("query", "key", "value")]
            out_w, out_b = linear(f"{p}.attention.output.dense")
            up_w, up_b = linear(f"{p}.intermediate.dense")
            down_w, down_b = linear(f"{p}.output.dense")
            self.layers.append(
                _Layer(
                    qkv_w=np.ascontiguousarray(np.concatenate([w for w, _ in parts], axis=1)),
                    qkv_b=np.concatenate([b for _, b in parts]),
                    out_w=out_w,
                    out_b=out_b,
                    norm1=norm(f"{p}.attention.output.LayerNorm"),
                    up_w=up_w,
                    up_b=up_b,
                    down_w=down_w,
                    down_b=down_b,
                    norm2=norm(f"{p}.output.LayerNorm"),
                )
            )
        if self.words.shape[1] != config.hidden:
            raise ValueError(f"its word embeddings are {self.words.shape[1]} wide, its config says {config.hidden}")
        if self.positions.shape[0] < self.max_tokens:
            raise ValueError(f"it has {self.positions.shape[0]} positions, fewer than {self.max_tokens}")
        for key, tensor in tensors.items():
            if np.issubdtype(tensor.dtype, np.floating) and not np.isfinite(tensor).all():
                raise ValueError(f"its tensor {key} holds values that are not finite numbers (NaN or infinity)")

    @classmethod
    def load(cls, folder: Path, model_id: str) -> BertEmbedder:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        config = BertConfig.read(folder)
        max_tokens = MAX_TOKENS
        sbert = folder / "sentence_bert_config.json"
        if sbert.is_file():
            max_tokens = int(json.loads(sbert.read_text(encoding="utf-8")).get("max_seq_length", MAX_TOKENS))
        tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        return cls(model_id, config, tokenizer, load_file(str(folder / "model.safetensors")), max_tokens=max_tokens)

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimension(self) -> int:
        return self.config.hidden

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's token ids, [CLS] ... [SEP], cut to the token limit."""
        return [encoding.ids for encoding in self.tokenizer.encode_batch(list(texts))]

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return normalise_rows(self.encode_ids(self.token_ids(texts)))

    def encode_ids(self, sequences: Sequence[Sequence[int]]) -> Array:
        """Mean-pooled last-layer states of token id sequences (not normalised), in the given order."""
        import numpy as np

        out = np.zeros((len(sequences), self.config.hidden), dtype=np.float32)
        order = sorted(range(len(sequences)), key=lambda i: len(sequences[i]))
        start = 0
        while start < len(order):
            # Sorted by length: grow the batch while its padded size stays within the budget.
            end = start + 1
            while end < len(order) and (end - start + 1) * len(sequences[order[end]]) <= TOKENS_PER_BATCH:
                end += 1
            batch = order[start:end]
            width = max(1, max(len(sequences[i]) for i in batch))
            ids = np.full((len(batch), width), self.pad_id, dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=bool)
            for row, i in enumerate(batch):
                seq = sequences[i]
                ids[row, : len(seq)] = seq
                mask[row, : len(seq)] = True
            out[batch] = self.forward(ids, mask)
            start += len(batch)
        return out

    def forward(self, ids: npt.NDArray[np.int64], mask: npt.NDArray[np.bool_]) -> Array:
        """The encoder on a padded batch: (batch, length) ids and mask -> (batch, hidden) mean of the
        last layer's states over the mask."""
        import numpy as np

        cfg = self.config
        batch, length = ids.shape
        head = cfg.hidden // cfg.heads
        x = self.words[ids] + self.positions[:length] + self.token_type
        x = _layer_norm(x.reshape(batch * length, cfg.hidden), *self.embedding_norm, cfg.eps)
        # Padding gets a large negative score, so softmax gives it no weight.
        bias = np.where(mask, np.float32(0), np.float32(-1e9)).astype(np.float32)[:, None, None, :]
        scale = np.float32(1 / math.sqrt(head))
        for layer in self.layers:
            qkv = (x @ layer.qkv_w + layer.qkv_b).reshape(batch, length, 3, cfg.heads, head)
            # (3, batch, heads, length, head), contiguous: numpy's matmul hands only such stacks to BLAS.
            qkv = np.ascontiguousarray(qkv.transpose(2, 0, 3, 1, 4))
            keys = np.ascontiguousarray(qkv[1].transpose(0, 1, 3, 2))  # a copy multiplies faster than a view
            scores = (qkv[0] * scale) @ keys
            scores += bias
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ qkv[2]).transpose(0, 2, 1, 3).reshape(batch * length, cfg.hidden)
            x = _layer_norm(x + (context @ layer.out_w + layer.out_b), *layer.norm1, cfg.eps)
            inner = _gelu(x @ layer.up_w + layer.up_b)
            x = _layer_norm(cast("Array", x + (inner @ layer.down_w + layer.down_b)), *layer.norm2, cfg.eps)
        states = x.reshape(batch, length, cfg.hidden)
        weights = mask.astype(np.float32)
        counts = np.maximum(weights.sum(axis=1, keepdims=True), np.float32(1))
        return np.einsum("bl,blh->bh", weights, states) / counts


def _layer_norm(x: Array, gain: Array, bias: Array, eps: float) -> Array:
    import numpy as np

    centred = x - x.mean(axis=-1, keepdims=True)
    variance = np.mean(centred * centred, axis=-1, keepdims=True)
    centred *= 1 / np.sqrt(variance + np.float32(eps))
    centred *= gain
    centred += bias
    return centred


# Abramowitz & Stegun 7.1.26: erf to within 1.5e-7, below float32's resolution at these sizes.
_ERF_P = 0.3275911
_ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def _gelu(x: Array) -> Array:
    """BERT's exact GELU, x * (1 + erf(x / sqrt 2)) / 2 (numpy has no erf)."""
    import numpy as np

    z = np.abs(x) * np.float32(1 / math.sqrt(2))
    t = 1 / (1 + np.float32(_ERF_P) * z)
    a1, a2, a3, a4, a5 = (np.float32(a) for a in _ERF_A)
    poly = t * (a1 + t * (a2 + t * (a3 + t * (a4 + t * a5))))
    erf = 1 - poly * np.exp(-z * z)
    np.copysign(erf, x, out=erf)
    erf += 1
    erf *= x
    erf *= np.float32(0.5)
    return cast("Array", erf)
