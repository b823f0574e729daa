"""Each user their own data through the real token check: oidc-provider as the authorization server,
deskmcp verifying each access token against its keys, and the verified principal choosing the
workspace. Alice's token reads Alice's notes only, whatever path she sends."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest

from deskmcp.core.principal import Principal
from deskmcp.gateway import compose
from deskmcp.serving.app import create_app
from deskmcp.serving.options import HttpOptions
from deskmcp.serving.users import UsersSettings
from tests.helpers.authorization_server import (
    CLIENT_SECRET,
    INTROSPECTOR,
    SERVICE,
    AuthorizationServer,
    authorization_server,
    provider_missing,
)
from tests.helpers.network import free_port, serving

pytestmark = pytest.mark.e2e  # starts oidc-provider


@dataclass
class Remote:
    base: str
    issuer: AuthorizationServer
    resource: str
    root: Path

    def token(self, subject: str) -> str:
        return self.issuer.sign(self.issuer.claims(self.resource, sub=subject))

    def call(self, token: str | None, tool: str, arguments: dict[str, object]) -> httpx2.Response:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        return httpx2.post(f"{self.base}/api/tools/{tool}", json=arguments, headers=headers, timeout=60)


def workspace_of(root: Path, issuer: str, subject: str, word: str) -> Path:
    ws = root / Principal(issuer, subject).key
    (ws / "vault").mkdir(parents=True)
    (ws / "vault" / f"{word}.md").write_text(f"# {word}\n\nThe {word} secret plan.\n", encoding="utf-8")
    return ws


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Remote]:
    from deskmcp.serving.auth.gate import ResourceServer
    from deskmcp.serving.auth.settings import AuthorizationSettings

    if (reason := provider_missing()) is not None:
        pytest.skip(reason)
    folder = tmp_path_factory.mktemp("verified")
    with authorization_server(folder / "oidc") as issuer:
        port = free_port()
        resource = f"http://127.0.0.1:{port}/mcp"
        root = folder / "users"
        workspace_of(root, issuer.issuer, "alice", "alpha")
        workspace_of(root, issuer.issuer, "bob", "bravo")
        checker = ResourceServer(
            AuthorizationSettings(
                issuer=issuer.issuer, resource=resource, client_id=INTROSPECTOR, client_secret=CLIENT_SECRET
            )
        )
        options = HttpOptions(port=port, authorization=checker, users=UsersSettings(users_root=root))
        app = create_app(compose(keep_unavailable=True, toolsets="all"), options)
        with serving(app, port=port) as base:
            yield Remote(base, issuer, resource, root)


def test_security_each_verified_user_reads_and_searches_only_their_own_notes(remote: Remote) -> None:
    alice, bob = remote.token("alice"), remote.token("bob")

    alices = remote.call(alice, "search_notes", {"query": "secret"})
    bobs = remote.call(bob, "search_notes", {"query": "secret"})

    assert alices.status_code == 200 and bobs.status_code == 200
    assert "alpha.md" in alices.text and "bravo" not in alices.text
    assert "bravo.md" in bobs.text and "alpha" not in bobs.text


def test_security_a_verified_user_cannot_reach_another_users_workspace_by_path(remote: Remote) -> None:
    alice = remote.token("alice")
    bob_key = Principal(remote.issuer.issuer, "bob").key

    for path in (f"../{bob_key}/vault/bravo.md", str(remote.root / bob_key / "vault" / "bravo.md"), "bravo.md"):
        answer = remote.call(alice, "read_note", {"path": path})
        assert answer.status_code >= 400, (path, answer.text)
        assert "bravo secret" not in answer.text


def test_security_without_a_valid_token_no_users_data_is_reached(remote: Remote) -> None:
    other_audience = remote.issuer.sign(remote.issuer.claims("http://127.0.0.1:1/mcp", sub="alice"))

    answers = [remote.call(token, "search_notes", {"query": "secret"}) for token in (None, other_audience)]

    assert [a.status_code for a in answers] == [401, 401]
    assert all("secret plan" not in a.text for a in answers)


def test_a_token_issued_by_the_provider_gets_its_own_empty_workspace(remote: Remote) -> None:
    issued = remote.issuer.client_credentials(SERVICE, "read write send", remote.resource)

    answer = remote.call(issued, "list_notes", {})

    assert answer.status_code == 200, answer.text
    assert json.loads(answer.text)["notes"] == []
    assert (remote.root / Principal(remote.issuer.issuer, SERVICE).key).is_dir()


# -- a user's settings are data --------------------------------------------------------------


def user_with_settings(remote: Remote, subject: str, settings: str) -> tuple[str, Path]:
    """A token for `subject` and their workspace, whose settings.env is `settings` ({ws}: the workspace)."""
    ws = remote.root / Principal(remote.issuer.issuer, subject).key
    ws.mkdir(parents=True)
    (ws / "settings.env").write_text(settings.format(ws=ws), encoding="utf-8")
    return remote.token(subject), ws


SECRET = "state-key-that-only-the-server-knows-0123456789"


def test_security_a_users_settings_never_interpolate_the_servers_environment(
    remote: Remote, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DESKMCP_STATE_KEYS", SECRET)
    monkeypatch.setenv("DESKMCP_TOOLSETS", "all")
    token, ws = user_with_settings(
        remote,
        "carol",
        "VAULT_PATH={ws}/vault-$DESKMCP_STATE_KEYS\nDOCUMENTS_PATH={ws}/docs-${{DESKMCP_STATE_KEYS}}\n",
    )
    for folder in ("vault-$DESKMCP_STATE_KEYS", "docs-${DESKMCP_STATE_KEYS}", f"vault-{SECRET}", f"docs-{SECRET}"):
        (ws / folder).mkdir()

    answers = [
        remote.call(token, "read_note", {"path": "missing.md"}),
        remote.call(token, "write_note", {"path": "kept.md", "body": "# Kept\n"}),
        remote.call(token, "list_roots", {}),
        remote.call(token, "list_documents", {}),
    ]

    assert all(SECRET not in a.text for a in answers), [a.text for a in answers]
    assert answers[1].status_code == 200, answers[1].text
    assert (ws / "vault-$DESKMCP_STATE_KEYS" / "kept.md").is_file()
    assert not (ws / f"vault-{SECRET}" / "kept.md").exists()


def test_security_a_users_settings_take_no_home_folder_of_the_server(
    remote: Remote, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "vault").mkdir()
    (tmp_path / "vault" / "server.md").write_text("# The server's own note\n", encoding="utf-8")
    token, _ws = user_with_settings(remote, "dave", "VAULT_PATH=~/vault\n")

    answer = remote.call(token, "list_notes", {})

    assert answer.status_code >= 400, answer.text
    assert "server.md" not in answer.text and str(tmp_path) not in answer.text
    assert "VAULT_PATH" in answer.text or "vault_path" in answer.text


def test_security_a_users_settings_cannot_change_how_tools_are_published(remote: Remote) -> None:
    token, _ws = user_with_settings(remote, "erin", "DESKMCP_TOOL_NAMES=safe\nDESKMCP_TOOLSETS=all\n")

    listed = httpx2.get(f"{remote.base}/tools", headers={"authorization": f"Bearer {token}"}, timeout=60)

    assert listed.status_code == 403, listed.text
    assert listed.json()["error"] == "permission_denied"
    assert "DESKMCP_TOOL_NAMES" in listed.json()["message"]


def test_a_users_settings_naming_keys_no_server_reads_are_refused_saying_which(remote: Remote) -> None:
    token, _ws = user_with_settings(remote, "frank", "VAULT_PTAH={ws}/vault\n")

    answer = remote.call(token, "list_notes", {})

    assert answer.status_code == 400, answer.text
    assert answer.json()["details"]["keys"] == ["VAULT_PTAH"]


def test_security_a_users_settings_cannot_use_the_machines_google_credentials(remote: Remote) -> None:
    token, _ws = user_with_settings(remote, "gina", "GOOGLE_USE_ADC=true\n")

    answer = remote.call(token, "list_notes", {})

    assert answer.status_code == 403, answer.text
    assert "GOOGLE_USE_ADC" in answer.json()["message"]


def test_security_a_users_mail_accounts_file_must_be_in_their_workspace(remote: Remote, tmp_path: Path) -> None:
    outside = tmp_path / "accounts.json"
    outside.write_text('[{"name": "work", "address": "w@example.org"}]', encoding="utf-8")
    token, _ws = user_with_settings(remote, "hank", f"MAIL_ACCOUNTS={outside}\nMAIL_ADDRESS=h@example.org\n")

    answer = remote.call(token, "list_accounts", {})

    assert answer.status_code >= 400, answer.text
    assert "MAIL_ACCOUNTS" in answer.text and "w@example.org" not in answer.text


def git_project(folder: Path, text: str) -> None:
    """A git repository at `folder` with one committed file, `plan.txt`."""
    from dulwich import porcelain

    folder.mkdir(parents=True)
    (folder / "plan.txt").write_text(text, encoding="utf-8")
    repo = porcelain.init(str(folder))
    porcelain.add(repo, [str(folder / "plan.txt")])
    porcelain.commit(repo, message=b"plan", author=b"A <a@example.org>", committer=b"A <a@example.org>")
    repo.close()


def test_security_a_users_clone_urls_never_reach_files_of_the_server(remote: Remote) -> None:
    bob = remote.root / Principal(remote.issuer.issuer, "bob").key
    git_project(bob / "repo", "The bravo secret repository.\n")
    token, _ws = user_with_settings(remote, "ivan", "DIAGRAMS_GIT_ALLOWED_SCHEMES=https,file\n")
    plain, _ = user_with_settings(remote, "judy", "")

    answers = [
        remote.call(token, "read_file", {"path": "plan.txt", "source": "git", "repo": f"file://{bob / 'repo'}"}),
        remote.call(plain, "read_file", {"path": "plan.txt", "source": "git", "repo": f"file://{bob / 'repo'}"}),
        remote.call(plain, "read_file", {"path": "plan.txt", "source": "git", "repo": str(bob / "repo")}),
    ]

    assert all(a.status_code >= 400 for a in answers), [a.text for a in answers]
    assert all("bravo secret" not in a.text for a in answers)
    assert "DIAGRAMS_GIT_ALLOWED_SCHEMES" in answers[0].text
