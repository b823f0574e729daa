"""The HTTP app's limits against hostile or slow clients: the Google sign-in routes behind the
Host/Origin checks, a bounded number of sign-in states, and a deadline for sending a request."""

from __future__ import annotations

import logging
import socket
import time
import urllib.parse
from pathlib import Path
from typing import Any

import httpx2
import pytest

from deskmcp.gateway import compose
from deskmcp.google.auth import GoogleSettings
from deskmcp.google.web import OAuthRoutes
from deskmcp.servers import get_spec
from deskmcp.serving.app import create_app
from deskmcp.serving.listen import uvicorn_settings
from deskmcp.serving.options import HttpOptions


@pytest.fixture
def google(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> GoogleSettings:
    monkeypatch.setenv("DESKMCP_WORKSPACE", str(tmp_path / "ws"))
    monkeypatch.delenv("DESKMCP_TOKEN", raising=False)
    return GoogleSettings(workspace=tmp_path / "ws", google_client_id="cid", google_client_secret="secret")


def token_endpoint() -> httpx2.MockTransport:
    return httpx2.MockTransport(lambda _request: httpx2.Response(200, json={"access_token": "at"}))


def sign_in_app(google: GoogleSettings, **options: Any) -> Any:
    oauth = OAuthRoutes(google, transport=token_endpoint())
    return create_app(compose([get_spec("sheets")]), HttpOptions(oauth=oauth, **options))


def state_of(answer: httpx2.Response) -> str:
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(answer.json()["url"]).query))["state"]


def test_google_sign_in_routes_refuse_a_forged_host_header_security(serve: Any, google: GoogleSettings) -> None:
    with serve(sign_in_app(google)) as base:
        forged_url = httpx2.get(f"{base}/auth/url", headers={"Host": "evil.example"}, timeout=30)
        forged_callback = httpx2.get(
            f"{base}/callback", params={"state": "s", "code": "c"}, headers={"Host": "evil.example"}, timeout=30
        )
        cross_origin = httpx2.get(f"{base}/auth/url", headers={"Origin": "http://evil.example"}, timeout=30)
        own = httpx2.get(f"{base}/auth/url", timeout=30)

    assert forged_url.status_code == 421
    assert "evil.example" not in forged_url.text
    assert forged_url.json()["error"] == "permission_denied"
    assert forged_callback.status_code == 421
    assert cross_origin.status_code == 403
    assert own.status_code == 200
    assert own.json()["redirect_uri"] == f"{base}/callback"


def test_google_sign_in_forgets_the_oldest_states_beyond_its_bound_security(serve: Any, google: GoogleSettings) -> None:
    # one client for the 72 requests (a client each would build 72 TLS contexts, most of the test's time)
    with serve(sign_in_app(google)) as base, httpx2.Client(timeout=30) as client:
        states = [state_of(client.get(f"{base}/auth/url")) for _ in range(70)]
        oldest = client.get(f"{base}/callback", params={"state": states[0], "code": "c"})
        newest = client.get(f"{base}/callback", params={"state": states[-1], "code": "c"})

    assert oldest.status_code == 400
    assert "/auth/url" in oldest.text
    assert newest.status_code == 200


def test_a_client_sending_its_headers_too_slowly_is_disconnected_security(serve: Any, workspace: Path) -> None:
    options = HttpOptions(read_timeout=0.5)
    with serve(create_app(compose([get_spec("meetings")]), options), **uvicorn_settings(options)) as base:
        port = int(base.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=30) as slow:
            slow.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # the blank line never comes
            # Bounded by the socket timeout: a server without the deadline leaves recv waiting.
            closed = slow.recv(1024)
        answered = httpx2.get(base + "/", timeout=30)

    assert closed == b""
    assert answered.status_code == 200


def test_a_client_leaving_while_it_sends_a_call_is_no_error(
    serve: Any, workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="deskmcp")
    uvicorn_log = logging.getLogger("uvicorn")  # it does not pass its records on to the root logger
    uvicorn_log.addHandler(caplog.handler)
    try:
        answered = _leave_twice_then_call(serve, caplog)
    finally:
        uvicorn_log.removeHandler(caplog.handler)

    assert answered.status_code == 200
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert any("left while sending its call" in r.getMessage() for r in caplog.records)


def _leave_twice_then_call(serve: Any, caplog: pytest.LogCaptureFixture) -> httpx2.Response:
    """Two clients that leave halfway through sending a call, then (once the server has logged
    what it made of both) one that stays for its answer."""
    with serve(create_app(compose([get_spec("meetings")]), HttpOptions())) as base:
        port = int(base.rsplit(":", 1)[1])
        for _ in range(2):
            with socket.create_connection(("127.0.0.1", port), timeout=30) as leaving:
                leaving.sendall(
                    b"POST /api/tools/granola.cache.status HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
                )
        deadline = time.monotonic() + 10
        while len(_handled(caplog)) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        return httpx2.post(base + "/api/tools/granola.cache.status", json={}, timeout=30)


def _handled(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """What the server logged of a call whose client left: an error, or the line saying so."""
    return [r for r in caplog.records if r.levelno >= logging.ERROR or "left while sending" in r.getMessage()]


def test_a_request_sent_in_time_on_a_kept_alive_connection_is_answered(serve: Any, workspace: Path) -> None:
    options = HttpOptions(read_timeout=5)
    app = create_app(compose([get_spec("meetings")]), options)
    with serve(app, **uvicorn_settings(options)) as base, httpx2.Client(timeout=30) as client:
        first = client.get(base + "/")
        second = client.get(base + "/tools")

    assert first.status_code == 200
    assert second.status_code == 200


def test_every_connection_sends_its_responses_without_waiting_for_the_clients_acknowledgements(
    serve: Any, workspace: Path
) -> None:
    # Nagle's algorithm held a response's body back until the client acknowledged its head,
    # which a client delays by up to 40 ms: on every request of a kept-alive connection.
    options = HttpOptions()
    settings = uvicorn_settings(options)
    nodelay: list[int] = []

    class Recording(settings["http"]):
        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            nodelay.append(transport.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))

    app = create_app(compose([get_spec("meetings")]), options)
    with serve(app, nodelay=False, **{**settings, "http": Recording}) as base, httpx2.Client(timeout=30) as client:
        answers = [client.get(base + "/").status_code for _ in range(3)]

    assert answers == [200, 200, 200]
    assert len(nodelay) == 1 and nodelay[0] != 0
