"""Google's failures mapped onto the taxonomy of `deskmcp.core.errors`, one way for every API.

Google answers an error with a JSON body in one of two shapes, sometimes both at once:

- the older one (Gmail, Drive): `error.errors[]`, each with a `reason` such as
  `rateLimitExceeded` and a `domain` such as `usageLimits`;
- the google.rpc one (Sheets v4, newer Gmail answers): `error.status` such as
  `RESOURCE_EXHAUSTED` and `error.details[]`, whose `google.rpc.ErrorInfo` carries a `reason`
  such as `RATE_LIMIT_EXCEEDED`.

Every reason of both lists is read and compared exactly: a substring test would take
`userRateLimitExceededUnreg` (a caller without a registered project: configuration, not load)
for a rate limit and retry it for nothing.

`map_error` answers a `DeskError` for a failure that retrying cannot fix, or a `Retry` around
one for a failure that may pass (rate limits, Google's 5xx, timeouts, broken connections), with
the wait Google asked for. A caller whose request adds something asks `may_have_applied`
before repeating it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from deskmcp.core.clock import SYSTEM_CLOCK, Clock
from deskmcp.core.errors import (
    AuthRequired,
    BadRequest,
    DeskError,
    ExternalServiceError,
    NotFound,
    PermissionDenied,
    RateLimited,
    Timeout,
)
from deskmcp.core.extras import needs_extra
from deskmcp.core.retry import Retry, retry_after_seconds
from deskmcp.google.auth import AUTH_COMMAND, GOOGLE_FEATURE

# A 403 with one of these reasons is load, not a refusal: wait and try again.
RATE_LIMIT_REASONS = frozenset({"rateLimitExceeded", "userRateLimitExceeded", "quotaExceeded", "RATE_LIMIT_EXCEEDED"})
# The project's quota for the day is used up: rate_limited too, but waiting seconds cannot help.
DAILY_LIMIT_REASONS = frozenset({"dailyLimitExceeded"})


@dataclass(frozen=True)
class GoogleApi:
    """How one API's failures are worded for the model."""

    name: str  # "Gmail", "Google Sheets"
    key: str  # details["service"]: "gmail", "google_sheets"
    listing: str  # how to find valid ids after a 404
    forbidden: str  # what to check after a 403


@dataclass(frozen=True)
class GoogleErrorBody:
    """What an error body says: its message and every reason it gives."""

    message: str
    reasons: tuple[str, ...]
    status: str = ""  # google.rpc status, e.g. "PERMISSION_DENIED"


def parse_error_body(content: bytes | str | None, fallback: str = "") -> GoogleErrorBody:
    """The message and reasons of a Google error body (`error.errors[].reason`, `error.details[].reason`)."""
    try:
        text = content.decode("utf-8") if isinstance(content, bytes) else (content or "")
        data: Any = json.loads(text)
    except (UnicodeDecodeError, ValueError):
        return GoogleErrorBody((fallback or "no details")[:300], ())
    if isinstance(data, list) and data:  # a batch answer: the first error speaks for the rest
        data = data[0]
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, str):  # the OAuth endpoints: {"error": "invalid_grant", "error_description": ...}
        description = data.get("error_description") if isinstance(data, dict) else None
        return GoogleErrorBody(str(description or error)[:300], (error,))
    if not isinstance(error, dict):
        return GoogleErrorBody((fallback or "no details")[:300], ())
    reasons: list[str] = []
    for key in ("errors", "details"):
        entries = error.get(key)
        for entry in entries if isinstance(entries, list) else []:
            if isinstance(entry, dict) and isinstance(entry.get("reason"), str) and entry["reason"] not in reasons:
                reasons.append(entry["reason"])
    message = str(error.get("message") or fallback or "no details")[:300]
    return GoogleErrorBody(message, tuple(reasons), str(error.get("status") or ""))


def map_error(exc: BaseException, api: GoogleApi, *, clock: Clock = SYSTEM_CLOCK) -> DeskError | Retry:
    """The taxonomy error for a failure of a Google API call, wrapped in `Retry` when retrying may help."""
    if isinstance(exc, DeskError):
        return exc
    with needs_extra("google", GOOGLE_FEATURE):
        from google.auth.exceptions import DefaultCredentialsError, RefreshError, TransportError
        from googleapiclient.errors import HttpError
        from httplib2 import HttpLib2Error

    if isinstance(exc, HttpError):
        return map_http_error(int(exc.resp.status), dict(exc.resp), exc.content, api, clock=clock, fallback=exc.reason)
    if isinstance(exc, RefreshError | DefaultCredentialsError):
        return AuthRequired(
            f"Google refused the credentials: {str(exc)[:300]}. Run `{AUTH_COMMAND}` to authorise deskmcp again "
            "(with a service account: check its key and its domain-wide delegation).",
            {"service": api.key, "command": AUTH_COMMAND},
        )
    if isinstance(exc, TimeoutError):
        return Retry(Timeout(f"{api.name} did not answer in time.", {"service": api.key}))
    if isinstance(exc, TransportError | HttpLib2Error | OSError):
        return Retry(ExternalServiceError(f"{api.name} could not be reached: {exc}.", {"service": api.key}))
    return ExternalServiceError(f"{api.name} failed: {str(exc)[:300]}.", {"service": api.key})


def map_http_error(
    status: int,
    headers: dict[str, Any],
    content: bytes | str | None,
    api: GoogleApi,
    *,
    clock: Clock = SYSTEM_CLOCK,
    fallback: str = "",
) -> DeskError | Retry:
    """The taxonomy error for one HTTP error answer of a Google API."""
    body = parse_error_body(content, fallback)
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    details: dict[str, Any] = {"service": api.key, "status": status}
    if body.reasons:
        details["reason"] = body.reasons[0]
    message = body.message
    rate_reasons = [r for r in body.reasons if r in RATE_LIMIT_REASONS]
    if status == 403 and any(r in DAILY_LIMIT_REASONS for r in body.reasons):
        details["reason"] = next(r for r in body.reasons if r in DAILY_LIMIT_REASONS)
        return RateLimited(
            f"{api.name}'s daily quota for this project is used up: {message}. It comes back the next day; "
            "a larger quota is asked for in the Google Cloud console.",
            details,
        )
    if status == 429 or (status == 403 and rate_reasons):
        if rate_reasons:
            details["reason"] = rate_reasons[0]
        error = RateLimited(f"{api.name} is rate limiting deskmcp: {message}", details)
        return Retry(error, retry_after_seconds(lowered, clock))
    if status >= 500:
        error = ExternalServiceError(f"{api.name} failed ({status}): {message}", details)
        return Retry(error, retry_after_seconds(lowered, clock))
    if status == 401:
        return AuthRequired(
            f"{api.name} refused the authorisation. Run `{AUTH_COMMAND}` to authorise deskmcp again.",
            details | {"command": AUTH_COMMAND},
        )
    if status == 403:
        return PermissionDenied(f"{api.name} refused access: {message}. {api.forbidden}", details)
    if status == 404:
        return NotFound(f"{api.name} has no such item: {message}. {api.listing}", details)
    if status == 400:
        return BadRequest(f"{api.name} refused the request: {message}", details)
    return ExternalServiceError(f"{api.name} answered {status}: {message}", details)


def may_have_applied(signal: DeskError | Retry) -> bool:
    """Whether the failed request may still have taken effect, so repeating it could do it twice.

    A rate limit is a refusal before any work; a 5xx, a timeout or a dropped connection leave it
    unknown."""
    return isinstance(signal, Retry) and not isinstance(signal.error, RateLimited)
