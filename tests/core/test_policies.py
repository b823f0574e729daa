"""Bounded reads, TTL cache, throttling and retries, on a hand-driven clock (no sleeps)."""

from __future__ import annotations

import itertools
import random
from datetime import UTC, datetime
from email.utils import format_datetime

import anyio
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
from deskmcp.core.policies import (
    ManualClock,
    Pacer,
    RateLimiter,
    Retry,
    RetryPolicy,
    Throttle,
    TTLCache,
    arequest,
    bounded_text,
    error_for_exception,
    error_for_response,
    request,
    retry_after_seconds,
)

START = 1_800_000_000.0


def test_bounded_text_cuts_long_text_and_says_so() -> None:
    assert bounded_text("hello", 10) == ("hello", False)
    assert bounded_text("hello", 5) == ("hello", False)
    assert bounded_text("hello world", 5) == ("hello", True)
    with pytest.raises(BadRequest):
        bounded_text("x", -1)


def test_ttl_cache_expires_entries_after_ttl() -> None:
    clock = ManualClock()
    cache: TTLCache[str, int] = TTLCache(ttl=10, clock=clock)
    cache.set("a", 1)
    clock.advance(9.9)
    assert cache.get("a") == 1
    clock.advance(0.2)
    assert cache.get("a") is None
    assert len(cache) == 0


def test_ttl_cache_evicts_least_recently_used_beyond_max_entries() -> None:
    cache: TTLCache[str, int] = TTLCache(ttl=60, max_entries=2, clock=ManualClock())
    cache.set("a", 1)
    cache.set("b", 2)
    assert cache.get("a") == 1  # a is now the most recent
    cache.set("c", 3)
    assert cache.get("b") is None
    assert cache.get("a") == 1
    assert cache.get("c") == 3


def test_ttl_cache_get_or_set_computes_once_within_ttl() -> None:
    clock = ManualClock()
    cache: TTLCache[str, int] = TTLCache(ttl=5, clock=clock)
    calls: list[int] = []

    def compute() -> int:
        calls.append(1)
        return len(calls)

    assert cache.get_or_set("k", compute) == 1
    assert cache.get_or_set("k", compute) == 1
    clock.advance(6)
    assert cache.get_or_set("k", compute) == 2
    cache.invalidate("k")
    assert cache.get_or_set("k", compute) == 3
    cache.invalidate()
    assert len(cache) == 0


def test_pacer_spaces_request_starts_by_the_minimum_interval() -> None:
    clock = ManualClock()
    pacer = Pacer(0.5, clock)
    starts = []
    for _ in range(3):
        pacer.wait()
        starts.append(clock.monotonic())
    assert [round(b - a, 6) for a, b in itertools.pairwise(starts)] == [0.5, 0.5]
    clock.advance(10)
    assert pacer.reserve() == 0.0


