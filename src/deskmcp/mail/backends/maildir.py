"""The local backend: a Maildir++ tree, a search index over it, and a label table.

Folders carry the folder labels (INBOX, SENT, DRAFT, TRASH, SPAM, user folders); any other
label a message has is a row in `deskmcp-labels.sqlite3` at the Maildir's root (user data:
kept beside the mail, never in the rebuildable index). The index is refreshed before each
call by listing only the folders whose directory changed. The label table, the index's schema
and the SQL this backend runs on the index live in `maildir_store`.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import orjson

from deskmcp.core.errors import BadRequest, IOFailure, NotFound
from deskmcp.core.files import read_bytes_limited
from deskmcp.core.search import fusion
from deskmcp.core.search.embedding import Embedder
from deskmcp.core.search.index import Hit, IndexRecord, SearchIndex
from deskmcp.core.search.vectors import VectorIndex, windows
from deskmcp.mail import mailstore
from deskmcp.mail.backends import maildir_store
from deskmcp.mail.backends.base import Labelled, Page, Ranked, Sent, gone
from deskmcp.mail.backends.maildir_query import CJK, LABEL_SEP, cjk_grams, listing, term_clause, word_alternatives
from deskmcp.mail.backends.maildir_store import SCHEMA, LabelTable, thread_id_for
from deskmcp.mail.compose import envelope_recipients
from deskmcp.mail.mailstore import Entry, MailStore
from deskmcp.mail.mime import decode, parse_bytes, shown_date, thread_root
from deskmcp.mail.models import EmailSummary, LabelInfo
from deskmcp.mail.query import Node, free_words

log = logging.getLogger(__name__)

INDEXED_BODY_CHARS = 100_000
_RACY_NS = 2_000_000_000  # a directory changed in the last 2 s may change again within its mtime tick
_HIDDEN = ("TRASH", "SPAM")
_COMMON_MATCHES = 2000


def _passages(texts: Mapping[str, str]) -> list[str]:
    """A message's passages to embed: windows of its body, each with its subject."""
    subject = texts.get("subject", "")
    pieces = [f"{subject}\n{piece}" if subject else piece for piece in windows(texts.get("body", ""))]
    return pieces or ([subject] if subject else [])


def message_id_for(key: str) -> str:
    return hashlib.blake2b(key.encode(), digest_size=8).hexdigest()


def _label_text(labels: Sequence[str]) -> str:
    return LABEL_SEP + LABEL_SEP.join(labels) + LABEL_SEP if labels else ""


