"""Retries with exponential backoff and full jitter, honouring the wait a server asks for.

A callable run under `RetryPolicy.call` marks a transient failure by raising `Retry` (the
error the caller sees if retries run out, and the server's requested wait if it named one);
`retry_after_seconds` reads that wait from response headers (`Retry-After`, rate-limit reset).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TypeVar

from deskmcp.core.clock import SYSTEM_CLOCK, Clock
from deskmcp.core.dates import utc_stamp
from deskmcp.core.errors import DeskError, RateLimited

T = TypeVar("T")


class Retry(Exception):
    """Raised by a callable under `RetryPolicy` for a transient failure.

    `error` is what the caller sees if retries run out; `retry_after` is the wait the server
    asked for (seconds), if it said.
    """

    def __init__(self, error: DeskError, retry_after: float | None = None) -> None:
        super().__init__(error.message)
        self.error = error
        self.retry_after = retry_after


class RetryPolicy:
    """Retry with exponential backoff and full jitter, honouring the server's requested wait.

    Attempt n (from 0) waits a random time in [0, min(cap, base * 2**n)] unless the failure
    carried `retry_after`, which is then waited exactly. A wait longer than `max_wait` is not
    slept: the failure is raised at once with `retry_after` in its details (`RateLimited` for a
    rate limit), so a tool answers promptly and the model can decide.
    """

    def __init__(
        self,
        *,
        attempts: int = 4,
        base: float = 0.5,
        cap: float = 8.0,
        max_wait: float = 30.0,
        clock: Clock = SYSTEM_CLOCK,
        rng: random.Random | None = None,
    ) -> None:
        if attempts < 1:
            raise ValueError("attempts must be at least 1")
        self.attempts = attempts
        self.base = base
        self.cap = cap
        self.max_wait = max_wait
        self.clock = clock
        self.rng = rng or random.Random()

    def backoff(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return max(0.0, retry_after)
        return self.rng.uniform(0.0, min(self.cap, self.base * (2**attempt)))

    def _next_wait(self, attempt: int, signal: Retry) -> float:
        """The wait before the next attempt, or raise the final error."""
        if attempt >= self.attempts - 1:
            raise self.give_up(signal)
        delay = self.backoff(attempt, signal.retry_after)
        if delay > self.max_wait:
            raise self.give_up(signal)
        return delay

    def give_up(self, signal: Retry) -> DeskError:
        error = signal.error
        if signal.retry_after is not None:
            wait = max(0, math.ceil(signal.retry_after))
            reset = utc_stamp(datetime.fromtimestamp(self.clock.time() + wait, UTC))
            error.details.setdefault("retry_after", wait)
            error.details.setdefault("reset_at", reset)
            if isinstance(error, RateLimited) and "retry after" not in error.message.lower():
                error.message = f"{error.message} Retry after {wait} s ({reset})."
        return error

    def call(self, fn: Callable[[], T]) -> T:
        attempt = 0
        while True:
            try:
                return fn()
            except Retry as signal:
                self.clock.sleep(self._next_wait(attempt, signal))
            attempt += 1


def retry_after_seconds(headers: Mapping[str, str], clock: Clock = SYSTEM_CLOCK) -> float | None:
    """The wait a response asks for: `Retry-After` (seconds or HTTP date), else the rate-limit
    reset (`x-ratelimit-reset`, epoch seconds) when `x-ratelimit-remaining` is 0."""
    value = headers.get("retry-after")
    if value:
        value = value.strip()
        try:
            return max(0.0, float(value))
        except ValueError:
            try:
                when = parsedate_to_datetime(value)
            except (TypeError, ValueError, IndexError):
                when = None
            if when is not None:
                if when.tzinfo is None:
                    when = when.replace(tzinfo=UTC)
                return max(0.0, when.timestamp() - clock.time())
    if headers.get("x-ratelimit-remaining", "").strip() == "0":
        reset = headers.get("x-ratelimit-reset", "").strip()
        try:
            return max(0.0, float(reset) - clock.time())
        except ValueError:
            return None
    return None
