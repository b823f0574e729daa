"""Each user their own data: two users served by one HTTP app with a users root, each request acting
for the principal a test header names (as a verified token would). Whatever user A sends (a path
trick, an id, a cursor, a session id, an idempotency key), nothing of user B's is read, listed,
found, written, moved or sent."""

from __future__ import annotations

import ipaddress
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from deskmcp.gateway import compose
from deskmcp.serving.app import create_app
from deskmcp.serving.options import HttpOptions
from deskmcp.serving.users import UsersSettings
from tests.helpers.mail import SinkHandler, SmtpSink, deliver, make_mail
from tests.helpers.network import free_port, serving
from tests.helpers.principals import ActingFromHeader, as_user, principal
from tests.helpers.silent import silent_listener

MCP_ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


@dataclass
class User:
    name: str
    key: str
    workspace: Path

    @property
    def headers(self) -> dict[str, str]:
        return as_user(self.name)


def make_user(root: Path, name: str, word: str, smtp: SmtpSink) -> User:
    """A workspace holding one note, one document, one message, one workbook, one meeting and one
    project file, each with `word` in it, and settings sending through `smtp`."""
    key = principal(name).key
    ws = root / key
    (ws / "vault").mkdir(parents=True)
    (ws / "vault" / f"{word}.md").write_text(f"# {word}\n\nThe {word} secret plan.\n", encoding="utf-8")
    (ws / "documents").mkdir()
    (ws / "documents" / f"{word}.txt").write_text(f"The {word} secret document.\n", encoding="utf-8")
    (ws / "sheets").mkdir()
    (ws / "sheets" / f"{word}.csv").write_text(f"item,amount\n{word} secret,42\n", encoding="utf-8")
    (ws / "project").mkdir()
    (ws / "project" / f"{word}.py").write_text(f"# The {word} secret code.\n", encoding="utf-8")
    (ws / "granola").mkdir()
    doc = {"id": f"m-{word}", "title": f"{word} secret meeting", "created_at": "2026-11-02T09:00:00Z"}
    (ws / "granola" / "cache-v4.json").write_text(
        json.dumps({"cache": {"state": {"documents": {doc["id"]: doc}}}}), encoding="utf-8"
    )
    deliver(ws, make_mail(f"{word} secret mail", f"The {word} secret message.", to=f"{name}@example.org"))
    (ws / "settings.env").write_text(
        f"MAIL_ADDRESS={name}@example.org\nMAIL_SMTP_HOST={smtp.host}\nMAIL_SMTP_PORT={smtp.port}\n"
        "MAIL_SMTP_SECURITY=none\n",
        encoding="utf-8",
    )
    return User(name, key, ws)