def test_rate_limiter_allows_a_burst_then_spreads_requests_over_the_minute() -> None:
    clock = ManualClock()
    limiter = RateLimiter(per_minute=3, clock=clock)
    assert [limiter.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert limiter.reserve() == pytest.approx(20.0)
    limiter.wait()  # the fifth waits for its own slot, 40 s on
    assert clock.sleeps == [pytest.approx(40.0)]


def test_throttle_caps_concurrent_async_callers() -> None:
    throttle = Throttle(concurrency=2, clock=ManualClock())
    active = 0
    peak = 0

    async def worker() -> None:
        nonlocal active, peak
        async with throttle.slot():
            active += 1
            peak = max(peak, active)
            for _ in range(3):
                await anyio.lowlevel.checkpoint()
            active -= 1

    async def main() -> None:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                for _ in range(6):
                    tg.start_soon(worker)

    anyio.run(main)
    assert peak == 2


def test_throttle_paces_sync_callers_through_the_clock() -> None:
    clock = ManualClock()
    throttle = Throttle(concurrency=1, min_interval=2.0, clock=clock)
    for _ in range(3):
        with throttle:
            pass
    assert clock.sleeps == [2.0, 2.0]


def _flaky(failures: list[Retry], result: str = "ok"):
    calls: list[int] = []

    def fn() -> str:
        calls.append(1)
        if failures:
            raise failures.pop(0)
        return result

    return fn, calls


def test_retry_backs_off_exponentially_with_full_jitter_within_the_cap() -> None:
    clock = ManualClock()
    policy = RetryPolicy(attempts=5, base=1.0, cap=3.0, clock=clock, rng=random.Random(7))
    fn, calls = _flaky([Retry(ExternalServiceError("boom")) for _ in range(4)])
    assert policy.call(fn) == "ok"
    assert len(calls) == 5
    bounds = [1.0, 2.0, 3.0, 3.0]
    assert len(clock.sleeps) == 4
    for slept, bound in zip(clock.sleeps, bounds, strict=True):
        assert 0.0 <= slept <= bound


def test_retry_waits_exactly_what_the_server_asked_for() -> None:
    clock = ManualClock()
    policy = RetryPolicy(attempts=3, clock=clock)
    fn, _ = _flaky([Retry(RateLimited("slow down"), retry_after=7.0)])
    assert policy.call(fn) == "ok"
    assert clock.sleeps == [7.0]


def test_retry_raises_rate_limited_instead_of_sleeping_past_max_wait() -> None:
    clock = ManualClock(START)
    policy = RetryPolicy(attempts=5, max_wait=30, clock=clock)
    fn, calls = _flaky([Retry(RateLimited("GitHub is rate limiting requests."), retry_after=120.0)])
    with pytest.raises(RateLimited) as info:
        policy.call(fn)
    assert calls == [1]
    assert clock.sleeps == []
    assert info.value.details["retry_after"] == 120
    assert info.value.details["reset_at"] == datetime.fromtimestamp(START + 120, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert "Retry after 120 s" in info.value.message


def test_retry_raises_the_last_error_once_attempts_are_spent() -> None:
    clock = ManualClock()
    policy = RetryPolicy(attempts=3, clock=clock, rng=random.Random(1))
    fn, calls = _flaky([Retry(ExternalServiceError(f"fail {i}")) for i in range(5)])
    with pytest.raises(ExternalServiceError, match="fail 2"):
        policy.call(fn)
    assert len(calls) == 3
    assert len(clock.sleeps) == 2


def test_retry_does_not_catch_errors_that_are_not_transient() -> None:
    policy = RetryPolicy(attempts=3, clock=ManualClock())

    def fn() -> str:
        raise NotFound("gone")

    with pytest.raises(NotFound):
        policy.call(fn)


def test_async_retry_uses_the_same_schedule() -> None:
    clock = ManualClock()
    policy = RetryPolicy(attempts=3, clock=clock)
    failures = [Retry(ExternalServiceError("x"), retry_after=2.0), Retry(ExternalServiceError("y"), retry_after=3.0)]

    async def fn() -> str:
        if failures:
            raise failures.pop(0)
        return "done"

    async def main() -> str:
        return await policy.acall(fn)

    assert anyio.run(main) == "done"
    assert clock.sleeps == [2.0, 3.0]


def test_retry_after_reads_seconds_http_dates_and_rate_limit_resets() -> None:
    clock = ManualClock(START)
    assert retry_after_seconds({"retry-after": "12"}, clock) == 12.0
    date = format_datetime(datetime.fromtimestamp(START + 90, UTC), usegmt=True)
    assert retry_after_seconds({"retry-after": date}, clock) == pytest.approx(90.0)
    reset = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(START + 300))}
    assert retry_after_seconds(reset, clock) == pytest.approx(300.0)
    assert retry_after_seconds({"x-ratelimit-remaining": "10", "x-ratelimit-reset": "1"}, clock) is None
    assert retry_after_seconds({"retry-after": "soon"}, clock) is None
    assert retry_after_seconds({}, clock) is None


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


def test_async_request_goes_through_the_throttle_and_retries() -> None:
    clock = ManualClock()
    seen: list[httpx2.Request] = []
    transport = _transport([httpx2.Response(504), httpx2.Response(200, text="fine")], seen)
    throttle = Throttle(concurrency=1, min_interval=1.0, clock=clock)

    async def main() -> str:
        async with httpx2.AsyncClient(transport=transport) as client:
            response = await arequest(
                client,
                "GET",
                "https://x.test/",
                service="Svc",
                retry=RetryPolicy(attempts=2, clock=clock, rng=random.Random(0)),
                throttle=throttle,
            )
            return response.text

    assert anyio.run(main) == "fine"
    assert len(seen) == 2
    # the backoff wait counts towards the pacing interval: together they make exactly 1 s
    assert sum(clock.sleeps) == pytest.approx(1.0)
