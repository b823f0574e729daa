"""The local copy's store alone: a search sees every message written, by this connection or another."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from deskmcp.mail.backends.imap_store import FolderState, ImapStore, Kept, Stored
from deskmcp.mail.backends.imap_sync import uid_ranges
from tests.helpers.files import damage_a_page, locked_by_another


def message(uid: int, when: float, text: str) -> Stored:
    kept = Kept(
        headers=b"Subject: x\r\n\r\n",
        text=b"",
        preview=b"x",
        attachments=(("a.pdf", "application/pdf", 3),),
        arrived=when,
    )
    return Stored(uid=uid, time=when, flags=(b"\\Seen",), text=text, kept=kept)


def test_a_search_sees_messages_written_since_the_last_one_by_this_connection_or_another(tmp_path: Path) -> None:
    path = tmp_path / "imap.sqlite3"
    store, other = ImapStore(path), ImapStore(path)
    try:
        store.add("INBOX", [message(1, 100.0, "walrus tusk"), message(2, 300.0, "walrus"), message(3, 200.0, "seal")])
        assert store.search_all(["walrus"]) == {"INBOX": [(2, 300.0), (1, 100.0)]}
        store.add("Archive", [message(7, 250.0, "old walrus")])  # this connection
        assert store.search_all(["walrus"]) == {"INBOX": [(2, 300.0), (1, 100.0)], "Archive": [(7, 250.0)]}
        other.add("INBOX", [message(4, 150.0, "walrus pup")])  # another connection to the same file
        other.remove("Archive", [7])
        assert store.search_all(["walrus"]) == {"INBOX": [(2, 300.0), (4, 150.0), (1, 100.0)]}
        assert store.search("INBOX", ["tusk"]) == [(1, 100.0)]
        assert store.search_all(["walrus"], first=2) == {"INBOX": [(2, 300.0), (4, 150.0)]}  # the newest two
        assert store.search_all(["narwhal"]) == {}
    finally:
        store.close()
        other.close()


def test_a_kept_summary_reads_back_as_written(tmp_path: Path) -> None:
    store = ImapStore(tmp_path / "imap.sqlite3")
    try:
        store.add("INBOX", [message(5, 10.0, "text")])
        store.mark("INBOX", FolderState(validity=9, uidnext=6, messages=1, modseq=3))
        flags, kept = store.kept("INBOX", [5, 6])[5]
        assert flags == (b"\\Seen",)
        assert kept == message(5, 10.0, "text").kept
        assert list(store.kept("INBOX", [5, 6])) == [5]  # uid 6 is not kept
    finally:
        store.close()


def test_vanished_responses_read_as_uid_ranges() -> None:
    assert uid_ranges([b"(EARLIER) 41,43:116,118", b"9:3", b"(EARLIER) x:1"]) == [
        (41, 41),
        (43, 116),
        (118, 118),
        (3, 9),
    ]
    assert uid_ranges([]) == []


def test_a_search_without_words_lists_every_message_and_flags_filter_as_written(tmp_path: Path) -> None:
    store = ImapStore(tmp_path / "imap.sqlite3")
    try:
        store.add("INBOX", [message(1, 100.0, "a"), message(2, 300.0, "b"), message(3, 200.0, "c")])
        store.set_flags("INBOX", {2: ()})  # 2 is unread now
        assert store.search_all([]) == {"INBOX": [(2, 300.0), (3, 200.0), (1, 100.0)]}
        assert store.search_all([], flags={"\\Seen": False}) == {"INBOX": [(2, 300.0)]}
        store.set_flags("INBOX", {2: (b"\\Seen", b"\\Flagged")})
        assert store.search_all([], flags={"\\Seen": False}) == {}
        assert store.search_all([], flags={"\\Seen": True, "\\Flagged": True}) == {"INBOX": [(2, 300.0)]}
    finally:
        store.close()


def test_a_damaged_local_copy_is_set_aside_and_started_again(tmp_path: Path) -> None:
    # Only a copy of the server's mail: a file that is not a database, or whose pages are
    # damaged, is moved aside and the store starts empty (the next sync reads the mail again).
    path = tmp_path / "imap.sqlite3"
    path.write_bytes(b"not a database at all" * 200)
    store = ImapStore(path)
    try:
        store.add("INBOX", [message(uid, float(uid), f"walrus number {uid} " * 40) for uid in range(1, 400)])
        assert store.count("INBOX") == 399
    finally:
        store.close()
    damage_a_page(path)
    store = ImapStore(path)
    try:
        assert store.count("INBOX") == 0
        assert store.state("INBOX") is None
        store.add("INBOX", [message(1, 1.0, "walrus")])
        assert store.search("INBOX", ["walrus"]) == [(1, 1.0)]
    finally:
        store.close()
    assert len([p for p in tmp_path.iterdir() if p.name.startswith("imap.sqlite3.corrupt-")]) >= 1


def test_a_local_copy_locked_by_another_connection_is_not_taken_for_damaged(tmp_path: Path) -> None:
    path = tmp_path / "imap.sqlite3"
    store = ImapStore(path)
    store.add("INBOX", [message(1, 1.0, "walrus")])
    store.close()
    with locked_by_another(path), pytest.raises(sqlite3.OperationalError, match="locked"):
        ImapStore(path)
    assert not [p.name for p in tmp_path.iterdir() if ".corrupt-" in p.name]
    store = ImapStore(path)
    try:
        assert store.search("INBOX", ["walrus"]) == [(1, 1.0)]
    finally:
        store.close()
