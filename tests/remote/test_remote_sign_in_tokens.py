"""A user's sign-in to a remote MCP server kept in a file of their workspace (no database): two
processes refreshing the same expired tokens at once spend the refresh token once."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import httpx2

from deskmcp.connect.remote_sign_in import FileRecord, RemoteTokens
from deskmcp.core.errors import AuthRequired

URL = "http://127.0.0.1:9/mcp"


def signed_out() -> AuthRequired:
    return AuthRequired("sign in again")


def test_concurrent_refreshes_of_one_file_record_spend_the_refresh_token_once(tmp_path: Path) -> None:
    path = tmp_path / "state" / "granola-sign-in.json"
    FileRecord(path).save(
        {
            "url": URL,
            "token_endpoint": "http://127.0.0.1:9/token",
            "client_info": {"client_id": "deskmcp", "method": "none"},
            "tokens": {"access_token": "old", "refresh_token": "rt-1", "token_type": "Bearer"},
            "expires_at": 0,
        }
    )
    spent: list[str] = []
    second_arrived = threading.Event()

    def token_endpoint(request: httpx2.Request) -> httpx2.Response:
        form = dict(httpx2.QueryParams(request.content.decode()))
        spent.append(form["refresh_token"])
        if len(spent) == 1:
            # Give a second refresh the time to arrive while this one is in flight: without a
            # lock it does, and spends the same refresh token.
            second_arrived.wait(timeout=2)
        else:
            second_arrived.set()
        if spent.count(form["refresh_token"]) > 1:
            return httpx2.Response(400, json={"error": "invalid_grant"})
        return httpx2.Response(
            200, json={"access_token": f"new-{len(spent)}", "refresh_token": f"rt-{len(spent) + 1}", "expires_in": 3600}
        )

    answers: list[str | Exception] = []

    def refresh() -> None:
        tokens = RemoteTokens(FileRecord(path), URL, signed_out, transport=httpx2.MockTransport(token_endpoint))
        try:
            answers.append(tokens.access_token())
        except AuthRequired as exc:
            answers.append(exc)

    workers = [threading.Thread(target=refresh) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=30)

    assert spent == ["rt-1"], spent
    assert answers == ["new-1", "new-1"], answers
    kept = json.loads(path.read_text(encoding="utf-8"))
    assert kept["tokens"] == {
        "access_token": "new-1",
        "refresh_token": "rt-2",
        "token_type": "Bearer",
        "expires_in": 3600,
    }
    assert path.stat().st_mode & 0o777 == 0o600

    FileRecord(path).forget()  # a sign-out
    assert not path.exists() and FileRecord(path).load() is None
