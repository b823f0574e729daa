"""Warm searches of two versions of a server, side by side, as an outside client sees them.

Each version runs as its own `deskmcp serve meetings|vault` over stdio with the official MCP
client, on its own copy of one indexed workspace, and the calls alternate between the two query
by query (which one goes first swaps every round). A noisy machine then slows both alike, so
the difference left is the code's, where runs one after the other differ by more than a
change makes.

    git worktree add /tmp/deskmcp-before <commit>
    uv run python bench/warm_ab.py meetings --before /tmp/deskmcp-before/src --input DATA/granola-10000-v3.json
    uv run python bench/warm_ab.py vault --before /tmp/deskmcp-before/src --input DATA/vault-50000

The inputs are the shared generators' (`gen_granola.py`, `gen_vault.py`), whose meta files name
the queries. The workspace is indexed by the "after" version (this checkout's `src` unless
`--after`) and copied for the other; a version that keeps its index in another format builds
its own first (waited for). Prints each version's p50 / p95 over every call and the median per
query.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/http.py would shadow the standard library's `http`: keep this folder off the import path.
_BENCH = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _BENCH]

import argparse
import os
import shutil
import statistics
import tempfile
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

sys.path.insert(0, str(_BENCH.parent))

from bench.common import link_or_copy, percentile, timed_call
from bench.meetings import queries as meeting_queries
from bench.vault import load_meta

ROOT = _BENCH.parent
DEFAULT_INPUT = {
    "meetings": Path("/work/benchdata/granola-10000-v3.json"),
    "vault": Path("/work/benchdata/vault-50000"),
}


def setup(kind: str, data: Path, work: Path) -> tuple[str, dict[str, Any], str, list[str], dict[str, str]]:
    """The search tool, its fixed arguments, the query's argument, the queries and the server's
    environment (a cache is linked into `work` under the name Granola gives it)."""
    if kind == "meetings":
        folder = work / "granola"
        folder.mkdir()
        link_or_copy(data, folder / "cache-v3.json")
        env = {"GRANOLA_CACHE_PATH": str(folder), "DESKMCP_TIMEZONE": "UTC"}
        return "granola.meetings.search", {}, "q", meeting_queries(data), env
    words = [q["query"] for q in load_meta(data)["params"]["search_queries"]]
    return "search_notes", {"limit": 10}, "query", words, {"VAULT_PATH": str(data)}


def params(kind: str, src: Path, workspace: Path, env: dict[str, str]) -> StdioServerParameters:
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("VAULT_", "GRANOLA_", "DESKMCP_"))}
    full = {**kept, **env, "DESKMCP_WORKSPACE": str(workspace), "PYTHONPATH": str(src)}
    deskmcp = Path(sys.executable).with_name("deskmcp")
    return StdioServerParameters(command=str(deskmcp), args=["serve", kind], env=full, cwd=str(ROOT))


async def indexed(client: Client, tool: str, args: dict[str, Any]) -> None:
    """Wait (asking once a second) for an answer without `indexing`."""
    for _ in range(900):
        if not ((await client.call_tool(tool, args)).structured_content or {}).get("indexing"):
            return
        await anyio.sleep(1)
    raise TimeoutError("the index was not complete after 15 minutes")


async def compare(kind: str, data: Path, sources: dict[str, Path], rounds: int, work: Path) -> None:
    tool, fixed, arg, words, env = setup(kind, data, work)
    (work / "after").mkdir()
    first = {**fixed, arg: words[0]}
    async with Client(params(kind, sources["after"], work / "after", env)) as client:
        await indexed(client, tool, first)
    shutil.copytree(work / "after", work / "before", symlinks=True)
    async with (
        Client(params(kind, sources["before"], work / "before", env)) as before,
        Client(params(kind, sources["after"], work / "after", env)) as after,
    ):
        clients = {"before": before, "after": after}
        for client in clients.values():
            await indexed(client, tool, first)
        for _ in range(2):
            for word in words:
                for client in clients.values():
                    await timed_call(client, tool, {**fixed, arg: word})
        calls: dict[str, dict[str, list[float]]] = {v: {w: [] for w in words} for v in clients}
        for n in range(rounds):
            order = ["before", "after"] if n % 2 == 0 else ["after", "before"]
            for word in words:
                for version in order:
                    calls[version][word].append(await timed_call(clients[version], tool, {**fixed, arg: word}))
    print(f"{kind}: {rounds} rounds of {len(words)} queries, calls alternating between the versions")
    every = {v: [t for times in calls[v].values() for t in times] for v in calls}
    for version in ("before", "after"):
        p50, p95 = percentile(every[version], 50), percentile(every[version], 95)
        print(f"  {version:6} ({sources[version]}): p50 {p50:.2f} ms, p95 {p95:.2f} ms")
    p50 = percentile(every["after"], 50) / percentile(every["before"], 50)
    p95 = percentile(every["after"], 95) / percentile(every["before"], 95)
    print(f"  after / before: p50 {p50:.2f}, p95 {p95:.2f}")
    print("  median per query, before / after (ms):")
    for word in words:
        was, now = (statistics.median(calls[v][word]) for v in ("before", "after"))
        print(f"    {word!r}: {was:.1f} / {now:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("server", choices=["meetings", "vault"])
    parser.add_argument("--before", type=Path, required=True, help="the other version's src folder")
    parser.add_argument("--after", type=Path, default=ROOT / "src", help="default: this checkout's src")
    parser.add_argument("--input", type=Path, help="a cache-v3 file (meetings) or a vault folder, from the generators")
    parser.add_argument("--rounds", type=int, default=20)
    opts = parser.parse_args()
    data = (opts.input or DEFAULT_INPUT[opts.server]).resolve()
    sources = {"before": opts.before.resolve(), "after": opts.after.resolve()}
    with tempfile.TemporaryDirectory(prefix="deskmcp-ab-", dir=data.parent) as work:
        anyio.run(compare, opts.server, data, sources, opts.rounds, Path(work))


if __name__ == "__main__":
    main()
