"""A small thread-safe cache whose entries expire, bounded so it never grows for good."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

from deskmcp.core.clock import SYSTEM_CLOCK, Clock

K = TypeVar("K")
V = TypeVar("V")


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
