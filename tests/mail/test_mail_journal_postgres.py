"""The send journal in a real PostgreSQL shared by two mail services (two deskmcp processes): a keyed
send retried on the other one, or sent by both at once, reaches the SMTP server once."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from deskmcp.mail.server import Settings
from deskmcp.mail.service import MailService
from tests.helpers.mail import SmtpSink

pytestmark = pytest.mark.e2e  # starts PostgreSQL


def replica(tmp_path: Path, name: str, sink: SmtpSink, database: str, **overrides: Any) -> MailService:
    """A mail service with its own workspace (its own disk), journalling into `database`."""
    settings = Settings(
        workspace=tmp_path / name,
        address="me@example.org",
        smtp_host=sink.host,
        smtp_port=sink.port,
        smtp_security="none",
        database_url=database,
        **overrides,
    )
    return MailService(settings)


def test_a_keyed_send_retried_on_another_process_is_sent_once(
    tmp_path: Path, smtp_sink: SmtpSink, database: str
) -> None:
    first, second = replica(tmp_path, "one", smtp_sink, database), replica(tmp_path, "two", smtp_sink, database)
    try:
        sent = first.send_email("you@example.net", "Lunch", "At noon?", idempotency_key="lunch-1")
        again = second.send_email("you@example.net", "Lunch", "At noon?", idempotency_key="lunch-1")
    finally:
        first.close()
        second.close()

    assert len(smtp_sink.messages) == 1
    assert again.duplicate is True
    assert again.rfc_message_id == sent.rfc_message_id
    assert not (tmp_path / "one" / ".deskmcp" / "mail-sends.sqlite3").exists()


def test_a_keyed_send_made_by_two_processes_at_once_is_sent_once(
    tmp_path: Path, smtp_sink: SmtpSink, database: str
) -> None:
    services = [replica(tmp_path, name, smtp_sink, database) for name in ("one", "two")]
    start = threading.Barrier(2, timeout=30)
    results: list[Any] = []

    def send(service: MailService) -> None:
        start.wait()
        try:
            results.append(service.send_email("you@example.net", "Plan", "Here.", idempotency_key="plan-1"))
        except Exception as exc:  # reported by the assertions below
            results.append(exc)

    threads = [threading.Thread(target=send, args=(s,)) for s in services]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
    finally:
        for s in services:
            s.close()

    assert len(smtp_sink.messages) == 1
    assert sorted(r.duplicate for r in results) == [False, True]
    assert len({r.rfc_message_id for r in results}) == 1


def test_the_same_key_of_two_users_on_one_database_sends_both(
    tmp_path: Path, smtp_sink: SmtpSink, database: str
) -> None:
    alice = replica(tmp_path, "a", smtp_sink, database, google_token_principal=("https://id.example.test", "alice"))
    bob = replica(tmp_path, "b", smtp_sink, database, google_token_principal=("https://id.example.test", "bob"))
    try:
        first = alice.send_email("you@example.net", "Hi", "From Alice.", idempotency_key="k")
        second = bob.send_email("you@example.net", "Hi", "From Bob.", idempotency_key="k")
    finally:
        alice.close()
        bob.close()

    assert len(smtp_sink.messages) == 2
    assert (first.duplicate, second.duplicate) == (False, False)
