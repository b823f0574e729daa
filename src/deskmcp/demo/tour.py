"""`deskmcp demo`: generate a demo workspace, then tour each server through a real MCP client.

Every server is started the way an MCP client starts it (`deskmcp serve NAME` over stdio)
and driven with the SDK's client, so what the tour shows is what a client gets.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import random
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit
from urllib.request import url2pathname

import anyio
from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from deskmcp.core.config import default_workspace
from deskmcp.core.settings import environment, variable
from deskmcp.servers import SERVERS

DATA_FOLDERS = {
    "meetings": "granola",
    "vault": "vault",
    "documents": "documents",
    "orchestrator": "triage",
    "diagrams": "project",
}
MAX_ROWS = 5
MAX_TABLE_ROWS = 10
"""Rows of a cell range shown (a range is read to be seen whole)."""


@dataclass
class DemoServer:
    name: str
    module: ModuleType

    @property
    def folder(self) -> str:
        return DATA_FOLDERS.get(self.name, self.name)

    def environment(self, workspace: Path) -> dict[str, str]:
        env = getattr(self.module, "environment", None)
        return env(workspace) if env else {}


def demo_servers() -> list[DemoServer]:
    found = []
    for name in SERVERS:
        try:
            module = importlib.import_module(f"deskmcp.demo.{name}")
        except ModuleNotFoundError:
            continue
        if hasattr(module, "generate") and hasattr(module, "STEPS"):
            found.append(DemoServer(name, module))
    return found


def demo_workspace() -> Path:
    return default_workspace() / "demo"


def generate(workspace: Path, servers: list[DemoServer], console: Console, *, meetings: int, fresh: bool) -> None:
    rng = random.Random(2026)
    for server in servers:
        root = workspace / server.folder
        if root.exists() and any(root.iterdir()) and not fresh:
            console.print(f"  [dim]{server.name}: using existing data in {root}[/dim]")
            continue
        started = time.perf_counter()
        with console.status(f"Generating {server.name} data in {root}…"):
            root.mkdir(parents=True, exist_ok=True)
            if server.name == "meetings":
                server.module.generate(root, rng, count=meetings)
            else:
                server.module.generate(root, rng)
        console.print(f"  [green]✓[/green] {server.name}: generated in {time.perf_counter() - started:.1f}s → {root}")


class NothingToUse(Exception):
    """A step names a part of the previous answer that is not there (a search that found nothing
    in a small demo, or a previous step that was skipped)."""

    def __init__(self, reference: str) -> None:
        super().__init__(reference)
        self.reference = reference


def resolve(value: Any, last: Any) -> Any:
    """Replace "$last.a.0.b" with that path in the previous step's result; `NothingToUse` when
    the result has no such path."""
    if isinstance(value, str) and value.startswith("$last."):
        current = last
        try:
            for part in value.removeprefix("$last.").split("."):
                current = current[int(part)] if isinstance(current, list) else current[part]
        except (LookupError, TypeError, ValueError):
            raise NothingToUse(value) from None
        return current
    if isinstance(value, dict):
        return {k: resolve(v, last) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, last) for v in value]
    return value


def result_panel(result: dict[str, Any], title: str) -> Panel:
    """A step's answer, framed."""
    return Panel(render(result), title=title, border_style="green", expand=False)


def render(result: dict[str, Any]) -> RenderableType:
    """A compact view of a structured result: its main list as a table, else trimmed JSON.

    The other fields are a line of text under the table (a table's caption would be wrapped at
    the table's width, breaking words); cell ranges (spreadsheet values, or rows keyed by a header
    row) are tables of their own."""
    rows_key = next((k for k, v in result.items() if isinstance(v, list) and v and isinstance(v[0], dict)), None)
    if rows_key is None:
        text = json.dumps(result, indent=2, ensure_ascii=False)
        lines = text.splitlines()
        return "\n".join(lines[:18] + (["  …"] if len(lines) > 18 else []))
    rows = result[rows_key]
    others = {k: v for k, v in result.items() if k != rows_key and not isinstance(v, list | dict) and v is not None}
    summary = ", ".join(f"{k}={v}" for k, v in others.items())
    if any(_cells(row) is not None for row in rows):
        parts: list[RenderableType] = [_range_table(row) for row in rows[:MAX_ROWS]]
        return Group(*parts, Text(summary, style="dim")) if summary else Group(*parts)
    columns = [c for c in PREFERRED_COLUMNS if c in rows[0]][:5] or list(rows[0])[:5]
    table = Table(show_header=True, header_style="bold", expand=False)
    for column in columns:
        table.add_column(column, overflow="fold", max_width=60)
    for row in rows[:MAX_ROWS]:
        table.add_row(*[_cell(row.get(c)) for c in columns])
    extra = f"{len(rows)} {rows_key}" + (f" (showing {MAX_ROWS})" if len(rows) > MAX_ROWS else "")
    if summary:
        extra += " · " + summary
    return Group(table, Text(extra, style="dim"))


