"""The Maildir folder: the default one in the workspace is created; a configured MAIL_MAILDIR (or an
account's maildir) that does not exist is never created, and the tools answer not_found naming the
setting and the full path, as VAULT_PATH and DOCUMENTS_PATH are answered."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from mcp import Client

from deskmcp.mail.server import Settings, create_server
from tests.helpers.processes import orchestrate
from tests.helpers.tool_calls import Connect, call, fail

pytestmark = pytest.mark.anyio


async def test_a_configured_maildir_that_does_not_exist_is_not_found_naming_the_setting_and_never_created(
    connect: Connect, tmp_path: Path
) -> None:
    typo = tmp_path / "Mial"
    async with connect(maildir=typo) as c:
        listed = await fail(c, "list_emails", {"query": ""})
        drafted = await fail(c, "create_draft", {"to": "bob@corp.test", "subject": "x", "body": "x"})
    assert listed["error"] == drafted["error"] == "not_found"
    assert "MAIL_MAILDIR" in listed["message"] and str(typo) in listed["message"]
    assert listed["details"] == {"variable": "MAIL_MAILDIR", "path": str(typo)}
    assert not typo.exists()


async def test_the_default_maildir_in_the_workspace_is_created(connect: Connect, workspace: Path) -> None:
    async with connect() as c:
        listed = await call(c, "list_emails", {"query": ""})
    assert listed["emails"] == []
    assert all((workspace / "mail" / sub).is_dir() for sub in ("cur", "new", "tmp", ".Sent"))


async def test_an_account_maildir_that_does_not_exist_is_not_found_and_the_other_accounts_work(
    workspace: Path, tmp_path: Path
) -> None:
    typo = tmp_path / "home-mial"
    accounts = [{"name": "work"}, {"name": "home", "maildir": str(typo)}]
    async with Client(create_server(Settings(workspace=workspace, accounts=json.dumps(accounts)))) as c:
        work = await call(c, "list_emails", {"query": "", "account": "work"})
        home = await fail(c, "list_emails", {"query": "", "account": "home"})
    assert work["emails"] == []
    assert home["error"] == "not_found" and str(typo) in home["message"] and "home" in home["message"]
    assert not typo.exists()


@pytest.mark.e2e
def test_orchestrate_dry_run_with_a_mistyped_mail_maildir_creates_no_folder_and_names_it(tmp_path: Path) -> None:
    typo = tmp_path / "Mial"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VAULT_", "ORCHESTRATOR_", "DESKMCP_", "MAIL_"))}
    env.update(DESKMCP_WORKSPACE=str(tmp_path / "ws"), MAIL_MAILDIR=str(typo), ORCHESTRATOR_CALL_TIMEOUT="60")
    done = orchestrate(env, "--once", "--dry-run", timeout=180)
    assert not typo.exists()
    assert done.returncode != 0
    assert "MAIL_MAILDIR" in done.stdout + done.stderr and str(typo) in done.stdout + done.stderr
