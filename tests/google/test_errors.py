"""One mapping of Google's failures onto the taxonomy (deskmcp.google.errors).

The bodies are the shapes Gmail and Sheets document: Gmail's `error.errors[]` with `reason` and
`domain` (its "Resolve errors" guide), the google.rpc form of Sheets v4 with `error.status` and an
`ErrorInfo` in `error.details[]`, and answers carrying both. Each is raised as the real
`googleapiclient.errors.HttpError` the client raises.
"""

from __future__ import annotations

import json
from typing import Any

import httplib2
import pytest
from google.auth.exceptions import RefreshError, TransportError
from googleapiclient.errors import HttpError

from deskmcp.core.clock import Clock
from deskmcp.core.errors import DeskError
from deskmcp.core.retry import Retry
from deskmcp.google.errors import GoogleApi, map_error, may_have_applied, parse_error_body


class FixedClock(Clock):
    """A wall clock stopped at `now` (epoch seconds); nothing here sleeps."""

    def __init__(self, now: float) -> None:
        self.now = now

    def time(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        raise AssertionError("the mapper never sleeps")


API = GoogleApi(name="Gmail", key="gmail", listing="Call list_emails for valid ids.", forbidden="Check the scopes.")


def legacy(code: int, message: str, reason: str, domain: str = "global") -> dict[str, Any]:
    """Gmail's documented shape: error.errors[] with reason and domain."""
    return {
        "error": {
            "code": code,
            "message": message,
            "errors": [{"domain": domain, "reason": reason, "message": message}],
        }
    }


def rpc(code: int, status: str, message: str, reason: str | None = None) -> dict[str, Any]:
    """The google.rpc shape of Sheets v4: error.status and an ErrorInfo in error.details[]."""
    details: list[dict[str, Any]] = []
    if reason is not None:
        details.append(
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": reason,
                "domain": "googleapis.com",
                "metadata": {"service": "sheets.googleapis.com", "quota_metric": "sheets.googleapis.com/read_requests"},
            }
        )
    details.append({"@type": "type.googleapis.com/google.rpc.Help", "links": [{"description": "console", "url": "x"}]})
    return {"error": {"code": code, "message": message, "status": status, "details": details}}


def http_error(status: int, body: Any, **headers: str) -> HttpError:
    resp = httplib2.Response({"status": str(status), "content-type": "application/json", **headers})
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return HttpError(resp, content, uri="https://gmail.googleapis.com/gmail/v1/users/me/messages")


USER_RATE = "User Rate Limit Exceeded. Rate of requests for user exceed configured project quota."
SHEETS_QUOTA = (
    "Quota exceeded for quota metric 'Read requests' and limit 'Read requests per minute per user' "
    "of service 'sheets.googleapis.com' for consumer 'project_number:1'."
)
BOTH = {
    "error": {
        "code": 403,
        "message": "Rate Limit Exceeded",
        "errors": [{"domain": "usageLimits", "reason": "rateLimitExceeded", "message": "Rate Limit Exceeded"}],
        "status": "PERMISSION_DENIED",
        "details": [{"@type": "type.googleapis.com/google.rpc.Help", "links": []}],
    }
}

