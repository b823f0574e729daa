"""Row arithmetic every backend shares (numpy, imported by the callers that run a model)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


def normalise_rows(matrix: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Each row scaled to length 1, in float32; an all-zero row stays zero (it has no direction)."""
    import numpy as np

    matrix = np.ascontiguousarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    np.divide(matrix, norms, out=matrix, where=norms > 0)
    return matrix
