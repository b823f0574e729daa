"""Opaque tokens, checked at the issuer's introspection endpoint (RFC 7662): what the answer must
say for the token to be accepted. The issuer is a small ASGI app that answers what each test
sets and records how it was asked (reached through httpx's ASGI transport)."""

from __future__ import annotations

import base64
import time
from typing import Any

import httpx2
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from deskmcp.serving.auth.settings import AuthorizationSettings
from deskmcp.serving.auth.verifier import AccessTokenVerifier, TokenRefused, principal_of

pytestmark = pytest.mark.anyio

ISSUER = "https://issuer.example"
RESOURCE = "https://desk.example/mcp"


class Introspection:
    def __init__(self, answer: dict[str, Any]) -> None:
        self.answer = answer
        self.asked: list[tuple[str, dict[str, str]]] = []

        async def metadata(_request: Request) -> Response:
            return JSONResponse({"issuer": ISSUER, "introspection_endpoint": f"{ISSUER}/introspect"})

        async def introspect(request: Request) -> Response:
            form = await request.form()
            self.asked.append((request.headers.get("authorization", ""), {k: str(v) for k, v in form.items()}))
            return JSONResponse(self.answer)

        self.app = Starlette(
            routes=[
                Route("/.well-known/oauth-authorization-server", metadata),
                Route("/introspect", introspect, methods=["POST"]),
            ]
        )

    def verifier(self) -> AccessTokenVerifier:
        settings = AuthorizationSettings(issuer=ISSUER, resource=RESOURCE, client_id="desk", client_secret="s3cret")
        return AccessTokenVerifier(settings, client=httpx2.AsyncClient(transport=httpx2.ASGITransport(app=self.app)))


def active(**changes: Any) -> dict[str, Any]:
    answer = {
        "active": True,
        "iss": ISSUER,
        "aud": RESOURCE,
        "sub": "alice",
        "client_id": "app",
        "scope": "read send other",
        "exp": int(time.time()) + 600,
    }
    answer.update(changes)
    return {k: v for k, v in answer.items() if v is not None}


async def test_an_active_token_for_this_resource_acts_for_its_subject_with_the_known_scopes() -> None:
    issuer = Introspection(active())
    principal = principal_of(await issuer.verifier().check("opaque-token"))
    assert (principal.issuer, principal.subject, principal.client_id) == (ISSUER, "alice", "app")
    assert principal.scopes == frozenset({"read", "send"})
    authorization, form = issuer.asked[0]
    assert authorization == "Basic " + base64.b64encode(b"desk:s3cret").decode()
    assert form == {"token": "opaque-token", "token_type_hint": "access_token"}


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ({"active": False}, "not active"),
        (active(active="true"), "not active"),
        (active(aud="https://other.example/mcp"), "audience"),
        (active(aud=None), "audience"),
        (active(iss="https://other.example"), "issued by"),
        (active(exp=int(time.time()) - 3600), "expired"),
    ],
    ids=["inactive", "active-not-a-boolean", "other-audience", "no-audience", "other-issuer", "expired"],
)
async def test_security_an_opaque_token_is_refused_unless_introspection_vouches_for_it(
    answer: dict[str, Any], reason: str
) -> None:
    with pytest.raises(TokenRefused, match=reason):
        await Introspection(answer).verifier().check("opaque-token")


async def test_security_opaque_tokens_are_refused_without_an_introspection_client() -> None:
    issuer = Introspection(active())
    settings = AuthorizationSettings(issuer=ISSUER, resource=RESOURCE)
    verifier = AccessTokenVerifier(settings, client=httpx2.AsyncClient(transport=httpx2.ASGITransport(app=issuer.app)))
    with pytest.raises(TokenRefused, match="no introspection client"):
        await verifier.check("opaque-token")
    assert issuer.asked == []
