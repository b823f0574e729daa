"""The IMAP backend against a real Dovecot on loopback, with the real .eml corpus and generated
conversations; the Maildir backend answers the same queries on the same messages as ground truth."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from deskmcp.mail.mime import decode, parse_bytes
from tests.helpers.corpora import shared_corpus
from tests.helpers.mail import deliver, make_mail
from tests.helpers.tool_calls import Connect, call, fail
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
    ("query", "expected"),
    [
        ("subject:Überprüfung", ["Überprüfung des Budgets"]),
        ("from:José", ["Visita"]),
        # Japanese has no spaces between words: a word inside a subject or body is a substring.
        ("subject:会議", ["会議の議事録"]),
        ("subject:議事", ["会議の議事録"]),
        ("来週", ["会議の議事録"]),
        ("Überprüfung", ["Überprüfung des Budgets"]),
    ],
)
async def test_imap_search_finds_non_ascii_terms_like_the_maildir_does(
    connect: Connect, corpus: Corpus, workspace: Path, query: str, expected: list[str]
) -> None:
    async with connect(**corpus.settings()) as c:
        over_imap = await subjects(c, query)
    to_maildir(workspace, corpus.messages)
    async with connect() as c:
        local = await subjects(c, query)
    assert over_imap == local == expected


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


async def test_get_thread_gathers_the_conversation_from_every_folder_but_trash_on_imap_and_maildir(
    connect: Connect, corpus: Corpus, workspace: Path
) -> None:
    to_maildir(workspace, corpus.messages)
    for settings in (corpus.settings(), {}):
        async with connect(**settings) as c:
            first = (await call(c, "list_emails", {"query": "rfc822msgid:acme1@acme.test"}))["emails"][0]
            thread = await call(c, "get_thread", {"thread_id": first["thread_id"]})
            last = (await call(c, "list_emails", {"query": "rfc822msgid:acme3@acme.test"}))["emails"][0]
        # acme3 answers acme2 with In-Reply-To only: it still belongs to the conversation. The
        # copy in Trash that refers to acme1 stays out.
        assert [m["body"] for m in thread["messages"]] == ["Can we renew?", "Yes.", "Signed."], settings
        assert [m["labels"][0] for m in thread["messages"]] == ["INBOX", "SENT", "Projects"]
        assert last["thread_id"] == first["thread_id"]


async def test_maildir_reply_with_only_in_reply_to_joins_its_conversation_in_any_arrival_order(
    connect: Connect, workspace: Path
) -> None:
    root = make_mail("Plan", "one", days_ago=4, msgid="<r1@corp.test>")
    middle = make_mail("Re: Plan", "two", days_ago=3, msgid="<r2@corp.test>", in_reply_to="<r1@corp.test>")
    leaf = make_mail("Re: Plan", "three", days_ago=2, msgid="<r3@corp.test>", in_reply_to="<r2@corp.test>")
    deliver(workspace, leaf)
    async with connect() as c:  # the last reply indexed alone first, its ancestors later
        await call(c, "list_emails", {"query": ""})
        deliver(workspace, middle)
        await call(c, "list_emails", {"query": ""})
        deliver(workspace, root)
        listed = (await call(c, "list_emails", {"query": ""}))["emails"]
        thread = await call(c, "get_thread", {"thread_id": listed[0]["thread_id"]})
    assert len({e["thread_id"] for e in listed}) == 1
    assert [m["body"] for m in thread["messages"]] == ["one", "two", "three"]


# -- 4. keywords as labels, 5. nested labels ------------------------------------------------------


async def test_imap_keyword_labels_keep_their_names_are_listed_and_searchable_alone(
    connect: Connect, dovecot: Dovecot, mailbox: str
) -> None:
    append_all(dovecot, mailbox, [Loaded("INBOX", make_mail("Plan", "x", msgid="<p1@corp.test>"), BASE_DAY)])
    async with connect(**dovecot.settings(mailbox)) as c:
        target = (await call(c, "list_emails", {"query": ""}))["emails"][0]
        for name in ("Follow up", "Été-2026", "AI_PROCESSED"):
            labelled = await call(c, "add_label", {"message_id": target["id"], "label_name": name})
        labels = {x["name"]: x for x in (await call(c, "list_labels"))["labels"]}
        found = {name: await subjects(c, f'label:"{name}"') for name in ("Follow up", "Été-2026", "AI_PROCESSED")}
        negated = await subjects(c, '-label:"Follow up"')
        removed = await call(c, "remove_label", {"message_id": target["id"], "label_name": "Été-2026"})
    assert {"Follow up", "Été-2026", "AI_PROCESSED"} <= set(labelled["labels"])
    assert labels["Follow up"]["kind"] == "keyword" and labels["Follow up"]["total"] == 1
    assert labels["Été-2026"]["kind"] == "keyword" and labels["INBOX"]["kind"] == "system"
    assert found == {"Follow up": ["Plan"], "Été-2026": ["Plan"], "AI_PROCESSED": ["Plan"]}
    assert negated == []
    assert "Été-2026" not in removed["labels"] and "Follow up" in removed["labels"]


async def test_list_labels_kind_says_system_folder_or_keyword_alike_on_imap_and_maildir(
    connect: Connect, dovecot: Dovecot, mailbox: str, workspace: Path
) -> None:
    raw = make_mail("Plan", "x", msgid="<kind1@corp.test>")
    append_all(dovecot, mailbox, [Loaded("INBOX", raw, BASE_DAY), Loaded("INBOX", raw, BASE_DAY)])
    deliver(workspace, raw)
    deliver(workspace, raw)
    kinds: dict[str, dict[str, str]] = {}
    for backend, settings in (("imap", dovecot.settings(mailbox)), ("maildir", {})):
        async with connect(**settings) as c:
            first, second = (await call(c, "list_emails", {"query": ""}))["emails"]
            await call(c, "move_email", {"message_id": first["id"], "destination_label": "Done"})
            await call(c, "add_label", {"message_id": second["id"], "label_name": "AI_PROCESSED"})
            listed = (await call(c, "list_labels"))["labels"]
        kinds[backend] = {x["name"]: x["kind"] for x in listed if x["name"] in ("INBOX", "Done", "AI_PROCESSED")}
    expected = {"INBOX": "system", "Done": "folder", "AI_PROCESSED": "keyword"}
    assert kinds == {"imap": expected, "maildir": expected}


async def test_imap_move_email_of_a_list_gives_each_moved_message_its_new_id_and_reports_a_bad_one(
    connect: Connect, dovecot: Dovecot, mailbox: str
) -> None:
    mails = [
        Loaded("INBOX", make_mail(f"Batch {i}", f"body {i}", msgid=f"<batch{i}@corp.test>"), BASE_DAY) for i in range(2)
    ]
    append_all(dovecot, mailbox, mails)
    async with connect(**dovecot.settings(mailbox)) as c:
        ids = [e["id"] for e in (await call(c, "list_emails", {"query": ""}))["emails"]]
        moved = await call(
            c, "move_email", {"message_id": [ids[0], "bm90LWFuLWlk", ids[1]], "destination_label": "Done"}
        )
        opened = [await call(c, "get_email", {"message_id": r["id"]}) for r in moved["results"] if r["id"]]
        inbox = await call(c, "list_emails", {"query": "in:inbox"})
    assert [r["error"] for r in moved["results"]] == [None, "not_found", None]
    assert all(r["id"] not in ids for r in moved["results"] if r["id"])
    assert sorted(m["body"] for m in opened) == ["body 0", "body 1"]
    assert inbox["emails"] == []


@pytest.mark.parametrize("server", ["dovecot", "dovecot_dot"])
async def test_imap_nested_folder_labels_work_whatever_the_server_separator(
    connect: Connect, request: pytest.FixtureRequest, server: str
) -> None:
    imap: Dovecot = request.getfixturevalue(server)
    user = imap.add_user()
    append_all(imap, user, [Loaded("INBOX", make_mail("Contract", "x", msgid="<c1@corp.test>"), BASE_DAY)])
    async with connect(**imap.settings(user)) as c:
        target = (await call(c, "list_emails", {"query": ""}))["emails"][0]
        moved = await call(c, "move_email", {"message_id": target["id"], "destination_label": "Clients/Acme"})
        inside = await call(c, "list_emails", {"query": "in:Clients/Acme"})
        labels = {x["name"]: x["kind"] for x in (await call(c, "list_labels"))["labels"]}
    assert moved["labels"][0] == "Clients/Acme"
    assert [e["id"] for e in inside["emails"]] == [moved["id"]]
    assert inside["emails"][0]["labels"][0] == "Clients/Acme"
    assert labels["Clients/Acme"] == "folder"
    client = imap.client(user)
    names = [name for _flags, _sep, name in client.list_folders()]
    client.logout()
    assert ("Clients.Acme" if imap.separator == "." else "Clients/Acme") in names


# -- 6. moving a message without a Message-ID ----------------------------------------------------

NO_MESSAGE_ID = (
    b"From: a@corp.test\r\nTo: me@corp.test\r\nSubject: Anonymous\r\n"
    b"Date: Thu, 19 Nov 2026 12:00:00 +0000\r\n\r\nNo id.\r\n"
)


async def test_imap_moving_a_message_without_message_id_returns_its_new_id(
    connect: Connect, dovecot: Dovecot, mailbox: str
) -> None:
    append_all(dovecot, mailbox, [Loaded("INBOX", NO_MESSAGE_ID, BASE_DAY)])
    async with connect(**dovecot.settings(mailbox)) as c:
        target = (await call(c, "list_emails", {"query": ""}))["emails"][0]
        moved = await call(c, "move_email", {"message_id": target["id"], "destination_label": "Done"})
        opened = await call(c, "get_email", {"message_id": moved["id"]})
        inbox = await call(c, "list_emails", {"query": "in:inbox"})
    assert target["rfc_message_id"] == ""
    assert moved["labels"][0] == "Done" and opened["body"] == "No id."
    assert inbox["emails"] == []


async def test_imap_get_thread_of_a_message_without_message_id_is_that_message(
    connect: Connect, dovecot: Dovecot, mailbox: str
) -> None:
    append_all(dovecot, mailbox, [Loaded("INBOX", NO_MESSAGE_ID, BASE_DAY)])
    async with connect(**dovecot.settings(mailbox)) as c:
        target = (await call(c, "list_emails", {"query": ""}))["emails"][0]
        thread = await call(c, "get_thread", {"thread_id": target["thread_id"]})
    assert [m["id"] for m in thread["messages"]] == [target["id"]]


@pytest.mark.parametrize("label", ["*", "Clients/%", "a\nb", "/root", "a//b"])
async def test_imap_security_label_with_list_wildcards_or_empty_parts_is_refused(
    connect: Connect, dovecot: Dovecot, mailbox: str, label: str
) -> None:
    append_all(dovecot, mailbox, [Loaded("INBOX", NO_MESSAGE_ID, BASE_DAY)])
    async with connect(**dovecot.settings(mailbox)) as c:
        target = (await call(c, "list_emails", {"query": ""}))["emails"][0]
        error = await fail(c, "move_email", {"message_id": target["id"], "destination_label": label})
        labels = {x["name"] for x in (await call(c, "list_labels"))["labels"]}
    assert error["error"] == "bad_request"
    assert labels == {"INBOX", "SENT", "DRAFT", "TRASH", "SPAM"}


# -- 7. attachments from BODYSTRUCTURE ------------------------------------------------------------


async def test_imap_has_attachment_and_filename_match_the_maildir_on_the_corpus(
    connect: Connect, corpus: Corpus, workspace: Path
) -> None:
    with_attachments = truth(corpus.messages, lambda p: bool(p.attachments))
    pdf = truth(corpus.messages, lambda p: any("pdf" in a.filename.lower() for a in p.attachments))
    async with connect(**corpus.settings()) as c:
        over_imap = await subjects(c, "has:attachment")
        without = await subjects(c, "-has:attachment")
        pdf_imap = await subjects(c, "filename:pdf")
        listed = (await call(c, "list_emails", {"query": "", "max_results": 100}))["emails"]
    to_maildir(workspace, corpus.messages)
    async with connect() as c:
        local = await subjects(c, "has:attachment")
        pdf_local = await subjects(c, "filename:pdf")
    assert set(over_imap) == with_attachments and len(over_imap) == len(local)
    assert set(local) == with_attachments
    assert not set(without) & with_attachments
    assert set(pdf_imap) == set(pdf_local) == pdf
    flagged = {e["subject"] for e in listed if e["has_attachments"]}
    assert flagged == with_attachments
    bounce = next(m for m in corpus.messages if m.name == "office365.eml")
    assert len(bounce.raw) > 60_000 and decode(parse_bytes(bounce.raw)).subject in flagged


# -- 10. stable page cursors ------------------------------------------------------------------


async def test_imap_next_page_does_not_repeat_a_message_when_mail_arrives_between_pages(
    connect: Connect, dovecot: Dovecot, mailbox: str
) -> None:
    batch = [Loaded("INBOX", make_mail(f"Report {i}", "x", days_ago=20 - i), BASE_DAY) for i in range(6)]
    append_all(dovecot, mailbox, batch)
    async with connect(**dovecot.settings(mailbox)) as c:
        first = await call(c, "list_emails", {"query": "", "max_results": 3})
        append_all(dovecot, mailbox, [Loaded("INBOX", make_mail("Breaking", "x", days_ago=0), BASE_DAY)])
        second = await call(c, "list_emails", {"query": "", "max_results": 3, "cursor": first["next_cursor"]})
    assert [e["subject"] for e in first["emails"]] == ["Report 5", "Report 4", "Report 3"]
    assert [e["subject"] for e in second["emails"]] == ["Report 2", "Report 1", "Report 0"]
    assert second["next_cursor"] is None


async def test_imap_next_page_after_a_restart_neither_repeats_nor_skips_when_newer_mail_arrived(
    connect: Connect, dovecot: Dovecot, mailbox: str, workspace: Path
) -> None:
    batch = [make_mail(f"Report {i}", "x", days_ago=20 - i) for i in range(6)]
    append_all(dovecot, mailbox, [Loaded("INBOX", raw, BASE_DAY) for raw in batch])
    for raw in batch:
        deliver(workspace, raw)
    newer = make_mail("Breaking", "x", days_ago=0)
    pages: dict[str, list[list[str]]] = {}
    for backend, settings in (("imap", dovecot.settings(mailbox)), ("maildir", {})):
        async with connect(**settings) as c:
            first = await call(c, "list_emails", {"query": "", "max_results": 3})
        if backend == "imap":
            append_all(dovecot, mailbox, [Loaded("INBOX", newer, BASE_DAY)])
        else:
            deliver(workspace, newer)
        async with connect(**settings) as c:  # a restarted server: a new backend object
            second = await call(c, "list_emails", {"query": "", "max_results": 3, "cursor": first["next_cursor"]})
        assert second["next_cursor"] is None
        pages[backend] = [[e["subject"] for e in p["emails"]] for p in (first, second)]
    expected = [["Report 5", "Report 4", "Report 3"], ["Report 2", "Report 1", "Report 0"]]
    assert pages == {"imap": expected, "maildir": expected}


# -- 12. phrases ----------------------------------------------------------------------------------


async def test_quoted_phrase_matches_only_messages_with_the_words_together(
    connect: Connect, workspace: Path, dovecot: Dovecot, mailbox: str
) -> None:
    mails = [
        make_mail("Q3", "The quarterly review is on Monday."),
        make_mail("Notes", "A review of the quarterly numbers."),
        make_mail("Other", "Quarterly figures; please review."),
    ]
    for raw in mails:
        deliver(workspace, raw)
    append_all(dovecot, mailbox, [Loaded("INBOX", raw, BASE_DAY) for raw in mails])
    async with connect() as c:
        local = await subjects(c, '"quarterly review"')
        local_subject = await subjects(c, 'subject:"Q3"')
    async with connect(**dovecot.settings(mailbox)) as c:
        over_imap = await subjects(c, '"quarterly review"')
    assert local == ["Q3"] and over_imap == ["Q3"]
    assert local_subject == ["Q3"]


# -- 8. broken servers ------------------------------------------------------------------------

Script = Callable[[bytes], bytes | None]


class BrokenServer:
    """A loopback socket that plays an IMAP server going wrong: a greeting (or none), then an
    answer per command from `script` (None: hang up)."""

    def __init__(self, greeting: bytes | None, script: Script) -> None:
        self.greeting = greeting
        self.script = script
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = self.sock.accept()
                threading.Thread(target=self._talk_and_close, args=(conn,), daemon=True).start()

    def _talk_and_close(self, conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):
            self._talk(conn)

    def _talk(self, conn: socket.socket) -> None:
        if self.greeting is None:
            return
        conn.sendall(self.greeting)
        for line in conn.makefile("rb"):
            tag, _, rest = line.strip().partition(b" ")
            words = rest.upper().split(b" ")
            reply = self.script(words[1] if words[0] == b"UID" and len(words) > 1 else words[0])
            if reply is None:
                return
            conn.sendall(reply.replace(b"TAG", tag))

    def close(self) -> None:
        self.sock.close()


def hang_up(_command: bytes) -> bytes | None:
    return None


def plain_imap(command: bytes) -> bytes | None:
    """Capabilities without STARTTLS; refuses every login."""
    if command == b"CAPABILITY":
        return b"* CAPABILITY IMAP4rev1 AUTH=PLAIN\r\nTAG OK done\r\n"
    if command == b"LOGIN":
        return b"TAG NO [AUTHENTICATIONFAILED] Invalid credentials (Failure)\r\n"
    return None


def tls_refused(command: bytes) -> bytes | None:
    if command == b"CAPABILITY":
        return b"* CAPABILITY IMAP4rev1 STARTTLS LOGINDISABLED\r\nTAG OK done\r\n"
    if command == b"STARTTLS":
        return b"TAG NO [UNAVAILABLE] TLS is not available right now\r\n"
    return None


@pytest.fixture
def broken() -> Iterator[Callable[[bytes | None, Script], BrokenServer]]:
    servers: list[BrokenServer] = []

    def start(greeting: bytes | None, script: Script) -> BrokenServer:
        servers.append(BrokenServer(greeting, script))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


@pytest.mark.parametrize(
    ("greeting", "script", "security", "code", "words"),
    [
        (None, hang_up, "none", "external_service_error", "could not be used"),
        (b"* OK ready\r\n", hang_up, "none", "external_service_error", "could not be used"),
        (b"* BYE Too many connections from your address\r\n", hang_up, "none", "external_service_error",
         "Too many connections from your address"),
        (b"* OK ready\r\n", plain_imap, "starttls", "external_service_error", "does not offer STARTTLS"),
        (b"* OK ready\r\n", tls_refused, "starttls", "external_service_error", "refused STARTTLS"),
        (b"* OK ready\r\n", plain_imap, "none", "auth_required", "Invalid credentials (Failure)"),
    ],
)  # fmt: skip
async def test_imap_broken_server_is_reported_with_its_own_words_not_as_internal_error(
    connect: Connect,
    broken: Callable[[bytes | None, Script], BrokenServer],
    greeting: bytes | None,
    script: Script,
    security: str,
    code: str,
    words: str,
) -> None:
    server = broken(greeting, script)
    settings = {
        "backend": "imap",
        "imap_host": "127.0.0.1",
        "imap_port": server.port,
        "imap_user": "me@corp.test",
        "imap_password": "pw",
        "imap_security": security,
        "address": "me@corp.test",
        "timeout": 10,
    }
    with anyio.fail_after(60):
        async with connect(**settings) as c:
            error = await fail(c, "list_emails", {"query": ""})
    assert error["error"] == code
    assert words in error["message"]
    assert f"127.0.0.1:{server.port}" in error["message"]


async def test_imap_cursor_served_by_another_server_process_continues_across_folders(
    connect: Connect, dovecot: Dovecot, mailbox: str
) -> None:
    batch = [Loaded("INBOX", make_mail(f"Report {i}", "x", days_ago=20 - i), BASE_DAY) for i in range(5)]
    batch.append(Loaded("Projects", make_mail("Filed", "x", days_ago=17.5), BASE_DAY))
    append_all(dovecot, mailbox, batch)
    async with connect(**dovecot.settings(mailbox)) as c:
        first = await call(c, "list_emails", {"query": "", "max_results": 3})
    async with connect(**dovecot.settings(mailbox)) as c:  # a restarted server: no page remembered
        second = await call(c, "list_emails", {"query": "", "max_results": 3, "cursor": first["next_cursor"]})
    assert [e["subject"] for e in first["emails"]] == ["Report 4", "Report 3", "Filed"]
    assert [e["subject"] for e in second["emails"]] == ["Report 2", "Report 1", "Report 0"]


def no_utf8_search(command: bytes) -> bytes | None:
    """A server that logs in and opens INBOX but refuses any charset but US-ASCII in SEARCH."""
    replies = {
        b"CAPABILITY": b"* CAPABILITY IMAP4rev1 AUTH=PLAIN\r\nTAG OK done\r\n",
        b"LOGIN": b"TAG OK logged in\r\n",
        b"NOOP": b"TAG OK\r\n",
        b"SELECT": b"* 1 EXISTS\r\n* OK [UIDVALIDITY 7] ok\r\n* OK [PERMANENTFLAGS (\\Seen \\*)] ok\r\n"
        b"TAG OK [READ-WRITE] done\r\n",
        b"EXAMINE": b"* 1 EXISTS\r\n* OK [UIDVALIDITY 7] ok\r\nTAG OK [READ-ONLY] done\r\n",
        b"SEARCH": b"TAG NO [BADCHARSET (US-ASCII)] The only charset here is US-ASCII\r\n",
        b"LOGOUT": b"* BYE bye\r\nTAG OK\r\n",
    }
    return replies.get(command)


async def test_imap_server_without_utf8_search_answers_bad_request_for_non_ascii_terms(
    connect: Connect, broken: Callable[[bytes | None, Script], BrokenServer]
) -> None:
    server = broken(b"* OK ready\r\n", no_utf8_search)
    settings = {
        "backend": "imap",
        "imap_host": "127.0.0.1",
        "imap_port": server.port,
        "imap_user": "me@corp.test",
        "imap_password": "pw",
        "imap_security": "none",
        "address": "me@corp.test",
        "timeout": 10,
    }
    with anyio.fail_after(60):
        async with connect(**settings) as c:
            error = await fail(c, "list_emails", {"query": "in:inbox subject:Überprüfung"})
    assert error["error"] == "bad_request"
    assert "ASCII" in error["message"]


async def test_imap_every_corpus_message_lists_and_reads_with_the_attachments_get_email_shows(
    connect: Connect, corpus: Corpus
) -> None:
    async with connect(**corpus.settings()) as c:
        listed: list[dict[str, Any]] = []
        cursor = None
        while True:
            page = await call(c, "list_emails", {"query": "in:anywhere", "max_results": 20, "cursor": cursor})
            listed.extend(page["emails"])
            cursor = page["next_cursor"]
            if cursor is None:
                break
        full = [await call(c, "get_email", {"message_id": e["id"]}) for e in listed]
    assert len(listed) == len(corpus.messages) == len({e["id"] for e in listed})
    for summary, message in zip(listed, full, strict=True):
        assert summary["has_attachments"] == bool(message["attachments"]), message["subject"]
        assert summary["subject"] == message["subject"] and summary["sender"] == message["sender"]
