"""The HTTP door without an authorization server to ask: what a client sees when the issuer is
down, and the metadata's answer to a browser's preflight."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import httpx2
from starlette.applications import Starlette

from deskmcp.gateway import compose
from deskmcp.serving.app import create_app
from deskmcp.serving.auth.gate import ResourceServer
from deskmcp.serving.auth.settings import AuthorizationSettings
from deskmcp.serving.options import HttpOptions
from tests.helpers.network import free_port, serving


def _part(value: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()


def app_for(issuer: str, port: int, workspace: Path) -> Starlette:
    settings = AuthorizationSettings(issuer=issuer, resource=f"http://127.0.0.1:{port}/mcp")
    options = HttpOptions(port=port, workspace=workspace, authorization=ResourceServer(settings))
    return create_app(compose(workspace=workspace), options)


def test_an_issuer_that_cannot_be_reached_answers_502_not_a_challenge(tmp_path: Path) -> None:
    port = free_port()
    app = app_for(f"http://127.0.0.1:{free_port()}", port, tmp_path)
    token = f"{_part({'alg': 'RS256', 'typ': 'at+jwt', 'kid': 'k'})}.{_part({'sub': 'alice'})}.c2ln"
    with serving(app, port=port) as base:
        response = httpx2.get(f"{base}/tools", headers={"Authorization": f"Bearer {token}"}, timeout=30)
    assert response.status_code == 502
    assert response.json()["error"] == "external_service_error"
    assert "www-authenticate" not in response.headers  # a client must not throw its token away


def test_the_metadata_answers_a_browsers_preflight(tmp_path: Path) -> None:
    port = free_port()
    app = app_for("https://issuer.example", port, tmp_path)
    with serving(app, port=port) as base:
        preflight = httpx2.options(
            f"{base}/.well-known/oauth-protected-resource/mcp",
            headers={"Origin": "https://app.example", "Access-Control-Request-Method": "GET"},
            timeout=30,
        )
        metadata = httpx2.get(
            f"{base}/.well-known/oauth-protected-resource/mcp", headers={"Origin": "https://app.example"}, timeout=30
        )
    assert preflight.status_code == 200
    assert "GET" in preflight.headers["access-control-allow-methods"]
    assert metadata.headers["access-control-allow-origin"] == "*"
    assert metadata.json()["authorization_servers"] == ["https://issuer.example"]
