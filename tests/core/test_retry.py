"""Retries with backoff and the server's requested wait, on a hand-driven clock (no sleeps)."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from email.utils import format_datetime

import pytest

from deskmcp.core.errors import ExternalServiceError, NotFound, RateLimited
from deskmcp.core.retry import Retry, RetryPolicy, retry_after_seconds
from tests.helpers.clock import ManualClock

START = 1_800_000_000.0


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
