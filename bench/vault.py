"""Benchmark of the vault server on generated vaults (not a test: it prints what it measures).

For each size it generates a vault, then measures:

- index build: a cold scan into an empty index (every note read), then a warm start-up
  scan over the unchanged vault (stat only);
- search latency at the client over a real stdio MCP connection (`python -m deskmcp.cli
  serve vault`), p50 and p95;
- edit-to-searchable: a note edited on disk, timed until search_notes returns it;
- the server's peak RSS (VmHWM, Linux);
- ripgrep (`rg -l -i -F`) over the same vault for the same queries, and the ratio.

    uv run python bench/vault.py --sizes 10000,50000

Long notes (about 5 KB each, 269 MB for 50,000 notes) with `--note-words 700`.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/http.py would shadow the standard library's `http`: keep this folder off the import path.
_BENCH = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _BENCH]

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from deskmcp.demo.vault import write_vault
from deskmcp.vault.service import VaultService
from deskmcp.vault.settings import VaultSettings

COMMON = [  # single words found in 8-20% of the generated notes
    "latency",
    "renewals",
    "onboarding",
    "Okafor",
    "postmortem",
    "accessibility",
    "contractor",
    "pricing",
    '"annual renewals"',
    '"external review"',
]
SPECIFIC = [  # project-name phrases found in about 1-2% of the notes
    '"Quarry Audit"',
    '"Lantern Pilot"',
    '"Meridian Website"',
    '"Tidepool Launch"',
    '"Beacon Analytics"',
    '"Orchard Migration"',
]
QUERIES = COMMON + SPECIFIC


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def generate(root: Path, size: int, words: int) -> float:
    marker = root / (f".generated-{size}" + (f"-{words}" if words else ""))
    if marker.exists():
        return 0.0
    if root.exists():
        shutil.rmtree(root)
    started = time.perf_counter()
    write_vault(root, random.Random(size), notes=size, extra_words=words)
    marker.write_text("ok\n", encoding="utf-8")
    return time.perf_counter() - started


def build_index(root: Path, workspace: Path) -> tuple[float, float, int, float]:
    index_dir = workspace / "index"
    if index_dir.exists():
        shutil.rmtree(index_dir)
    settings = VaultSettings(workspace=workspace, vault_path=root, index_dir=index_dir, watch=False)
    service = VaultService(settings)
    started = time.perf_counter()
    service.catalog.scan()
    service.catalog.index.flush()  # the text index commits lazily: count its commit too
    cold = time.perf_counter() - started
    warm = service.catalog.scan()
    notes = service.catalog.index.count()
    service.rescan_seconds = 3600.0  # time the searches alone, not the safety-net scans
    times: list[float] = []
    for _ in range(3):
        for query in QUERIES:
            t0 = time.perf_counter()
            service.search_notes(query, limit=10)
            times.append((time.perf_counter() - t0) * 1000)
    service.close()
    return cold, warm.seconds, notes, statistics.median(times)


def server_pid() -> int | None:
    """The spawned server: a child of this process running deskmcp.cli."""
    me = str(os.getpid())
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text(encoding="utf-8")
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        ppid = stat.rsplit(")", 1)[1].split()[1]
        if ppid == me and "deskmcp.cli" in cmdline:
            return int(entry.name)
    return None


def peak_rss_mb(pid: int | None) -> float | None:
    if pid is None:
        return None
    try:
        for line in Path(f"/proc/{pid}/status").read_text(encoding="utf-8").splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


async def first_start(root: Path, workspace: Path) -> dict[str, float]:
    """A server started on the vault with no index at all: how soon tools answer while the
    index is built, and how long the build takes."""
    index_dir = workspace / "first-start-index"
    if index_dir.exists():
        shutil.rmtree(index_dir)
    env = dict(os.environ)
    env.update(
        {
            "VAULT_PATH": str(root),
            "DESKMCP_WORKSPACE": str(workspace),
            "DESKMCP_INDEX_DIR": str(index_dir),
            "DESKMCP_TOOLSETS": "all",  # vault_status is outside the default toolsets
        }
    )
    params = StdioServerParameters(command=sys.executable, args=["-m", "deskmcp.cli", "serve", "vault"], env=env)
    started = time.perf_counter()
    slowest = 0.0
    async with Client(params) as client:
        t0 = time.perf_counter()
        status = await client.call_tool("vault_status", {})
        assert not status.is_error, status.content
        first_status = time.perf_counter() - started
        first_call = time.perf_counter() - t0
        t0 = time.perf_counter()
        result = await client.call_tool("search_notes", {"query": "renewals", "limit": 10})
        first_search = time.perf_counter() - t0
        partial = (result.structured_content or {}).get("indexing")
        while True:
            for name, args in (("search_notes", {"query": "latency", "limit": 10}), ("vault_status", {})):
                t0 = time.perf_counter()
                result = await client.call_tool(name, args)
                slowest = max(slowest, time.perf_counter() - t0)
                assert not result.is_error, result.content
            if not (result.structured_content or {}).get("indexing"):
                break
            await anyio.sleep(0.2)
        built = time.perf_counter() - started
    return {
        "first_status_s": first_status,
        "first_call_s": first_call,
        "first_search_s": first_search,
        "partial": 1.0 if partial else 0.0,
        "slowest_call_s": slowest,
        "built_s": built,
    }


async def serve_and_measure(root: Path, workspace: Path, rounds: int, edits: int) -> dict[str, float | None]:
    env = dict(os.environ)
    env.update(
        {
            "VAULT_PATH": str(root),
            "DESKMCP_WORKSPACE": str(workspace),
            "DESKMCP_INDEX_DIR": str(workspace / "index"),
            "DESKMCP_TOOLSETS": "all",
        }
    )
    params = StdioServerParameters(command=sys.executable, args=["-m", "deskmcp.cli", "serve", "vault"], env=env)
    started = time.perf_counter()
    async with Client(params) as client:
        status = await client.call_tool("vault_status", {})
        first_answer = time.perf_counter() - started
        while not (status.structured_content or {}).get("watching"):
            await anyio.sleep(0.05)
            status = await client.call_tool("vault_status", {})
        for query in QUERIES:  # warm-up
            await client.call_tool("search_notes", {"query": query, "limit": 10})
        pings: list[float] = []
        for _ in range(rounds * 5):
            t0 = time.perf_counter()
            await client.call_tool("read_note", {"path": "Home"})
            pings.append((time.perf_counter() - t0) * 1000)
        latencies: dict[str, list[float]] = {"common": [], "specific": []}
        for _ in range(rounds):
            for query in QUERIES:
                t0 = time.perf_counter()
                result = await client.call_tool("search_notes", {"query": query, "limit": 10})
                latencies["common" if query in COMMON else "specific"].append((time.perf_counter() - t0) * 1000)
                assert not result.is_error, result.content
        edit_times: list[float] = []
        targets = sorted((root / "Projects").glob("*.md"))[:edits]
        for n, target in enumerate(targets):
            token = f"zqedit{n}x{int(time.time())}"
            t0 = time.perf_counter()
            with target.open("a", encoding="utf-8") as handle:
                handle.write(f"\nEdited on disk: {token}\n")
            while True:
                found = await client.call_tool("search_notes", {"query": token})
                if (found.structured_content or {}).get("notes"):
                    break
                if time.perf_counter() - t0 > 30:
                    raise RuntimeError(f"edit {token} not searchable after 30 s")
            edit_times.append((time.perf_counter() - t0) * 1000)
        rss = peak_rss_mb(server_pid())
    return {
        "first_answer_s": first_answer,
        "ping_ms": statistics.median(pings),
        "p50_ms": statistics.median(latencies["common"] + latencies["specific"]),
        "p95_ms": percentile(latencies["common"] + latencies["specific"], 0.95),
        "common_p50_ms": statistics.median(latencies["common"]),
        "specific_p50_ms": statistics.median(latencies["specific"]),
        "edit_p50_ms": statistics.median(edit_times) if edit_times else None,
        "edit_max_ms": max(edit_times) if edit_times else None,
        "rss_mb": rss,
    }


def ripgrep(root: Path, rounds: int) -> tuple[float, float]:
    rg = shutil.which("rg") or str(Path(sys.executable).parent / "rg")
    times: list[float] = []
    for query in QUERIES:  # warm the page cache the same way the server's index is warm
        subprocess.run([rg, "-l", "-i", "-F", "--glob", "*.md", query.strip('"'), str(root)], capture_output=True)
    for _ in range(rounds):
        for query in QUERIES:
            t0 = time.perf_counter()
            subprocess.run([rg, "-l", "-i", "-F", "--glob", "*.md", query.strip('"'), str(root)], capture_output=True)
            times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times), percentile(times, 0.95)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,50000", help="comma-separated vault sizes (notes)")
    parser.add_argument("--rounds", type=int, default=20, help="passes over the query list per size")
    parser.add_argument("--rg-rounds", type=int, default=3, help="passes over the query list with ripgrep")
    parser.add_argument("--edits", type=int, default=10, help="edits on disk timed until searchable")
    parser.add_argument(
        "--note-words", type=int, default=0, help="words added to every dated note (0: the demo's short notes)"
    )
    parser.add_argument("--dir", type=Path, default=Path(".bench/vault"), help="where vaults are generated")
    args = parser.parse_args()
    for size in (int(s) for s in args.sizes.split(",") if s.strip()):
        base = args.dir.resolve() / (f"{size}x{args.note_words}" if args.note_words else str(size))
        root, workspace = base / "vault", base / "ws"
        workspace.mkdir(parents=True, exist_ok=True)
        gen = generate(root, size, args.note_words)
        first = anyio.run(first_start, root, workspace)
        cold, warm, notes, in_process = build_index(root, workspace)
        measured = anyio.run(serve_and_measure, root, workspace, args.rounds, args.edits)
        rg50, rg95 = ripgrep(root, args.rg_rounds)
        p50 = measured["p50_ms"] or 0.0
        origin = f"generated in {gen:.1f}s" if gen else "reused"
        text_mb = sum(f.stat().st_size for f in root.rglob("*.md")) / 1e6
        print(f"\n== vault of {notes:,} notes, {text_mb:.0f} MB of Markdown ({origin})")
        print(f"first start, no index: status answered {first['first_status_s']:.2f} s after spawn")
        print(
            f"  calls while indexing: first {first['first_call_s'] * 1000:.0f} ms,"
            f" slowest {first['slowest_call_s']:.2f} s"
        )
        print(f"  first search: {first['first_search_s'] * 1000:.0f} ms (partial results: {bool(first['partial'])})")
        print(f"  index complete {first['built_s']:.2f} s after spawn")
        print(f"index build (cold, every note read) : {cold:8.2f} s")
        print(f"start-up scan (warm, nothing changed): {warm:8.2f} s")
        index_mb = sum(f.stat().st_size for f in (workspace / "index").rglob("*") if f.is_file()) / 1e6
        print(f"index on disk                        : {index_mb:8.1f} MB")
        print(f"server first answer over stdio       : {measured['first_answer_s']:8.2f} s")
        print(f"read_note (a small note) p50         : {measured['ping_ms']:8.2f} ms")
        print(f"search p50 in-process (no MCP)       : {in_process:8.2f} ms")
        print(f"search p50 / p95 at the client       : {p50:8.2f} / {measured['p95_ms']:.2f} ms")
        common, specific = measured["common_p50_ms"], measured["specific_p50_ms"]
        print(f"  p50 common words / specific phrases: {common:8.2f} / {specific:.2f} ms")
        print(
            f"edit on disk -> searchable p50 / max : {measured['edit_p50_ms']:8.1f} / {measured['edit_max_ms']:.1f} ms"
        )
        print(f"server peak RSS                      : {measured['rss_mb'] or float('nan'):8.1f} MiB")
        print(f"ripgrep p50 / p95 (same queries)     : {rg50:8.2f} / {rg95:.2f} ms")
        print(f"ripgrep p50 / server search p50      : {rg50 / p50 if p50 else float('nan'):8.1f}x")


if __name__ == "__main__":
    main()
