"""HTTP requests of cloud clients: errors mapped onto the taxonomy, retries, throttling."""

from __future__ import annotations

import httpx2
import pytest

from deskmcp.core.errors import (
    AuthRequired,
    BadRequest,
    ExternalServiceError,
    NotFound,
    PermissionDenied,
    RateLimited,
    Timeout,
)
from deskmcp.core.http import error_for_exception, error_for_response, new_client, request
from deskmcp.core.retry import RetryPolicy
from deskmcp.core.throttle import Throttle
from tests.helpers.clock import ManualClock

START = 1_800_000_000.0


def _response(status: int, headers: dict[str, str] | None = None, json: object = None) -> httpx2.Response:
    return httpx2.Response(status, headers=headers, json=json, request=httpx2.Request("GET", "https://x.test/"))


def test_responses_map_onto_the_error_taxonomy() -> None:
    clock = ManualClock(START)
    assert error_for_response(_response(200), "Svc", clock) is None
    assert isinstance(error_for_response(_response(401), "Svc", clock), AuthRequired)
    assert isinstance(
        error_for_response(_response(403, json={"message": "Resource not accessible"}), "Svc"), PermissionDenied
    )
    assert isinstance(error_for_response(_response(404), "Svc", clock), NotFound)
    assert isinstance(error_for_response(_response(422, json={"message": "bad ref"}), "Svc", clock), BadRequest)
    assert isinstance(error_for_response(_response(503), "Svc", clock), ExternalServiceError)
    limited = error_for_response(
        _response(403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(START + 60))}), "Svc", clock
    )
    assert isinstance(limited, RateLimited)
    assert limited.details["retry_after"] == 60
    secondary = error_for_response(
        _response(403, json={"message": "You have exceeded a secondary rate limit."}), "Svc", clock
    )
    assert isinstance(secondary, RateLimited)
    assert isinstance(error_for_response(_response(429, {"retry-after": "5"}), "Svc", clock), RateLimited)
    error = error_for_response(_response(500, json={"message": "oops"}), "Svc", clock)
    assert error is not None
    assert error.details == {"service": "Svc", "status": 500, "upstream_message": "oops"}
    assert "500" not in error.code


def test_transport_exceptions_map_onto_timeout_and_external_service_error() -> None:
    req = httpx2.Request("GET", "https://x.test/")
    assert isinstance(error_for_exception(httpx2.ReadTimeout("slow", request=req), "Svc"), Timeout)
    assert isinstance(error_for_exception(httpx2.ConnectError("refused", request=req), "Svc"), ExternalServiceError)


def _transport(responses: list[httpx2.Response | Exception], seen: list[httpx2.Request]) -> httpx2.MockTransport:
    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        item = responses.pop(0)
        if isinstance(item, Exception):
            raise item
        return item

    return httpx2.MockTransport(handler)


def test_request_retries_a_server_error_then_succeeds() -> None:
    seen: list[httpx2.Request] = []
    clock = ManualClock()
    transport = _transport([httpx2.Response(500), httpx2.Response(502), httpx2.Response(200, json={"ok": 1})], seen)
    with httpx2.Client(transport=transport) as client:
        response = request(client, "GET", "https://x.test/a", service="Svc", retry=RetryPolicy(attempts=4, clock=clock))
    assert response.json() == {"ok": 1}
    assert len(seen) == 3
    assert len(clock.sleeps) == 2


def test_request_honours_retry_after_on_429() -> None:
    seen: list[httpx2.Request] = []
    clock = ManualClock()
    transport = _transport([httpx2.Response(429, headers={"retry-after": "3"}), httpx2.Response(200)], seen)
    with httpx2.Client(transport=transport) as client:
        request(client, "GET", "https://x.test/", service="Svc", retry=RetryPolicy(clock=clock))
    assert clock.sleeps == [3.0]


def test_request_does_not_retry_a_failed_post_unless_told_it_is_idempotent() -> None:
    seen: list[httpx2.Request] = []
    transport = _transport([httpx2.Response(503), httpx2.Response(200)], seen)
    with httpx2.Client(transport=transport) as client, pytest.raises(ExternalServiceError):
        request(client, "POST", "https://x.test/", service="Svc", retry=RetryPolicy(clock=ManualClock()))
    assert len(seen) == 1


def test_request_reports_a_timeout_without_retrying() -> None:
    seen: list[httpx2.Request] = []
    req = httpx2.Request("GET", "https://x.test/")
    transport = _transport([httpx2.ReadTimeout("slow", request=req), httpx2.Response(200)], seen)
    with httpx2.Client(transport=transport) as client, pytest.raises(Timeout):
        request(client, "GET", "https://x.test/", service="Svc", retry=RetryPolicy(clock=ManualClock()))
    assert len(seen) == 1


def test_request_retries_a_refused_connection() -> None:
    seen: list[httpx2.Request] = []
    req = httpx2.Request("GET", "https://x.test/")
    clock = ManualClock()
    transport = _transport([httpx2.ConnectError("refused", request=req), httpx2.Response(200)], seen)
    with httpx2.Client(transport=transport) as client:
        assert request(client, "GET", "https://x.test/", service="Svc", retry=RetryPolicy(clock=clock)).is_success
    assert len(seen) == 2


def test_request_gives_rate_limited_with_reset_when_the_primary_limit_is_spent() -> None:
    clock = ManualClock(START)
    reset = str(int(START + 600))
    seen: list[httpx2.Request] = []
    limited = httpx2.Response(403, headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": reset})
    with httpx2.Client(transport=_transport([limited], seen)) as client, pytest.raises(RateLimited) as info:
        request(client, "GET", "https://x.test/", service="GitHub", retry=RetryPolicy(max_wait=30, clock=clock))
    assert info.value.details["retry_after"] == 600
    assert info.value.details["reset_at"].endswith("Z")
    assert clock.sleeps == []


def test_request_waits_a_minute_for_a_secondary_limit_without_retry_after() -> None:
    clock = ManualClock()
    seen: list[httpx2.Request] = []
    secondary = httpx2.Response(403, json={"message": "You have exceeded a secondary rate limit"})
    transport = _transport([secondary, httpx2.Response(200)], seen)
    with httpx2.Client(transport=transport) as client:
        request(client, "GET", "https://x.test/", service="GitHub", retry=RetryPolicy(max_wait=120, clock=clock))
    assert clock.sleeps == [60.0]


def test_request_goes_through_the_throttle_rate_limit() -> None:
    clock = ManualClock()
    seen: list[httpx2.Request] = []
    transport = _transport([httpx2.Response(200), httpx2.Response(200)], seen)
    throttle = Throttle(concurrency=1, per_minute=1, clock=clock)
    with httpx2.Client(transport=transport) as client:
        for _ in range(2):
            request(client, "GET", "https://x.test/", service="Svc", retry=RetryPolicy(clock=clock), throttle=throttle)
    assert len(seen) == 2
    assert clock.sleeps == [pytest.approx(60.0)]


def test_new_client_sends_its_headers_and_bounds_every_call_by_the_timeout() -> None:
    seen: list[httpx2.Request] = []
    transport = _transport([httpx2.Response(200)], seen)
    with new_client(timeout=7.0, headers={"User-Agent": "deskmcp-test"}, transport=transport) as client:
        request(client, "GET", "https://x.test/", service="Svc")
        assert client.timeout.read == 7.0
        assert not client.follow_redirects
    assert seen[0].headers["user-agent"] == "deskmcp-test"