# (name, status, body, headers, code, retried, retry_after)
TABLE: list[tuple[str, int, Any, dict[str, str], str, bool, float | None]] = [
    (
        "gmail 400 badRequest",
        400,
        legacy(400, "Sorting is not supported for queries with fullText terms.", "badRequest"),
        {},
        "bad_request",
        False,
        None,
    ),
    ("gmail 401 authError", 401, legacy(401, "Invalid Credentials", "authError"), {}, "auth_required", False, None),
    (
        "gmail 403 userRateLimitExceeded",
        403,
        legacy(403, USER_RATE, "userRateLimitExceeded", "usageLimits"),
        {},
        "rate_limited",
        True,
        None,
    ),
    (
        "gmail 403 rateLimitExceeded with Retry-After",
        403,
        legacy(403, "Rate Limit Exceeded", "rateLimitExceeded", "usageLimits"),
        {"retry-after": "12"},
        "rate_limited",
        True,
        12.0,
    ),
    (
        "403 quotaExceeded",
        403,
        legacy(403, "Quota exceeded", "quotaExceeded", "usageLimits"),
        {},
        "rate_limited",
        True,
        None,
    ),
    (
        "gmail 403 dailyLimitExceeded is not retried",
        403,
        legacy(403, "Daily Limit Exceeded", "dailyLimitExceeded", "usageLimits"),
        {},
        "rate_limited",
        False,
        None,
    ),
    (
        "gmail 403 domainPolicy",
        403,
        legacy(403, "The domain administrators have disabled Gmail apps.", "domainPolicy"),
        {},
        "permission_denied",
        False,
        None,
    ),
    (
        "403 userRateLimitExceededUnreg is configuration, not load",
        403,
        legacy(403, "Daily Limit for Unauthenticated Use Exceeded.", "userRateLimitExceededUnreg", "usageLimits"),
        {},
        "permission_denied",
        False,
        None,
    ),
    (
        "403 reasons in errors[] beside a details[] without reasons",
        403,
        BOTH,
        {},
        "rate_limited",
        True,
        None,
    ),
    (
        "gmail 429 rateLimitExceeded with Retry-After",
        429,
        legacy(429, "User-rate limit exceeded.", "rateLimitExceeded", "usageLimits"),
        {"retry-after": "7"},
        "rate_limited",
        True,
        7.0,
    ),
    (
        "gmail 500 backendError",
        500,
        legacy(500, "Backend Error", "backendError"),
        {},
        "external_service_error",
        True,
        None,
    ),
    (
        "sheets 429 RESOURCE_EXHAUSTED with RATE_LIMIT_EXCEEDED",
        429,
        rpc(429, "RESOURCE_EXHAUSTED", SHEETS_QUOTA, "RATE_LIMIT_EXCEEDED"),
        {},
        "rate_limited",
        True,
        None,
    ),
    (
        "403 with an ErrorInfo RATE_LIMIT_EXCEEDED",
        403,
        rpc(403, "PERMISSION_DENIED", SHEETS_QUOTA, "RATE_LIMIT_EXCEEDED"),
        {},
        "rate_limited",
        True,
        None,
    ),
    (
        "sheets 403 PERMISSION_DENIED",
        403,
        rpc(403, "PERMISSION_DENIED", "The caller does not have permission"),
        {},
        "permission_denied",
        False,
        None,
    ),
    (
        "403 ACCESS_TOKEN_SCOPE_INSUFFICIENT",
        403,
        rpc(
            403,
            "PERMISSION_DENIED",
            "Request had insufficient authentication scopes.",
            "ACCESS_TOKEN_SCOPE_INSUFFICIENT",
        ),
        {},
        "permission_denied",
        False,
        None,
    ),
    (
        "sheets 404 NOT_FOUND",
        404,
        rpc(404, "NOT_FOUND", "Requested entity was not found."),
        {},
        "not_found",
        False,
        None,
    ),
    (
        "sheets 400 INVALID_ARGUMENT",
        400,
        rpc(400, "INVALID_ARGUMENT", "Unable to parse range: Nope!A1"),
        {},
        "bad_request",
        False,
        None,
    ),
    (
        "sheets 503 UNAVAILABLE with Retry-After",
        503,
        rpc(503, "UNAVAILABLE", "The service is currently unavailable."),
        {"retry-after": "30"},
        "external_service_error",
        True,
        30.0,
    ),
    ("502 with an HTML page", 502, b"<html><body>Bad Gateway</body></html>", {}, "external_service_error", True, None),
    ("409 conflict", 409, rpc(409, "ABORTED", "Concurrent edit."), {}, "external_service_error", False, None),
]


@pytest.mark.parametrize(
    ("status", "body", "headers", "code", "retried", "retry_after"),
    [row[1:] for row in TABLE],
    ids=[row[0] for row in TABLE],
)
def test_google_http_errors_map_onto_one_taxonomy(
    status: int, body: Any, headers: dict[str, str], code: str, retried: bool, retry_after: float | None
) -> None:
    signal = map_error(http_error(status, body, **headers), API, clock=FixedClock(1_700_000_000.0))
    error = signal.error if isinstance(signal, Retry) else signal
    assert (error.code, isinstance(signal, Retry)) == (code, retried)
    assert (signal.retry_after if isinstance(signal, Retry) else None) == retry_after
    assert error.details["status"] == status and error.details["service"] == "gmail"