PREFERRED_COLUMNS = [
    "title",
    "name",
    "path",
    "key",
    "subject",
    "sender",
    "start_ts",
    "start",
    "speaker",
    "text",
    "count",
    "minutes",
    "meeting_count",
    "score",
    "snippet",
    "tags",
    "participants",
]


def _cells(item: dict[str, Any]) -> list[list[Any]] | list[dict[str, Any]] | None:
    """The cells an item holds: rows of values (a list of lists) or rows keyed by a header row."""
    for key in ("rows", "values"):
        value = item.get(key)
        if isinstance(value, list) and value and all(isinstance(r, list | dict) for r in value):
            return value
    return None


def _range_table(item: dict[str, Any]) -> RenderableType:
    """One range of cells: its address, then its cells as a table; rows keyed by a header row keep
    the header as column names."""
    cells = _cells(item) or []
    shown = cells[:MAX_TABLE_ROWS]
    keyed = bool(shown) and isinstance(shown[0], dict)
    table = Table(show_header=keyed, header_style="bold", expand=False)
    if keyed:
        columns = list(dict.fromkeys(k for row in shown if isinstance(row, dict) for k in row))
        for column in columns:
            table.add_column(column, overflow="fold")
        for row in shown:
            if isinstance(row, dict):
                table.add_row(*[_cell(row.get(c)) for c in columns])
    else:
        width = max((len(row) for row in shown if isinstance(row, list)), default=0)
        for _ in range(width):
            table.add_column(overflow="fold")
        for row in shown:
            if isinstance(row, list):
                table.add_row(*[_cell(v) for v in row] + [""] * (width - len(row)))
    notes = [f"{len(cells)} rows (showing {len(shown)})"] if len(cells) > len(shown) else []
    notes += [f"{k}: {_cell(v)}" for k, v in item.items() if k not in ("range", "rows", "values") and v]
    # The address and notes as lines of their own: a table's title or caption wraps at its width.
    parts: list[RenderableType] = [Text(str(item.get("range", "")), style="bold"), table]
    if notes:
        parts.append(Text("; ".join(notes), style="dim"))
    return Group(*parts)


def _cell(value: Any) -> str:
    if isinstance(value, dict):
        value = ", ".join(f"{k}: {_cell(v)}" for k, v in value.items())
    if isinstance(value, list):
        value = ", ".join(_cell(v) for v in value[:4]) + (" …" if len(value) > 4 else "")
    text = "" if value is None else str(value)
    text = text.replace("\n", " ")
    return text if len(text) <= 120 else text[:117] + "…"


