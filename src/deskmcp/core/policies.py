"""How every networked client behaves: bounded reads, caching, throttling and retries.

Small pieces that compose, each taking a `Clock` so tests drive time by hand and never sleep:

- `bounded_text(text, max_chars)`: cut long text and say so;
- `TTLCache`: remembers answers for a while (bounded in entries);
- `Throttle`: a concurrency cap, pacing (a minimum interval between request starts) and a
  client-side rate limit (N requests per minute), usable with `with` and `async with`;
- `RetryPolicy`: exponential backoff with full jitter for failures a callable marks as
  transient by raising `Retry`, honouring the server's wait (`Retry-After`, rate-limit reset)
  and raising `RateLimited` with `retry_after` instead of sleeping past `max_wait`;
- `request` / `arequest`: an `httpx2` request through a throttle and a retry policy, with the
  response or exception mapped onto the error taxonomy, so no tool sees a raw status code.
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import anyio
import anyio.lowlevel

from deskmcp.core.errors import (
    AuthRequired,
    BadRequest,
    DeskError,
    ExternalServiceError,
    NotFound,
    PermissionDenied,
    RateLimited,
    Timeout,
)

if TYPE_CHECKING:
    import httpx2

T = TypeVar("T")
K = TypeVar("K")
V = TypeVar("V")


# -- time ------------------------------------------------------------------------------------


class Clock:
    """Real time: a monotonic clock for intervals, the wall clock for reset headers."""

    def monotonic(self) -> float:
        return time.monotonic()

    def time(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)

    async def asleep(self, seconds: float) -> None:
        if seconds > 0:
            await anyio.sleep(seconds)


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

    async def asleep(self, seconds: float) -> None:
        self.sleep(seconds)
        await anyio.lowlevel.checkpoint()


SYSTEM_CLOCK = Clock()


# -- bounded reads ---------------------------------------------------------------------------


def bounded_text(text: str, max_chars: int) -> tuple[str, bool]:
    """`text` cut to at most `max_chars` characters, and whether it was cut."""
    if max_chars < 0:
        raise BadRequest("max_chars must be zero or more.", {"max_chars": max_chars})
    if len(text) <= max_chars:
        return text, False
    return text[:max_chars], True


# -- TTL cache -------------------------------------------------------------------------------


class TTLCache(Generic[K, V]):
    """A thread-safe map whose entries expire `ttl` seconds after they were stored.

    Bounded to `max_entries` (the least recently used go first), so it never grows for good.
    """

    def __init__(self, ttl: float, max_entries: int = 1024, clock: Clock = SYSTEM_CLOCK) -> None:
        if ttl < 0 or max_entries < 1:
            raise ValueError("ttl must be >= 0 and max_entries >= 1")
        self.ttl = ttl
        self.max_entries = max_entries
        self.clock = clock
        self._items: OrderedDict[K, tuple[float, V]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            expires, value = item
            if self.clock.monotonic() >= expires:
                del self._items[key]
                return None
            self._items.move_to_end(key)
            return value

    def set(self, key: K, value: V) -> None:
        with self._lock:
            self._items[key] = (self.clock.monotonic() + self.ttl, value)
            self._items.move_to_end(key)
            while len(self._items) > self.max_entries:
                self._items.popitem(last=False)

    def get_or_set(self, key: K, compute: Callable[[], V]) -> V:
        cached = self.get(key)
        if cached is not None:
            return cached
        value = compute()
        self.set(key, value)
        return value

    async def aget_or_set(self, key: K, compute: Callable[[], Awaitable[V]]) -> V:
        cached = self.get(key)
        if cached is not None:
            return cached
        value = await compute()
        self.set(key, value)
        return value

    def invalidate(self, key: K | None = None) -> None:
        """Forget `key`, or everything when no key is given."""
        with self._lock:
            if key is None:
                self._items.clear()
            else:
                self._items.pop(key, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)


# -- throttling ------------------------------------------------------------------------------


class Pacer:
    """A minimum interval between the starts of consecutive requests (0 disables it)."""

    def __init__(self, min_interval: float, clock: Clock = SYSTEM_CLOCK) -> None:
        self.min_interval = max(0.0, min_interval)
        self.clock = clock
        self._next = -math.inf
        self._lock = threading.Lock()

    def reserve(self) -> float:
        """Claim the next slot; returns how long the caller must wait before starting."""
        with self._lock:
            now = self.clock.monotonic()
            start = max(now, self._next)
            self._next = start + self.min_interval
            return start - now

    def wait(self) -> None:
        self.clock.sleep(self.reserve())

    async def await_turn(self) -> None:
        await self.clock.asleep(self.reserve())


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
        with self._lock:
            now = self.clock.monotonic()
            tat = max(self._tat, now) + self._interval
            self._tat = tat
            return max(0.0, tat - 60.0 - now)

    def wait(self) -> None:
        self.clock.sleep(self.reserve())

    async def await_turn(self) -> None:
        await self.clock.asleep(self.reserve())


class Throttle:
    """A concurrency cap, pacing and a client-side rate limit, entered around each request.

    `with throttle:` serves threads, `async with throttle.slot():` serves tasks; the two paths
    have separate concurrency caps (a client normally uses one of them) but share pacing and
    the rate limit.
    """

    def __init__(
        self,
        *,
        concurrency: int = 4,
        min_interval: float = 0.0,
        per_minute: int | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.concurrency = concurrency
        self.pacer = Pacer(min_interval, clock)
        self.limiter = RateLimiter(per_minute, clock) if per_minute else None
        self.clock = clock
        self._threads = threading.BoundedSemaphore(concurrency)
        self._tasks: anyio.Semaphore | None = None

    def _delay(self) -> float:
        delay = self.pacer.reserve()
        if self.limiter is not None:
            delay = max(delay, self.limiter.reserve())
        return delay

    def __enter__(self) -> None:
        self._threads.acquire()
        try:
            self.clock.sleep(self._delay())
        except BaseException:
            self._threads.release()
            raise

    def __exit__(self, *_exc: object) -> None:
        self._threads.release()

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        if self._tasks is None:
            self._tasks = anyio.Semaphore(self.concurrency)
        async with self._tasks:
            await self.clock.asleep(self._delay())
            yield


# -- retries ---------------------------------------------------------------------------------


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
            reset = datetime.fromtimestamp(self.clock.time() + wait, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
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

    async def acall(self, fn: Callable[[], Awaitable[T]]) -> T:
        attempt = 0
        while True:
            try:
                return await fn()
            except Retry as signal:
                await self.clock.asleep(self._next_wait(attempt, signal))
            attempt += 1


# -- HTTP ------------------------------------------------------------------------------------

RETRYABLE_STATUS = frozenset({500, 502, 503, 504})
SECONDARY_LIMIT_WAIT = 60.0
"""Wait when a rate-limit answer names no time (GitHub: "wait at least one minute")."""


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


def _upstream_message(response: httpx2.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        for key in ("message", "error_description", "error"):
            value = body.get(key)
            if isinstance(value, str) and value:
                return value[:300]
            if isinstance(value, dict) and isinstance(value.get("message"), str):
                return value["message"][:300]
    try:
        return response.text.strip()[:300]
    except (UnicodeDecodeError, RuntimeError):
        return ""


def is_rate_limited(response: httpx2.Response) -> bool:
    """429, or a 403 that GitHub-style APIs use for primary and secondary rate limits."""
    if response.status_code == 429:
        return True
    if response.status_code != 403:
        return False
    headers = response.headers
    if headers.get("x-ratelimit-remaining", "").strip() == "0" or "retry-after" in headers:
        return True
    return "rate limit" in _upstream_message(response).lower()


def error_for_response(response: httpx2.Response, service: str, clock: Clock = SYSTEM_CLOCK) -> DeskError | None:
    """The taxonomy error a response stands for, or None for a success (1xx-3xx)."""
    status = response.status_code
    if status < 400:
        return None
    upstream = _upstream_message(response)
    details: dict[str, Any] = {"service": service, "status": status}
    if upstream:
        details["upstream_message"] = upstream
    if is_rate_limited(response):
        wait = retry_after_seconds(response.headers, clock)
        if wait is not None:
            details["retry_after"] = math.ceil(wait)
        return RateLimited(f"{service} is rate limiting requests.", details)
    if status == 401:
        return AuthRequired(f"{service} refused the credentials (401); check the token or sign in again.", details)
    if status == 403:
        return PermissionDenied(f"{service} denied access (403): {upstream or 'forbidden'}.", details)
    if status == 404:
        return NotFound(f"{service} has no such resource (404).", details)
    if status in (400, 409, 410, 422):
        return BadRequest(f"{service} rejected the request ({status}): {upstream or 'bad request'}.", details)
    if status == 408:
        return Timeout(f"{service} timed out (408).", details)
    return ExternalServiceError(f"{service} failed ({status}): {upstream or 'server error'}.", details)


def error_for_exception(exc: Exception, service: str) -> DeskError:
    """The taxonomy error for a transport failure (timeout, refused connection, TLS...)."""
    import httpx2

    details: dict[str, Any] = {"service": service, "reason": type(exc).__name__}
    if isinstance(exc, httpx2.TimeoutException):
        return Timeout(f"{service} did not answer in time; try again later.", details)
    if isinstance(exc, httpx2.ConnectError):
        return ExternalServiceError(f"Could not connect to {service}: {exc}.", details)
    return ExternalServiceError(f"Talking to {service} failed: {exc}.", details)


def check_response(
    response: httpx2.Response,
    service: str,
    *,
    idempotent: bool = True,
    clock: Clock = SYSTEM_CLOCK,
    rate_limit_wait: float = SECONDARY_LIMIT_WAIT,
) -> httpx2.Response:
    """Return a successful response; raise `Retry` for a transient failure, else the error."""
    error = error_for_response(response, service, clock)
    if error is None:
        return response
    if isinstance(error, RateLimited):
        wait = retry_after_seconds(response.headers, clock)
        raise Retry(error, rate_limit_wait if wait is None else wait)
    if idempotent and response.status_code in RETRYABLE_STATUS:
        raise Retry(error, retry_after_seconds(response.headers, clock))
    raise error


def _transport_failure(exc: Exception, service: str, idempotent: bool) -> DeskError | Retry:
    import httpx2

    error = error_for_exception(exc, service)
    retryable = isinstance(exc, httpx2.ConnectError) or (
        idempotent and isinstance(exc, httpx2.TransportError) and not isinstance(exc, httpx2.TimeoutException)
    )
    return Retry(error) if retryable else error


def request(
    client: httpx2.Client,
    method: str,
    url: str,
    *,
    service: str,
    retry: RetryPolicy | None = None,
    throttle: Throttle | None = None,
    idempotent: bool | None = None,
    rate_limit_wait: float = SECONDARY_LIMIT_WAIT,
    **kwargs: Any,
) -> httpx2.Response:
    """Send one request through `throttle` and `retry`; a non-success becomes a `DeskError`."""
    import httpx2

    policy = retry or RetryPolicy(attempts=1)
    safe = method.upper() in ("GET", "HEAD", "OPTIONS", "PUT", "DELETE") if idempotent is None else idempotent

    def attempt() -> httpx2.Response:
        try:
            if throttle is not None:
                with throttle:
                    response = client.request(method, url, **kwargs)
            else:
                response = client.request(method, url, **kwargs)
        except httpx2.HTTPError as exc:
            failure = _transport_failure(exc, service, safe)
            raise failure from exc
        return check_response(response, service, idempotent=safe, clock=policy.clock, rate_limit_wait=rate_limit_wait)

    return policy.call(attempt)


async def arequest(
    client: httpx2.AsyncClient,
    method: str,
    url: str,
    *,
    service: str,
    retry: RetryPolicy | None = None,
    throttle: Throttle | None = None,
    idempotent: bool | None = None,
    rate_limit_wait: float = SECONDARY_LIMIT_WAIT,
    **kwargs: Any,
) -> httpx2.Response:
    """The async form of `request`."""
    import httpx2

    policy = retry or RetryPolicy(attempts=1)
    safe = method.upper() in ("GET", "HEAD", "OPTIONS", "PUT", "DELETE") if idempotent is None else idempotent

    async def attempt() -> httpx2.Response:
        try:
            if throttle is not None:
                async with throttle.slot():
                    response = await client.request(method, url, **kwargs)
            else:
                response = await client.request(method, url, **kwargs)
        except httpx2.HTTPError as exc:
            failure = _transport_failure(exc, service, safe)
            raise failure from exc
        return check_response(response, service, idempotent=safe, clock=policy.clock, rate_limit_wait=rate_limit_wait)

    return await policy.acall(attempt)
