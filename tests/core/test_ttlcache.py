"""The TTL cache, on a hand-driven clock."""

from __future__ import annotations

from deskmcp.core.ttlcache import TTLCache
from tests.helpers.clock import ManualClock


def test_ttl_cache_expires_entries_after_ttl() -> None:
    clock = ManualClock()
    cache: TTLCache[str, int] = TTLCache(ttl=10, clock=clock)
    cache.set("a", 1)
    clock.advance(9.9)
    assert cache.get("a") == 1
    clock.advance(0.2)
    assert cache.get("a") is None
    assert len(cache) == 0


def test_ttl_cache_evicts_least_recently_used_beyond_max_entries() -> None:
    cache: TTLCache[str, int] = TTLCache(ttl=60, max_entries=2, clock=ManualClock())
    cache.set("a", 1)
    cache.set("b", 2)
    assert cache.get("a") == 1  # a is now the most recent
    cache.set("c", 3)
    assert cache.get("b") is None
    assert cache.get("a") == 1
    assert cache.get("c") == 3


def test_ttl_cache_get_or_set_computes_once_within_ttl() -> None:
    clock = ManualClock()
    cache: TTLCache[str, int] = TTLCache(ttl=5, clock=clock)
    calls: list[int] = []

    def compute() -> int:
        calls.append(1)
        return len(calls)

    assert cache.get_or_set("k", compute) == 1
    assert cache.get_or_set("k", compute) == 1
    clock.advance(6)
    assert cache.get_or_set("k", compute) == 2
    cache.invalidate("k")
    assert cache.get_or_set("k", compute) == 3
    cache.invalidate()
    assert len(cache) == 0
