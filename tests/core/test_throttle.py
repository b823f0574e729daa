"""The concurrency cap and client-side rate limit, on a hand-driven clock (no sleeps)."""

from __future__ import annotations

import pytest

from deskmcp.core.throttle import RateLimiter, Throttle
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
