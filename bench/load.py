"""Many users at once through haproxy in front of two `deskmcp serve all --http --stateless` replicas
in users mode, for minutes: throughput, latency per tool, errors, and each replica's memory and
open files at the start and the end.

    uv run python bench/load.py [--minutes 10] [--users 50] [--sessions 50]
    uv run python bench/load.py --minutes 1 --users 10 --sessions 10     # a short run

What runs, all on loopback:
- oidc-provider (tests/helpers/oidc, `npm ci` there) as the authorization server; each user's access
  token is a JWT signed with the issuer's key (RFC 9068, `aud` the public MCP URL) and checked by
  deskmcp's own verifier against the issuer's key set, as in tests/users;
- PostgreSQL (a throwaway cluster, when Debian's postgresql is installed) as `DESKMCP_DATABASE_URL`,
  shared by the replicas (send journal, spent confirmations, Google tokens: this mix sends no mail,
  so it is mostly idle);
- two replicas (`--replicas`) on one users root (`DESKMCP_USERS_ROOT`), `DESKMCP_USERS_LIVE` as
  large as the number of users, behind haproxy with the configuration docs/deployment.md shows
  (tests/helpers/haproxy.py).

Every user has a generated workspace of their own: 40 notes, 12 documents, a Granola cache of 30
meetings, a workbook `budget.xlsx` and a project folder of 20 files. Two phases, each on freshly
started replicas:
1. `--users` users, one MCP client (its own connection and token) each;
2. one user with `--sessions` MCP clients.
Every client connects, warms up (`--warmup` rounds of every tool, then `--ramp` seconds of the
mix below with every client at once, so the connection pools and caches the load needs are open
before the start is measured; none of it counted), and waits until all are ready; then the window
opens for `--minutes` and each client calls a random mix of `read_note`, `write_note` (into notes
of its own, overwritten in place so the vault does not grow), `search_notes`, `list_notes`,
`search_documents`, `granola_meetings_list`, `granola_meetings_search`, `read_values` and
`list_files` back to back. No mail is sent.

Printed per phase: calls/s, p50/p95/p99 per tool and overall, errors (by kind: the error's `error`
field, or the exception's type), each replica's resident memory (VmRSS) and open file descriptors
(/proc/PID/fd) when the window opens (after warm-up) and when it closes (anonymous and file-backed
resident memory apart too), with the growth, the peak
resident memory sampled every 5 s, the CPU seconds of each replica and of haproxy, and the load
generator's own CPU share (this process: it shares the machine with the replicas, so on few cores
the figures say as much about the machine as about deskmcp). Every loop ends at its deadline;
the processes started here are stopped at the end, on Ctrl-C too.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/http.py would shadow the standard library's `http`: keep this folder off the import path.
_BENCH = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _BENCH]
sys.path.insert(0, str(_BENCH.parent))

import argparse
import base64
import json
import os
import random
import resource
import shutil
import signal
import subprocess
import tempfile
import time
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from tests.helpers.authorization_server import AuthorizationServer, authorization_server, provider_missing
from tests.helpers.haproxy import Replica, balancer, haproxy_binary
from tests.helpers.network import free_port
from tests.helpers.postgres import fresh_database, postgres_bin, postgres_cluster
from tests.helpers.workbooks import make_xlsx

from bench.common import percentile, rss_mb, status_mb
from deskmcp.core.principal import Principal

STATE_KEYS = "bench-load-request-state-key-0123456789abcdef"
WORDS = (
    "budget",
    "roadmap",
    "hiring",
    "launch",
    "pricing",
    "security",
    "migration",
    "onboarding",
    "forecast",
    "vendor",
    "contract",
    "retention",
    "churn",
    "latency",
    "outage",
    "incident",
    "review",
    "planning",
    "quarterly",
    "customer",
    "partner",
)
NOTES = 40
DOCUMENTS = 12
MEETINGS = 30
PROJECT_FILES = 20
OWN_NOTES = 4
"""Notes each client overwrites in turn (its own: the vault does not grow during the window)."""
MIX: dict[str, int] = {
    "read_note": 3,
    "write_note": 2,
    "search_notes": 3,
    "list_notes": 2,
    "search_documents": 2,
    "granola_meetings_list": 2,
    "granola_meetings_search": 2,
    "read_values": 2,
    "list_files": 2,
}
"""Each tool's weight in the mix."""
SAMPLE_EVERY = 5.0
TREND_EVERY = 60.0
"""Resident memory and descriptors are printed every this many seconds of the window."""
NAN = float("nan")  # a figure of a replica that has gone: never taken for a real one
QUIET = 8.0
"""Seconds without calls before the first and after the last measurement of the window: every
index writer held for writes is let go by then (deskmcp.core.search.textindex.IDLE_RELEASE), with its
memory."""


