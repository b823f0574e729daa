"""A real OAuth authorization server for the authorization tests: the npm package oidc-provider
(tests/helpers/oidc/, installed by `.ci/run` with `npm ci`) started on a free loopback port.

It issues JWT access tokens (RS256, signed with the keys generated here, so tests can also sign
tokens of their own with the issuer's real key) for any resource `http://127.0.0.1:PORT/...`, and
opaque ones to clients whose id starts with "opaque-". Sign-in and consent are plain HTTP
(`complete_authorization`), no browser.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import queue
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx2
from joserfc import jwt
from joserfc.jwk import ECKey, RSAKey

PROVIDER_DIR = Path(__file__).resolve().parent / "oidc"
CLIENT_SECRET = "deskmcp-tests-client-secret-0123456789abcdef"
INTROSPECTOR = "deskmcp-resource-server"
"""The confidential client deskmcp introspects opaque tokens as."""
SERVICE = "service-client"
"""A client that gets JWT access tokens by client credentials."""
OPAQUE_SERVICE = "opaque-service-client"
"""A client that gets opaque access tokens by client credentials."""
DESKTOP_CLIENT = "desktop-client"
"""A public client (no secret, PKCE) registered for authorization code at `REDIRECT_URI`."""
REDIRECT_URI = "http://127.0.0.1:1/callback"
"""Where the authorization server sends the person back; tests read the code off that redirect."""


def provider_missing() -> str | None:
    """Why the provider cannot start here, or None."""
    if shutil.which("node") is None:
        return "node is not installed (the authorization tests run oidc-provider on it)"
    if not (PROVIDER_DIR / "node_modules" / "oidc-provider" / "package.json").is_file():
        return "oidc-provider is not installed: run `npm ci` in tests/helpers/oidc (.ci/run does)"
    return None


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


@dataclass
class AuthorizationServer:
    issuer: str
    key: RSAKey
    """The issuer's signing key (kid "rsa-1"), private part included."""
    clients: dict[str, str] = field(default_factory=dict)
    """Client id -> secret of the registered confidential clients."""

    def client_credentials(self, client_id: str, scope: str, resource: str) -> str:
        """An access token for `resource` from the real token endpoint."""
        response = httpx2.post(
            f"{self.issuer}/token",
            data={"grant_type": "client_credentials", "scope": scope, "resource": resource},
            auth=(client_id, self.clients[client_id]),
        )
        response.raise_for_status()
        return response.json()["access_token"]

    def revoke(self, token: str, client_id: str) -> None:
        response = httpx2.post(
            f"{self.issuer}/token/revocation", data={"token": token}, auth=(client_id, self.clients[client_id])
        )
        response.raise_for_status()

    def claims(self, resource: str, **overrides: Any) -> dict[str, Any]:
        """Claims of a valid access token for `resource`, changed by `overrides` (None removes one)."""
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": self.issuer,
            "sub": "alice",
            "aud": resource,
            "client_id": SERVICE,
            "scope": "read write send",
            "iat": now,
            "exp": now + 600,
            "jti": _b64(hashlib.sha256(str(time.monotonic_ns()).encode()).digest()[:12]),
        }
        claims.update(overrides)
        return {k: v for k, v in claims.items() if v is not None}

    def sign(self, claims: dict[str, Any], *, key: RSAKey | ECKey | None = None, alg: str = "RS256") -> str:
        """`claims` signed as an RFC 9068 access token with the issuer's key (or `key`)."""
        signer = key or self.key
        header = {"alg": alg, "typ": "at+jwt", "kid": signer.kid}
        return jwt.encode(header, claims, signer, algorithms=[alg])

    def unsigned(self, claims: dict[str, Any]) -> str:
        """`claims` as a JWT with `alg: none` and no signature."""
        header = {"alg": "none", "typ": "at+jwt", "kid": self.key.kid}
        return f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}."

    def hmac_with_public_key(self, claims: dict[str, Any]) -> str:
        """`claims` signed HS256 with the issuer's public key as the secret (the key-confusion attack)."""
        header = {"alg": "HS256", "typ": "at+jwt", "kid": self.key.kid}
        signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"
        secret = self.key.as_pem(private=False)
        signature = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
        return f"{signing_input}.{_b64(signature)}"


