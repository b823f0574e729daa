"""How many requests a client may have in flight, and how many it may start per minute (or as a
token bucket: a burst, then a sustained rate)."""

from __future__ import annotations

import math
import threading

from deskmcp.core.clock import SYSTEM_CLOCK, Clock


class RateLimiter:
    """At most `per_minute` request starts in any minute, smoothed (GCRA, bursts up to the limit)."""

    def __init__(self, per_minute: int, clock: Clock = SYSTEM_CLOCK) -> None:
        if per_minute < 1:
            raise ValueError("per_minute must be at least 1")
        self.per_minute = per_minute
        self.clock = clock
        self._interval = 60.0 / per_minute
        self._tat = -math.inf  # theoretical arrival time of the next request
        self._lock = threading.Lock()

    def reserve(self) -> float:
        """Claim the next start; returns how long the caller must wait before starting."""
        with self._lock:
            now = self.clock.monotonic()
            tat = max(self._tat, now) + self._interval
            self._tat = tat
            return max(0.0, tat - 60.0 - now)


class TokenBucket:
    """At most `burst` request starts at once, refilled at `per_second` (GCRA, the same shape as
    `RateLimiter`): a service that publishes "25 requests per 5 s, 5 per second sustained" is
    `TokenBucket(25, 5.0)`."""

    def __init__(self, burst: int, per_second: float, clock: Clock = SYSTEM_CLOCK) -> None:
        if burst < 1 or per_second <= 0:
            raise ValueError("burst must be at least 1 and per_second above 0")
        self.burst = burst
        self.per_second = per_second
        self.clock = clock
        self._interval = 1.0 / per_second
        self._tolerance = (burst - 1) * self._interval
        self._tat = -math.inf
        self._lock = threading.Lock()

    def reserve(self) -> float:
        """Claim the next start; returns how long the caller must wait before starting."""
        with self._lock:
            now = self.clock.monotonic()
            start = max(self._tat, now)
            self._tat = start + self._interval
            return max(0.0, start - self._tolerance - now)


class Throttle:
    """A concurrency cap and an optional client-side rate limit, entered around each request.

    `with throttle:` holds one of `concurrency` slots for the request and first waits (on the
    clock) for the rate limit when one is set.
    """

    def __init__(
        self,
        *,
        concurrency: int = 4,
        per_minute: int | None = None,
        bucket: TokenBucket | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.concurrency = concurrency
        self.limiter: RateLimiter | TokenBucket | None = bucket or (
            RateLimiter(per_minute, clock) if per_minute else None
        )
        self.clock = clock
        self._slots = threading.BoundedSemaphore(concurrency)

    def __enter__(self) -> None:
        self._slots.acquire()
        try:
            if self.limiter is not None:
                self.clock.sleep(self.limiter.reserve())
        except BaseException:
            self._slots.release()
            raise

    def __exit__(self, *_exc: object) -> None:
        self._slots.release()
