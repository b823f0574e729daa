"""Search quality on real meeting transcripts (QMSum): how well search_notes ranks what people ask for.

Not a test: it prints what it measures. The corpus is QMSum's 40-meeting subset (a folder of
its JSON files, `--corpus`). Each meeting is cut into chunks of consecutive turns, at most 150
words each (whitespace words of "Speaker: text"; a longer turn is cut into 150-word pieces),
3,464 chunks in all, written as vault notes `<meeting>/chunk-NNNN.md` in a temporary vault.
The queries are QMSum's own: its 303 specific questions and its 184 topic labels, sent as
typed; a chunk is relevant when its turns overlap the query's human-marked relevant spans.

Every query is asked twice through deskmcp's own `VaultService.search_notes` (limit 10):
within its meeting (`folder` = the meeting) and across all meetings. For each of the four
sets it prints nDCG@10, MRR@10 and Recall@10 (relevance is binary) and how many answers were
empty. The baseline is plain BM25 in the same run: tantivy over the chunk text alone (one
field, English stemming), any word of the query (OR), the same chunks and queries.

    uv run python bench/search_quality.py --corpus /work/shared/corpora/qmsum

Later parts (search by meaning) add their rankers beside `deskmcp_lexical` and `bm25_baseline`.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/http.py would shadow the standard library's `http`: keep this folder off the import path.
_BENCH = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _BENCH]

import argparse
import json
import math
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from deskmcp.vault.service import VaultService
from deskmcp.vault.settings import VaultSettings

CHUNK_WORDS = 150
K = 10


@dataclass
class Chunk:
    meeting: str
    number: int
    first_turn: int
    last_turn: int
    lines: list[str] = field(default_factory=list)

    @property
    def path(self) -> str:
        return f"{self.meeting}/chunk-{self.number:04d}.md"

    @property
    def text(self) -> str:
        return "\n\n".join(self.lines) + "\n"


@dataclass
class Query:
    kind: str  # "question" or "topic"
    meeting: str
    text: str
    relevant: frozenset[str]  # chunk paths


def chunk_meeting(meeting: str, turns: Sequence[dict[str, str]]) -> list[Chunk]:
    """Consecutive turns, at most CHUNK_WORDS words a chunk; a longer turn is cut into pieces."""
    chunks: list[Chunk] = []
    current: Chunk | None = None
    words_in = 0
    for i, turn in enumerate(turns):
        words = f"{turn['speaker']}: {turn['content']}".split()
        pieces = [words[k : k + CHUNK_WORDS] for k in range(0, len(words), CHUNK_WORDS)] or [[]]
        for piece in pieces:
            if current is not None and words_in + len(piece) > CHUNK_WORDS:
                chunks.append(current)
                current = None
            if current is None:
                current = Chunk(meeting, len(chunks) + 1, i, i)
                words_in = 0
            current.last_turn = i
            current.lines.append(" ".join(piece))
            words_in += len(piece)
    if current is not None:
        chunks.append(current)
    return chunks


def load(corpus: Path) -> tuple[list[Chunk], list[Query]]:
    chunks: list[Chunk] = []
    queries: list[Query] = []
    for file in sorted(corpus.glob("*.json")):
        meeting = file.stem
        data = json.loads(file.read_text(encoding="utf-8"))
        mine = chunk_meeting(meeting, data["meeting_transcripts"])
        chunks.extend(mine)

        def relevant(spans: Iterable[Sequence[str]], mine: list[Chunk] = mine) -> frozenset[str]:
            ranges = [(int(a), int(b)) for a, b in spans]  # the end index is inclusive
            return frozenset(c.path for c in mine if any(c.first_turn <= b and a <= c.last_turn for a, b in ranges))

        for item in data["specific_query_list"]:
            queries.append(Query("question", meeting, item["query"], relevant(item["relevant_text_span"])))
        for item in data["topic_list"]:
            queries.append(Query("topic", meeting, item["topic"], relevant(item["relevant_text_span"])))
    return chunks, queries


def write_vault(root: Path, chunks: Sequence[Chunk]) -> None:
    for chunk in chunks:
        path = root / chunk.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(chunk.text, encoding="utf-8")


# -- metrics ---------------------------------------------------------------------------------


def ndcg(ranked: Sequence[str], relevant: frozenset[str]) -> float:
    dcg = sum(1 / math.log2(i + 2) for i, key in enumerate(ranked[:K]) if key in relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(K, len(relevant))))
    return dcg / ideal if ideal else 0.0


def mrr(ranked: Sequence[str], relevant: frozenset[str]) -> float:
    return next((1 / (i + 1) for i, key in enumerate(ranked[:K]) if key in relevant), 0.0)


def recall(ranked: Sequence[str], relevant: frozenset[str]) -> float:
    return len(relevant.intersection(ranked[:K])) / len(relevant) if relevant else 0.0


Ranker = Callable[[Query, bool], list[str]]
"""(query, within its meeting) -> chunk paths, best first."""


def evaluate(name: str, rank: Ranker, queries: Sequence[Query]) -> dict[str, tuple[float, float, float, int, int]]:
    out: dict[str, tuple[float, float, float, int, int]] = {}
    for within in (True, False):
        for kind in ("question", "topic"):
            chosen = [q for q in queries if q.kind == kind and q.relevant]
            scores: list[tuple[float, float, float]] = []
            empty = 0
            for q in chosen:
                ranked = rank(q, within)
                empty += not ranked
                scores.append((ndcg(ranked, q.relevant), mrr(ranked, q.relevant), recall(ranked, q.relevant)))
            n = len(scores)
            label = f"{kind}s {'within one meeting' if within else 'across all'}"
            out[label] = (
                sum(s[0] for s in scores) / n,
                sum(s[1] for s in scores) / n,
                sum(s[2] for s in scores) / n,
                empty,
                n,
            )
    print(f"\n{name}")
    print(f"  {'set':32} {'nDCG@10':>8} {'MRR@10':>8} {'R@10':>8} {'empty':>9}")
    for label, (n_, m_, r_, e_, total) in out.items():
        print(f"  {label:32} {n_:8.3f} {m_:8.3f} {r_:8.3f} {e_:>4}/{total:<4}")
    return out


# -- rankers ---------------------------------------------------------------------------------


def deskmcp_lexical(vault: Path, workspace: Path) -> tuple[Ranker, Callable[[], None]]:
    """deskmcp's own search_notes over the vault (the service, as the MCP tool calls it)."""
    settings = VaultSettings(workspace=workspace, vault_path=vault, index_dir=workspace / "index", watch=False)
    service = VaultService(settings)
    started = time.perf_counter()
    service.catalog.scan()
    service.catalog.index.flush()
    print(f"indexed {service.catalog.index.count()} notes in {time.perf_counter() - started:.1f} s")
    service.rescan_seconds = 3600.0

    def rank(q: Query, within: bool) -> list[str]:
        result = service.search_notes(q.text, folder=q.meeting if within else None, limit=K)
        return [note.path for note in result.notes]

    return rank, service.close


