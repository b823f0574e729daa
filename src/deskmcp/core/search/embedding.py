"""The embedder contract: what search by meaning asks of a model.

An embedder turns texts into vectors whose dot product says how close two texts are in meaning.
Every vector an index keeps is stamped with the `model_id` that made it, so vectors of two models
are never compared. Models are local files (`deskmcp models import` / `deskmcp models pull`):
nothing is fetched while a server runs. numpy is needed only once a model is used (the `semantic`
extra).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


@runtime_checkable
class Embedder(Protocol):
    """A loaded model. `encode` returns one row per text: float32, shape (len(texts), dimension),
    each row L2-normalised (so the dot product of two rows is their cosine similarity)."""

    @property
    def model_id(self) -> str:
        """The model's name and its weights' sha256, e.g. `all-MiniLM-L6-v2@sha256:0123abcd...`."""
        ...

    @property
    def dimension(self) -> int: ...

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]: ...