# -- the users' workspaces ------------------------------------------------------------------


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def workbook(folder: Path) -> Path:
    """The workbook every user gets a copy of (written once)."""
    rng = random.Random(7)
    rows: list[list[Any]] = [["Item", "Quarter", "Amount", "Owner"]]
    rows += [
        [f"{rng.choice(WORDS)} {i}", f"Q{i % 4 + 1}", rng.randrange(100, 9000), f"owner-{i % 7}"] for i in range(60)
    ]
    return make_xlsx(folder / "budget.xlsx", {"Budget": rows, "Notes": [["Checked", True]]})


def user_workspace(root: Path, issuer: str, subject: str, book: Path) -> Path:
    """`subject`'s workspace under the users root, with data in every default folder."""
    ws = root / Principal(issuer, subject).key
    rng = random.Random(subject)
    for i in range(NOTES):
        path = ws / "vault" / "notes" / f"note-{i:02d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        tags = ", ".join(rng.sample(WORDS, 2))
        body = "\n\n".join(sentence(rng, 40) for _ in range(4))
        path.write_text(f"---\ntags: [{tags}]\n---\n# Note {i} {rng.choice(WORDS)}\n\n{body}\n", encoding="utf-8")
    for i in range(DOCUMENTS):
        path = ws / "documents" / f"doc-{i:02d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# Document {i}\n\n" + "\n\n".join(sentence(rng, 80) for _ in range(6)), encoding="utf-8")
    documents = {}
    for i in range(MEETINGS):
        mid = f"m-{i:03d}"
        documents[mid] = {
            "id": mid,
            "type": "meeting",
            "title": f"{rng.choice(WORDS).title()} sync {i}",
            "created_at": f"2026-10-{i % 28 + 1:02d}T{9 + i % 8:02d}:00:00Z",
            "updated_at": f"2026-10-{i % 28 + 1:02d}T{10 + i % 8:02d}:00:00Z",
            "notes_markdown": "\n".join(f"- {sentence(rng, 12)}" for _ in range(8)),
            "people": {"attendees": [{"name": f"Person {j}", "email": f"p{j}@corp.test"} for j in range(3)]},
        }
    (ws / "granola").mkdir(parents=True, exist_ok=True)
    cache = {"cache": {"state": {"documents": documents}, "version": 4}}
    (ws / "granola" / "cache-v4.json").write_text(json.dumps(cache), encoding="utf-8")
    (ws / "sheets").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(book, ws / "sheets" / "budget.xlsx")
    for i in range(PROJECT_FILES):
        path = ws / "project" / f"pkg{i % 4}" / f"module_{i:02d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'"""{sentence(rng, 10)}."""\n\nVALUE = {i}\n', encoding="utf-8")
    return ws


# -- processes: memory, files, CPU ----------------------------------------------------------


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def rss_kinds_mb(pid: int) -> dict[str, float]:
    """The resident memory by kind (RssAnon, RssFile, RssShmem) in MiB, as `anon`, `file`, `shmem`."""
    return {name[3:].lower(): mb for name, mb in status_mb(pid, "RssAnon", "RssFile", "RssShmem").items()}


def open_fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


def fd_kinds(pid: int) -> Counter[str]:
    """What a process's open descriptors are: socket, pipe, anon_inode:..., or the file's folder."""
    kinds: Counter[str] = Counter()
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return kinds
    for name in names:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{name}")
        except OSError:
            continue
        if target.startswith("/"):
            parts = Path(target).parts
            target = "file " + (parts[-2] if len(parts) > 1 else target)
        else:
            target = target.split(":[")[0]
        kinds[target] += 1
    return kinds


def cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    except (OSError, ValueError, IndexError):
        return float("nan")


def machine_busy() -> tuple[float, float]:
    """(busy, total) CPU jiffies of the whole machine since boot (/proc/stat)."""
    values = [int(v) for v in Path("/proc/stat").read_text(encoding="utf-8").splitlines()[0].split()[1:]]
    idle = values[3] + values[4]
    return float(sum(values) - idle), float(sum(values))


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@dataclass
class Snapshot:
    rss: float
    fds: int
    cpu: float
    kinds: Counter[str]
    memory: dict[str, float] = field(default_factory=dict)

    @classmethod
    def of(cls, pid: int) -> Snapshot:
        return cls(rss_mb(pid, gone=NAN), open_fds(pid), cpu_seconds(pid), fd_kinds(pid), rss_kinds_mb(pid))


# -- the load -------------------------------------------------------------------------------


@dataclass
class Figures:
    latencies: dict[str, list[float]] = field(default_factory=dict)
    errors: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)
    server_log: dict[str, list[str]] = field(default_factory=dict)
    trend: list[tuple[float, dict[str, tuple[float, int]]]] = field(default_factory=list)
    in_window: int = 0
    """Clients whose session was still open when the window opened."""
    """Per replica: the tracebacks and warnings its log holds (the last lines of each)."""
    seconds: float = 0.0
    own_cpu: float = 0.0
    machine_share: float = float("nan")
    start: dict[str, Snapshot] = field(default_factory=dict)
    end: dict[str, Snapshot] = field(default_factory=dict)
    settled_start: dict[str, Snapshot] = field(default_factory=dict)
    settled_end: dict[str, Snapshot] = field(default_factory=dict)
    peak_rss: dict[str, float] = field(default_factory=dict)
    haproxy_cpu: float = float("nan")

    def record(self, tool: str, ms: float) -> None:
        self.latencies.setdefault(tool, []).append(ms)

    def error(self, tool: str, kind: str, text: str) -> None:
        self.errors[f"{tool}: {kind}"] += 1
        self.examples.setdefault(f"{tool}: {kind}", text[:300])

    @property
    def calls(self) -> int:
        return sum(len(v) for v in self.latencies.values())


def error_kind(result: Any) -> tuple[str, str]:
    """The `error` field of a tool's error answer (deskmcp's taxonomy), and its text."""
    text = " ".join(getattr(c, "text", "") for c in result.content)
    try:
        return str(json.loads(text).get("error", "unknown")), text
    except (ValueError, AttributeError):
        return "unparsed", text


@dataclass
class Plan:
    """One client: whose token, and the notes it writes."""

    token: str
    tag: str
    rng: random.Random
    spreadsheet: str = "budget.xlsx"
    written: int = 0

    def arguments(self, tool: str) -> dict[str, Any]:
        word = self.rng.choice(WORDS)
        if tool == "read_note":
            return {"path": f"notes/note-{self.rng.randrange(NOTES):02d}.md"}
        if tool == "write_note":
            self.written += 1
            body = f"# {self.tag} {self.written}\n\n{sentence(self.rng, 30)}\n"
            return {"path": f"load/{self.tag}-{self.written % OWN_NOTES}.md", "body": body, "overwrite": True}
        if tool == "search_notes":
            return {"query": f"{word} {self.rng.choice(WORDS)}"}
        if tool == "list_notes":
            return {"directory": "notes", "limit": 20}
        if tool == "search_documents":
            return {"query": word}
        if tool == "granola_meetings_list":
            return {"limit": 10}
        if tool == "granola_meetings_search":
            return {"q": word}
        if tool == "read_values":
            return {"spreadsheet_id": self.spreadsheet, "ranges": [f"Budget!A1:D{self.rng.randrange(5, 60)}"]}
        if tool == "list_files":
            return {"glob": "*.py"}
        raise ValueError(tool)


async def drive(
    url: str,
    plans: list[Plan],
    seconds: float,
    warmup: int,
    mode: str,
    replicas: dict[str, int],
    figures: Figures,
    ramp: float = 0.0,
) -> None:
    """Every client connects and warms up: `warmup` rounds of every tool, then `ramp` seconds of
    the window's mix, every client at once (not counted), so the pools and caches the load
    needs are open before the start is measured. The window opens when all are ready and closes
    after `seconds`; the replicas are measured at both ends, while every client is still connected."""
    tools = list(MIX)
    weights = [MIX[t] for t in tools]
    ready = anyio.Event()
    ramping = anyio.Event()
    ramped = anyio.Event()
    finished = anyio.Event()
    release = anyio.Event()
    go = anyio.Event()
    counts = {"ready": 0, "ramped": 0, "finished": 0}
    window = {"end": 0.0, "ramp_end": 0.0}

    async def client(plan: Plan) -> None:
        refused: list[str] = []

        async def seen(response: httpx2.Response) -> None:
            if response.status_code >= 400:  # what came back, for the error's kind
                body = (await response.aread()).decode("utf-8", "replace")
                refused.append(f"HTTP {response.status_code} from {response.headers.get('x-served-by', '?')}: {body}")

        async def call(tool: str, arguments: dict[str, Any], warming: bool) -> Any:
            refused.clear()
            try:
                result = await session.call_tool(tool, arguments)
            except Exception as exc:  # counted by kind; the loop goes on until the deadline
                http_status = refused[-1].split(" from ")[0] if refused else ""
                kind = f"{type(exc).__name__} {http_status}".strip()
                figures.error(f"{'warm-up ' if warming else ''}{tool}", kind, (refused or [repr(exc)])[-1])
                return None
            if result.is_error:
                figures.error(f"{'warm-up ' if warming else ''}{tool}", *error_kind(result))
            return result

        http = httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {plan.token}"}, timeout=60, event_hooks={"response": [seen]}
        )
        steps = {"ready": False, "ramped": False, "finished": False}

        def step(name: str, event: anyio.Event) -> None:
            if not steps[name]:
                steps[name] = True
                counts[name] += 1
                if counts[name] == len(plans):
                    event.set()

        try:
            async with http, Client(streamable_http_client(url, http_client=http), mode=mode) as session:  # type: ignore[arg-type]
                listed = await call("list_spreadsheets", {}, True)
                if listed is not None and not listed.is_error:
                    plan.spreadsheet = str(listed.structured_content["spreadsheets"][0]["id"])
                for _ in range(warmup):
                    for tool in tools:
                        await call(tool, plan.arguments(tool), True)
                step("ready", ready)
                await ramping.wait()
                while time.monotonic() < window["ramp_end"]:
                    tool = plan.rng.choices(tools, weights)[0]
                    await call(tool, plan.arguments(tool), True)
                step("ramped", ramped)
                await go.wait()
                figures.in_window += 1
                while time.monotonic() < window["end"]:
                    tool = plan.rng.choices(tools, weights)[0]
                    began = time.perf_counter()
                    await call(tool, plan.arguments(tool), False)
                    figures.record(tool, (time.perf_counter() - began) * 1000)
                step("finished", finished)
                await release.wait()
        except Exception as exc:  # a session that could not open or broke: counted, the others go on
            where = "session" if steps["ready"] else "warm-up session"
            figures.error(where, type(exc).__name__, (refused or [repr(exc)])[-1])
        finally:
            step("ready", ready)
            step("ramped", ramped)
            step("finished", finished)

    async def sample() -> None:
        began = time.monotonic()
        last = -TREND_EVERY
        while not finished.is_set():
            for name, pid in replicas.items():
                figures.peak_rss[name] = max(figures.peak_rss.get(name, 0.0), rss_mb(pid, gone=NAN))
            if time.monotonic() - began - last >= TREND_EVERY:
                last = time.monotonic() - began
                figures.trend.append(
                    (last, {name: (rss_mb(pid, gone=NAN), open_fds(pid)) for name, pid in replicas.items()})
                )
            with anyio.move_on_after(SAMPLE_EVERY):
                await finished.wait()

    # Generous bounds: warm-up of every client (first indexes included) and the last calls.
    with anyio.fail_after(seconds + ramp + 600):
        async with anyio.create_task_group() as tg:
            for plan in plans:
                tg.start_soon(client, plan)
            with anyio.fail_after(540):
                await ready.wait()
            window["ramp_end"] = time.monotonic() + ramp
            ramping.set()
            with anyio.fail_after(ramp + 120):
                await ramped.wait()
            await anyio.sleep(QUIET)
            figures.settled_start = {name: Snapshot.of(pid) for name, pid in replicas.items()}
            figures.start = figures.settled_start
            began, cpu, busy = time.monotonic(), own_cpu(), machine_busy()
            window["end"] = began + seconds
            go.set()
            tg.start_soon(sample)
            await finished.wait()
            figures.seconds = time.monotonic() - began
            figures.own_cpu = own_cpu() - cpu
            after = machine_busy()
            total = after[1] - busy[1]
            figures.machine_share = (after[0] - busy[0]) / total if total else float("nan")
            figures.end = {name: Snapshot.of(pid) for name, pid in replicas.items()}
            await anyio.sleep(QUIET)
            figures.settled_end = {name: Snapshot.of(pid) for name, pid in replicas.items()}
            release.set()


# -- one phase: replicas, haproxy, clients --------------------------------------------------


@dataclass
class Deployment:
    root: Path
    users_root: Path
    issuer: AuthorizationServer
    database: str | None
    token_keys: str


def replica_env(deployment: Deployment, resource_url: str, live: int) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DESKMCP_", "VAULT_", "DOCUMENTS_", "MAIL_", "SHEETS_", "GRANOLA_", "PROJECT_"))
    }
    env.update(
        DESKMCP_WORKSPACE=str(deployment.root / "unused-workspace"),
        DESKMCP_USERS_ROOT=str(deployment.users_root),
        DESKMCP_USERS_LIVE=str(live),
        DESKMCP_AUTH_ISSUER=deployment.issuer.issuer,
        DESKMCP_AUTH_RESOURCE=resource_url,
        DESKMCP_STATE_KEYS=STATE_KEYS,
        DESKMCP_TOKEN_KEYS=deployment.token_keys,
    )
    # As docs/deployment.md and packaging/systemd set it: glibc's malloc keeps at most two arenas
    # (instead of eight per core) for the server's many worker threads.
    env.setdefault("MALLOC_ARENA_MAX", "2")
    if deployment.database:
        env["DESKMCP_DATABASE_URL"] = deployment.database
    return env


def token_for(deployment: Deployment, resource_url: str, subject: str, lifetime: float) -> str:
    claims = deployment.issuer.claims(resource_url, sub=subject, scope="read write", exp=int(time.time() + lifetime))
    return deployment.issuer.sign(claims)


def run_phase(
    deployment: Deployment, subjects: list[str], args: argparse.Namespace, label: str
) -> tuple[Figures, dict[str, int]]:
    """Fresh replicas and haproxy, one client per entry of `subjects` (a subject may repeat)."""
    lb_port = free_port()
    resource_url = f"http://127.0.0.1:{lb_port}/mcp"
    live = max(16, len(set(subjects)))
    env = replica_env(deployment, resource_url, live)
    ports = {f"r{i + 1}": free_port() for i in range(args.replicas)}
    lifetime = args.minutes * 60 + 1800
    plans = [
        Plan(token_for(deployment, resource_url, subject, lifetime), f"{label}-{i:03d}", random.Random(f"{label}{i}"))
        for i, subject in enumerate(subjects)
    ]
    figures = Figures()
    with ExitStack() as stack:
        replicas: dict[str, Replica] = {}
        for name, port in ports.items():
            command = ["serve", "all", "--http", "--stateless", "--port", str(port), "--trusted-proxy", "127.0.0.1"]
            replicas[name] = Replica(command, env)
            stack.callback(replicas[name].stop)
        pids = {name: r.proc.pid for name, r in replicas.items()}
        with balancer(deployment.root, lb_port, ports) as base:
            haproxy = haproxy_pid(lb_port)
            cpu = cpu_seconds(haproxy) if haproxy else float("nan")
            anyio.run(drive, base + "/mcp", plans, args.minutes * 60, args.warmup, args.mode, pids, figures, args.ramp)
            figures.haproxy_cpu = (cpu_seconds(haproxy) - cpu) if haproxy else float("nan")
        for name, replica in replicas.items():
            if replica.proc.poll() is not None:
                figures.error("replica", "exited", f"{name} exited with {replica.proc.returncode}")
            figures.server_log[name] = failures(replica.lines)
            if args.logs is not None:
                args.logs.mkdir(parents=True, exist_ok=True)
                (args.logs / f"{label}-{name}.log").write_text("".join(replica.lines), encoding="utf-8")
    return figures, {"users": len(set(subjects)), "clients": len(subjects), "live": live}


def failures(lines: list[str]) -> list[str]:
    """What went wrong in a replica's log: each traceback's last line, and each warning or error
    line, counted once each."""
    found: Counter[str] = Counter()
    inside = False
    for line in lines:
        if line.startswith("Traceback"):
            inside = True
        elif inside and line.strip() and not line.startswith((" ", "\t")):
            inside = line.startswith("During handling") or line.startswith("The above exception")
            if not inside:
                found[f"traceback: {line.strip()[:300]}"] += 1
        elif " WARNING " in line or " ERROR " in line or line.startswith(("WARNING", "ERROR")):
            found[line.strip()[:300]] += 1
    return [f"{n} x {text}" for text, n in found.most_common(8) if n]


def haproxy_pid(port: int) -> int | None:
    """The haproxy process listening on `port` (its command line names the configuration)."""
    out = subprocess.run(["ss", "-Hltnp", f"sport = :{port}"], capture_output=True, text=True, check=False).stdout
    for part in out.split("pid=")[1:]:
        digits = part.split(",")[0]
        if digits.isdigit():
            return int(digits)
    return None


# -- output ---------------------------------------------------------------------------------


def report(title: str, figures: Figures, shape: dict[str, int], args: argparse.Namespace) -> None:
    print(
        f"\n== {title}: {shape['clients']} MCP clients of {shape['users']} user(s), {args.replicas} replicas, "
        f"{figures.seconds:.0f} s (DESKMCP_USERS_LIVE={shape['live']}, mode {args.mode})"
    )
    every = [ms for values in figures.latencies.values() for ms in values]
    errors = sum(n for kind, n in figures.errors.items() if not kind.startswith("warm-up "))
    rate = figures.calls / figures.seconds if figures.seconds else 0.0
    warming = sum(figures.errors.values()) - errors
    print(
        f"{figures.in_window} of {shape['clients']} clients in the window; calls {figures.calls}, {rate:.1f} calls/s, "
        f"errors {errors} (and {warming} during the warm-up)"
    )
    print(f"{'tool':<26} {'calls':>7} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}")
    for tool in sorted(figures.latencies):
        values = figures.latencies[tool]
        print(
            f"{tool:<26} {len(values):>7} {percentile(values, 50):>8.1f} {percentile(values, 95):>8.1f} "
            f"{percentile(values, 99):>8.1f}"
        )
    print(
        f"{'overall':<26} {len(every):>7} {percentile(every, 50):>8.1f} {percentile(every, 95):>8.1f} "
        f"{percentile(every, 99):>8.1f}"
    )
    for kind, count in figures.errors.most_common():
        print(f"error {count:>6} x {kind}   e.g. {figures.examples[kind]}")
    for name, lines in figures.server_log.items():
        for line in lines:
            print(f"{name} log: {line}")
    print(
        f"memory and descriptors: at the start (after warm-up, ramp and {QUIET:g} s without calls), when the window "
        f"closed, and {QUIET:g} s after it; growth = end / start"
    )
    print(
        f"{'replica':<8} {'RSS start':>10} {'at close':>9} {'RSS end':>9} {'growth':>7} {'peak':>8} "
        f"{'fds start':>10} {'at close':>9} {'fds end':>8} {'CPU s':>7}"
    )
    for name, start in figures.start.items():
        close, end = figures.end[name], figures.settled_end[name]
        growth = (end.rss - start.rss) / start.rss * 100 if start.rss else float("nan")
        print(
            f"{name:<8} {start.rss:>8.1f}MB {close.rss:>7.1f}MB {end.rss:>7.1f}MB {growth:>6.1f}% "
            f"{figures.peak_rss.get(name, 0):>6.1f}MB {start.fds:>10} {close.fds:>9} {end.fds:>8} "
            f"{close.cpu - start.cpu:>7.1f}"
        )
        print(
            "         resident by kind, start -> end: "
            + ", ".join(f"{k} {start.memory.get(k, 0):.1f} -> {v:.1f} MB" for k, v in end.memory.items())
        )
        if end.kinds != start.kinds:
            changed = {
                k: end.kinds[k] - start.kinds[k] for k in end.kinds | start.kinds if end.kinds[k] != start.kinds[k]
            }
            print(f"         descriptors that changed, by kind: {changed}")
    for at, each in figures.trend:
        shown = "  ".join(f"{name} {rss:.0f} MB {fds} fds" for name, (rss, fds) in each.items())
        print(f"  at {at / 60:4.1f} min: {shown}")
    cores = os.cpu_count() or 1
    share = figures.own_cpu / figures.seconds * 100 if figures.seconds else float("nan")
    print(
        f"load generator CPU: {figures.own_cpu:.1f} s = {share:.0f} % of one core ({share / cores:.0f} % of the "
        f"{cores} cores); haproxy CPU {figures.haproxy_cpu:.1f} s; "
        f"the whole machine busy {figures.machine_share * 100:.0f} %"
    )


def interrupted(_signum: int, _frame: object) -> None:
    """Ctrl-C or a kill: unwind once, stopping every process started here; a second signal
    during that is ignored rather than cutting the clean-up short."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise KeyboardInterrupt


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="length of each phase's window")
    parser.add_argument("--users", type=int, default=50, help="phase 1: users, one client each (0 skips)")
    parser.add_argument("--sessions", type=int, default=50, help="phase 2: clients of one user (0 skips)")
    parser.add_argument("--sessions-minutes", type=float, default=None, help="phase 2's window (default --minutes)")
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=2, help="rounds of every tool per client before the window")
    parser.add_argument(
        "--ramp",
        type=float,
        default=60.0,
        help="seconds of the window's mix, every client at once, after the warm-up and before the start is measured",
    )
    parser.add_argument("--mode", default="2026-07-28", help="MCP client mode: 2026-07-28 or legacy")
    parser.add_argument("--logs", type=Path, default=None, help="folder to write each replica's log into")
    parser.add_argument("--no-postgres", action="store_true", help="leave PostgreSQL out even when installed")
    args = parser.parse_args()
    if haproxy_binary() is None:
        sys.exit("bench/load.py needs haproxy (apt-get install haproxy)")
    if (reason := provider_missing()) is not None:
        sys.exit(f"bench/load.py needs oidc-provider: {reason}")
    # Ctrl-C and a plain kill both unwind the stack below, which stops every process started here.
    signal.signal(signal.SIGTERM, interrupted)
    signal.signal(signal.SIGINT, interrupted)

    root = Path(tempfile.mkdtemp(prefix="deskmcp-bench-load-"))
    try:
        with ExitStack() as stack:
            issuer = stack.enter_context(authorization_server(root / "oidc"))
            database = None
            if postgres_bin() is not None and not args.no_postgres:
                database = fresh_database(stack.enter_context(postgres_cluster()))
            token_keys = "bench:" + base64.b64encode(os.urandom(32)).decode()
            deployment = Deployment(root, root / "users", issuer, database, token_keys)
            book = workbook(root / "template")
            subjects = [f"user-{i:03d}" for i in range(args.users)]
            for subject in [*subjects, "solo"]:
                user_workspace(deployment.users_root, issuer.issuer, subject, book)
            print(
                f"{os.cpu_count()} CPUs, load average before: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} "
                f"{os.getloadavg()[2]:.2f}; PostgreSQL: {'yes' if database else 'no'}"
            )
            if args.users:
                figures, shape = run_phase(deployment, subjects, args, "u")
                report(f"{args.users} users", figures, shape, args)
            if args.sessions:
                if args.sessions_minutes is not None:
                    args.minutes = args.sessions_minutes
                figures, shape = run_phase(deployment, ["solo"] * args.sessions, args, "s")
                report(f"one user, {args.sessions} sessions", figures, shape, args)
            load = os.getloadavg()
            print(f"\nload average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
