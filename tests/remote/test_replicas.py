"""Replicas of `deskmcp serve all --http` are interchangeable: stateless MCP, one request-state key
ring for all (a send the person confirms on one replica is finished by another), X-Forwarded-*
believed only from the trusted proxies, event streams that tell a proxy not to buffer them.

Two apps under real uvicorn servers on loopback; a client transport alternating between them
stands in for the load balancer (the haproxy tests in test_haproxy_process.py use the real one)."""

from __future__ import annotations

import itertools
import json
import urllib.parse
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from pydantic import SecretStr

from deskmcp.core.errors import BadRequest
from deskmcp.gateway import compose
from deskmcp.google.auth import GoogleSettings
from deskmcp.google.web import OAuthRoutes
from deskmcp.servers import get_spec
from deskmcp.serving.app import create_app
from deskmcp.serving.listen import uvicorn_settings
from deskmcp.serving.options import HttpOptions
from deskmcp.serving.replicas import ReplicaSettings, request_state_security, trusted_proxies
from tests.helpers.mail import SmtpSink, smtp_capture
from tests.helpers.network import serving
from tests.helpers.person import Person

pytestmark = pytest.mark.anyio

KEY_A = "replica-ring-key-0123456789abcdefghijklmnop"
KEY_B = "another-ring-key-0123456789abcdefghijklmnop"
MAIL = {"to": "eve@elsewhere.test", "subject": "Q3 numbers", "body": "Figures attached."}


@pytest.fixture(scope="module")
def smtp() -> Iterator[SmtpSink]:
    with smtp_capture() as sink:
        yield sink


@pytest.fixture
def mail_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, smtp: SmtpSink) -> Path:
    smtp.messages.clear()
    workspace = tmp_path / "ws"
    for name, value in {
        "MAIL_SMTP_HOST": smtp.host,
        "MAIL_SMTP_PORT": str(smtp.port),
        "MAIL_SMTP_SECURITY": "none",
        "MAIL_ADDRESS": "me@corp.test",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("DESKMCP_TOKEN", raising=False)
    return workspace


class RoundRobin(httpx2.AsyncBaseTransport):
    """Sends each request to the next replica in turn, as a round-robin load balancer does."""

    def __init__(self, bases: list[str]) -> None:
        self.targets = itertools.cycle([urllib.parse.urlsplit(b).port for b in bases])
        self.inner = httpx2.AsyncHTTPTransport()
        self.ports: list[int | None] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        port = next(self.targets)
        self.ports.append(port)
        request.url = request.url.copy_with(port=port)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def replica(workspace: Path, keys: str) -> Any:
    """One replica's app: the mail server, stateless, sealing request state under `keys`."""
    settings = ReplicaSettings(stateless=True, state_keys=SecretStr(keys))
    composition = compose(
        [get_spec("mail")], workspace=workspace, request_state_security=request_state_security(settings)
    )
    return create_app(composition, HttpOptions(stateless=True, workspace=workspace))


async def send_through(bases: list[str], person: Person) -> tuple[Any, RoundRobin]:
    balancer = RoundRobin(bases)
    async with httpx2.AsyncClient(transport=balancer, timeout=30) as http:
        transport = streamable_http_client(bases[0] + "/mcp", http_client=http)
        async with Client(transport, mode="2026-07-28", elicitation_callback=person.answer) as client:
            with anyio.fail_after(60):
                result = await client.call_tool("send_email", MAIL)
    return result, balancer


async def test_a_send_the_person_confirms_on_one_replica_is_finished_by_the_other_with_shared_state_keys(
    mail_env: Path, smtp: SmtpSink
) -> None:
    person = Person("accept")
    with ExitStack() as stack:
        bases = [stack.enter_context(serving(replica(mail_env, KEY_A))) for _ in range(2)]
        result, balancer = await send_through(bases, person)

    assert not result.is_error, result.content
    assert len(person.asked) == 1
    assert len(set(balancer.ports)) == 2, "the call and its retry reached both replicas"
    assert [m.rcpt_tos for m in smtp.messages] == [["eve@elsewhere.test"]]


async def test_security_state_sealed_under_another_key_ring_is_refused_and_nothing_is_sent(
    mail_env: Path, smtp: SmtpSink
) -> None:
    person = Person("accept")
    with ExitStack() as stack:
        bases = [stack.enter_context(serving(replica(mail_env, key))) for key in (KEY_A, KEY_B)]
        with pytest.raises(BaseException) as refused:
            await send_through(bases, person)

    assert any(isinstance(e, MCPError) and "requestState" in str(e) for e in leaves(refused.value)), refused.value
    assert len(person.asked) == 1
    assert smtp.messages == []


def leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaves(inner)]
    return [exc]


