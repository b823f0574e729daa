"""Benchmark of the diagrams server (not a test: it prints what it measures).

- list_files over a generated project of N files (default 100,000, with a .gitignore'd build
  folder): the first page through a real stdio MCP connection (`deskmcp serve diagrams`: the
  whole walk, ignore rules, sort), every page after it, and the same listing in-process; against
  `rg --files` on the same tree in the same run (ripgrep honours .gitignore too), and the ratio;
- read_file p50 / p95 over random files of that tree, at the client;
- render_mermaid p50 / max over the valid diagrams of the Mermaid corpus (offline worker);
- peak RSS (VmHWM) of the server process and of the render worker.

    uv run python bench/diagrams.py --files 100000
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/http.py would shadow the standard library's `http`: keep this folder off the import path.
_BENCH = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _BENCH]

import argparse
import random
import shutil
import subprocess
import time

import anyio
import mcp.types as types

sys.path.insert(0, str(_BENCH.parent))

from bench.common import peak_rss_mb, percentile, session, stdio_params, summary, timed_call

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "mermaid"


def generate_tree(root: Path, files: int) -> None:
    """`files` small source files in folders of 100, plus an ignored build folder (not counted)."""
    marker = root / ".generated"
    if marker.is_file() and marker.read_text(encoding="utf-8") == str(files):
        return
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    (root / ".gitignore").write_text("build/\n*.tmp\n", encoding="utf-8")
    per_folder = 100
    for i in range(0, files - 1, per_folder):
        folder = root / "src" / f"pkg{i // 10_000:02}" / f"mod{i // per_folder:04}"
        folder.mkdir(parents=True, exist_ok=True)
        for j in range(min(per_folder, files - 1 - i)):
            (folder / f"file{j:03}.py").write_text(f"# module {i + j}\nVALUE = {i + j}\n", encoding="utf-8")
    build = root / "build"
    build.mkdir()
    for j in range(1000):
        (build / f"out{j}.o").write_bytes(b"\x00" * 16)
    marker.write_text(str(files), encoding="utf-8")


def rg_files(root: Path, rounds: int) -> tuple[float, int]:
    rg = shutil.which("rg") or str(Path(sys.executable).parent / "rg")
    times: list[float] = []
    count = 0
    for _ in range(rounds):
        started = time.perf_counter()
        out = subprocess.run([rg, "--files", "--hidden", "--glob", "!.git"], cwd=root, capture_output=True, check=True)
        times.append((time.perf_counter() - started) * 1000)
        count = out.stdout.count(b"\n")
    return percentile(times, 50), count


def in_process_listing(root: Path, workspace: Path, rounds: int) -> tuple[float, int]:
    from deskmcp.diagrams.service import DiagramsService
    from deskmcp.diagrams.settings import DiagramsSettings

    service = DiagramsService(DiagramsSettings(workspace=workspace, project_root=root))
    times: list[float] = []
    total = 0
    for _ in range(rounds):
        started = time.perf_counter()
        total = service.list_files(limit=1).total
        times.append((time.perf_counter() - started) * 1000)
    return percentile(times, 50), total


async def over_stdio(root: Path, workspace: Path, reads: int, rounds: int) -> dict[str, object]:
    pidfile = workspace / "server.pid"
    env = {"DIAGRAMS_PROJECT_ROOT": str(root), "DESKMCP_WORKSPACE": str(workspace)}
    params = stdio_params(["-m", "deskmcp.cli", "serve", "diagrams"], env, pidfile)
    rng = random.Random(7)
    results: dict[str, object] = {}
    async with session(params) as client:
        first_pages: list[float] = []
        for _ in range(rounds):
            first_pages.append(await timed_call(client, "list_files", {"limit": 5000}, validate=False))
        results["first_page_ms"] = percentile(first_pages, 50)

        # Raw requests: the protocol round trip, without the Python client's jsonschema check of
        # every 5000-entry page (a client-side cost a non-Python client does not pay).
        async def page(cursor: str | None) -> dict:
            arguments: dict[str, object] = {"limit": 5000}
            if cursor:
                arguments["cursor"] = cursor
            request = types.CallToolRequest(params=types.CallToolRequestParams(name="list_files", arguments=arguments))
            result = await client.session.send_request(request, types.CallToolResult)
            return result.structured_content or {}

        started = time.perf_counter()
        content = await page(None)
        paths = [f["path"] for f in content.get("files", [])]
        pages = 1
        while content.get("next_cursor"):
            content = await page(content["next_cursor"])
            paths += [f["path"] for f in content.get("files", [])]
            pages += 1
        results["all_pages_ms"] = (time.perf_counter() - started) * 1000
        results["pages"] = pages
        results["listed"] = len(paths)
        read_times = [
            await timed_call(client, "read_file", {"path": rng.choice(paths)}, validate=False) for _ in range(reads)
        ]
        results["read"] = read_times
        results["server_rss_mb"] = peak_rss_mb(pidfile)
    return results


def render_corpus(workspace: Path) -> tuple[list[tuple[str, float]], float | None, list[str]]:
    from deskmcp.diagrams.render import OfflineRenderer
    from deskmcp.diagrams.settings import DiagramsSettings

    renderer = OfflineRenderer(DiagramsSettings(workspace=workspace, render_timeout=600))
    timings: list[tuple[str, float]] = []
    failed: list[str] = []
    worker_peak: float | None = None
    files = sorted([*CORPUS.glob("examples/*.mmd"), *CORPUS.glob("repo-docs/*.mmd")])
    try:
        for path in files:
            started = time.perf_counter()
            try:
                renderer.render(path.read_text(encoding="utf-8"), "png")
            except Exception as exc:  # a benchmark reports every failure and carries on
                failed.append(f"{path.name}: {getattr(exc, 'code', type(exc).__name__)}")
                continue
            timings.append((path.name, (time.perf_counter() - started) * 1000))
            worker = renderer._worker
            if worker is not None:
                status = Path(f"/proc/{worker.process.pid}/status")
                for line in status.read_text(encoding="utf-8").splitlines():
                    if line.startswith("VmHWM:"):
                        worker_peak = max(worker_peak or 0.0, int(line.split()[1]) / 1024)
    finally:
        renderer.close()
    return timings, worker_peak, failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=100_000, help="files in the generated project")
    parser.add_argument("--rounds", type=int, default=3, help="repetitions of each listing measurement")
    parser.add_argument("--reads", type=int, default=200, help="read_file calls timed")
    parser.add_argument("--no-render", action="store_true", help="skip the render sweep over the corpus")
    parser.add_argument("--dir", type=Path, default=Path(".bench/diagrams"), help="where the tree is generated")
    args = parser.parse_args()

    root = args.dir.resolve() / "project"
    workspace = args.dir.resolve() / "ws"
    workspace.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    generate_tree(root, args.files)
    print(f"project: {args.files} files (+1000 ignored) in {root} ({time.perf_counter() - started:.1f} s to prepare)")

    rg_ms, rg_count = rg_files(root, args.rounds)
    local_ms, total = in_process_listing(root, workspace, args.rounds)
    stdio = anyio.run(over_stdio, root, workspace, args.reads, args.rounds)
    first = float(stdio["first_page_ms"])  # type: ignore[arg-type]
    print(f"rg --files p50                         : {rg_ms:9.1f} ms  ({rg_count} files)")
    print(f"list_files in-process (walk+sort) p50  : {local_ms:9.1f} ms  ({total} files)  {local_ms / rg_ms:.1f}x rg")
    print(f"list_files first page over stdio p50   : {first:9.1f} ms  (limit 5000)  {first / rg_ms:.1f}x rg")
    print(
        f"list_files every page over stdio       : {float(stdio['all_pages_ms']):9.1f} ms  "  # type: ignore[arg-type]
        f"({stdio['pages']} pages, {stdio['listed']} paths)"
    )
    print(f"read_file at the client                : {summary(stdio['read'])}")  # type: ignore[arg-type]
    print(f"server peak RSS                        : {stdio['server_rss_mb']} MB")

    if not args.no_render:
        if not CORPUS.is_dir():
            print("render: the Mermaid corpus is not available; skipped")
            return
        timings, worker_peak, failed = render_corpus(workspace)
        values = [ms for _, ms in timings]
        slowest = max(timings, key=lambda item: item[1])
        print(
            f"render_mermaid png over the corpus     : p50 {percentile(values, 50):.0f} ms  "
            f"max {slowest[1]:.0f} ms ({slowest[0]})  n={len(values)}"
        )
        print(f"render worker peak RSS                 : {worker_peak:.0f} MB" if worker_peak else "worker RSS: n/a")
        for line in failed:
            print(f"  not rendered: {line}")


if __name__ == "__main__":
    main()
