"""`deskmcp serve --http` with a users root: it needs an authorization server to know each user."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from deskmcp.cli import app
from tests.helpers.network import free_port


def test_security_serving_per_user_without_an_authorization_server_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DESKMCP_USERS_ROOT", str(tmp_path / "users"))
    for name in ("DESKMCP_AUTH_ISSUER", "DESKMCP_AUTH_RESOURCE", "DESKMCP_TOKEN"):
        monkeypatch.delenv(name, raising=False)

    result = CliRunner().invoke(
        app, ["serve", "all", "--http", "--port", str(free_port()), "--workspace", str(tmp_path / "ws")]
    )

    assert result.exit_code == 2
    assert "DESKMCP_AUTH_ISSUER" in result.output
    assert not (tmp_path / "users").exists()