def test_stateless_serving_is_refused_without_shared_state_keys() -> None:
    with pytest.raises(BadRequest) as refused:
        request_state_security(ReplicaSettings(stateless=True))
    assert "DESKMCP_STATE_KEYS" in refused.value.message


def test_security_a_short_state_key_is_refused_naming_its_place_in_the_ring() -> None:
    with pytest.raises(BadRequest) as refused:
        request_state_security(ReplicaSettings(state_keys=SecretStr(f"{KEY_A}, too-short")))
    assert "key number 2" in refused.value.message
    assert "too-short" not in refused.value.message


def test_a_trusted_proxy_must_be_an_address_or_a_network() -> None:
    assert trusted_proxies("127.0.0.1, 10.1.2.3/8", ["::1"]) == ("127.0.0.1", "10.0.0.0/8", "::1")
    with pytest.raises(BadRequest) as refused:
        trusted_proxies("proxy.example")
    assert "proxy.example" in refused.value.message


def sign_in_app(tmp_path: Path, **options: Any) -> Any:
    google = GoogleSettings(workspace=tmp_path / "ws", google_client_id="cid", google_client_secret="secret")
    oauth = OAuthRoutes(google, transport=httpx2.MockTransport(lambda _r: httpx2.Response(200, json={})))
    return create_app(compose([get_spec("sheets")], workspace=tmp_path / "ws"), HttpOptions(oauth=oauth, **options))


FORWARDED = {"Host": "desk.example.com", "X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.7"}


def test_behind_a_trusted_proxy_the_google_redirect_is_the_public_https_address(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DESKMCP_TOKEN", raising=False)
    options = HttpOptions(trusted_proxies=("127.0.0.1",), allowed_hosts=("desk.example.com",))
    with serving(
        sign_in_app(tmp_path, trusted_proxies=options.trusted_proxies, allowed_hosts=options.allowed_hosts),
        **uvicorn_settings(options),
    ) as base:
        answer = httpx2.get(f"{base}/auth/url", headers=FORWARDED, timeout=30)
    assert answer.status_code == 200, answer.text
    assert answer.json()["redirect_uri"] == "https://desk.example.com/callback"


def test_security_forwarded_headers_from_an_untrusted_peer_are_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DESKMCP_TOKEN", raising=False)
    options = HttpOptions(allowed_hosts=("desk.example.com",))
    with serving(sign_in_app(tmp_path, allowed_hosts=options.allowed_hosts), **uvicorn_settings(options)) as base:
        answer = httpx2.get(f"{base}/auth/url", headers=FORWARDED, timeout=30)
    assert answer.status_code == 200, answer.text
    assert answer.json()["redirect_uri"] == "http://desk.example.com/callback"


def test_event_streams_tell_a_proxy_not_to_buffer_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DESKMCP_TOKEN", raising=False)
    app = create_app(compose([get_spec("meetings")], workspace=tmp_path / "ws"), HttpOptions(stateless=True))
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    with serving(app) as base:
        answer = httpx2.post(f"{base}/mcp", content=json.dumps(body), headers=headers, timeout=30)
    assert answer.headers["content-type"].startswith("text/event-stream")
    assert answer.headers.get("x-accel-buffering") == "no"
    assert "mcp-session-id" not in answer.headers, "stateless: no session bound to one replica"


async def test_with_a_users_root_each_users_send_confirmed_on_one_replica_is_finished_by_the_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, smtp: SmtpSink
) -> None:
    from deskmcp.serving.users import UsersSettings
    from tests.helpers.principals import ActingFromHeader, as_user, principal

    smtp.messages.clear()
    monkeypatch.delenv("DESKMCP_TOKEN", raising=False)
    root = tmp_path / "users"
    workspace = root / principal("alice").key
    workspace.mkdir(parents=True)
    (workspace / "settings.env").write_text(
        f"MAIL_ADDRESS=alice@example.org\nMAIL_SMTP_HOST={smtp.host}\nMAIL_SMTP_PORT={smtp.port}\n"
        "MAIL_SMTP_SECURITY=none\n",
        encoding="utf-8",
    )
    security = request_state_security(ReplicaSettings(stateless=True, state_keys=SecretStr(KEY_A)))
    options = HttpOptions(users=UsersSettings(users_root=root), stateless=True, request_state_security=security)
    person = Person("accept")
    with ExitStack() as stack:
        bases = [
            stack.enter_context(
                serving(
                    ActingFromHeader(
                        create_app(compose(keep_unavailable=True, request_state_security=security), options)
                    )
                )
            )
            for _ in range(2)
        ]
        balancer = RoundRobin(bases)
        async with httpx2.AsyncClient(transport=balancer, headers=as_user("alice"), timeout=60) as http:
            transport = streamable_http_client(bases[0] + "/mcp", http_client=http)
            async with Client(transport, mode="2026-07-28", elicitation_callback=person.answer) as client:
                with anyio.fail_after(90):
                    result = await client.call_tool("send_email", MAIL)

    assert not result.is_error, result.content
    assert len(person.asked) == 1
    assert len(set(balancer.ports)) == 2
    assert [m.mail_from for m in smtp.messages] == ["alice@example.org"]


