"""The ASGI middlewares every request passes, outermost first: the static bearer token
(`BearerGate`), the error taxonomy's JSON for every refusal (`TaxonomyErrors` rewrites the
plain-text ones the SDK and Starlette produce), a Host header's syntax (`HostSyntax`), the tool
API's body limit (413 before a handler reads the body) and unbuffered event streams.
"""

from __future__ import annotations

import hmac
import re
from typing import TYPE_CHECKING, Any

import orjson
from mcp.server.transport_security import (
    RequestBodyLimitMiddleware,
)
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from deskmcp.core.errors import (
    AuthRequired,
    BadRequest,
    DeskError,
    NotFound,
    PermissionDenied,
)

if TYPE_CHECKING:
    pass
from deskmcp.serving.options import MCP_PATH, OPEN_PATHS
from deskmcp.serving.responses import error_response


def bearer_ok(headers: Headers, token: str | None) -> bool:
    if token is None:
        return True
    scheme, _, value = headers.get("authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), token.encode())


class BearerGate:
    """Refuse every request without the right bearer token, except on `OPEN_PATHS`."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS or bearer_ok(Headers(scope=scope), self.token):
            await self.app(scope, receive, send)
            return
        denied = AuthRequired(
            "Missing or wrong bearer token. Send 'Authorization: Bearer <token>' with the token the server "
            "printed at start-up or the value of DESKMCP_TOKEN.",
        )
        await error_response(denied)(scope, receive, send)


PLAIN_ERRORS: dict[int, tuple[type[DeskError], str]] = {
    400: (BadRequest, "The request was refused: {text}. Send a JSON body with 'Content-Type: application/json'."),
    403: (
        PermissionDenied,
        "The request was refused: {text}. Web pages may only call from the server's own origin; "
        "allow another with DESKMCP_ALLOWED_ORIGINS=scheme://host[:port] (or --allow-origin).",
    ),
    404: (NotFound, "No such endpoint. The MCP endpoint is /mcp; the tool API is GET /tools and POST /api/tools/NAME."),
    405: (BadRequest, "Method not allowed on this endpoint: {text}. GET /tools lists the tools; POST calls one."),
    413: (
        BadRequest,
        "The request body is too large (over {limit}). Send less, or start the server with a larger --max-body-mb.",
    ),
    421: (
        PermissionDenied,
        "The request was refused: {text}. Call the server by an allowed host name (127.0.0.1, localhost), "
        "or start it with --allow-host NAME.",
    ),
}
"""Plain-text refusals from Starlette and the SDK's transport checks, and the taxonomy error each becomes."""


class TaxonomyErrors:
    """Answer every plain-text error (413, the Host/Origin checks, unknown routes) with the
    taxonomy's JSON body and the same status. JSON bodies (tool errors, JSON-RPC errors on /mcp)
    and HTML pages (the Google sign-in's) pass through untouched."""

    def __init__(self, app: ASGIApp, max_body_bytes: int) -> None:
        self.app = app
        self.limit = f"{max_body_bytes / 1024 / 1024:g} MiB"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        held: dict[str, Any] = {}

        async def rewrite(message: Message) -> None:
            if message["type"] == "http.response.start":
                status = message["status"]
                content_type = Headers(raw=message.get("headers", [])).get("content-type", "")
                # JSON bodies are already the taxonomy's; HTML is a page for a person's browser
                # (the Google sign-in's), shown as written.
                answered = ("application/json", "text/event-stream", "text/html")
                if status in PLAIN_ERRORS and not content_type.startswith(answered):
                    held["start"] = message
                    held["body"] = b""
                    return
                await send(message)
                return
            if "start" not in held or message["type"] != "http.response.body":
                await send(message)
                return
            held["body"] += message.get("body", b"")
            if message.get("more_body", False):
                return
            start = held.pop("start")
            cls, template = PLAIN_ERRORS[start["status"]]
            text = held.pop("body").decode("utf-8", "replace").strip() or "refused"
            error = cls(template.format(text=text, limit=self.limit), {"status": start["status"], "reason": text})
            body = orjson.dumps(error.to_dict())
            headers = [
                (k, v) for k, v in start.get("headers", []) if k.lower() not in (b"content-type", b"content-length")
            ]
            headers += [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, rewrite)


_HOST = re.compile(r"(?:[A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?")
"""A Host header's shape: a name or an IPv4 address, or a bracketed IPv6 address, and a port."""


class HostSyntax:
    """Refuse (421) a Host header that is no host name and port (`localhost:1@evil.example`), before
    the allowed-host check, which matches `localhost:*` by its beginning."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            host = Headers(scope=scope).get("host")
            if host is not None and _HOST.fullmatch(host) is None:
                response = Response("Invalid Host header", status_code=421, media_type="text/plain")
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


class UnbufferedEvents:
    """Mark every event stream `X-Accel-Buffering: no`, so that a proxy (nginx reads the header)
    passes each event on as it comes instead of holding the response until it ends."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def marked(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                is_stream = Headers(raw=headers).get("content-type", "").startswith("text/event-stream")
                if is_stream and all(k.lower() != b"x-accel-buffering" for k, _ in headers):
                    message = {**message, "headers": [*headers, (b"x-accel-buffering", b"no")]}
            await send(message)

        await self.app(scope, receive, marked)


class ToolApiBodyLimit:
    """413 for tool API bodies over the limit; `/mcp` gets the same limit from the SDK's session manager."""

    def __init__(self, app: ASGIApp, max_body_size: int) -> None:
        self.app = app
        self.limited = RequestBodyLimitMiddleware(app, max_body_size)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        target = self.app if scope.get("path") == MCP_PATH else self.limited
        await target(scope, receive, send)
