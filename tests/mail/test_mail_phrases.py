"""Quoted words and phrases: the words as written (adjacent, in order, case-insensitive, no
stemming) in the subject and body, on the Maildir as over IMAP; unquoted words stay stemmed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers.mail import deliver, make_mail
from tests.helpers.tool_calls import Connect, call
from tests.mail.dovecot import (
    BASE_DAY,
    Dovecot,
    Loaded,
    append_all,
    dovecot_fixture,  # noqa: F401  (fixture)
    mailbox_fixture,  # noqa: F401  (fixture)
)

pytestmark = pytest.mark.anyio

MAILS = [
    make_mail("Quarterly review", "Slides attached.", days_ago=1),
    make_mail("Agenda", "The quarter review is on Monday.", days_ago=2),
    make_mail("Notes", "Quarter figures; please review them.", days_ago=3),
    make_mail("Meetings", "Two meetings moved.", days_ago=4),
    make_mail("Minutes", "One meeting, review of the QUARTER REVIEW deck.", days_ago=5),
]


async def subjects(c: Any, query: str) -> list[str]:
    return [e["subject"] for e in (await call(c, "list_emails", {"query": query, "max_results": 50}))["emails"]]


async def test_quoted_phrase_on_the_maildir_matches_the_words_as_written_not_their_stems(
    connect: Connect, workspace: Path
) -> None:
    for raw in MAILS:
        deliver(workspace, raw)
    async with connect() as c:
        found = {
            query: await subjects(c, query)
            for query in (
                '"quarter review"',
                '"Quarterly Review"',
                '"review quarter"',
                'subject:"quarter review"',
                '"meetings"',
                "meetings",
            )
        }
        counted = await call(c, "list_emails", {"query": '"quarter review"', "max_results": 1})
    assert found == {
        '"quarter review"': ["Agenda", "Minutes"],  # not "Quarterly review", not "Quarter figures; please review"
        '"Quarterly Review"': ["Quarterly review"],
        '"review quarter"': [],
        'subject:"quarter review"': [],
        '"meetings"': ["Meetings"],
        "meetings": ["Meetings", "Minutes"],  # unquoted: stemmed, "meeting" too
    }
    assert [e["subject"] for e in counted["emails"]] == ["Agenda"]


@pytest.mark.e2e
async def test_quoted_phrase_over_imap_matches_what_the_maildir_matches(
    connect: Connect, workspace: Path, dovecot: Dovecot, mailbox: str
) -> None:
    for raw in MAILS:
        deliver(workspace, raw)
    append_all(dovecot, mailbox, [Loaded("INBOX", raw, BASE_DAY) for raw in MAILS])
    queries = ('"quarter review"', '"Quarterly Review"', '"review quarter"')
    async with connect() as c:
        local = {q: sorted(await subjects(c, q)) for q in queries}
    async with connect(**dovecot.settings(mailbox)) as c:
        over_imap = {q: sorted(await subjects(c, q)) for q in queries}
    assert (
        local
        == over_imap
        == {
            '"quarter review"': ["Agenda", "Minutes"],
            '"Quarterly Review"': ["Quarterly review"],
            '"review quarter"': [],
        }
    )