# -- a confirmation is spent once ----------------------------------------------------------


class Recording(RoundRobin):
    """A round robin that keeps every request it passed on (method, headers, body)."""

    def __init__(self, bases: list[str]) -> None:
        super().__init__(bases)
        self.sent: list[tuple[dict[str, str], bytes]] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        self.sent.append((dict(request.headers), await request.aread()))
        return await super().handle_async_request(request)


async def confirmed_send(bases: list[str]) -> tuple[dict[str, str], bytes]:
    """A send the person confirms through `bases`; the retry that carried their yes (headers, body)."""
    balancer = Recording(bases)
    async with httpx2.AsyncClient(transport=balancer, timeout=30) as http:
        transport = streamable_http_client(bases[0] + "/mcp", http_client=http)
        async with Client(transport, mode="2026-07-28", elicitation_callback=Person("accept").answer) as client:
            with anyio.fail_after(60):
                result = await client.call_tool("send_email", MAIL)
    assert not result.is_error, result.content
    answered = [(h, b) for h, b in balancer.sent if b"requestState" in b and b"inputResponses" in b]
    assert len(answered) == 1
    return answered[0]


def replay(base: str, headers: dict[str, str], body: bytes) -> dict[str, Any]:
    """The same POST again, as a client (or anyone who saw it) could send it."""
    kept = {k: v for k, v in headers.items() if k.lower() not in ("host", "content-length")}
    answer = httpx2.post(f"{base}/mcp", content=body, headers=kept, timeout=30)
    text = answer.text
    if text.startswith("event:") or "\ndata:" in text or text.startswith("data:"):
        text = next(line[5:] for line in text.splitlines() if line.startswith("data:"))
    return json.loads(text)


async def test_security_one_yes_sends_one_mail_however_often_its_answer_is_sent_again(
    mail_env: Path, smtp: SmtpSink
) -> None:
    with ExitStack() as stack:
        base = stack.enter_context(serving(replica(mail_env, KEY_A)))
        headers, body = await confirmed_send([base])
        again = [replay(base, headers, body) for _ in range(2)]

    assert len(smtp.messages) == 1
    for answer in again:
        result = answer["result"]
        assert result.get("isError") is True, answer
        assert json.loads(result["content"][0]["text"])["error"] == "conflict"


@pytest.mark.e2e  # starts PostgreSQL
async def test_security_one_yes_sends_one_mail_across_replicas_sharing_the_database(
    mail_env: Path, smtp: SmtpSink, postgres: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from deskmcp.core.postgres import close_pools
    from tests.helpers.postgres import fresh_database

    monkeypatch.setenv("DESKMCP_DATABASE_URL", fresh_database(postgres))
    try:
        with ExitStack() as stack:
            bases = [stack.enter_context(serving(replica(mail_env, KEY_A))) for _ in range(2)]
            headers, body = await confirmed_send(bases)
            again = [replay(base, headers, body) for base in bases]
    finally:
        close_pools()

    assert len(smtp.messages) == 1
    assert all(a["result"].get("isError") is True for a in again), again


async def test_security_stateless_serving_never_sends_unasked_to_an_older_client_that_can_elicit(
    mail_env: Path, smtp: SmtpSink
) -> None:
    person = Person("accept")
    with ExitStack() as stack:
        base = stack.enter_context(serving(replica(mail_env, KEY_A)))
        async with httpx2.AsyncClient(timeout=30) as http:
            transport = streamable_http_client(base + "/mcp", http_client=http)
            async with Client(transport, mode="legacy", elicitation_callback=person.answer) as client:
                with anyio.fail_after(60):
                    result = await client.call_tool("send_email", MAIL)

    assert smtp.messages == []
    assert person.asked == []
    assert result.is_error
    error = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert error["error"] == "permission_denied", error
    assert "could not ask" in error["message"]