@contextmanager
def authorization_server(folder: Path, *, seconds: float = 60) -> Iterator[AuthorizationServer]:
    """Start oidc-provider for the block (config and keys written in `folder`)."""
    key = RSAKey.generate_key(2048, parameters={"kid": "rsa-1", "use": "sig", "alg": "RS256"}, private=True)
    clients = {INTROSPECTOR: CLIENT_SECRET, SERVICE: CLIENT_SECRET, OPAQUE_SERVICE: CLIENT_SECRET}
    config = {
        "resourcePrefix": "http://127.0.0.1:",
        "jwks": {"keys": [key.as_dict(private=True)]},
        "clients": [
            {
                "client_id": client_id,
                "client_secret": secret,
                "grant_types": ["client_credentials"],
                "response_types": [],
                "redirect_uris": [],
            }
            for client_id, secret in clients.items()
        ]
        + [
            {
                "client_id": DESKTOP_CLIENT,
                "token_endpoint_auth_method": "none",
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "redirect_uris": [REDIRECT_URI],
            }
        ],
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "provider.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    proc = subprocess.Popen(
        ["node", str(PROVIDER_DIR / "provider.mjs"), str(path)],
        cwd=PROVIDER_DIR,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        encoding="utf-8",
    )
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stdout is not None
    stdout = proc.stdout
    threading.Thread(target=lambda: [lines.put(line) for line in stdout], daemon=True).start()
    try:
        deadline = time.monotonic() + seconds
        issuer = None
        while issuer is None:
            line = lines.get(timeout=max(0.01, deadline - time.monotonic()))
            if line.startswith('{"issuer"'):
                issuer = json.loads(line)["issuer"]
        yield AuthorizationServer(issuer=issuer, key=key, clients=clients)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


@dataclass
class Person:
    """A person at the authorization server's sign-in and consent steps, driven over HTTP."""

    login: str = "alice"
    consents: int = 0
    client: httpx2.AsyncClient = field(default_factory=lambda: httpx2.AsyncClient(follow_redirects=False))
    """Keeps the provider's session cookies, as a browser would: a second authorization skips sign-in."""

    async def authorize(self, authorization_url: str, redirect_uri: str) -> dict[str, str]:
        """Follow `authorization_url` through sign-in and consent to the redirect back to the client;
        the query parameters of that redirect (code, state, iss)."""
        url = authorization_url
        for _ in range(20):
            if url.startswith(redirect_uri):
                params = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
                assert "code" in params, f"the authorization server answered {params}"
                return params
            response = await self.client.get(url)
            if response.is_redirect:
                url = urljoin(url, response.headers["location"])
                continue
            response.raise_for_status()
            step = response.json()
            action = "login" if step["prompt"] == "login" else "consent"
            if action == "consent":
                self.consents += 1
            form = {"login": self.login} if action == "login" else {}
            answer = await self.client.post(f"{url}/{action}", data=form)
            assert answer.is_redirect, answer.text
            url = urljoin(url, answer.headers["location"])
        raise AssertionError(f"the authorization did not come back to {redirect_uri}")


def protected_app(server: AuthorizationServer, port: int, workspace: Path, **settings: Any) -> tuple[Any, Any]:
    """deskmcp's HTTP app for `http://127.0.0.1:PORT/mcp` with `server` as its authorization server
    (introspecting as INTROSPECTOR), every toolset on, plus a read-only tool `whoami` answering the
    principal the call acts for; returns the app and its `ResourceServer`."""
    from deskmcp.core.principal import current_principal
    from deskmcp.core.server import READ_ONLY
    from deskmcp.gateway import compose
    from deskmcp.serving.app import create_app
    from deskmcp.serving.auth.gate import ResourceServer
    from deskmcp.serving.auth.settings import AuthorizationSettings
    from deskmcp.serving.options import HttpOptions

    options: dict[str, Any] = {
        "issuer": server.issuer,
        "resource": f"http://127.0.0.1:{port}/mcp",
        "client_id": INTROSPECTOR,
        "client_secret": CLIENT_SECRET,
        **settings,
    }
    resource_server = ResourceServer(AuthorizationSettings(**options))
    composition = compose(workspace=workspace, toolsets="all")

    @composition.server.tool("whoami", annotations=READ_ONLY)
    def whoami() -> dict[str, str]:
        """The principal this call acts for."""
        principal = current_principal()
        if principal is None:
            return {}
        return {"issuer": principal.issuer, "subject": principal.subject, "scopes": " ".join(sorted(principal.scopes))}

    app = create_app(composition, HttpOptions(port=port, workspace=workspace, authorization=resource_server))
    return app, resource_server
