"""Tiny models for the tests, built in a folder in well under a second.

- `write_static_model(folder)`: a model2vec static model whose vocabulary is `TOPICS`' words.
  Words of one topic get nearly the same vector, so texts about the same topic are close and
  texts about different topics are not: "kitten purrs" is near "a cat and a dog", far from
  "the invoice total". Words outside the vocabulary are ignored by the model.
- `write_tiny_bert(folder)`: a 2-layer BERT encoder (random weights, seeded) with a small
  WordPiece tokenizer over the same words; it runs through the numpy backend exactly as
  all-MiniLM-L6-v2 does, but its vectors mean nothing.
- `add_static_model(store)` / `add_tiny_bert(store)`: either one imported into a model store
  (a folder), ready for `open_embedder(name, store=store)`.
- `FileServer`: an http.server on loopback serving given bytes, for `deskmcp models pull`.

Every builder is deterministic: the same call writes the same bytes, so a model's id is stable.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
from safetensors.numpy import save_file
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

from deskmcp.core.search.embedders.importing import import_model
from deskmcp.core.search.embedders.store import Manifest

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
TOPICS: dict[str, list[str]] = {
    "animals": ["cat", "cats", "kitten", "dog", "puppy", "pet", "purrs", "barks"],
    "money": ["budget", "invoice", "cost", "price", "total", "money", "paid", "expenses"],
    "weather": ["rain", "snow", "storm", "sunny", "forecast", "cloudy", "wind", "umbrella"],
    "meetings": ["meeting", "agenda", "minutes", "call", "standup", "attendees", "notes", "review"],
}
FILLER = ["the", "a", "and", "of", "is", "to", "in", "for", "##s", "##ing", "##ed"]
VOCABULARY = SPECIALS + [word for words in TOPICS.values() for word in words] + FILLER


def wordpiece_tokenizer(vocabulary: list[str] = VOCABULARY) -> Tokenizer:
    """A lower-casing BERT WordPiece tokenizer over `vocabulary` that adds [CLS] and [SEP]."""
    vocab = {token: i for i, token in enumerate(vocabulary)}
    tokenizer = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    tokenizer.decoder = decoders.WordPiece()
    return tokenizer


def static_vectors(dimension: int = 16, seed: int = 0) -> np.ndarray:
    """One row per `VOCABULARY` token: its topic's direction plus a little noise; other tokens small noise."""
    rng = np.random.default_rng(seed)
    directions = rng.normal(size=(len(TOPICS), dimension))
    vectors = rng.normal(scale=0.05, size=(len(VOCABULARY), dimension))
    for t, words in enumerate(TOPICS.values()):
        for word in words:
            vectors[VOCABULARY.index(word)] += directions[t]
    return vectors.astype(np.float32)


def write_static_model(folder: Path, *, dimension: int = 16, vectors: np.ndarray | None = None) -> Path:
    """A model2vec-format static model in `folder` (`vectors` replaces the topic vectors, e.g. with NaN)."""
    folder.mkdir(parents=True, exist_ok=True)
    embeddings = static_vectors(dimension) if vectors is None else vectors
    save_file({"embeddings": np.ascontiguousarray(embeddings)}, str(folder / "model.safetensors"))
    wordpiece_tokenizer().save(str(folder / "tokenizer.json"))
    config = {"model_type": "model2vec", "architectures": ["StaticModel"], "hidden_dim": int(embeddings.shape[1])}
    _write_json(folder / "config.json", config | {"normalize": True})
    return folder


