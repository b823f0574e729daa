"""One-time ids: a sealed state that authorises something (a Google sign-in's `state`, a send the
person confirmed) carries a random id, and is honoured only by the first request that spends it.

Sealing proves the state is ours and unaltered, not that it is fresh: the same sealed bytes sent
again would be accepted again until they expire. `OnceLedger.spend(kind, id, expires)` answers True
exactly once per (kind, id):

- `MemoryLedger`: per process, for one server (or replicas whose requests for one state always
  reach the same process). Bounded: expired ids are dropped first; past `max_ids` the oldest go.
- `PostgresLedger`: in the shared database (`DESKMCP_DATABASE_URL`), so replicas behind a load
  balancer agree: the id is the row's primary key, and only the insert that creates it wins.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import LiteralString, Protocol

MAX_IDS = 65_536
"""One-time ids a process remembers at most (each is a few dozen bytes)."""

SCHEMA: LiteralString = """
CREATE TABLE IF NOT EXISTS deskmcp_spent_ids (
    kind text NOT NULL,
    id text NOT NULL,
    expires double precision NOT NULL,
    PRIMARY KEY (kind, id)
)
"""


class OnceLedger(Protocol):
    def spend(self, kind: str, one_time_id: str, expires: float) -> bool:
        """True the first time (kind, id) is spent, False ever after (until `expires`, a Unix time,
        past which the state holding it is refused anyway)."""
        ...


class MemoryLedger:
    """The ids spent in this process."""

    def __init__(self, max_ids: int = MAX_IDS, clock: Callable[[], float] = time.time) -> None:
        self.max_ids = max_ids
        self.clock = clock
        self._spent: OrderedDict[tuple[str, str], float] = OrderedDict()
        self._lock = threading.Lock()

    def spend(self, kind: str, one_time_id: str, expires: float) -> bool:
        with self._lock:
            key = (kind, one_time_id)
            if key in self._spent:
                return False
            self._forget_expired()
            while len(self._spent) >= self.max_ids:
                self._spent.popitem(last=False)
            self._spent[key] = expires
            return True

    def _forget_expired(self) -> None:
        now = self.clock()
        for key in [k for k, expires in self._spent.items() if expires < now]:
            del self._spent[key]


class PostgresLedger:
    """The ids spent by every process using database `url`."""

    def __init__(self, url: str, clock: Callable[[], float] = time.time) -> None:
        self.url = url
        self.clock = clock

    def spend(self, kind: str, one_time_id: str, expires: float) -> bool:
        from deskmcp.core.postgres import connection

        unreachable = "The database keeping one-time confirmations cannot be reached: {exc}. Try again shortly."
        with connection(self.url, SCHEMA, unreachable=unreachable) as conn:
            conn.execute("DELETE FROM deskmcp_spent_ids WHERE expires < %s", (self.clock(),))
            inserted = conn.execute(
                "INSERT INTO deskmcp_spent_ids (kind, id, expires) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                (kind, one_time_id, expires),
            )
            return inserted.rowcount == 1


_MEMORY = MemoryLedger()


def ledger(database_url: str | None) -> OnceLedger:
    """The shared database's ledger when one is configured, else this process's."""
    return PostgresLedger(database_url) if database_url else _MEMORY
