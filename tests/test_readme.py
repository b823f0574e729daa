"""The README tells the truth about what the code offers: its toolsets table, its configuration
table and its demo section are checked against the code."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer

from deskmcp.cli import app
from deskmcp.gateway import compose
from deskmcp.orchestrator.settings import OrchestratorSettings

README = Path(__file__).resolve().parents[1] / "README.md"


def section(title: str) -> str:
    """The text of the README section `## title`, up to the next one."""
    text = README.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def table_rows(text: str) -> dict[str, str]:
    """First cell (without backticks) -> the whole row, for every row of the tables in `text`."""
    rows: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("| `"):
            rows[line.split("|")[1].strip().strip("`")] = line
    return rows


def test_readme_toolsets_table_lists_every_toolset_with_its_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DESKMCP_WORKSPACE", str(tmp_path))
    server = compose(keep_unavailable=True, toolsets="all").server
    rows = table_rows(section("Toolsets: what the model sees"))
    for tool, toolset in server.tool_toolsets.items():
        if "." not in toolset:  # the always-on core tools (list_toolsets, ...)
            continue
        assert toolset in rows, f"toolset {toolset} is missing from the README's toolsets table"
        short = tool.rsplit(".", 1)[-1]
        assert f"`{tool}`" in rows[toolset] or f"`.{short}`" in rows[toolset], (toolset, tool)


def test_readme_configuration_table_names_the_orchestrator_settings() -> None:
    configuration = section("Configuration")
    for name in ("ORCHESTRATOR_BATCH", "ORCHESTRATOR_QUERY", "ORCHESTRATOR_DECIDER"):
        assert f"`{name}`" in configuration, name
    assert "`25`" in table_rows(configuration).get("ORCHESTRATOR_BATCH", "")
    assert OrchestratorSettings.model_fields["batch"].default == 25


def test_readme_quick_start_names_every_demo_option() -> None:
    quick_start = section("Quick start")
    demo = typer.main.get_command(app).commands["demo"]  # type: ignore[attr-defined]
    options = [name for param in demo.params for name in param.opts if name.startswith("--")]
    assert options
    for option in options:
        assert option in quick_start, option
