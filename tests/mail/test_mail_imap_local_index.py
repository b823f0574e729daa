"""The local copy of an IMAP account against a real Dovecot: a word found in the copy is found by the
server's own SEARCH TEXT on the same messages, and every change on the server (new, expunged, moved,
flagged messages, a new UIDVALIDITY) is in the copy after a sync, even after a sync cut short."""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from imapclient import IMAPClient
from imapclient.exceptions import IMAPClientError

from deskmcp.mail.backends.imap import ImapBackend, ImapConfig
from deskmcp.mail.backends.imap_store import MIN_WORD, ImapStore
from deskmcp.mail.backends.imap_sync import sync_folder
from deskmcp.mail.query import parse_query
from tests.helpers.corpora import shared_corpus
from tests.helpers.mail import make_mail
from tests.mail.dovecot import (
    BASE_DAY,
    PASSWORD,
    Dovecot,
    append_all,
    corpus_messages,
    dovecot_fixture,  # noqa: F401  (fixture)
    generated_threads,
    mailbox_fixture,  # noqa: F401  (fixture)
)

pytestmark = pytest.mark.e2e

FOLDERS = ("INBOX", "Sent", "Projects", "Trash")


@pytest.fixture(scope="module")
def account(dovecot: Dovecot) -> str:
    """A user holding the real .eml corpus and the generated conversations; only read."""
    user = dovecot.add_user()
    append_all(dovecot, user, [*corpus_messages(shared_corpus("emails")), *generated_threads()])
    return user


@pytest.fixture
def imap(dovecot: Dovecot, account: str) -> Iterator[IMAPClient]:
    client = dovecot.client(account)
    yield client
    client.logout()


