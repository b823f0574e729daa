"""One error taxonomy for every server.

Every failure a tool reports is a `DeskError`: a plain exception tree (no SDK import, so
services, the meetings cache reader process and the CLI can raise and catch it without loading
the MCP SDK). `DeskServer.call_tool` (core/server.py) turns one into the tool result the model
sees: `isError: true` and the JSON object `{"error": code, "message": ..., "details": {...}}`.
Each code also carries the HTTP status the tool API answers with.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import orjson

ErrorCode = Literal[
    "bad_request",
    "not_found",
    "permission_denied",
    "parse_error",
    "io_error",
    "timeout",
    "auth_required",
    "rate_limited",
    "external_service_error",
    "send_failed",
    "mcp_unavailable",
    "conflict",
    "internal_error",
]


class DeskError(Exception):
    """Base of the taxonomy. Subclasses fix `code` and `http_status`."""

    code: ClassVar[ErrorCode] = "internal_error"
    http_status: ClassVar[int] = 500

    def __init__(self, message: str, details: dict[str, Any] | None = None) -> None:
        self.message = message
        self.details: dict[str, Any] = details or {}
        super().__init__(message)

    def to_dict(self) -> dict[str, Any]:
        return {"error": self.code, "message": self.message, "details": self.details}

    def to_json(self) -> str:
        return orjson.dumps(self.to_dict(), default=str).decode()

    def __str__(self) -> str:
        # The JSON body: what the model reads, and what a log line or the CLI shows.
        return self.to_json()


class BadRequest(DeskError):
    code = "bad_request"
    http_status = 400


class NotFound(DeskError):
    code = "not_found"
    http_status = 404


class PermissionDenied(DeskError):
    code = "permission_denied"
    http_status = 403


class ParseError(DeskError):
    code = "parse_error"
    http_status = 422


class IOFailure(DeskError):
    code = "io_error"
    http_status = 500


class Timeout(DeskError):
    code = "timeout"
    http_status = 504


class AuthRequired(DeskError):
    code = "auth_required"
    http_status = 401


class RateLimited(DeskError):
    code = "rate_limited"
    http_status = 429


class ExternalServiceError(DeskError):
    code = "external_service_error"
    http_status = 502


class SendFailed(DeskError):
    code = "send_failed"
    http_status = 502


class MCPUnavailable(DeskError):
    code = "mcp_unavailable"
    http_status = 503


class Conflict(DeskError):
    code = "conflict"
    http_status = 409


class InternalError(DeskError):
    code = "internal_error"
    http_status = 500


ERRORS_BY_CODE: dict[str, type[DeskError]] = {
    cls.code: cls
    for cls in (
        BadRequest,
        NotFound,
        PermissionDenied,
        ParseError,
        IOFailure,
        Timeout,
        AuthRequired,
        RateLimited,
        ExternalServiceError,
        SendFailed,
        MCPUnavailable,
        Conflict,
        InternalError,
    )
}


def from_payload(payload: dict[str, Any]) -> DeskError:
    """Rebuild an error from its JSON body (used by clients of our own servers)."""
    cls = ERRORS_BY_CODE.get(str(payload.get("error")), InternalError)
    details = payload.get("details")
    return cls(str(payload.get("message", "")), details if isinstance(details, dict) else None)