def tiny_bert_tensors(
    *, hidden: int = 32, layers: int = 2, intermediate: int = 64, seed: int = 0
) -> dict[str, np.ndarray]:
    """A BertModel's tensors, named as Hugging Face names them, with small random values."""
    rng = np.random.default_rng(seed)

    def normal(*shape: int) -> np.ndarray:
        return rng.normal(scale=0.2, size=shape).astype(np.float32)

    tensors = {
        "embeddings.word_embeddings.weight": normal(len(VOCABULARY), hidden),
        "embeddings.position_embeddings.weight": normal(64, hidden),
        "embeddings.token_type_embeddings.weight": normal(2, hidden),
        "embeddings.LayerNorm.weight": 1 + normal(hidden),
        "embeddings.LayerNorm.bias": normal(hidden),
    }
    for i in range(layers):
        p = f"encoder.layer.{i}"
        for name, (rows, cols) in {
            "attention.self.query": (hidden, hidden),
            "attention.self.key": (hidden, hidden),
            "attention.self.value": (hidden, hidden),
            "attention.output.dense": (hidden, hidden),
            "intermediate.dense": (intermediate, hidden),
            "output.dense": (hidden, intermediate),
        }.items():
            tensors[f"{p}.{name}.weight"] = normal(rows, cols)
            tensors[f"{p}.{name}.bias"] = normal(rows)
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            tensors[f"{p}.{norm}.weight"] = 1 + normal(hidden)
            tensors[f"{p}.{norm}.bias"] = normal(hidden)
    return tensors


def write_tiny_bert(
    folder: Path, *, hidden: int = 32, layers: int = 2, heads: int = 4, config: dict[str, Any] | None = None
) -> Path:
    """A 2-layer BERT sentence encoder in `folder`: model.safetensors, config.json, tokenizer.json.
    `config` overrides entries of config.json (e.g. a wrong hidden_size)."""
    folder.mkdir(parents=True, exist_ok=True)
    save_file(tiny_bert_tensors(hidden=hidden, layers=layers), str(folder / "model.safetensors"))
    wordpiece_tokenizer().save(str(folder / "tokenizer.json"))
    settings = {
        "architectures": ["BertModel"],
        "model_type": "bert",
        "hidden_act": "gelu",
        "hidden_size": hidden,
        "intermediate_size": 64,
        "num_attention_heads": heads,
        "num_hidden_layers": layers,
        "layer_norm_eps": 1e-12,
        "max_position_embeddings": 64,
        "vocab_size": len(VOCABULARY),
    }
    _write_json(folder / "config.json", settings | (config or {}))
    return folder


def add_static_model(store: Path, name: str = "tiny-static", *, dimension: int = 16) -> Manifest:
    """The topic static model, imported into the model store `store` as `name`."""
    source = write_static_model(store.parent / f"{name}-source", dimension=dimension)
    return import_model(source, name=name, store=store)


def add_tiny_bert(store: Path, name: str = "tiny-bert") -> Manifest:
    """The tiny BERT encoder, imported into the model store `store` as `name`."""
    return import_model(write_tiny_bert(store.parent / f"{name}-source"), name=name, store=store)


class FileServer:
    """Files served over HTTP on 127.0.0.1 (`with FileServer.running() as server:`): `serve(path,
    body)` publishes `body` at `server.base + path`; `cut_at` sends only that many bytes of it
    (with the full Content-Length) and hangs up, as a broken download does. Other paths are 404."""

    def __init__(self) -> None:
        self.files: dict[str, tuple[bytes, int | None]] = {}
        self.requests: list[str] = []
        self.base = ""

    def serve(self, path: str, body: bytes, *, cut_at: int | None = None) -> None:
        self.files["/" + path.lstrip("/")] = (body, cut_at)

    @classmethod
    @contextmanager
    def running(cls) -> Iterator[FileServer]:
        files = cls()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                files.requests.append(self.path)
                if self.path not in files.files:
                    self.send_error(404)
                    return
                body, cut_at = files.files[self.path]
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body if cut_at is None else body[:cut_at])
                self.close_connection = True

            def log_message(self, format: str, *args: object) -> None:
                pass  # keep the test output clean

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        files.base = f"http://127.0.0.1:{server.server_address[1]}/"
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield files
        finally:
            server.shutdown()
            server.server_close()
            thread.join()


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
