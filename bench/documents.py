"""Benchmark of the documents server: indexing and search over a generated folder.

Not a test: it prints what it measured. Run with

    uv run python bench/documents.py --docs 2000

It writes N documents (Markdown, text and HTML, plus one PDF in every --pdf-every) to a
temporary folder, indexes them with index_folder, re-scans the unchanged folder, and then
times searches through the service and through an in-memory MCP client.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/http.py would shadow the standard library's `http`: keep this folder off the import path.
_BENCH = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _BENCH]

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from deskmcp.demo.documents import write_pdf
from deskmcp.documents.server import create_server
from deskmcp.documents.service import DocumentService
from deskmcp.documents.settings import DocumentsSettings

SYLLABLES = ["ka", "lo", "mi", "ne", "ra", "to", "vu", "shi", "den", "bar", "qui", "zor", "pel", "tan", "dro"]
COMMON = ["budget", "launch", "hiring", "design", "review", "customer", "roadmap", "invoice", "security", "travel"]


def vocabulary(rng: random.Random, size: int = 5000) -> list[str]:
    words = set(COMMON)
    while len(words) < size:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def paragraph(rng: random.Random, words: list[str], n: int) -> str:
    # Zipf-like: low indexes are much more frequent.
    picks = [words[min(int(rng.paretovariate(1.1)) - 1, len(words) - 1)] for _ in range(n)]
    return " ".join(picks).capitalize() + "."


def write_corpus(root: Path, count: int, pdf_every: int, rng: random.Random) -> dict[str, int]:
    words = vocabulary(rng)
    rng.shuffle(words)
    kinds = {"md": 0, "txt": 0, "html": 0, "pdf": 0}
    for i in range(count):
        folder = root / f"area{i % 20:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        title = " ".join(rng.sample(words[:300], 3)).title()
        body = "\n\n".join(paragraph(rng, words, rng.randint(40, 160)) for _ in range(rng.randint(2, 8)))
        if pdf_every and i % pdf_every == 0:
            pages = [[paragraph(rng, words, 12) for _ in range(6)] for _ in range(rng.randint(1, 4))]
            write_pdf(folder / f"doc{i:05d}.pdf", title, pages)
            kinds["pdf"] += 1
        elif i % 3 == 0:
            tags = ", ".join(rng.sample(COMMON, 2))
            (folder / f"doc{i:05d}.md").write_text(
                f"---\ntitle: {title}\ntags: [{tags}]\n---\n# {title}\n\n{body}\n", encoding="utf-8"
            )
            kinds["md"] += 1
        elif i % 3 == 1:
            (folder / f"doc{i:05d}.txt").write_text(f"{title}\n\n{body}\n", encoding="utf-8")
            kinds["txt"] += 1
        else:
            html = "".join(f"<p>{p}</p>" for p in body.split("\n\n"))
            (folder / f"doc{i:05d}.html").write_text(
                f"<html><head><title>{title}</title><script>var x=1;</script></head><body><h1>{title}</h1>{html}"
                "</body></html>\n",
                encoding="utf-8",
            )
            kinds["html"] += 1
    return kinds


def queries(rng: random.Random, count: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(count):
        shape = i % 4
        if shape == 0:
            out.append({"query": rng.choice(COMMON)})
        elif shape == 1:
            out.append({"query": " ".join(rng.sample(COMMON, 2))})
        elif shape == 2:
            out.append({"query": rng.choice(COMMON), "tags": [rng.choice(COMMON)]})
        else:
            out.append({"query": rng.choice(COMMON), "filename": "doc0"})
    return out


def percentiles(samples: list[float]) -> str:
    ms = sorted(s * 1000 for s in samples)
    p95 = ms[min(len(ms) - 1, int(len(ms) * 0.95))]
    return f"p50 {statistics.median(ms):.2f} ms, p95 {p95:.2f} ms, max {ms[-1]:.2f} ms (n={len(ms)})"


def timed(call: Callable[[], Any]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


async def client_latencies(settings: DocumentsSettings, plan: list[dict[str, Any]]) -> list[float]:
    samples: list[float] = []
    async with Client(create_server(settings)) as client:
        await client.call_tool("search_documents", plan[0])  # warm up
        for args in plan:
            started = time.perf_counter()
            result = await client.call_tool("search_documents", args)
            samples.append(time.perf_counter() - started)
            if result.is_error:
                raise SystemExit(f"search failed: {result.content}")
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--pdf-every", type=int, default=40, help="one PDF in every N documents (0: none)")
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="deskmcp-bench-docs-") as tmp:
        root = Path(tmp) / "documents"
        started = time.perf_counter()
        kinds = write_corpus(root, args.docs, args.pdf_every, rng)
        size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
        print(
            f"corpus: {args.docs} documents {kinds}, {size / 1e6:.1f} MB, "
            f"written in {time.perf_counter() - started:.1f}s"
        )
        settings = DocumentsSettings(workspace=Path(tmp) / "ws", documents_path=root)
        service = DocumentService(settings)
        try:
            result: Any = None

            def index() -> None:
                nonlocal result
                result = service.index_folder("", max_files=args.docs + 1)

            seconds = timed(index)
            print(
                f"index_folder (cold): {seconds:.2f}s total, {seconds / args.docs * 1000:.2f} ms per document "
                f"(added {result.added}, failed {len(result.failed)})"
            )
            rescan = timed(lambda: service.index_folder("", max_files=args.docs + 1))
            print(f"index_folder (unchanged): {rescan:.2f}s total, {rescan / args.docs * 1000:.3f} ms per document")
            index_size = sum(p.stat().st_size for p in settings.index_folder.glob("documents.sqlite3*"))
            print(f"index on disk: {index_size / 1e6:.1f} MB")
            plan = queries(rng, args.queries)
            hits = [service.catalog.search(**q).total for q in plan[:20]]
            print(f"sample totals per query: {hits[:8]}")
            samples = [timed(lambda q=q: service.catalog.search(**q)) for q in plan]
            print(f"search through the service: {percentiles(samples)}")
            # New tags each time, so every call rewrites the record in place.
            one = [timed(lambda i=i: service.index_document("area01/doc00001.txt", [f"bench{i}"])) for i in range(20)]
            print(f"index_document (single file, re-index in place): {percentiles(one)}")
        finally:
            service.close()
        samples = anyio.run(client_latencies, settings, plan)
        print(f"search through an in-memory MCP client: {percentiles(samples)}")


if __name__ == "__main__":
    main()
