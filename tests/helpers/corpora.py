"""The shared test corpora, kept beside the checkout (not in it): tests that need one skip without it."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
QUARTZ = SHARED / "corpora" / "quartz-docs"


def shared_corpus(name: str) -> Path:
    """A folder of the shared test corpora (beside the checkout), or skip the test when they are absent."""
    path = SHARED / "corpora" / name
    if not path.is_dir():
        pytest.skip(f"the {name} corpus is not installed beside the checkout")
    return path
