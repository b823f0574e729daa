"""Principals for the per-user tests, before any token is verified: an ASGI wrapper that binds the
principal a test names in a header with `acting_for`, as the verifying middleware does for a token."""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from deskmcp.core.principal import Principal, acting_for

ISSUER = "https://id.example.test"
HEADER = "x-test-subject"


def principal(subject: str) -> Principal:
    return Principal(ISSUER, subject, frozenset({"read", "write", "send"}))


def as_user(subject: str) -> dict[str, str]:
    """The header that makes the wrapped app act for `subject`."""
    return {HEADER: subject}


class ActingFromHeader:
    """Binds `principal(<header value>)` around the app for requests carrying the header."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        subject = Headers(scope=scope).get(HEADER) if scope["type"] == "http" else None
        if subject is None:
            await self.app(scope, receive, send)
            return
        with acting_for(principal(subject)):
            await self.app(scope, receive, send)