@dataclass
class Deployment:
    base: str
    root: Path
    alice: User
    bob: User
    team: Path
    smtp: SmtpSink

    def call(self, user: User, tool: str, arguments: dict[str, Any] | None = None) -> tuple[int, Any]:
        response = httpx2.post(f"{self.base}/api/tools/{tool}", json=arguments or {}, headers=user.headers, timeout=60)
        return response.status_code, response.json()

    def ok(self, user: User, tool: str, arguments: dict[str, Any] | None = None) -> Any:
        status, body = self.call(user, tool, arguments)
        assert status == 200, body
        return body

    def refused(self, user: User, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        status, body = self.call(user, tool, arguments)
        assert status >= 400, body
        assert "bravo secret" not in json.dumps(body), body
        return body


def tree(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` with its bytes, but the index folder (`.deskmcp/index`): the user's own
    servers keep writing their indexes in the background (a commit begun before the snapshot may
    end after it), and no tool writes there for anyone."""
    index = folder / ".deskmcp" / "index"
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_relative_to(index)
    }


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    from aiosmtpd.controller import Controller

    smtp = SmtpSink("127.0.0.1", free_port())
    controller = Controller(SinkHandler(smtp), hostname=smtp.host, port=smtp.port)
    controller.start()
    base_dir = tmp_path_factory.mktemp("users")
    root = base_dir / "users"
    team = base_dir / "team"
    team.mkdir()
    (team / "handbook.txt").write_text("The team handbook, shared.\n", encoding="utf-8")
    alice = make_user(root, "alice", "alpha", smtp)
    bob = make_user(root, "bob", "bravo", smtp)
    saved = {k: os.environ.get(k) for k in ("DESKMCP_TOOLSETS",)}
    os.environ["DESKMCP_TOOLSETS"] = "all"
    users = UsersSettings(users_root=root, team_folders=(team,), live=4)
    # The composition only names the tools here: every call goes to the caller's own servers.
    app = ActingFromHeader(create_app(compose(keep_unavailable=True), HttpOptions(users=users)))
    try:
        with serving(app) as base:
            yield Deployment(base, root, alice, bob, team.resolve(), smtp)
    finally:
        controller.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def test_security_a_request_without_a_principal_is_refused(deployment: Deployment) -> None:
    response = httpx2.post(f"{deployment.base}/api/tools/list_notes", json={}, timeout=30)

    assert response.status_code == 401
    assert response.json()["error"] == "auth_required"


def test_security_search_and_list_show_only_the_users_own_data(deployment: Deployment) -> None:
    d, alice = deployment, deployment.alice
    answers = [
        d.ok(alice, "search_notes", {"query": "secret"}),
        d.ok(alice, "list_notes", {}),
        d.ok(alice, "search_documents", {"query": "secret"}),
        d.ok(alice, "list_documents", {}),
        d.ok(alice, "list_emails", {"query": "in:inbox"}),
        d.ok(alice, "list_spreadsheets", {}),
        d.ok(alice, "granola.meetings.search", {"q": "secret"}),
        d.ok(alice, "list_files", {}),
    ]

    text = json.dumps(answers)
    assert "alpha" in text
    assert "bravo" not in text
    for answer in answers[:1] + answers[2:3] + answers[6:7]:  # each search finds alice's own item
        assert "alpha" in json.dumps(answer)


def test_security_another_users_ids_are_not_found(deployment: Deployment) -> None:
    d, alice, bob = deployment, deployment.alice, deployment.bob
    bob_mail = d.ok(bob, "list_emails", {"query": "in:inbox"})["emails"][0]["id"]

    for tool, arguments in [
        ("read_note", {"path": "bravo.md"}),
        ("get_document", {"path": "bravo.txt"}),
        ("get_email", {"message_id": bob_mail}),
        ("read_values", {"spreadsheet_id": "bravo.csv", "ranges": ["A1:B2"]}),
        ("granola.meetings.get", {"id": "m-bravo"}),
        ("read_file", {"path": "bravo.py"}),
    ]:
        body = d.refused(alice, tool, arguments)
        assert body["error"] == "not_found", (tool, body)


@pytest.mark.parametrize(
    "tool,argument,inside",
    [
        ("read_note", "path", "vault/bravo.md"),
        ("get_document", "path", "documents/bravo.txt"),
        ("read_file", "path", "project/bravo.py"),
        ("read_values", "spreadsheet_id", "sheets/bravo.csv"),
    ],
)
def test_security_path_tricks_do_not_reach_another_users_workspace(
    deployment: Deployment, tool: str, argument: str, inside: str
) -> None:
    d, alice, bob = deployment, deployment.alice, deployment.bob
    extra = {"ranges": ["A1:B2"]} if tool == "read_values" else {}
    for path in (
        f"../{bob.key}/{inside}",
        f"../../{bob.key}/{inside}",
        f"../../../{bob.key}/{inside}",
        str(bob.workspace / inside),
        f"{alice.workspace}/../{bob.key}/{inside}",
    ):
        body = d.refused(alice, tool, {argument: path, **extra})
        assert body["error"] in ("permission_denied", "bad_request", "not_found"), (path, body)


def test_security_a_symlink_into_another_users_workspace_is_refused(deployment: Deployment) -> None:
    d, alice, bob = deployment, deployment.alice, deployment.bob
    (alice.workspace / "vault" / "link.md").symlink_to(bob.workspace / "vault" / "bravo.md")
    (alice.workspace / "documents" / "link.txt").symlink_to(bob.workspace / "documents" / "bravo.txt")
    (alice.workspace / "vault" / "bobs").symlink_to(bob.workspace / "vault", target_is_directory=True)

    d.refused(alice, "read_note", {"path": "link.md"})
    d.refused(alice, "read_note", {"path": "bobs/bravo.md"})
    d.refused(alice, "get_document", {"path": "link.txt"})
    d.refused(alice, "index_document", {"path": "link.txt"})
    assert "bravo secret" not in json.dumps(d.ok(alice, "search_notes", {"query": "bravo"}))
    _, listed = d.call(alice, "list_notes", {"directory": "bobs"})
    assert "bravo" not in json.dumps(listed)


def test_security_writes_and_moves_stay_in_the_users_own_workspace(deployment: Deployment) -> None:
    d, alice, bob = deployment, deployment.alice, deployment.bob
    before = tree(bob.workspace)
    d.ok(alice, "write_note", {"path": "mine.md", "body": "alice's own"})

    for tool, arguments in [
        ("write_note", {"path": f"../{bob.key}/vault/planted.md", "body": "x"}),
        ("write_note", {"path": str(bob.workspace / "vault" / "planted.md"), "body": "x"}),
        ("write_note", {"path": "bravo.md", "body": "overwritten", "overwrite": True}),
        ("move_note", {"source": "mine.md", "destination": f"../../{bob.key}/vault/moved.md"}),
        ("move_note", {"source": f"../../{bob.key}/vault/bravo.md", "destination": "stolen.md"}),
        ("create_note", {"title": "planted", "content": "x", "folder": f"../../{bob.key}/documents"}),
        ("update_values", {"spreadsheet_id": f"../{bob.key}/sheets/bravo.csv", "range": "A1", "values": [["x"]]}),
    ]:
        status, body = d.call(alice, tool, arguments)
        assert "bravo secret" not in json.dumps(body)
        if tool == "write_note" and arguments["path"] == "bravo.md":
            assert status == 200  # alice's own new note of that name, in her vault
            continue
        assert status >= 400, (tool, body)

    assert tree(bob.workspace) == before
    assert (alice.workspace / "vault" / "bravo.md").read_text(encoding="utf-8").strip().endswith("overwritten")


def test_security_another_users_mail_cannot_be_moved_or_read_by_id(deployment: Deployment) -> None:
    d, alice, bob = deployment, deployment.alice, deployment.bob
    bob_mail = d.ok(bob, "list_emails", {"query": "in:inbox"})["emails"][0]["id"]

    body = d.refused(alice, "move_email", {"message_id": bob_mail, "destination_label": "Archive"})

    assert "bravo secret" not in json.dumps(body)
    assert [m["id"] for m in d.ok(bob, "list_emails", {"query": "in:inbox"})["emails"]] == [bob_mail]


def test_security_a_cursor_from_another_user_pages_nothing_of_theirs(deployment: Deployment) -> None:
    d, alice, bob = deployment, deployment.alice, deployment.bob
    for n in range(3):  # through the server, so its index holds them before the first page
        d.ok(bob, "write_note", {"path": f"bravo-{n}.md", "body": f"bravo page {n}\n"})
    cursors = [
        ("list_notes", d.ok(bob, "list_notes", {"limit": 1})),
        ("search_notes", d.ok(bob, "search_notes", {"query": "bravo", "limit": 1})),
    ]

    for tool, page in cursors:
        cursor = page["next_cursor"]
        assert cursor, page
        arguments: dict[str, Any] = {"cursor": cursor, "limit": 1}
        if tool == "search_notes":
            arguments["query"] = "bravo"
        _, body = d.call(alice, tool, arguments)
        assert "bravo page" not in json.dumps(body), (tool, body)


def test_security_idempotency_keys_and_sends_are_each_users_own(deployment: Deployment) -> None:
    d, alice, bob = deployment, deployment.alice, deployment.bob
    d.smtp.messages.clear()
    first = d.ok(bob, "send_email", {"to": "x@example.net", "subject": "bravo", "body": "b", "idempotency_key": "k1"})

    mine = d.ok(alice, "send_email", {"to": "y@example.net", "subject": "alpha", "body": "a", "idempotency_key": "k1"})

    assert mine["duplicate"] is False
    assert mine["rfc_message_id"] != first["rfc_message_id"]
    assert [m.mail_from for m in d.smtp.messages] == ["bob@example.org", "alice@example.org"]
    assert (alice.workspace / mine["audit_log"]).is_file()
    assert not (bob.workspace / mine["audit_log"]).exists() or first["audit_log"] == mine["audit_log"]


def test_security_an_mcp_session_id_of_another_user_is_not_found(deployment: Deployment) -> None:
    d, alice, bob = deployment, deployment.alice, deployment.bob

    async def bob_session() -> str:
        with anyio.fail_after(60):
            return await session_of_bob()

    async def session_of_bob() -> str:
        async with (
            httpx2.AsyncClient(headers=bob.headers, timeout=60) as http,
            Client(streamable_http_client(f"{d.base}/mcp", http_client=http)) as client,
        ):
            found = await client.call_tool("search_notes", {"query": "bravo"})
            assert "bravo" in json.dumps(found.structured_content)
            initialize = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t"}},
            }
            response = await http.post(f"{d.base}/mcp", json=initialize, headers=MCP_ACCEPT)
            session = response.headers["mcp-session-id"]
            initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            await http.post(f"{d.base}/mcp", json=initialized, headers={**MCP_ACCEPT, "mcp-session-id": session})
            return session

    session = anyio.run(bob_session)
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "read_note", "arguments": {}}}
    call["params"]["arguments"] = {"path": "bravo.md"}

    as_bob = httpx2.post(
        f"{d.base}/mcp", json=call, headers={**MCP_ACCEPT, **bob.headers, "mcp-session-id": session}, timeout=30
    )

    response = httpx2.post(
        f"{d.base}/mcp", json=call, headers={**MCP_ACCEPT, **alice.headers, "mcp-session-id": session}, timeout=30
    )

    assert as_bob.status_code == 200 and "bravo secret" in as_bob.text  # the session is bob's, and live
    assert response.status_code == 404
    assert "bravo secret" not in response.text


def test_security_cached_answers_are_each_users_own(deployment: Deployment) -> None:
    d, alice, bob = deployment, deployment.alice, deployment.bob
    query = {"q": "secret meeting"}
    bobs = d.ok(bob, "granola.meetings.search", query)
    alices = d.ok(alice, "granola.meetings.search", query)
    again = d.ok(bob, "granola.meetings.search", query)

    assert "bravo" in json.dumps(bobs) and "alpha" not in json.dumps(bobs)
    assert "alpha" in json.dumps(alices) and "bravo" not in json.dumps(alices)
    assert again == bobs


def test_security_settings_naming_another_users_folders_are_refused(deployment: Deployment) -> None:
    d, bob = deployment, deployment.bob
    mallory = make_user(d.root, "mallory", "mike", d.smtp)
    settings = mallory.workspace / "settings.env"
    settings.write_text(
        settings.read_text(encoding="utf-8")
        + f"VAULT_PATH={bob.workspace / 'vault'}\nDOCUMENTS_PATH=../{bob.key}/documents\n"
        + f"DESKMCP_INDEX_DIR={bob.workspace / '.deskmcp' / 'index'}\n",
        encoding="utf-8",
    )

    for tool, arguments in [
        ("read_note", {"path": "bravo.md"}),
        ("search_notes", {"query": "bravo"}),
        ("get_document", {"path": "bravo.txt"}),
        ("search_documents", {"query": "bravo"}),
        ("granola.meetings.search", {"q": "bravo"}),
    ]:
        status, body = d.call(mallory, tool, arguments)
        assert status >= 400, (tool, body)
        assert "bravo secret" not in json.dumps(body)
        assert "outside this user's workspace" in body["message"] or "relative path" in body["message"]


def test_security_the_process_environment_is_no_users_setting(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    d, bob = deployment, deployment.bob
    monkeypatch.setenv("VAULT_PATH", str(bob.workspace / "vault"))
    monkeypatch.setenv("DOCUMENTS_PATH", str(bob.workspace / "documents"))
    carol = make_user(d.root, "carol", "charlie", d.smtp)

    notes = d.ok(carol, "list_notes", {})
    found = d.ok(carol, "search_documents", {"query": "secret"})

    assert "charlie.md" in json.dumps(notes)
    assert "bravo" not in json.dumps(notes)
    assert "bravo" not in json.dumps(found)


def test_security_a_team_folder_is_read_by_every_user_and_written_by_none(deployment: Deployment) -> None:
    d, alice, bob = deployment, deployment.alice, deployment.bob
    before = tree(d.team)
    for user in (alice, bob):
        roots = d.ok(user, "list_roots", {})
        team_root = next(r["name"] for r in roots["roots"] if r["path"] == d.team.name)
        d.ok(user, "index_folder", {"path": f"{team_root}:"})
        found = d.ok(user, "search_documents", {"query": "handbook"})
        assert "handbook" in json.dumps(found)

        body = d.refused(user, "create_note", {"title": "planted", "content": "x", "folder": f"{team_root}:"})
        assert body["error"] == "permission_denied"

    assert tree(d.team) == before


def _no_server_path(d: Deployment, answer: object) -> None:
    text = json.dumps(answer)
    for root in {str(d.root), str(d.root.resolve())}:
        assert root not in text, text


def test_security_answers_name_the_users_own_folders_relative_to_their_workspace(deployment: Deployment) -> None:
    d, alice = deployment, deployment.alice

    files = d.ok(alice, "list_files", {})
    sent = d.ok(alice, "send_email", {"to": "z@example.net", "subject": "alpha paths", "body": "a"})
    roots = d.ok(alice, "list_roots", {})
    status = d.ok(alice, "vault_status", {})

    for answer in (files, sent, roots, status):
        _no_server_path(d, answer)
    assert files["location"] == "project"
    assert (alice.workspace / sent["audit_log"]).is_file()
    assert {r["path"] for r in roots["roots"]} == {"documents", d.team.name}
    assert status["root"] == "vault"
    assert (alice.workspace / status["index_path"]).is_file()


def test_security_a_users_missing_folders_are_reported_without_the_users_root(deployment: Deployment) -> None:
    d = deployment
    ws = d.root / principal("erin").key
    erin = _user_with_settings(
        d,
        "erin",
        f"VAULT_PATH={ws}/no-vault\nDOCUMENTS_PATH={ws}/no-documents\nDIAGRAMS_PROJECT_ROOT={ws}/no-project\n",
    )

    answers = {
        tool: d.call(erin, tool, arguments)
        for tool, arguments in {
            "list_notes": {},
            "list_roots": {},
            "list_files": {},
            "granola_meetings_list": {},
        }.items()
    }

    for tool, (status, body) in answers.items():
        assert status == 404, (tool, body)
        assert body["error"] == "not_found", body
        _no_server_path(d, body)
    assert "no-vault does not exist" in answers["list_notes"][1]["message"]
    assert "no-documents does not exist" in answers["list_roots"][1]["message"]
    assert "no-project does not exist" in answers["list_files"][1]["message"]
    assert "no Granola cache found" in answers["granola_meetings_list"][1]["message"]


def _user_with_settings(d: Deployment, name: str, settings: str) -> User:
    key = principal(name).key
    ws = d.root / key
    ws.mkdir()
    (ws / "settings.env").write_text(settings, encoding="utf-8")
    return User(name, key, ws)


def test_security_a_users_git_hosts_may_not_name_the_servers_own_network(deployment: Deployment) -> None:
    d = deployment
    own_network = ["127.0.0.1", "10.0.0.0/8", "169.254.169.254", "0.0.0.0", "[::1]", "localhost", "172.0.0.0/8"]
    hosts = ",".join([*own_network, "git.example.com"])
    gail = _user_with_settings(
        d, "gail", f"DIAGRAMS_GIT_ALLOWED_SCHEMES=http,https\nDIAGRAMS_GIT_ALLOWED_HOSTS={hosts}\n"
    )

    status, body = d.call(gail, "list_files", {"source": "git", "repo": "http://127.0.0.1:9/repo.git"})

    assert status == 404 and body["error"] == "not_found", body  # the diagrams server is not started for gail
    reason = body["details"]["reason"]
    assert "DIAGRAMS_GIT_ALLOWED_HOSTS" in reason, reason
    listed = reason.split("may not list ", 1)[1].split(": loopback", 1)[0]
    assert listed.split(", ") == own_network, reason


def test_security_a_users_git_host_resolving_to_the_servers_own_network_is_refused_on_connecting(
    deployment: Deployment,
) -> None:
    import socket

    d = deployment
    name = socket.gethostname()
    addresses = {info[4][0] for info in socket.getaddrinfo(name, 80, type=socket.SOCK_STREAM)}
    if not all(ipaddress.ip_address(a).is_loopback or ipaddress.ip_address(a).is_private for a in addresses):
        pytest.skip(f"this machine's name {name} resolves to a public address here")
    with silent_listener() as port:
        hugo = _user_with_settings(
            d,
            "hugo",
            f"DIAGRAMS_GIT_ALLOWED_SCHEMES=http\nDIAGRAMS_GIT_ALLOWED_HOSTS={name}\nDIAGRAMS_GIT_TIMEOUT=2\n",
        )

        # (the HTTP client's 60 s timeout is the hang guard)
        body = d.refused(hugo, "list_files", {"source": "git", "repo": f"http://{name}:{port}/repo.git"})

    assert body["error"] == "permission_denied", body
    assert "only public hosts" in body["message"], body
