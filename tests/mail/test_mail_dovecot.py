"""The IMAP backend against a real Dovecot on loopback, with the real .eml corpus and generated
conversations; the Maildir backend answers the same queries on the same messages as ground truth."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from deskmcp.mail.mime import decode, parse_bytes
from tests.conftest import shared_corpus
from tests.mail.conftest import Connect, call, deliver
from tests.mail.dovecot import (
    BASE_DAY,
    Dovecot,
    Loaded,
    append_all,
    corpus_messages,
    dovecot_dot_fixture,  # noqa: F401  (fixture)
    dovecot_fixture,  # noqa: F401  (fixture)
    generated_threads,
    mailbox_fixture,  # noqa: F401  (fixture)
)

pytestmark = pytest.mark.anyio


@dataclass(frozen=True)
class Corpus:
    server: Dovecot
    user: str
    messages: list[Loaded]

    def settings(self, **extra: Any) -> dict[str, Any]:
        return self.server.settings(self.user, **extra)


@pytest.fixture(scope="session")
def corpus(dovecot: Dovecot) -> Iterator[Corpus]:
    """One user holding the 50 real messages and the generated conversations; tests only read it."""
    messages = [*corpus_messages(shared_corpus("emails")), *generated_threads()]
    user = dovecot.add_user()
    append_all(dovecot, user, messages)
    yield Corpus(dovecot, user, messages)


def to_maildir(workspace: Path, messages: list[Loaded]) -> None:
    """The same messages in a Maildir (folders as Maildir++ subfolders) for the local backend."""
    names = {"INBOX": "", "Sent": ".Sent", "Trash": ".Trash", "Projects": ".Projects"}
    for i, m in enumerate(messages):
        deliver(workspace, m.raw, names[m.folder], name=f"{1_700_000_000 + i}.M{i}P1.dv", flags="S" if m.flags else "")


async def subjects(c: Any, query: str, max_results: int = 100) -> list[str]:
    return [
        e["subject"] for e in (await call(c, "list_emails", {"query": query, "max_results": max_results}))["emails"]
    ]


def truth(messages: list[Loaded], keep: Any) -> set[str]:
    """Subjects of the messages (outside Trash) that `keep(parsed)` accepts, decoded from the .eml bytes."""
    out = set()
    for m in messages:
        parsed = decode(parse_bytes(m.raw))
        if m.folder != "Trash" and keep(parsed):
            out.add(parsed.subject)
    return out


# -- 1. non-ASCII search terms ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected", "local_too"),
    [
        ("subject:Überprüfung", ["Überprüfung des Budgets"], True),
        ("from:José", ["Visita"], True),
        # The local index matches whole words; Japanese has no spaces between them, so only
        # IMAP's substring search finds a word inside a subject.
        ("subject:会議", ["会議の議事録"], False),
        ("Überprüfung", ["Überprüfung des Budgets"], True),
    ],
)
async def test_imap_search_finds_non_ascii_terms_like_the_maildir_does(
    connect: Connect, corpus: Corpus, workspace: Path, query: str, expected: list[str], local_too: bool
) -> None:
    async with connect(**corpus.settings()) as c:
        over_imap = await subjects(c, query)
    assert over_imap == expected
    if local_too:
        to_maildir(workspace, corpus.messages)
        async with connect() as c:
            assert await subjects(c, query) == expected


# -- 9. display names ---------------------------------------------------------------------------

FOLDED_NAMES = (
    b"From: =?utf-8?q?Jos=C3=A9_D?=\r\n =?utf-8?q?=C3=ADaz?= <jose@corp.test>\r\n"
    b'To: ana@corp.test (Ana Lima), "Doe, Jane" <jane@corp.test>\r\n'
    b"Subject: Names\r\nDate: Thu, 19 Nov 2026 12:00:00 +0000\r\nMessage-ID: <names@corp.test>\r\n\r\nHi.\r\n"
)


async def test_imap_display_names_keep_folded_encoded_words_and_comment_names(
    connect: Connect,
    dovecot: Dovecot,
    mailbox: str,
    workspace: Path,
) -> None:
    append_all(dovecot, mailbox, [Loaded("INBOX", FOLDED_NAMES, BASE_DAY)])
    async with connect(**dovecot.settings(mailbox)) as c:
        over_imap = (await call(c, "list_emails", {"query": ""}))["emails"][0]
    deliver(workspace, FOLDED_NAMES)
    async with connect() as c:
        local = (await call(c, "list_emails", {"query": ""}))["emails"][0]
    for summary in (over_imap, local):
        assert summary["sender"] == "José Díaz <jose@corp.test>"
        assert summary["to"] == 'Ana Lima <ana@corp.test>, "Doe, Jane" <jane@corp.test>'


# -- 2. newest first by date, 3. across folders ---------------------------------------------------


async def test_imap_lists_newest_first_by_date_even_when_old_mail_arrived_last(
    connect: Connect, corpus: Corpus
) -> None:
    async with connect(**corpus.settings()) as c:
        listed = await subjects(c, "in:inbox", max_results=100)
    # "Ancient history" was appended last (2021 mail imported late): it comes after this year's
    # mail and before nearly all the corpus, whose messages were sent before 2014.
    assert listed[:4] == ["Acme renewal", "Überprüfung des Budgets", "Visita", "会議の議事録"]
    assert 4 <= listed.index("Ancient history") <= 6


async def test_imap_search_spans_folders_but_leaves_trash_out_unless_asked(
    connect: Connect, corpus: Corpus, workspace: Path
) -> None:
    async with connect(**corpus.settings()) as c:
        everywhere_but_trash = await subjects(c, "acme")
        anywhere = await subjects(c, "in:anywhere acme")
        only_projects = await subjects(c, "in:Projects acme")
    to_maildir(workspace, corpus.messages)
    async with connect() as c:
        local = await subjects(c, "acme")
        local_anywhere = await subjects(c, "in:anywhere acme")
    assert everywhere_but_trash == ["Re: Acme renewal", "Re: Acme renewal", "Acme renewal"]
    assert anywhere == ["Acme renewal spam", *everywhere_but_trash]
    assert only_projects == ["Re: Acme renewal"]
    assert (local, local_anywhere) == (everywhere_but_trash, anywhere)


async def test_imap_get_thread_gathers_the_conversation_from_every_folder(connect: Connect, corpus: Corpus) -> None:
    async with connect(**corpus.settings()) as c:
        first = (await call(c, "list_emails", {"query": "rfc822msgid:acme1@acme.test"}))["emails"][0]
        thread = await call(c, "get_thread", {"thread_id": first["thread_id"]})
        last = (await call(c, "list_emails", {"query": "rfc822msgid:acme3@acme.test"}))["emails"][0]
    # acme3 answers acme2 with In-Reply-To only: it still belongs to the conversation.
    assert [m["body"] for m in thread["messages"]] == ["Can we renew?", "Yes.", "Signed."]
    assert [m["labels"][0] for m in thread["messages"]] == ["INBOX", "SENT", "Projects"]
    assert last["thread_id"] == first["thread_id"]