def test_messages_carry_google_words_and_how_to_recover() -> None:
    missing = map_error(http_error(404, rpc(404, "NOT_FOUND", "Requested entity was not found.")), API)
    denied = map_error(http_error(401, legacy(401, "Invalid Credentials", "authError")), API)
    assert isinstance(missing, DeskError) and isinstance(denied, DeskError)
    assert missing.message == "Gmail has no such item: Requested entity was not found.. Call list_emails for valid ids."
    assert "deskmcp auth google" in denied.message and denied.details["command"] == "deskmcp auth google"


def test_rate_limit_reason_is_the_one_that_matched() -> None:
    body = {
        "error": {
            "code": 403,
            "message": "Rate Limit Exceeded",
            "errors": [{"reason": "forbidden"}, {"reason": "userRateLimitExceeded"}],
        }
    }
    signal = map_error(http_error(403, body), API)
    assert isinstance(signal, Retry)
    assert signal.error.details["reason"] == "userRateLimitExceeded"


def test_retry_after_as_an_http_date_is_read_against_the_given_clock() -> None:
    clock = FixedClock(1_700_000_000.0)  # 2023-11-14T22:13:20Z
    when = "Tue, 14 Nov 2023 22:15:00 GMT"
    signal = map_error(
        http_error(429, legacy(429, "Too many", "rateLimitExceeded"), **{"retry-after": when}), API, clock=clock
    )
    assert isinstance(signal, Retry)
    assert signal.retry_after == pytest.approx(100.0)


def test_error_bodies_give_every_reason_of_both_lists_exactly() -> None:
    body = {
        "error": {
            "message": "m",
            "errors": [{"reason": "rateLimitExceeded"}, {"reason": 3}, "junk"],
            "details": [{"reason": "RATE_LIMIT_EXCEEDED"}, {"@type": "Help"}],
            "status": "RESOURCE_EXHAUSTED",
        }
    }
    parsed = parse_error_body(json.dumps(body).encode())
    assert parsed.reasons == ("rateLimitExceeded", "RATE_LIMIT_EXCEEDED")
    assert parsed.status == "RESOURCE_EXHAUSTED"
    assert parse_error_body(b'[{"error": {"message": "first", "errors": [{"reason": "x"}]}}]').reasons == ("x",)
    assert parse_error_body(b'{"error": "invalid_grant", "error_description": "revoked"}').message == "revoked"
    assert parse_error_body(b"\xff not json", "Bad Gateway").message == "Bad Gateway"


@pytest.mark.parametrize(
    ("exc", "code", "retried"),
    [
        (TimeoutError("timed out"), "timeout", True),
        (ConnectionResetError(104, "Connection reset by peer"), "external_service_error", True),
        (
            httplib2.ServerNotFoundError("Unable to find the server at gmail.googleapis.com"),
            "external_service_error",
            True,
        ),
        (TransportError("token endpoint unreachable"), "external_service_error", True),
        (RefreshError("unauthorized_client: Client is unauthorized to retrieve access tokens"), "auth_required", False),
        (ValueError("unexpected"), "external_service_error", False),
    ],
    ids=["timeout", "reset", "dns", "auth transport", "refresh refused", "other"],
)
def test_transport_and_google_auth_failures_map_onto_the_taxonomy(exc: Exception, code: str, retried: bool) -> None:
    signal = map_error(exc, API)
    error = signal.error if isinstance(signal, Retry) else signal
    assert (error.code, isinstance(signal, Retry)) == (code, retried)


def test_only_a_rate_limit_is_known_not_to_have_been_applied() -> None:
    limited = map_error(http_error(429, legacy(429, "Too many", "rateLimitExceeded")), API)
    failed = map_error(http_error(503, rpc(503, "UNAVAILABLE", "down")), API)
    timed_out = map_error(TimeoutError(), API)
    refused = map_error(http_error(400, rpc(400, "INVALID_ARGUMENT", "bad")), API)
    assert [may_have_applied(s) for s in (limited, failed, timed_out, refused)] == [False, True, True, False]
