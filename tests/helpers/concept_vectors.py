"""A deterministic embedder for tests of search by meaning: words are mapped to concepts (so
'car' and 'automobile' land on the same axis), each concept hashed to a fixed dimension."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

SYNONYMS: Mapping[str, str] = {
    "car": "vehicle",
    "cars": "vehicle",
    "automobile": "vehicle",
    "automobiles": "vehicle",
    "vehicle": "vehicle",
    "budget": "money",
    "spending": "money",
    "costs": "money",
    "money": "money",
    "holiday": "leave",
    "vacation": "leave",
    "leave": "leave",
}
WORD = re.compile(r"[a-z]+")


class ConceptEmbedder:
    """Bag of concepts hashed into `dimension` axes, L2-normalised (a zero vector for no words)."""

    def __init__(self, dimension: int = 64, name: str = "concepts") -> None:
        self._dimension = dimension
        self._name = name
        self.calls = 0
        self.texts = 0

    @property
    def model_id(self) -> str:
        return f"{self._name}@sha256:{hashlib.sha256(self._name.encode()).hexdigest()}"

    @property
    def dimension(self) -> int:
        return self._dimension

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.calls += 1
        self.texts += len(texts)
        out = np.zeros((len(texts), self._dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in WORD.findall(text.lower()):
                concept = SYNONYMS.get(word, word)
                axis = int.from_bytes(hashlib.blake2b(concept.encode(), digest_size=4).digest(), "big")
                out[row, axis % self._dimension] += 1.0
            norm = float(np.linalg.norm(out[row]))
            if norm:
                out[row] /= norm
        return out