async def tour_server(server: DemoServer, workspace: Path, console: Console) -> int:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    env = environment()
    # Every toolset, so the tour can show the tools a default client does not list.
    env.update({"DESKMCP_WORKSPACE": str(workspace), "DESKMCP_TOOLSETS": "all", **server.environment(workspace)})
    params = StdioServerParameters(command=sys.executable, args=["-m", "deskmcp.cli", "serve", server.name], env=env)
    console.rule(f"[bold]deskmcp serve {server.name}[/bold]")
    failures = 0
    with console.status(f"Starting `deskmcp serve {server.name}` over stdio…"):
        started = time.perf_counter()
        client_cm = Client(params)
        client = await client_cm.__aenter__()
        tools = (await client.list_tools()).tools
    console.print(
        f"Connected in {time.perf_counter() - started:.1f}s · {len(tools)} tools: " + ", ".join(t.name for t in tools)
    )
    try:
        last: Any = None
        person_steps = getattr(server.module, "PERSON_STEPS", {})
        for caption, tool, arguments in server.module.STEPS:
            console.print(f"\n[bold cyan]›[/bold cyan] {escape(caption)}")
            try:
                args = resolve(arguments, last)
            except NothingToUse as exc:
                # Not a failure: with few generated items a search may find nothing to follow up.
                console.print(f"  [dim]skipped: the previous answer has no {escape(exc.reference)}[/dim]")
                last = None  # a step that follows up on this one is skipped too
                continue
            if tool in person_steps:  # what the person does themselves, not through a tool
                last = person_steps[tool](workspace, args)
                console.print(result_panel(last, "done by you, not the assistant"))
                continue
            console.print(f"  [dim]{tool} {json.dumps(args, ensure_ascii=False)}[/dim]")
            started = time.perf_counter()
            with console.status(f"Calling {tool}…"):
                result = await client.call_tool(tool, args)
            elapsed = (time.perf_counter() - started) * 1000
            if result.is_error:
                failures += 1
                text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
                console.print(Panel(text, title=f"{tool} failed", border_style="red"))
                continue
            last = result.structured_content or {}
            console.print(result_panel(last, f"{tool} · {elapsed:.0f} ms"))
    finally:
        await client_cm.__aexit__(None, None, None)
    return failures


def server_command() -> list[str]:
    """How a client starts deskmcp the way this one was started, every program by its full path
    (clients do not search the user's shell PATH):

    - run by uvx (an environment in uv's cache): uvx, `--from` the same source with the extras
      this environment has;
    - in a source checkout with uv: `uv run --no-dev` in the checkout (the dev group, pytest and
      the linters, is not installed for a client);
    - installed (`uv tool install`, pip, pipx): the `deskmcp` executable;
    - else this Python with `-m deskmcp`."""
    uvx = _uvx_command()
    if uvx is not None:
        return uvx
    project = Path(__file__).resolve().parents[3]
    uv = shutil.which("uv")
    if uv and (project / "pyproject.toml").is_file() and (project / "src" / "deskmcp").is_dir():
        return [str(Path(uv).absolute()), "run", "--no-dev", "--directory", str(project), "deskmcp"]
    launched = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if launched is not None and launched.stem == "deskmcp" and launched.is_file():
        return [str(launched.resolve())]
    found = shutil.which("deskmcp")
    if found:
        return [str(Path(found).resolve())]
    return [sys.executable, "-m", "deskmcp"]


def _uvx_command() -> list[str] | None:
    """`uvx --from SOURCE deskmcp` when this Python is an environment in uv's cache (where uvx
    makes them), else None. uv names itself to what it runs in the UV variable."""
    uv = variable("UV")
    if not uv or not Path(uv).is_file():
        return None
    cache = variable("UV_CACHE_DIR")
    if not cache:
        try:
            done = subprocess.run([uv, "cache", "dir"], capture_output=True, text=True, timeout=30, check=True)
        except (OSError, subprocess.SubprocessError):
            return None
        cache = done.stdout.strip()
    if not cache or not Path(sys.prefix).resolve().is_relative_to(Path(cache).resolve()):
        return None
    uvx = Path(uv).with_name("uvx")
    runner = [str(uvx)] if uvx.is_file() else [uv, "tool", "run"]
    return [*runner, "--from", uvx_source(), "deskmcp"]


def uvx_source() -> str:
    """What uvx installs: deskmcp from the file or address it came from (PEP 610's
    direct_url.json), else from the package index, with the extras installed here."""
    distribution = importlib.metadata.distribution("deskmcp")
    extras = installed_extras(distribution)
    name = f"deskmcp[{','.join(extras)}]" if extras else "deskmcp"
    direct = distribution.read_text("direct_url.json")
    url = str(json.loads(direct).get("url") or "") if direct else ""
    if url.startswith("file://") and not extras:
        return url2pathname(urlsplit(url).path)
    return f"{name} @ {url}" if url else name


