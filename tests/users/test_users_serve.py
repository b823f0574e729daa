"""`deskmcp serve all --http` with a users root: the process's own composition only says what the
users' servers publish (the authorization gate's view of their tools and scopes); it looks for no
data, neither in the server's home nor in its own workspace, which no user's servers read."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from deskmcp.cli import app
from tests.helpers.network import free_port


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture
def records() -> Iterator[Records]:
    handler = Records()
    logger = logging.getLogger("deskmcp")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


def test_users_mode_looks_for_no_data_in_the_servers_home_or_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, records: Records
) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    monkeypatch.setenv("DESKMCP_USERS_ROOT", str(tmp_path / "users"))
    monkeypatch.setenv("DESKMCP_AUTH_ISSUER", "http://127.0.0.1:9/issuer")
    monkeypatch.setenv("DESKMCP_AUTH_RESOURCE", "http://127.0.0.1:9/mcp")
    monkeypatch.delenv("DESKMCP_TOKEN", raising=False)
    served: dict[str, Any] = {}

    def serve(composition: Any, options: Any, *, sock: socket.socket | None = None, **_kwargs: Any) -> None:
        served.update(composition=composition, options=options)
        if sock is not None:
            sock.close()

    monkeypatch.setattr("deskmcp.serving.listen.serve", serve)

    result = CliRunner().invoke(
        app, ["serve", "all", "--http", "--port", str(free_port()), "--workspace", str(workspace)]
    )

    assert result.exit_code == 0, result.output
    composition = served["composition"]
    looked = [m for m in records.messages if "Granola" in m or str(home) in m or str(workspace) in m]
    assert looked == []
    assert composition.skipped == {}
    from deskmcp.serving.users import per_user_servers

    assert composition.included == [spec.name for spec in per_user_servers()]
    # Every tool a user may call is known to the gate, with its scope.
    assert composition.server.tool_scope("granola_meetings_list") == "read"
    assert composition.server.tool_scope("send_email") == "send"
    assert served["options"].users is not None
    assert not (tmp_path / "users").exists() or list((tmp_path / "users").iterdir()) == []
    assert not home.exists() or list(home.rglob("*")) == []
    assert list(workspace.iterdir()) == []  # created by --workspace, and nothing in it