def bm25_baseline(chunks: Sequence[Chunk], folder: Path) -> Ranker:
    """Plain BM25: tantivy, the chunk text as one field, English stemming, any word (OR)."""
    import tantivy

    builder = tantivy.SchemaBuilder()
    builder.add_text_field("body", tokenizer_name="en_stem")
    builder.add_text_field("path", stored=True, tokenizer_name="raw")
    builder.add_text_field("meeting", tokenizer_name="raw")
    schema = builder.build()
    index = tantivy.Index(schema, path=str(folder))
    writer = index.writer()
    for chunk in chunks:
        writer.add_document(tantivy.Document(body=chunk.text, path=chunk.path, meeting=chunk.meeting))
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    searcher = index.searcher()
    analyzer = (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )

    def rank(q: Query, within: bool) -> list[str]:
        words = list(dict.fromkeys(analyzer.analyze(q.text)))
        if not words:
            return []
        query = tantivy.Query.boolean_query(
            [(tantivy.Occur.Should, tantivy.Query.term_query(schema, "body", w)) for w in words]
        )
        if within:
            only = tantivy.Query.term_query(schema, "meeting", q.meeting)
            query = tantivy.Query.boolean_query([(tantivy.Occur.Must, query), (tantivy.Occur.Must, only)])
        hits = searcher.search(query, K).hits
        return [str(searcher.doc(addr).get_first("path")) for _, addr in hits]

    return rank


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--corpus", type=Path, default=Path("/work/shared/corpora/qmsum"))
    parser.add_argument("--no-baseline", action="store_true", help="skip the plain BM25 baseline")
    args = parser.parse_args()
    chunks, queries = load(args.corpus)
    kinds = {kind: sum(q.kind == kind for q in queries) for kind in ("question", "topic")}
    print(f"{len(chunks)} chunks from {len({c.meeting for c in chunks})} meetings; queries: {kinds}")
    unmarked = [q for q in queries if not q.relevant]
    if unmarked:
        print(f"{len(unmarked)} queries without relevant spans are left out")
    with tempfile.TemporaryDirectory(prefix="search-quality-") as tmp:
        vault, workspace = Path(tmp) / "vault", Path(tmp) / "workspace"
        write_vault(vault, chunks)
        rank, close = deskmcp_lexical(vault, workspace)
        try:
            ours = evaluate("deskmcp search_notes", rank, queries)
        finally:
            close()
        if not args.no_baseline:
            (Path(tmp) / "bm25").mkdir()
            theirs = evaluate(
                "plain BM25 (tantivy, one field, any word)", bm25_baseline(chunks, Path(tmp) / "bm25"), queries
            )
            print("\nnDCG@10 ratio, deskmcp / plain BM25")
            for label, figures in ours.items():
                base = theirs[label][0]
                print(f"  {label:32} {figures[0] / base if base else float('nan'):8.2f}")


if __name__ == "__main__":
    main()