def corpus_words() -> list[str]:
    """About 150 words of the corpus's messages (bodies and headers, several scripts), spread over the alphabet."""
    found: set[str] = set()
    for path in sorted(shared_corpus("emails").rglob("*.eml")):
        text = path.read_bytes().decode("utf-8", "replace")
        found.update(w for w in re.findall(rf"[^\W\d_]{{{MIN_WORD},12}}", text))
    ordered = sorted(found)
    return [*ordered[:: max(1, len(ordered) // 150)], "Überprüfung", "prüfen", "議事録", "Díaz", "ACME", "renewal"]


def server_search(client: Any, folder: str, words: list[str]) -> set[int]:
    client.select_folder(folder, readonly=True)
    criteria: list[Any] = []
    for word in words:
        criteria += ["TEXT", word]
    return set(client.search(criteria, "UTF-8"))


def local_search(store: ImapStore, folder: str, words: list[str]) -> set[int]:
    return {uid for uid, _t in store.search(folder, words)}


def test_local_index_finds_each_word_in_the_same_messages_as_server_search(imap: IMAPClient, tmp_path: Path) -> None:
    store = ImapStore(tmp_path / "imap.sqlite3")
    for folder in FOLDERS:
        sync_folder(imap, store, folder)
    words = corpus_words()
    assert len(words) > 100
    differ = {}
    for folder in FOLDERS:
        for word in words:
            server, local = server_search(imap, folder, [word]), local_search(store, folder, [word])
            if server != local:
                differ[(folder, word)] = (sorted(server - local), sorted(local - server))
    assert differ == {}
    # several words: every one of them, as the server's SEARCH with several TEXT keys
    for pair in (["acme", "renewal"], ["the", "message"], ["Bitte", "Budgets"]):
        assert local_search(store, "INBOX", pair) == server_search(imap, "INBOX", pair)
    assert local_search(store, "INBOX", ["acme"])  # the words do find mail


@pytest.fixture
def box(dovecot: Dovecot, mailbox: str) -> Iterator[IMAPClient]:
    """A fresh, empty account this test changes, and a connection to it."""
    client = dovecot.client(mailbox)
    yield client
    client.logout()


def put(client: IMAPClient, folder: str, *subjects: str) -> None:
    if folder != "INBOX" and not client.folder_exists(folder):
        client.create_folder(folder)
    for subject in subjects:
        client.append(folder, make_mail(subject, f"About {subject}."), msg_time=BASE_DAY)


def uid_of(client: IMAPClient, folder: str, word: str) -> int:
    return server_search(client, folder, [word]).pop()


def test_local_index_follows_new_expunged_flagged_and_moved_messages_after_sync(
    box: IMAPClient, tmp_path: Path
) -> None:
    put(box, "INBOX", "alphabet", "betamax", "gammaray")
    put(box, "Archive")
    store = ImapStore(tmp_path / "imap.sqlite3")
    for folder in ("INBOX", "Archive"):
        sync_folder(box, store, folder)
    assert local_search(store, "INBOX", ["betamax"]) == server_search(box, "INBOX", ["betamax"]) != set()

    put(box, "INBOX", "deltawing")  # new
    box.select_folder("INBOX")
    beta = uid_of(box, "INBOX", "betamax")
    box.select_folder("INBOX")
    box.delete_messages([beta])  # expunged
    box.expunge()
    gamma = uid_of(box, "INBOX", "gammaray")
    box.select_folder("INBOX")
    box.add_flags([gamma], [b"\\Flagged"])  # flag change
    alpha = uid_of(box, "INBOX", "alphabet")
    box.select_folder("INBOX")
    box.move([alpha], "Archive")  # moved
    assert local_search(store, "INBOX", ["betamax"]) == {beta}  # not synced yet: the old copy

    for folder in ("INBOX", "Archive"):
        sync_folder(box, store, folder)
        box.select_folder(folder, readonly=True)
        assert store.uids(folder) == set(box.search("ALL"))
    for word in ("alphabet", "betamax", "gammaray", "deltawing", "About"):
        for folder in ("INBOX", "Archive"):
            assert local_search(store, folder, [word]) == server_search(box, folder, [word]), (folder, word)
    assert local_search(store, "Archive", ["alphabet"]) != set()
    assert b"\\Flagged" in store.flags("INBOX")[gamma]


def test_with_qresync_the_server_names_the_expunged_messages_and_no_uid_list_is_read(
    dovecot: Dovecot, box: IMAPClient, mailbox: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    put(box, "INBOX", *[f"plum{i:02d}" for i in range(12)])
    syncing = dovecot.client(mailbox)
    assert syncing.has_capability("QRESYNC") and b"QRESYNC" in syncing.enable("QRESYNC")
    store = ImapStore(tmp_path / "imap.sqlite3")
    sync_folder(syncing, store, "INBOX", vanished=True)
    gone = sorted(server_search(box, "INBOX", ["plum03"]) | server_search(box, "INBOX", ["plum07"]))
    flagged = server_search(box, "INBOX", ["plum05"])
    box.select_folder("INBOX")
    box.delete_messages(gone)
    box.expunge()
    box.add_flags(flagged, [b"\\Flagged"])
    searched: list[list[Any]] = []
    search = IMAPClient.search

    def recording(client: IMAPClient, criteria: Any = "ALL", charset: str | None = None) -> Any:
        searched.append(list(criteria) if isinstance(criteria, list | tuple) else [criteria])
        return search(client, criteria, charset)

    monkeypatch.setattr(IMAPClient, "search", recording)
    sync_folder(syncing, store, "INBOX", vanished=True)
    syncing.logout()
    assert store.uids("INBOX") == set(server_search(box, "INBOX", ["plum"])) and len(store.uids("INBOX")) == 10
    assert not set(gone) & store.uids("INBOX")
    assert b"\\Flagged" in store.flags("INBOX")[flagged.pop()]
    assert ["ALL"] not in searched, searched  # the expunged were named by VANISHED, not found from a UID list


def test_local_index_reads_a_folder_again_when_its_uidvalidity_changes(box: IMAPClient, tmp_path: Path) -> None:
    put(box, "Projects", "orangejuice", "lemonade")
    store = ImapStore(tmp_path / "imap.sqlite3")
    before = sync_folder(box, store, "Projects")
    box.select_folder("INBOX")
    box.delete_folder("Projects")  # made again: new UIDVALIDITY, UIDs from 1 again
    put(box, "Projects", "grapefruit")
    after = sync_folder(box, store, "Projects")
    assert after.validity != before.validity
    assert local_search(store, "Projects", ["orangejuice"]) == set() == server_search(box, "Projects", ["orangejuice"])
    assert local_search(store, "Projects", ["grapefruit"]) == server_search(box, "Projects", ["grapefruit"]) != set()
    assert store.count("Projects") == 1


def test_a_sync_cut_short_leaves_a_consistent_index_that_the_next_sync_completes(
    dovecot: Dovecot, box: IMAPClient, mailbox: str, tmp_path: Path
) -> None:
    put(box, "INBOX", *[f"number{i:02d} zebra" for i in range(30)])
    store = ImapStore(tmp_path / "imap.sqlite3")
    cut = dovecot.client(mailbox)

    def lose_connection(done: int) -> None:
        cut.shutdown()  # the connection drops after the first batch is written

    with pytest.raises((IMAPClientError, OSError)):
        sync_folder(cut, store, "INBOX", progress=lose_connection, batch=10)
    assert store.state("INBOX") is None  # not claimed as synced: searches still go to the server
    assert len(store.uids("INBOX")) == 10
    assert local_search(store, "INBOX", ["zebra"]) == store.uids("INBOX")  # each stored message whole

    sync_folder(box, store, "INBOX", batch=10)
    assert local_search(store, "INBOX", ["zebra"]) == server_search(box, "INBOX", ["zebra"])
    assert len(store.uids("INBOX")) == 30


def backend(dovecot: Dovecot, user: str, index: Path | None) -> ImapBackend:
    config = ImapConfig(host=dovecot.host, port=dovecot.port, user=user, password=PASSWORD, security="none")
    return ImapBackend(config, address=user, transport=None, max_message_bytes=10_000_000, index_path=index)


def listed(mail: ImapBackend, query: str) -> list[str]:
    return [e.id for e in mail.list(parse_query(query), raw=query, limit=50, offset=0).emails]


def summaries(mail: ImapBackend, query: str) -> list[dict[str, Any]]:
    return [e.model_dump() for e in mail.list(parse_query(query), raw=query, limit=50, offset=0).emails]


def test_word_search_answers_from_the_synced_copy_with_the_servers_results(
    dovecot: Dovecot, account: str, tmp_path: Path
) -> None:
    server_only = backend(dovecot, account, None)
    local = backend(dovecot, account, tmp_path / "imap.sqlite3")
    try:
        local.sync_all()
        assert local.store is not None and set(local.store.folders()) >= {"INBOX", "Sent", "Projects", "Trash"}
        queries = ("acme", "acme renewal", "in:anywhere acme", "in:Sent renewal", "message the", "Überprüfung")
        for query in (*queries, "in:anywhere the", "in:anywhere invoice", "in:anywhere report"):
            # the whole summaries (subject, people, date, snippet, labels, unread, attachments),
            # the ones the copy kept as the ones the server gives
            assert summaries(local, query) == summaries(server_only, query), query
        assert listed(local, "acme")
        assert any(e["has_attachments"] for e in summaries(local, "in:anywhere the"))
    finally:
        local.close()
        server_only.close()


def selects_on_this_thread(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The folders SELECTed or EXAMINEd from now on by this thread (the background sync selects
    on a connection and thread of its own)."""
    here = threading.current_thread()
    selected: list[str] = []
    select = IMAPClient.select_folder

    def counting(client: IMAPClient, folder: str, readonly: bool = False) -> Any:
        if threading.current_thread() is here:
            selected.append(folder)
        return select(client, folder, readonly=readonly)

    monkeypatch.setattr(IMAPClient, "select_folder", counting)
    return selected


def test_a_search_of_the_synced_copy_selects_no_folder(
    dovecot: Dovecot, account: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    local = backend(dovecot, account, tmp_path / "imap.sqlite3")
    try:
        local.sync_all()
        expected = summaries(local, "in:anywhere acme")
        selected = selects_on_this_thread(monkeypatch)
        assert summaries(local, "in:anywhere acme") == expected
    finally:
        local.close()
    # Each folder's state comes from STATUS and the page's summaries from the copy (a SELECT reads
    # a whole Maildir folder on Dovecot: tens of milliseconds on a big one).
    assert len(expected) > 1
    assert selected == []


def test_listings_on_read_and_starred_answer_from_the_synced_copy_with_the_servers_pages(
    dovecot: Dovecot, box: IMAPClient, mailbox: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # each sent on another day (messages sent in the same second are listed in an order of their own)
    for i in range(12):
        folder = "INBOX" if i < 8 else "Projects"
        if folder != "INBOX" and not box.folder_exists(folder):
            box.create_folder(folder)
        box.append(folder, make_mail(f"quince{i:02d} orchard", "About quinces.", days_ago=i + 1), msg_time=BASE_DAY)
    read = server_search(box, "INBOX", ["quince01"]) | server_search(box, "INBOX", ["quince04"])
    starred = server_search(box, "INBOX", ["quince02"])
    box.select_folder("INBOX")
    box.add_flags(read, [b"\\Seen"])
    box.add_flags(starred, [b"\\Flagged", b"\\Seen"])
    queries = ("is:unread", "is:read", "is:starred", "is:unstarred orchard", "label:unread orchard", "", "in:Projects")
    server_only = backend(dovecot, mailbox, None)
    local = backend(dovecot, mailbox, tmp_path / "imap.sqlite3")
    try:
        local.sync_all()
        expected = {query: summaries(server_only, query) for query in queries}
        selected = selects_on_this_thread(monkeypatch)
        for query in queries:
            assert summaries(local, query) == expected[query], query
        assert selected == []  # every one answered from the copy
        assert len(expected["is:unread"]) == 9 and len(expected["is:starred"]) == 1
        # Read elsewhere after the sync: that folder's flags are asked of the server again.
        unread = server_search(box, "INBOX", ["quince05"])
        box.select_folder("INBOX")
        box.add_flags(unread, [b"\\Seen"])
        after = summaries(local, "is:unread")
        assert after == summaries(server_only, "is:unread") and len(after) == 8
    finally:
        local.close()
        server_only.close()


def test_a_flag_changed_since_the_sync_shows_in_the_answer(
    dovecot: Dovecot, box: IMAPClient, mailbox: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    put(box, "INBOX", "kiwifruit one", "kiwifruit two")
    local = backend(dovecot, mailbox, tmp_path / "imap.sqlite3")
    try:
        local.sync_all()
        assert [e["unread"] for e in summaries(local, "kiwifruit")] == [True, True]
        both = server_search(box, "INBOX", ["kiwifruit"])
        box.select_folder("INBOX")
        box.add_flags(both, [b"\\Seen", b"Follow=20up"])
        # The folder's HIGHESTMODSEQ moved: the kept flags are not the server's any more.
        selected = selects_on_this_thread(monkeypatch)
        seen = summaries(local, "kiwifruit")
        assert [e["unread"] for e in seen] == [False, False]
        assert all("Follow up" in e["labels"] for e in seen)
        assert selected == ["INBOX"]
    finally:
        local.close()


def test_a_local_copy_of_an_older_layout_is_read_again(
    dovecot: Dovecot, box: IMAPClient, mailbox: str, tmp_path: Path
) -> None:
    put(box, "INBOX", "quincefruit")
    path = tmp_path / "imap.sqlite3"
    old = sqlite3.connect(path)  # a copy an older deskmcp made: no summaries kept
    old.executescript(
        "CREATE TABLE folders (name TEXT PRIMARY KEY, validity INTEGER NOT NULL, uidnext INTEGER NOT NULL,"
        " messages INTEGER NOT NULL, modseq INTEGER NOT NULL, synced REAL NOT NULL);"
        "INSERT INTO folders VALUES ('INBOX', 1, 99, 1, 1, 0);"
    )
    old.close()
    store = ImapStore(path)
    assert store.folders() == [] and store.state("INBOX") is None
    sync_folder(box, store, "INBOX")
    assert local_search(store, "INBOX", ["quincefruit"]) == server_search(box, "INBOX", ["quincefruit"]) != set()
    assert len(store.kept("INBOX", sorted(store.uids("INBOX")))) == 1
    store.close()


def test_pages_of_a_search_answered_from_the_synced_copy_are_the_servers_pages(
    dovecot: Dovecot, account: str, tmp_path: Path
) -> None:
    def pages(mail: ImapBackend, query: str) -> list[list[str]]:
        out: list[list[str]] = []
        after = None
        while True:
            page = mail.list(parse_query(query), raw=query, limit=2, offset=0, after=after)
            out.append([e.id for e in page.emails])
            if not page.more:
                return out
            after = page.after

    server_only = backend(dovecot, account, None)
    local = backend(dovecot, account, tmp_path / "imap.sqlite3")
    try:
        local.sync_all()
        for query in ("in:anywhere acme", "acme"):
            expected = pages(server_only, query)
            assert len(expected) > 1
            assert pages(local, query) == expected, query
    finally:
        local.close()
        server_only.close()


def test_word_search_sees_mail_that_arrived_since_the_last_sync(
    dovecot: Dovecot, box: IMAPClient, mailbox: str, tmp_path: Path
) -> None:
    put(box, "INBOX", "firstcomer")
    local = backend(dovecot, mailbox, tmp_path / "imap.sqlite3")
    try:
        local.sync_all()
        assert len(listed(local, "firstcomer")) == 1
        put(box, "INBOX", "latecomer firstcomer")  # after the sync
        assert len(listed(local, "latecomer")) == 1
        assert local.store is not None and local.store.count("INBOX") == 2  # caught up before answering
        assert len(listed(local, "firstcomer")) == 2
    finally:
        local.close()
