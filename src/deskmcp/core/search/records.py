"""What an index holds and answers: its schema, the records a server writes, the hits it reads."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class IndexSchema:
    """What one index holds. Bump `version` whenever any part changes: the index is rebuilt."""

    name: str
    version: int
    text_fields: tuple[str, ...]
    weights: tuple[float, ...] = ()
    columns: tuple[tuple[str, str], ...] = ()
    side_tables: tuple[str, ...] = ()
    """DDL run after the core tables: CREATE TABLE (first column doc_id) and CREATE INDEX."""

    def __post_init__(self) -> None:
        if self.weights and len(self.weights) != len(self.text_fields):
            raise ValueError("one weight per text field")
        for name in (*self.text_fields, *(c for c, _ in self.columns)):
            if not name.isidentifier():
                raise ValueError(f"bad column name {name!r}")


@dataclass
class IndexRecord:
    key: str
    fingerprint: str
    texts: Mapping[str, str]
    columns: Mapping[str, Any] = field(default_factory=dict)
    data: bytes | None = None
    side: Mapping[str, Sequence[tuple[Any, ...]]] = field(default_factory=dict)


@dataclass
class Hit:
    key: str
    score: float | None
    snippet: str | None
    data: bytes | None
    columns: dict[str, Any]


@dataclass
class ApplyStats:
    added: int = 0
    updated: int = 0
    deleted: int = 0
    unchanged: int = 0
    seconds: float = 0.0

    @property
    def changed(self) -> int:
        return self.added + self.updated + self.deleted
