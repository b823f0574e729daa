"""HTTP clients of cloud services (GitHub, Kroki): how they are built and how a request goes.

`new_client` builds the `httpx2.Client` every such service uses (a timeout, TLS verified, our
headers); `request` sends one request through a `Throttle` and a `RetryPolicy` and maps the
response or the transport failure onto the error taxonomy, so no tool sees a raw status code.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

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
from deskmcp.core.retry import Retry, RetryPolicy, retry_after_seconds
from deskmcp.core.throttle import Throttle

if TYPE_CHECKING:
    import httpx2

RETRYABLE_STATUS = frozenset({500, 502, 503, 504})
SECONDARY_LIMIT_WAIT = 60.0
"""Wait when a rate-limit answer names no time (GitHub: "wait at least one minute")."""


def new_client(
    *,
    timeout: float,
    headers: Mapping[str, str] | None = None,
    transport: httpx2.BaseTransport | None = None,
    follow_redirects: bool = False,
) -> httpx2.Client:
    """A client for one service: every call bounded by `timeout`, certificates always verified.

    `transport` is for tests (`httpx2.MockTransport`); httpx is imported here, not at start-up.
    """
    import httpx2

    # verify is left at httpx's default (True) on purpose: there is no setting to turn it off
    return httpx2.Client(
        timeout=timeout, headers=dict(headers or {}), transport=transport, follow_redirects=follow_redirects
    )


def _upstream_message(response: httpx2.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        for key in ("message", "error_description", "error"):
            value = body.get(key)
            if isinstance(value, str) and value:
                return value[:300]
            if isinstance(value, dict) and isinstance(value.get("message"), str):
                return value["message"][:300]
    try:
        return response.text.strip()[:300]
    except (UnicodeDecodeError, RuntimeError):
        return ""


def is_rate_limited(response: httpx2.Response) -> bool:
    """429, or a 403 that GitHub-style APIs use for primary and secondary rate limits."""
    if response.status_code == 429:
        return True
    if response.status_code != 403:
        return False
    headers = response.headers
    if headers.get("x-ratelimit-remaining", "").strip() == "0" or "retry-after" in headers:
        return True
    return "rate limit" in _upstream_message(response).lower()


def error_for_response(response: httpx2.Response, service: str, clock: Clock = SYSTEM_CLOCK) -> DeskError | None:
    """The taxonomy error a response stands for, or None for a success (1xx-3xx)."""
    status = response.status_code
    if status < 400:
        return None
    upstream = _upstream_message(response)
    details: dict[str, Any] = {"service": service, "status": status}
    if upstream:
        details["upstream_message"] = upstream
    if is_rate_limited(response):
        wait = retry_after_seconds(response.headers, clock)
        if wait is not None:
            details["retry_after"] = math.ceil(wait)
        return RateLimited(f"{service} is rate limiting requests.", details)
    if status == 401:
        return AuthRequired(f"{service} refused the credentials (401); check the token or sign in again.", details)
    if status == 403:
        return PermissionDenied(f"{service} denied access (403): {upstream or 'forbidden'}.", details)
    if status == 404:
        return NotFound(f"{service} has no such resource (404).", details)
    if status in (400, 409, 410, 422):
        return BadRequest(f"{service} rejected the request ({status}): {upstream or 'bad request'}.", details)
    if status == 408:
        return Timeout(f"{service} timed out (408).", details)
    return ExternalServiceError(f"{service} failed ({status}): {upstream or 'server error'}.", details)


def error_for_exception(exc: Exception, service: str) -> DeskError:
    """The taxonomy error for a transport failure (timeout, refused connection, TLS...)."""
    import httpx2

    details: dict[str, Any] = {"service": service, "reason": type(exc).__name__}
    if isinstance(exc, httpx2.TimeoutException):
        return Timeout(f"{service} did not answer in time; try again later.", details)
    if isinstance(exc, httpx2.ConnectError):
        return ExternalServiceError(f"Could not connect to {service}: {exc}.", details)
    return ExternalServiceError(f"Talking to {service} failed: {exc}.", details)


def _check_response(response: httpx2.Response, service: str, *, idempotent: bool, clock: Clock) -> httpx2.Response:
    """Return a successful response; raise `Retry` for a transient failure, else the error."""
    error = error_for_response(response, service, clock)
    if error is None:
        return response
    if isinstance(error, RateLimited):
        wait = retry_after_seconds(response.headers, clock)
        raise Retry(error, SECONDARY_LIMIT_WAIT if wait is None else wait)
    if idempotent and response.status_code in RETRYABLE_STATUS:
        raise Retry(error, retry_after_seconds(response.headers, clock))
    raise error


def _transport_failure(exc: Exception, service: str, idempotent: bool) -> DeskError | Retry:
    import httpx2

    error = error_for_exception(exc, service)
    # a refused connection never reached the server; other transport errors may have, so only
    # an idempotent request is sent again (a timeout is reported: the server may still be busy)
    retryable = isinstance(exc, httpx2.ConnectError) or (
        idempotent and isinstance(exc, httpx2.TransportError) and not isinstance(exc, httpx2.TimeoutException)
    )
    return Retry(error) if retryable else error


def request(
    client: httpx2.Client,
    method: str,
    url: str,
    *,
    service: str,
    retry: RetryPolicy | None = None,
    throttle: Throttle | None = None,
    idempotent: bool | None = None,
    **kwargs: Any,
) -> httpx2.Response:
    """Send one request through `throttle` and `retry`; a non-success becomes a `DeskError`.

    `idempotent` defaults to what the method promises (GET, HEAD, OPTIONS, PUT, DELETE); only
    an idempotent request is retried after a server error.
    """
    import httpx2

    policy = retry or RetryPolicy(attempts=1)
    safe = method.upper() in ("GET", "HEAD", "OPTIONS", "PUT", "DELETE") if idempotent is None else idempotent

    def attempt() -> httpx2.Response:
        try:
            if throttle is not None:
                with throttle:
                    response = client.request(method, url, **kwargs)
            else:
                response = client.request(method, url, **kwargs)
        except httpx2.HTTPError as exc:
            raise _transport_failure(exc, service, safe) from exc
        return _check_response(response, service, idempotent=safe, clock=policy.clock)

    return policy.call(attempt)
