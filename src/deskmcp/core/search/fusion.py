"""Search modes: by words (lexical), by meaning (semantic), or both fused (hybrid).

Hybrid search takes the best candidates of each side and fuses their scores. The default is a
convex combination of min-max-normalised scores, `(1 - w) * lexical + w * semantic` with
w = `SEMANTIC_WEIGHT`: on the QMSum benchmark (`bench/search_quality.py`) it lifts topic queries
over plain BM25 where reciprocal rank fusion fell below it, since RRF throws away how far apart
the scores are and lets a weak semantic side outvote a strong lexical match. RRF stays available
(`fusion="rrf"`). Every hit carries its rank on each side (None when that side did not return it),
so an assistant can see why a result ranks where it does.

Without a model, hybrid search is lexical search and says so (`mode` in every answer); asking for
semantic search without a model is a bad_request saying how to configure one.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Generic, Literal, TypeVar

from pydantic import Field

from deskmcp.core.errors import BadRequest
from deskmcp.core.search.index import Hit, SearchIndex

if TYPE_CHECKING:
    from deskmcp.core.search.vectors import VectorIndex

Mode = Literal["lexical", "semantic", "hybrid"]
Fusion = Literal["convex", "rrf"]

ModeArg = Annotated[Mode | None, Field(description="Default: hybrid if a model is set up, else lexical")]
"""The `mode` argument every search tool shares (one schema, one description)."""

SEMANTIC_WEIGHT = 0.3
"""w in the convex combination, unless the model names its own (`fusion_weight`, see
`weight_for`). Tuned on the benchmark (`--weights`, docs/search.md): at 0.3 all-MiniLM-L6-v2
lifts every QMSum slice over plain BM25 (+0.008 to +0.038 nDCG@10, all 40 meetings), while a
weak static model falls below it at 0.3 and is best at 0.1, the weight static models carry."""
RRF_K = 60
CANDIDATES = 50
"""Candidates taken from each side before fusing (more when a later page is asked for)."""

NO_MODEL = (
    "Search by meaning needs an embedding model and none is set up: import or pull one with"
    " `deskmcp models` and set DESKMCP_EMBEDDER to its name, or search with mode='lexical'."
)

K = TypeVar("K", bound=Hashable)


def weight_for(vectors: VectorIndex) -> float:
    """The semantic weight of hybrid search with this index's model: its `fusion_weight` if it
    names one, else SEMANTIC_WEIGHT."""
    weight = getattr(vectors.embedder, "fusion_weight", SEMANTIC_WEIGHT)
    return float(weight) if isinstance(weight, int | float) else SEMANTIC_WEIGHT


def pick_mode(asked: str | None, has_model: bool) -> Mode:
    """The mode a search runs in: hybrid by default when a model is set up, lexical otherwise.

    Hybrid asked without a model runs lexical (the answer says so); semantic without one is refused."""
    if asked is None or asked == "hybrid":
        return "hybrid" if has_model else "lexical"
    if asked == "lexical":
        return "lexical"
    if asked == "semantic":
        if not has_model:
            raise BadRequest(NO_MODEL, {"mode": asked})
        return "semantic"
    raise BadRequest(f"mode must be lexical, semantic or hybrid (got {asked!r}).", {"mode": asked})


@dataclass(frozen=True, slots=True)
class Fused(Generic[K]):
    key: K
    score: float
    lexical_rank: int | None
    semantic_rank: int | None


def _normalised(scores: Sequence[float]) -> list[float]:
    if not scores:
        return []
    low, high = min(scores), max(scores)
    if high - low <= 1e-12:
        return [1.0 for _ in scores]
    return [(s - low) / (high - low) for s in scores]


def fuse(
    lexical: Sequence[tuple[K, float]],
    semantic: Sequence[tuple[K, float]],
    *,
    fusion: Fusion = "convex",
    weight: float = SEMANTIC_WEIGHT,
) -> list[Fused[K]]:
    """Both ranked lists (best first, with their scores) as one, best first; ties keep the lexical order."""
    lex_rank = {key: i + 1 for i, (key, _) in enumerate(lexical)}
    sem_rank = {key: i + 1 for i, (key, _) in enumerate(semantic)}
    keys = list(dict.fromkeys([*(k for k, _ in lexical), *(k for k, _ in semantic)]))
    if fusion == "rrf":
        score = {k: sum(1.0 / (RRF_K + r[k]) for r in (lex_rank, sem_rank) if k in r) for k in keys}
    else:
        lex = dict(zip((k for k, _ in lexical), _normalised([s for _, s in lexical]), strict=True))
        sem = dict(zip((k for k, _ in semantic), _normalised([s for _, s in semantic]), strict=True))
        score = {k: (1.0 - weight) * lex.get(k, 0.0) + weight * sem.get(k, 0.0) for k in keys}
    order = sorted(range(len(keys)), key=lambda i: -score[keys[i]])
    return [Fused(keys[i], score[keys[i]], lex_rank.get(keys[i]), sem_rank.get(keys[i])) for i in order]


@dataclass(slots=True)
class RankedHit:
    """A hit with the rank it had on each side (1 = best; None: that side did not return it)."""

    hit: Hit
    lexical_rank: int | None
    semantic_rank: int | None


@dataclass(slots=True)
class ModeResult:
    hits: list[RankedHit]
    mode: Mode
    pending: int = 0
    """Records not embedded yet (a first index still running): the semantic side covers the rest."""


def search(
    index: SearchIndex,
    vectors: VectorIndex | None,
    query: str,
    *,
    mode: Mode,
    where: str = "",
    params: Sequence[Any] = (),
    limit: int = 20,
    offset: int = 0,
    fusion: Fusion = "convex",
    weight: float | None = None,
) -> ModeResult:
    """Up to `limit` hits after `offset` for `query` in `mode` (`pick_mode` chose it); hybrid
    weighs the semantic side by `weight`, by default the model's (`weight_for`)."""
    if mode == "lexical" or vectors is None:
        hits = index.search(query, where=where, params=params, limit=limit, offset=offset)
        return ModeResult([RankedHit(h, offset + i + 1, None) for i, h in enumerate(hits)], "lexical")
    depth = max(CANDIDATES, 2 * (offset + limit))
    pending = vectors.sync()
    semantic = vectors.search(query, where=where, params=params, limit=depth if mode == "hybrid" else offset + limit)
    if mode == "semantic":
        chosen = [Fused(m.key, m.score, None, i + 1) for i, m in enumerate(semantic)][offset : offset + limit]
        by_key: dict[str, Hit] = {}
    else:
        # snippets only for the page shown, not for every candidate
        lexical = index.search(query, where=where, params=params, limit=depth, snippet_tokens=0)
        by_key = {h.key: h for h in lexical}
        fused = fuse(
            [(h.key, h.score or 0.0) for h in lexical],
            [(m.key, m.score) for m in semantic],
            fusion=fusion,
            weight=weight_for(vectors) if weight is None else weight,
        )
        chosen = fused[offset : offset + limit]
        shown = index.search_snippets(query, [item.key for item in chosen if item.key in by_key])
        for key, snippet in shown.items():
            by_key[key].snippet = snippet
    best_chunk = {m.key: m for m in semantic}
    out: list[RankedHit] = []
    for item in chosen:
        hit = by_key.get(item.key) or index.get(item.key)
        if hit is None:  # removed since the vectors were read
            continue
        if hit.snippet is None and item.key in best_chunk:
            hit.snippet = vectors.passage(best_chunk[item.key])
        hit.score = item.score
        out.append(RankedHit(hit, item.lexical_rank, item.semantic_rank))
    return ModeResult(out, mode, pending)