class MaildirBackend:
    name = "maildir"

    def __init__(
        self,
        root: Path,
        index_path: Path,
        *,
        address: str,
        max_message_bytes: int,
        transport: Callable[[EmailMessage], None] | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        self.transport = transport
        self.store = MailStore(root)
        self.store.ensure("")
        for directory in mailstore.SYSTEM_FOLDERS.values():
            self.store.ensure(directory)
        self.address = address.lower()
        self.max_message_bytes = max_message_bytes
        self.index = SearchIndex(index_path, SCHEMA)
        # Vectors of each message's subject and body, beside its words (None: no model set up).
        self.vectors = VectorIndex(self.index, embedder, _passages) if embedder is not None else None
        self.label_table = LabelTable(root / "deskmcp-labels.sqlite3")
        self._lock = threading.RLock()
        self._listings: dict[tuple[str, str], set[str]] = {}

    def close(self) -> None:
        self.index.close()
        self.label_table.close()

    # -- keeping the index in step with the folders ----------------------------------------

    def refresh(self) -> int:
        """Re-read the folders whose directory changed; returns how many records changed."""
        with self._lock:
            changed: list[tuple[str, str, int | None]] = []
            for directory in self.store.folders():
                for sub in ("new", "cur"):
                    mtime = self.store.dir_mtime(directory, sub)
                    if mtime is None or self.index.get_meta(f"dir:{directory}/{sub}") != str(mtime):
                        changed.append((directory, sub, mtime))
            if not changed:
                return 0
            return self._rescan(changed)

    def _rescan(self, dirs: list[tuple[str, str, int | None]]) -> int:
        """Compare each changed directory's file names with the last listing (or the index)."""
        now = time.time_ns()
        appeared: dict[str, Entry] = {}
        vanished: set[str] = set()
        listings: dict[tuple[str, str], set[str]] = {}
        for directory, sub, _ in dirs:
            names = self.store.list_names(directory, sub)
            before = self._listings.get((directory, sub))
            if before is None:
                before = self._indexed_names(directory, sub)
            for name in names - before:
                entry = Entry(directory, sub, name)
                appeared[message_id_for(entry.key)] = entry
            vanished.update(message_id_for(name.split(":", 1)[0]) for name in before - names)
            listings[(directory, sub)] = names
        indexed = self._indexed_keys(list(appeared))
        gone = [key for key in vanished if key not in appeared]
        moved = [(key, entry) for key, entry in appeared.items() if key in indexed]
        fresh = [entry for key, entry in appeared.items() if key not in indexed]
        labels = self.label_table.all() if fresh else {}
        batch: list[IndexRecord] = []
        joining: list[tuple[str, str, str]] = []
        added = 0
        for entry in fresh:
            record = self._record(entry, labels.get(entry.key, []))
            if record is not None:
                batch.append(record)
                joining.append(_link(record))
                added += 1
            if len(batch) >= 500:  # written as they are read: memory stays flat on a big first index
                self.index.apply(batch)
                batch = []
        meta = {f"dir:{d}/{s}": str(m) for d, s, m in dirs if m is not None and now - m > _RACY_NS}
        self.index.apply(batch, gone)
        with self.index.transaction() as conn:
            maildir_store.join_threads(conn, joining)
            for key, entry in moved:
                maildir_store.update_location(conn, key, entry)
            for k, v in meta.items():
                self.index.set_meta(k, v, conn)
        self._listings.update(listings)
        return added + len(moved) + len(gone)

    def _indexed_names(self, directory: str, sub: str) -> set[str]:
        return maildir_store.indexed_names(self.index, directory, sub)

    def _indexed_keys(self, keys: list[str]) -> set[str]:
        return maildir_store.indexed_keys(self.index, keys)

    def _listed(self, entry: Entry, present: bool) -> None:
        """Keep the last listing in step with a change this process made itself."""
        names = self._listings.get((entry.folder, entry.sub))
        if names is not None:
            (names.add if present else names.discard)(entry.name)

    def _record(self, entry: Entry, labels: list[str]) -> IndexRecord | None:
        path = self.store.path(entry)
        try:
            raw = read_bytes_limited(path, self.max_message_bytes)
            mtime = path.stat().st_mtime
        except (NotFound, IOFailure, OSError) as exc:
            log.warning("skipping %s: %s", entry.relpath, exc)
            return None
        parsed = decode(parse_bytes(raw, fast=True), fallback_time=mtime)
        key = message_id_for(entry.key)
        flags = entry.flags
        timestamp = parsed.timestamp if parsed.timestamp is not None else mtime
        attachments = [a.filename for a in parsed.attachments]
        data = orjson.dumps({"in_reply_to": parsed.in_reply_to, "references": parsed.references})
        return IndexRecord(
            key=key,
            fingerprint=entry.key,
            texts={
                "subject": parsed.subject,
                "sender": parsed.sender,
                "tos": parsed.to,
                "ccs": parsed.cc,
                "bccs": parsed.bcc,
                "body": parsed.body[:INDEXED_BODY_CHARS],
                "filenames": " ".join(attachments),
                "grams": cjk_grams(
                    " ".join((parsed.subject, parsed.sender, parsed.to, parsed.cc, parsed.bcc, *attachments))
                    + " "
                    + parsed.body[:INDEXED_BODY_CHARS]
                ),
            },
            columns={
                "folder": entry.folder,
                "sub": entry.sub,
                "fname": entry.name,
                "ts": timestamp,
                "date": parsed.date,
                "unread": int("S" not in flags),
                "starred": int("F" in flags),
                "has_att": int(bool(attachments)),
                "size": len(raw),
                "thread": thread_id_for(thread_root(parsed), key),
                "rfc": parsed.rfc_message_id,
                "subject": parsed.subject,
                "sender": parsed.sender,
                "tos": parsed.to,
                "ccs": parsed.cc,
                "snippet": parsed.snippet,
                "labels": _label_text(labels),
            },
            data=data,
        )

    # -- reading ---------------------------------------------------------------------------

    def _summary(self, key: str, c: dict[str, Any], snippet: str | None = None) -> EmailSummary:
        labels: list[str] = []
        folder = mailstore.folder_label(c["folder"])
        if folder:
            labels.append(folder)
        labels.extend(x for x in (c["labels"] or "").split(LABEL_SEP) if x)
        if c["unread"]:
            labels.append("UNREAD")
        if c["starred"]:
            labels.append("STARRED")
        # A Date that could not be read is stored as written: the sort time stands in, the newest
        # Received: stamp (the delivery here) or the file's time.
        stored = c["date"] or ""
        date, date_source = shown_date(stored, True, c["ts"])
        return EmailSummary(
            id=key,
            thread_id=c["thread"],
            rfc_message_id=c["rfc"] or "",
            subject=c["subject"] or "",
            sender=c["sender"] or "",
            to=c["tos"] or "",
            cc=c["ccs"] or "",
            date=date,
            date_source=date_source,
            snippet=snippet or c["snippet"] or "",
            labels=labels,
            unread=bool(c["unread"]),
            has_attachments=bool(c["has_att"]),
        )

    def _listing(self, query: Node | None) -> tuple[str, list[Any]]:
        """The SQL filter of a query (`maildir_query.listing`)."""
        return listing(query, common=query is not None and self._common(query), phrases=self._phrase_rows)

    def _phrase_rows(self, value: str, fields: tuple[str, ...]) -> list[int]:
        return maildir_store.phrase_rows(self.index, value, fields)

    def count(self, query: Node | None) -> int:
        """How many messages match `query` in all: one indexed count, no message read."""
        self.refresh()
        clause, params = self._listing(query)
        return self.index.count(where=clause, params=params)

    def list(self, query: Node | None, *, raw: str, limit: int, offset: int, after: list[Any] | None = None) -> Page:
        self.refresh()
        clause, params = self._listing(query)
        mark = _mark(after)
        if mark is not None:
            # Past the previous page's last message in (date, row) order: mail that arrived since
            # sorts before it and cannot push a message already shown onto this page.
            clause = f"({clause}) AND (d.ts < ? OR (d.ts = ? AND d.id < ?))"
            params = [*params, mark[0], mark[0], mark[1]]
            offset = 0
        hits = self.index.select(
            where=clause, params=params, order_by="d.ts DESC, d.id DESC", limit=limit + 1, offset=offset
        )
        page = hits[:limit]
        snippets = self._snippets([h.key for h in page], free_words(query))
        emails = [self._summary(h.key, h.columns, snippets.get(h.key)) for h in page]
        return Page(emails, len(hits) > limit, self._position(page[-1]) if page else None)

    @property
    def has_model(self) -> bool:
        return self.vectors is not None

    def by_meaning(self, filters: Node | None, text: str, *, mode: fusion.Mode, limit: int, offset: int) -> Ranked:
        """Messages passing `filters` (Trash and Spam left out unless it names them), ranked for
        `text` by meaning (`semantic`) or by meaning and words (`hybrid`, `core.search.fusion`)."""
        self.refresh()
        clause, params = listing(filters, phrases=self._phrase_rows)
        found = fusion.search(
            self.index, self.vectors, text, mode=mode, where=clause, params=params, limit=limit, offset=offset
        )
        emails = []
        for r in found.hits:
            snippet = " ".join(r.hit.snippet.split()) if r.hit.snippet else None
            summary = self._summary(r.hit.key, r.hit.columns, snippet)
            summary.lexical_rank, summary.semantic_rank = r.lexical_rank, r.semantic_rank
            emails.append(summary)
        return Ranked(emails, found.mode, found.pending)

    def _position(self, hit: Hit) -> list[Any] | None:
        row = maildir_store.row_of(self.index, hit.key)
        return None if row is None else [hit.columns["ts"], row]

    def _snippets(self, keys: list[str], words: list[str]) -> dict[str, str]:
        # CJK terms match character pairs, which make no readable snippet: the stored one is shown.
        words = [w for w in words if not CJK.search(w)]
        if not keys or not words:
            return {}
        try:
            found = self.index.snippets(keys, " ".join(f'"{w}"' if " " in w else w for w in words))
        except BadRequest:
            return {}
        return {key: " ".join(text.split()) for key, text in found.items()}

    def _common(self, node: Node) -> bool:
        """Whether the query's words match many messages.

        Then the newest messages are scanned in date order and checked against the matches
        (the first page is found early); else the few matches are fetched and sorted.
        """
        alternatives = word_alternatives(node)
        if alternatives is None:
            return False
        found = sum(self.index.match_count(term_clause(t)[1][0]) for t in alternatives)
        return found >= _COMMON_MATCHES

    def _entry(self, message_id: str) -> tuple[Entry, dict[str, Any]]:
        self.refresh()
        hit = self.index.get(message_id)
        if hit is None:
            raise gone(message_id)
        c = hit.columns
        return Entry(c["folder"], c["sub"], c["fname"]), c

    def fetch(self, message_id: str) -> tuple[EmailSummary, bytes]:
        entry, columns = self._entry(message_id)
        try:
            raw = read_bytes_limited(self.store.path(entry), self.max_message_bytes, label=f"message {message_id}")
        except NotFound:
            self.refresh()
            entry, columns = self._entry(message_id)
            raw = read_bytes_limited(self.store.path(entry), self.max_message_bytes, label=f"message {message_id}")
        return self._summary(message_id, columns), raw

    def thread(self, thread_id: str, *, limit: int) -> list[str]:
        self.refresh()
        # Trash and Spam stay out of a conversation, as they do on IMAP and in listings.
        hidden = [mailstore.SYSTEM_FOLDERS[name] for name in _HIDDEN]
        hits = self.index.select(
            where="d.thread = ? AND d.folder NOT IN (?, ?)",
            params=[thread_id, *hidden],
            order_by="d.ts, d.id",
            limit=limit + 1,
        )
        if not hits:
            raise NotFound(f"No thread {thread_id!r}. Use a thread_id from list_emails.", {"thread_id": thread_id})
        return [h.key for h in hits]

    # -- writing ---------------------------------------------------------------------------

    def _file(self, data: bytes, directory: str, flags: str) -> Sent:
        with self._lock:
            entry = self.store.deliver(data, directory, flags)
            self._listed(entry, True)
            record = self._record(entry, [])
            if record is None:
                raise IOFailure("The message was written but could not be read back.")
            self.index.apply([record])
            with self.index.transaction() as conn:
                maildir_store.join_threads(conn, [_link(record)])
                thread = maildir_store.thread_of(conn, record.key)
            return Sent(record.key, thread if thread is not None else str(record.columns["thread"]))

    def send(self, message: EmailMessage, thread_id: str | None) -> Sent:
        data = bytes(message)
        if self.transport is None:
            sent = self._file(data, mailstore.SYSTEM_FOLDERS["SENT"], "S")
        else:
            self.transport(message)
            try:
                sent = self._file(data, mailstore.SYSTEM_FOLDERS["SENT"], "S")
            except IOFailure as exc:  # delivered: report it sent (never send again), without a local copy
                log.error("sent %s but could not file it in Sent: %s", message["Message-ID"], exc.message)
                rfc = str(message["Message-ID"])
                return Sent(message_id_for(rfc), thread_id or thread_id_for(rfc, message_id_for(rfc)))
        recipients = {a.lower() for a in envelope_recipients(message)}
        if self.address in recipients:
            self._file(data, "", "")
        return sent

    def find_sent(self, rfc_message_id: str) -> Sent | None:
        self.refresh()
        hits = self.index.select(
            where="d.rfc = ? AND d.folder = ?", params=[rfc_message_id, mailstore.SYSTEM_FOLDERS["SENT"]], limit=1
        )
        return Sent(hits[0].key, str(hits[0].columns["thread"])) if hits else None

    def save_draft(self, message: EmailMessage, thread_id: str | None) -> Sent:
        return self._file(bytes(message), mailstore.SYSTEM_FOLDERS["DRAFT"], "DS")

    def delete_draft(self, message_id: str) -> None:
        entry, _ = self._entry(message_id)
        with self._lock:
            self.store.delete(entry)
            self._listed(entry, False)
            self.index.apply((), [message_id])

    def _relocate(self, message_id: str, *, directory: str | None = None, flags: str | None = None) -> Labelled:
        with self._lock:
            entry, _ = self._entry(message_id)
            try:
                target = self.store.rename(entry, directory=directory, flags=flags)
            except NotFound as exc:  # its file went away after the index was read
                raise gone(message_id) from exc
            self._listed(entry, False)
            self._listed(target, True)
            with self.index.transaction() as conn:
                maildir_store.update_location(conn, message_id, target)
            return self._labels_of(message_id)

    def _labels_of(self, message_id: str) -> Labelled:
        hit = self.index.get(message_id)
        if hit is None:
            raise gone(message_id)
        return Labelled(message_id, self._summary(message_id, hit.columns).labels)

    def move(self, message_id: str, label: str) -> Labelled:
        return self._relocate(message_id, directory=mailstore.folder_dir(label))

    def add_label(self, message_id: str, label: str) -> Labelled:
        upper = label.upper()
        entry, _ = self._entry(message_id)
        if upper == "UNREAD":
            return self.set_read(message_id, False)
        if upper == "STARRED":
            return self._relocate(message_id, flags=entry.flags + "F")
        if upper in ("INBOX", *mailstore.SYSTEM_FOLDERS):
            return self.move(message_id, upper)
        name = mailstore.check_label(label)
        with self._lock:
            self.label_table.add(entry.key, name)
            self._store_labels(message_id, entry.key)
        return self._labels_of(message_id)

    def remove_label(self, message_id: str, label: str) -> Labelled:
        upper = label.upper()
        entry, columns = self._entry(message_id)
        if upper == "UNREAD":
            return self.set_read(message_id, True)
        if upper == "STARRED":
            return self._relocate(message_id, flags=entry.flags.replace("F", ""))
        folder = mailstore.folder_label(entry.folder)
        if folder is not None and folder.lower() == label.lower():
            return self._relocate(message_id, directory=mailstore.ARCHIVE_DIR)
        with self._lock:
            if not self.label_table.remove(entry.key, label):
                raise NotFound(
                    f"Message {message_id} has no label {label!r}; its labels are in get_email.",
                    {"message_id": message_id, "label": label, "labels": self._summary(message_id, columns).labels},
                )
            self._store_labels(message_id, entry.key)
        return self._labels_of(message_id)

    def _store_labels(self, message_id: str, key: str) -> None:
        with self.index.transaction() as conn:
            maildir_store.set_labels(conn, message_id, _label_text(self.label_table.of(key)))

    def set_read(self, message_id: str, read: bool) -> Labelled:
        entry, _ = self._entry(message_id)
        flags = entry.flags.replace("S", "") + ("S" if read else "")
        return self._relocate(message_id, flags=flags)

    def labels(self) -> list[LabelInfo]:
        self.refresh()
        folders = [(d, label) for d in self.store.folders() if (label := mailstore.folder_label(d)) is not None]
        names = {label.lower() for _, label in folders}
        keywords = [label for label in self.label_table.known() if label.lower() not in names]
        by_folder, by_marker = maildir_store.label_counts(
            self.index, [f"{LABEL_SEP}{label}{LABEL_SEP}" for label in keywords]
        )
        out: list[LabelInfo] = []
        for directory, label in folders:
            total, unread = by_folder.get(directory, (0, 0))
            kind = "system" if label == "INBOX" or label in mailstore.SYSTEM_FOLDERS else "folder"
            out.append(LabelInfo(name=label, kind=kind, total=total, unread=unread))
        for label in keywords:
            total, unread = by_marker[f"{LABEL_SEP}{label}{LABEL_SEP}"]
            out.append(LabelInfo(name=label, kind="keyword", total=total, unread=unread))
        return out


def _link(record: IndexRecord) -> tuple[str, str, str]:
    """(key, Message-ID, thread root) of a new record, for `maildir_store.join_threads`."""
    data = orjson.loads(record.data or b"{}")
    references = data.get("references") or []
    root = references[0] if references else data.get("in_reply_to") or ""
    return record.key, str(record.columns["rfc"] or ""), str(root)


def _mark(after: list[Any] | None) -> tuple[float, int] | None:
    """A page end written by `_position` ([sort time, row]); anything else is ignored (offset)."""
    if after is None or len(after) != 2:
        return None
    ts, row = after
    if isinstance(ts, int | float) and isinstance(row, int) and not isinstance(row, bool):
        return float(ts), row
    return None
