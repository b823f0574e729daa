"""A clock for tests: time moves only when told to, and sleeping is recorded instead of waited."""

from __future__ import annotations

import threading

from deskmcp.core.clock import Clock


class ManualClock(Clock):
    """A clock that only moves when told to; sleeping advances it at once and is recorded."""

    def __init__(self, start: float = 1_000_000.0) -> None:
        self.now = start
        self.sleeps: list[float] = []
        self._lock = threading.Lock()

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self.now += seconds

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            self.sleeps.append(seconds)
            self.advance(seconds)
