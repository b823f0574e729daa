"""`deskmcp tools`, `deskmcp call` and `deskmcp serve` selection, through typer's CliRunner."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import anyio
import pytest
from tests.helpers.files import write
from typer.testing import CliRunner

from deskmcp.cli import app
from deskmcp.cli.tools import one_line, parse_assignments
from deskmcp.core.errors import BadRequest
from deskmcp.gateway import compose

runner = CliRunner()


def test_tools_prints_every_tool_with_a_one_line_description(workspace: Path) -> None:
    result = runner.invoke(app, ["tools"])

    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    expected = {t.name for t in anyio.run(compose().server.list_tools)}
    assert {line.split()[0] for line in lines} == expected
    assert len(lines) == len(expected)
    search = next(line for line in lines if line.startswith("granola_meetings_search "))
    assert "Search titles, notes, attendees" in search


def test_tools_json_gives_the_schemas_and_annotations(workspace: Path) -> None:
    result = runner.invoke(app, ["tools", "--json"])

    assert result.exit_code == 0, result.output
    tools = json.loads(result.stdout)
    by_name = {t["name"]: t for t in tools}
    assert by_name["granola_meetings_get"]["inputSchema"]["required"] == ["id"]
    assert by_name["granola_meetings_get"]["annotations"]["readOnlyHint"] is True
    assert "outputSchema" in by_name["granola_meetings_get"]


def test_tools_lists_an_unconfigured_server_too(empty_workspace: Path) -> None:
    result = runner.invoke(app, ["tools"])

    assert result.exit_code == 0, result.output
    assert "granola_cache_status" in result.stdout


def test_call_prints_the_structured_result_as_json(workspace: Path) -> None:
    result = runner.invoke(app, ["call", "granola.meetings.search", "q=hiring", "limit=5"])

    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert [hit["id"] for hit in payload["items"]] == ["m-hiring"]


def test_call_reports_a_tool_error_as_json_on_stderr_with_exit_code_1(workspace: Path) -> None:
    result = runner.invoke(app, ["call", "granola.meetings.get", "id=m-nope"])

    assert result.exit_code == 1
    assert result.stdout == ""
    error = json.loads(result.stderr)
    assert error["error"] == "not_found"
    assert "granola_meetings_list" in error["message"]  # named as the client sees it


def test_call_rejects_an_argument_without_equals_sign(workspace: Path) -> None:
    result = runner.invoke(app, ["call", "granola.meetings.get", "m-budget"])

    assert result.exit_code == 2
    assert json.loads(result.stderr)["error"] == "bad_request"


def test_parse_assignments_reads_json_values_and_keeps_other_text_as_strings() -> None:
    parsed = parse_assignments(["q=budget review", "limit=5", "flag=true", 'people=["ada"]', "id=007x", "empty="])

    assert parsed == {"q": "budget review", "limit": 5, "flag": True, "people": ["ada"], "id": "007x", "empty": ""}
    with pytest.raises(BadRequest):
        parse_assignments(["=5"])


def test_one_line_joins_the_first_paragraph() -> None:
    assert one_line("First line\n   goes on.\n\n   Second paragraph.") == "First line goes on."
    assert one_line(None) == ""


def test_serve_all_rejects_an_unknown_server_in_only(workspace: Path) -> None:
    result = runner.invoke(app, ["serve", "all", "--only", "calendar"])

    assert result.exit_code == 2
    assert "calendar" in result.stderr


def test_serve_a_single_server_rejects_only_and_exclude(workspace: Path) -> None:
    result = runner.invoke(app, ["serve", "meetings", "--exclude", "meetings"])

    assert result.exit_code == 2
    assert "serve all" in result.stderr


@pytest.mark.parametrize("port", ["99999", "-1"])
def test_serve_refuses_a_port_outside_1_to_65535_with_one_clean_error(workspace: Path, port: str) -> None:
    result = runner.invoke(app, ["serve", "all", "--http", "--port", port])

    assert result.exit_code == 2
    assert "--port" in result.stderr
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_an_unknown_toolset_given_by_flag_names_the_flag(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DESKMCP_TOOLSETS", raising=False)
    served = runner.invoke(app, ["serve", "all", "--toolsets", "bogus"])
    stats = runner.invoke(app, ["tools", "--stats", "--toolsets", "bogus"])

    for result in (served, stats):
        assert result.exit_code == 2
        assert "Unknown toolset 'bogus' in --toolsets" in result.stderr
        assert "DESKMCP_TOOLSETS" not in result.stderr
        assert "Traceback" not in result.output


def test_an_unknown_toolset_from_the_environment_names_the_variable(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DESKMCP_TOOLSETS", "bogus")
    result = runner.invoke(app, ["tools"])

    assert result.exit_code == 2
    assert "Unknown toolset 'bogus' in DESKMCP_TOOLSETS" in result.stderr


def test_serve_http_on_a_busy_port_says_so_in_one_line_before_any_server_starts(workspace: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = runner.invoke(app, ["serve", "all", "--http", "--port", str(port)])

    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"port {port}" in lines[0]
    assert "in use" in lines[0]
    assert "--port" in lines[0]
    assert "Errno" not in result.output
    assert "Traceback" not in result.output
    assert not (workspace / ".deskmcp" / "index").exists()  # no server was opened


def test_a_workspace_that_does_not_exist_is_created_with_one_notice_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "not" / "yet"
    monkeypatch.setenv("DESKMCP_WORKSPACE", str(missing))

    described = runner.invoke(app, ["tools"])
    assert not missing.exists()  # describing writes nothing
    first = runner.invoke(app, ["call", "list_notes"])
    again = runner.invoke(app, ["call", "list_notes"])

    assert described.exit_code == 0
    assert first.exit_code == 0, first.output
    assert missing.is_dir()
    notices = [line for line in first.stderr.splitlines() if str(missing) in line]
    assert len(notices) == 1, first.stderr
    assert "created" in notices[0]
    assert "DESKMCP_WORKSPACE" in notices[0]
    assert str(missing) not in again.stderr


def test_serve_creates_a_missing_workspace_named_by_option_with_one_notice(tmp_path: Path) -> None:
    missing = tmp_path / "fresh"
    with socket.socket() as busy:  # held busy, so serve stops right after its start-up checks
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = runner.invoke(app, ["serve", "vault", "--http", "--port", str(port), "--workspace", str(missing)])

    assert missing.is_dir()
    notices = [line for line in result.stderr.splitlines() if str(missing) in line]
    assert len(notices) == 1, result.stderr
    assert "--workspace" in notices[0]


def test_call_finishes_a_large_vaults_first_index_before_answering(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault = tmp_path / "vault"
    from deskmcp.vault.service import WAIT_BELOW

    notes = 2 * WAIT_BELOW  # over what the vault indexes before answering: the rest goes on in the background
    for n in range(notes):
        write(vault, f"folder{n % 50}/note {n}.md", f"# Note {n}\n\nA common word and number {n}.\n")
    monkeypatch.setenv("DESKMCP_WORKSPACE", str(tmp_path / "ws"))
    monkeypatch.setenv("VAULT_PATH", str(vault))
    monkeypatch.setenv("VAULT_INDEX_WORKERS", "1")  # parse in the scanning thread: no process is started
    monkeypatch.setenv("VAULT_WATCH", "0")

    result = runner.invoke(app, ["call", "search_notes", "query=common", "limit=1"])

    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert answer["total"] == notes
    assert answer["indexing"] is None
