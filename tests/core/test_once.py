"""One-time ids in one process: each spent once, the memory they take bounded."""

from __future__ import annotations

from deskmcp.core.once import MemoryLedger


def test_an_id_is_spent_once_per_kind() -> None:
    ledger = MemoryLedger(clock=lambda: 100.0)

    answers = [ledger.spend("send", "a", 200.0), ledger.spend("send", "a", 200.0), ledger.spend("other", "a", 200.0)]

    assert answers == [True, False, True]


def test_expired_ids_are_forgotten_and_the_oldest_go_past_the_bound() -> None:
    now = [100.0]
    ledger = MemoryLedger(max_ids=3, clock=lambda: now[0])
    for name in ("a", "b", "c"):
        assert ledger.spend("send", name, 150.0)

    now[0] = 160.0  # all three expired: the states holding them are refused by their own deadline
    assert ledger.spend("send", "d", 300.0)
    assert ledger.spend("send", "e", 300.0) and ledger.spend("send", "f", 300.0)
    assert ledger.spend("send", "g", 300.0)  # over the bound: "d", the oldest, is dropped

    assert len(ledger._spent) == 3
    assert not ledger.spend("send", "g", 300.0)
