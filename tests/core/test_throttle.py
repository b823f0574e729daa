"""The concurrency cap and client-side rate limit, on a hand-driven clock (no sleeps)."""

from __future__ import annotations

import pytest

from deskmcp.core.throttle import RateLimiter, Throttle, TokenBucket
from tests.helpers.clock import ManualClock


def test_rate_limiter_allows_a_burst_then_spreads_requests_over_the_minute() -> None:
    clock = ManualClock()
    limiter = RateLimiter(per_minute=3, clock=clock)
    assert [limiter.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert limiter.reserve() == pytest.approx(20.0)
    assert limiter.reserve() == pytest.approx(40.0)


def test_throttle_waits_on_the_clock_for_the_rate_limit() -> None:
    clock = ManualClock()
    throttle = Throttle(concurrency=1, per_minute=2, clock=clock)
    for _ in range(3):
        with throttle:
            pass
    assert clock.sleeps == [pytest.approx(30.0)]


def test_throttle_without_a_rate_limit_never_waits() -> None:
    clock = ManualClock()
    throttle = Throttle(concurrency=2, clock=clock)
    for _ in range(5):
        with throttle, throttle:
            pass
    assert clock.sleeps == []


def test_throttle_refuses_a_cap_below_one() -> None:
    with pytest.raises(ValueError):
        Throttle(concurrency=0)


def test_token_bucket_allows_its_burst_then_the_sustained_rate() -> None:
    clock = ManualClock()
    bucket = TokenBucket(burst=25, per_second=5.0, clock=clock)
    assert [bucket.reserve() for _ in range(25)] == [0.0] * 25
    assert bucket.reserve() == pytest.approx(0.2)
    assert bucket.reserve() == pytest.approx(0.4)


def test_token_bucket_refills_while_idle() -> None:
    clock = ManualClock()
    bucket = TokenBucket(burst=2, per_second=1.0, clock=clock)
    assert [bucket.reserve() for _ in range(2)] == [0.0, 0.0]
    clock.advance(10.0)
    assert [bucket.reserve() for _ in range(2)] == [0.0, 0.0]
    assert bucket.reserve() == pytest.approx(1.0)


def test_throttle_waits_on_a_token_bucket() -> None:
    clock = ManualClock()
    throttle = Throttle(concurrency=1, bucket=TokenBucket(burst=1, per_second=2.0, clock=clock), clock=clock)
    for _ in range(3):
        with throttle:
            pass
    assert clock.sleeps == [pytest.approx(0.5), pytest.approx(0.5)]
