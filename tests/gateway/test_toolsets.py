"""Toolsets across the composed servers: the default list fits the token budget and keeps every
specified tool; configuration and the CLI choose what a client sees; describing writes nothing."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest
from typer.testing import CliRunner

from deskmcp.cli import app
from deskmcp.gateway import compose
from deskmcp.servers import SERVERS
from deskmcp.toolcost import TOKEN_BUDGET, Cost

runner = CliRunner()

SPECIFIED_TOOLS = {
    "meetings": {
        "granola.meetings.list",
        "granola.meetings.get",
        "granola.meetings.search",
        "granola.meetings.export_markdown",
        "granola.meetings.stats",
        "granola.cache.status",
    },
    "vault": {"read_note", "write_note", "list_notes", "move_note", "search_notes"},
    "documents": {"index_document", "create_note", "search_documents", "extract_metadata"},
    "mail": {"list_emails", "get_email", "send_email", "move_email", "add_label"},
    "diagrams": {"list_files", "read_file", "render_mermaid"},
    "sheets": {"create_spreadsheet", "read_values", "update_values", "append_rows"},
}


@dataclass
class Stats:
    """One run of `deskmcp tools --stats` in an empty home: its answer, and the home's files before and after."""

    exit_code: int
    output: str
    home: Path
    before: list[Path]
    after: list[Path]

    def row(self, servers: str, toolsets: str) -> Cost:
        for line in self.output.splitlines()[1:-1]:
            r = line.split()
            if (r[0], r[1]) == (servers, toolsets):
                return Cost(r[0], r[1], int(r[2]), int(r[3]), int(r[5]), int(r[6]), int(r[7]))
        raise AssertionError(f"no row {servers} {toolsets} in:\n{self.output}")


@pytest.fixture(scope="module")
def stats(tmp_path_factory: pytest.TempPathFactory) -> Stats:
    """`deskmcp tools --stats` composes every server sixteen times: run once for the module, in a home
    of its own (the settings of whoever runs the tests kept out, as for every test)."""
    root = tmp_path_factory.mktemp("stats")
    home = root / "home"
    with pytest.MonkeyPatch.context() as mp:
        for name in ("DESKMCP_WORKSPACE", "DESKMCP_INDEX_DIR", "GRANOLA_CACHE_PATH", "VAULT_PATH", "DOCUMENTS_PATH"):
            mp.delenv(name, raising=False)
        mp.delenv("DESKMCP_TOOLSETS", raising=False)
        mp.setenv("HOME", str(home))
        mp.setenv("XDG_CONFIG_HOME", str(home / ".config"))
        mp.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
        mp.setenv("DESKMCP_TIMEZONE", "UTC")
        before = sorted(root.rglob("*"))
        result = runner.invoke(app, ["tools", "--stats"])
        run = Stats(result.exit_code, result.stdout, home, before, sorted(root.rglob("*")))
    return run


def listed_names(**kwargs: object) -> set[str]:
    server = compose(keep_unavailable=True, **kwargs).server  # type: ignore[arg-type]
    return {t.name for t in anyio.run(server.list_tools)}


def test_default_toolsets_hold_every_specified_tool(workspace: Path) -> None:
    names = listed_names()

    for server, tools in SPECIFIED_TOOLS.items():
        if server in SERVERS:
            published = {tool.replace(".", "_") for tool in tools}  # DESKMCP_TOOL_NAMES=safe, the default
            assert published <= names, f"{server}: {sorted(published - names)} missing from the default toolsets"


def test_serve_all_with_default_toolsets_fits_the_token_budget(stats: Stats) -> None:
    # the table `deskmcp tools --stats` prints from toolcost.measure
    everything, every_tool = stats.row("all", "configured"), stats.row("all", "all")

    assert everything.tokens < TOKEN_BUDGET, everything
    assert everything.tools < every_tool.tools
    assert everything.output_schema_chars == 0


def test_every_tool_belongs_to_a_declared_toolset(workspace: Path) -> None:
    server = compose(keep_unavailable=True, toolsets="all").server
    tools = anyio.run(server.list_tools)

    assert {server.tool_toolsets[t.name] for t in tools} <= set(server.toolsets)
    assert len(tools) == len(server.tool_toolsets)


def test_toolsets_setting_and_option_choose_the_listed_tools(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DESKMCP_TOOLSETS", "vault.browse")
    assert listed_names() == {
        "recent_notes",
        "list_note_tags",
        "get_links",
        "get_backlinks",
        "related_notes",
        "vault_status",
    }

    result = runner.invoke(app, ["tools", "--toolsets", "meetings,-meetings.more"])
    assert result.exit_code == 0, result.output
    assert {line.split()[0] for line in result.stdout.splitlines()} == {
        tool.replace(".", "_") for tool in SPECIFIED_TOOLS["meetings"]
    }
    assert all(line.split()[1] == "meetings.read" for line in result.stdout.splitlines())


def test_an_unknown_toolset_is_one_clear_line_and_exit_code_2(workspace: Path) -> None:
    result = runner.invoke(app, ["tools", "--toolsets", "vault.everything"])

    assert result.exit_code == 2
    assert "Unknown toolset 'vault.everything'" in result.output
    assert "Traceback" not in result.output


def test_call_reaches_a_tool_outside_the_default_toolsets(workspace: Path) -> None:
    result = runner.invoke(app, ["call", "granola.folders.list"])

    assert result.exit_code == 0, result.output
    assert "folders" in json.loads(result.stdout)


def test_tools_stats_prints_the_cost_table(stats: Stats) -> None:
    assert stats.exit_code == 0, stats.output
    rows = [line.split() for line in stats.output.splitlines()[1:-1]]
    assert {(r[0], r[1]) for r in rows} >= {("all", "configured"), ("all", "all"), ("vault", "all")}
    assert all(int(r[4]) > 0 for r in rows)


def test_describing_tools_writes_nothing_in_the_data_folder(tmp_path: Path, stats: Stats) -> None:
    data = tmp_path / "home" / ".local" / "share"
    before = sorted(p for p in tmp_path.rglob("*"))

    for command in (["tools"], ["tools", "--json"]):
        result = runner.invoke(app, command)
        assert result.exit_code == 0, result.output

    assert sorted(p for p in tmp_path.rglob("*")) == before
    assert not (data / "deskmcp").exists()
    # `tools --stats`, run once for the module in a home of its own, wrote nothing there either
    assert stats.exit_code == 0, stats.output
    assert stats.after == stats.before
    assert not (stats.home / ".local" / "share" / "deskmcp").exists()
