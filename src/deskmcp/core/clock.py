"""Time as the policies see it, behind one small class so tests can drive it by hand.

`Clock` answers a monotonic time for intervals (cache expiry, pacing), the wall clock for
reset headers that name an epoch second, and sleeps. Code that waits takes a `Clock`
(defaulting to `SYSTEM_CLOCK`) so a test passes a clock that never really sleeps.
"""

from __future__ import annotations

import time


class Clock:
    """Real time: a monotonic clock for intervals, the wall clock for reset headers."""

    def monotonic(self) -> float:
        return time.monotonic()

    def time(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)


SYSTEM_CLOCK = Clock()
