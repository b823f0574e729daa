"""How many requests a client may have in flight, and how many it may start per minute."""

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


class Throttle:
    """A concurrency cap and an optional client-side rate limit, entered around each request.

    `with throttle:` holds one of `concurrency` slots for the request and first waits (on the
    clock) for the rate limit when one is set.
    """

    def __init__(self, *, concurrency: int = 4, per_minute: int | None = None, clock: Clock = SYSTEM_CLOCK) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.concurrency = concurrency
        self.limiter = RateLimiter(per_minute, clock) if per_minute else None
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
