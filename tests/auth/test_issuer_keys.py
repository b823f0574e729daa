"""The issuer's signing keys as the verifier keeps them: found through the issuer's metadata,
cached, refetched when a token names a key id the cache lacks (a rotation), but not more often
than the interval allows, and fetched again once too old. The issuer here is a small ASGI app
reached through httpx's ASGI transport, so every fetch is counted; time is a test clock."""

from __future__ import annotations

import re
import time
from typing import Any

import httpx2
import pytest
from joserfc import jwt
from joserfc.jwk import ECKey, RSAKey
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from deskmcp.serving.auth.issuer import IssuerUnavailable, metadata_urls
from deskmcp.serving.auth.settings import AuthorizationSettings
from deskmcp.serving.auth.verifier import AccessTokenVerifier, TokenRefused

pytestmark = pytest.mark.anyio

ISSUER = "https://issuer.example/tenant"
RESOURCE = "https://desk.example/mcp"


class Issuer:
    """Metadata at the OpenID Connect URL only (the RFC 8414 one answers 404), keys at /jwks."""

    def __init__(self, *keys: RSAKey | ECKey, named: str = ISSUER) -> None:
        self.keys = list(keys)
        self.named = named
        self.jwks_fetches = 0

        async def metadata(_request: Request) -> Response:
            return JSONResponse({"issuer": self.named, "jwks_uri": "https://issuer.example/jwks"})

        async def jwks(_request: Request) -> Response:
            self.jwks_fetches += 1
            return JSONResponse({"keys": [k.as_dict(private=False) for k in self.keys]})

        self.app = Starlette(
            routes=[
                Route("/tenant/.well-known/openid-configuration", metadata),
                Route("/jwks", jwks),
            ]
        )


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def verifier(issuer: Issuer, clock: Clock) -> AccessTokenVerifier:
    settings = AuthorizationSettings(issuer=ISSUER, resource=RESOURCE)
    client = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=issuer.app))
    return AccessTokenVerifier(settings, client=client, clock=clock)


def token(key: RSAKey | ECKey, clock: Clock, alg: str = "RS256", **claims: Any) -> str:
    body = {"iss": ISSUER, "aud": RESOURCE, "sub": "alice", "scope": "read", "exp": int(clock.now) + 600, **claims}
    return jwt.encode({"alg": alg, "kid": key.kid, "typ": "at+jwt"}, body, key, algorithms=[alg])


def rsa(kid: str) -> RSAKey:
    return RSAKey.generate_key(2048, parameters={"kid": kid}, private=True)


def test_metadata_is_looked_for_at_the_rfc8414_then_the_openid_urls() -> None:
    assert metadata_urls(ISSUER) == [
        "https://issuer.example/.well-known/oauth-authorization-server/tenant",
        "https://issuer.example/tenant/.well-known/openid-configuration",
        "https://issuer.example/.well-known/openid-configuration/tenant",
    ]


async def test_a_key_the_issuer_rotated_in_is_found_by_one_refetch() -> None:
    old, new = rsa("old"), rsa("new")
    issuer, clock = Issuer(old), Clock()
    check = verifier(issuer, clock)
    assert (await check.check(token(old, clock))).subject == "alice"
    issuer.keys.append(new)
    accepted = await check.check(token(new, clock))
    assert accepted.subject == "alice"
    assert accepted.scopes == ["read"]
    assert issuer.jwks_fetches == 2


async def test_security_unknown_kids_refetch_the_keys_at_most_once_per_interval() -> None:
    known = rsa("known")
    issuer, clock = Issuer(known), Clock()
    check = verifier(issuer, clock)
    await check.check(token(known, clock))
    rogues = [ECKey.generate_key("P-256", parameters={"kid": f"rogue-{n}"}, private=True) for n in range(3)]
    for rogue in rogues:
        with pytest.raises(TokenRefused, match="not among the issuer's keys"):
            await check.check(token(rogue, clock, alg="ES256"))
    assert issuer.jwks_fetches == 2  # the first unknown kid refetched; the next two did not
    clock.now += 61
    with pytest.raises(TokenRefused):
        await check.check(token(rogues[0], clock, alg="ES256"))
    assert issuer.jwks_fetches == 3


async def test_keys_older_than_their_max_age_are_fetched_again() -> None:
    key = rsa("k")
    issuer, clock = Issuer(key), Clock()
    check = verifier(issuer, clock)
    await check.check(token(key, clock))
    clock.now += 3601
    await check.check(token(key, clock))
    assert issuer.jwks_fetches == 2


async def test_security_metadata_naming_another_issuer_is_not_trusted() -> None:
    key = rsa("k")
    issuer, clock = Issuer(key, named="https://evil.example/tenant"), Clock()
    with pytest.raises(IssuerUnavailable, match=re.escape("names issuer 'https://evil.example/tenant'")):
        await verifier(issuer, clock).check(token(key, clock))
    assert issuer.jwks_fetches == 0


async def test_security_an_algorithm_left_off_the_allow_list_is_refused_before_any_key_is_fetched() -> None:
    key = ECKey.generate_key("P-256", parameters={"kid": "ec"}, private=True)
    issuer, clock = Issuer(key), Clock()
    settings = AuthorizationSettings(issuer=ISSUER, resource=RESOURCE, algorithms=("RS256",))
    client = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=issuer.app))
    check = AccessTokenVerifier(settings, client=client, clock=clock)
    with pytest.raises(TokenRefused, match="alg 'ES256'"):
        await check.check(token(key, clock, alg="ES256"))
    assert issuer.jwks_fetches == 0