def installed_extras(distribution: importlib.metadata.Distribution) -> list[str]:
    """The extras of deskmcp whose every requirement is installed in this environment."""
    found = []
    for extra in distribution.metadata.get_all("Provides-Extra") or []:
        marker = re.compile(rf"""extra\s*==\s*['"]{re.escape(extra)}['"]""")
        names = [
            re.match(r"[A-Za-z0-9_.-]+", requirement).group(0)  # type: ignore[union-attr]
            for requirement in distribution.requires or []
            if marker.search(requirement)
        ]
        if names and all(_installed(name) for name in names):
            found.append(extra)
    return found


def _installed(name: str) -> bool:
    try:
        importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


@dataclass
class ConfigEntry:
    """One `mcpServers` entry: the servers one process runs, with the environment they share."""

    servers: list[str]
    env: dict[str, str]


def config_entries(workspace: Path, servers: list[DemoServer]) -> list[ConfigEntry]:
    """The demo's servers grouped into processes so each sees the data its tour used.

    One process reads one environment, and two servers may want one variable set differently
    (the triage uses its own small vault and mailbox through VAULT_PATH and MAIL_MAILDIR, the
    vault and mail tours the big ones): a server whose variables clash goes to another entry.
    """
    entries: list[ConfigEntry] = []
    for server in servers:
        wanted = server.environment(workspace)
        for entry in entries:
            if all(entry.env.get(key, value) == value for key, value in wanted.items()):
                entry.servers.append(server.name)
                entry.env.update(wanted)
                break
        else:
            entries.append(ConfigEntry([server.name], dict(wanted)))
    return entries


def _serve_args(names: list[str], every: list[str]) -> list[str]:
    if len(names) == 1:
        return ["serve", names[0]]
    left_out = [n for n in every if n not in names]
    return ["serve", "all", *(["--exclude", ",".join(left_out)] if left_out else [])]


def client_config(workspace: Path, servers: list[DemoServer], command: list[str] | None = None) -> str:
    """The `mcpServers` configuration that serves the demo data exactly as the tour showed it."""
    base = command or server_command()
    every = list(SERVERS)
    config: dict[str, Any] = {"mcpServers": {}}
    for n, entry in enumerate(config_entries(workspace, servers)):
        key = "deskmcp" if n == 0 else f"deskmcp-{'-'.join(entry.servers)}"
        env = {"DESKMCP_WORKSPACE": str(workspace), **entry.env}
        config["mcpServers"][key] = {
            "command": base[0],
            "args": [*base[1:], *_serve_args(entry.servers, every)],
            "env": env,
        }
    return json.dumps(config, indent=2, ensure_ascii=False)


def show_client_config(console: Console, workspace: Path, servers: list[DemoServer]) -> None:
    console.print(
        "To explore the demo data from your MCP client, paste this into its configuration (Claude "
        "Desktop: claude_desktop_config.json; Cursor: .cursor/mcp.json). The first entry runs the "
        "servers in one process; the triage gets its own, since its small mailbox and vault are not "
        "the ones the mail and vault tours used. `serve NAME` runs one server alone:"
    )
    # Written as it is: rich would fold a long path inside a JSON string at the terminal's width.
    console.out(client_config(workspace, servers), highlight=False)


def run_tour(workspace: Path | None, *, meetings: int = 300, fresh: bool = False) -> None:
    console = Console(stderr=False)
    workspace = (workspace or demo_workspace()).expanduser().resolve()
    servers = demo_servers()
    console.print(
        Panel.fit(
            "deskmcp gives an AI assistant safe, fast access to your own material through MCP.\n"
            f"This tour generates a demo workspace in [bold]{workspace}[/bold]\n"
            "and drives each server through a real MCP client, as Claude or Cursor would.",
            title="deskmcp demo",
        )
    )
    generate(workspace, servers, console, meetings=meetings, fresh=fresh)
    failures = 0
    for server in servers:
        failures += anyio.run(tour_server, server, workspace, console)
    console.rule("[bold]Use deskmcp for real[/bold]")
    show_client_config(console, workspace, servers)
    console.print(
        '\nFor your own data, remove the other variables from "env": the servers then use your data '
        "folder and Granola's own cache (a current Granola keeps it encrypted: add GRANOLA_API_KEY, or "
        "run `deskmcp auth granola`; see Connect Granola in the README); add VAULT_PATH with your notes folder.",
        markup=False,
        highlight=False,
    )
    if failures:
        console.print(f"[red]{failures} demo step(s) failed.[/red]")
        raise SystemExit(1)
