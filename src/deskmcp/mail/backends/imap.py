"""IMAP + SMTP for any provider (Fastmail, iCloud, Outlook, Dovecot, Gmail by app password).

Reading goes through `imapclient` (TLS verified). A query runs in the folder it names with
`in:`/`label:`, else in every folder but Trash and Spam (`in:anywhere`: all of them), newest
first by the Date header (the server's SORT where offered); `imap_search` translates it.
Labels are IMAP keywords where the server allows them, else folders; folder names use `/`
for nesting whatever the server's separator. Ids name the folder, its UIDVALIDITY and the UID,
so a move gives the message a new id, which the tools return.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import imaplib
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import orjson

from deskmcp.core.errors import BadRequest, ExternalServiceError, NotFound, Timeout
from deskmcp.mail.backends import imap_fetch, imap_search, imap_sync
from deskmcp.mail.backends.base import Labelled, Page, Sent, gone
from deskmcp.mail.backends.imap_connect import ImapConfig, connect, words
from deskmcp.mail.backends.imap_order import Key, Ordering, order
from deskmcp.mail.backends.imap_search import HIDDEN, is_user_keyword, keyword_for, label_for_keyword
from deskmcp.mail.backends.imap_store import MIN_WORD, ImapStore
from deskmcp.mail.backends.imap_structure import Attachment
from deskmcp.mail.backends.imap_thread import Conversations
from deskmcp.mail.mime import decode, parse_bytes, shown_date
from deskmcp.mail.models import EmailSummary, LabelInfo
from deskmcp.mail.query import Node

log = logging.getLogger(__name__)

SEEN, FLAGGED, DRAFT, DELETED = b"\\Seen", b"\\Flagged", b"\\Draft", b"\\Deleted"
SPECIAL = {"SENT": (b"\\Sent", "Sent"), "DRAFT": (b"\\Drafts", "Drafts"), "TRASH": (b"\\Trash", "Trash"),
           "SPAM": (b"\\Junk", "Junk"), "ARCHIVE": (b"\\Archive", "Archive")}  # fmt: skip
_PAST_ANY_UID = 2**32  # uids are 32-bit: a boundary at this uid sorts before every message of its second
SYNC_INTERVAL = 60.0
"""Seconds between background syncs of the local copy while the server runs."""
INLINE_SYNC = 500
"""A folder this many new messages behind is caught up before a search answers; more: the server
answers that folder's search while the background sync catches up."""


class SyncStopped(Exception):
    """The backend closed while a sync was under way."""


def encode_id(folder: str, validity: int, uid: int) -> str:
    raw = orjson.dumps([folder, validity, uid])
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_id(message_id: str) -> tuple[str, int, int]:
    try:
        folder, validity, uid = orjson.loads(base64.urlsafe_b64decode(message_id + "=" * (-len(message_id) % 4)))
        return str(folder), int(validity), int(uid)
    except (binascii.Error, ValueError, TypeError, orjson.JSONDecodeError) as exc:
        raise NotFound(
            f"No message {message_id!r}. Call list_emails for valid ids.", {"message_id": message_id}
        ) from exc


def _mark(after: list[Any] | None) -> tuple[float, str, int, int] | None:
    """A page end written by `list` ([sort time, folder, uid, UIDVALIDITY]); else None (offset)."""
    if after is None or len(after) != 4:
        return None
    when, folder, uid, validity = after
    if isinstance(when, int | float) and isinstance(folder, str) and isinstance(uid, int) and isinstance(validity, int):
        return float(when), folder, uid, validity
    return None


def thread_token(root: str) -> str:
    return base64.urlsafe_b64encode(root.encode()).decode().rstrip("=")


class ImapBackend:
    name = "imap"

    def __init__(
        self,
        config: ImapConfig,
        *,
        address: str,
        transport: Callable[[EmailMessage], None] | None,
        max_message_bytes: int,
        index_path: Path | None = None,
        sync_interval: float = SYNC_INTERVAL,
    ) -> None:
        self.config = config
        self.address = address
        self.transport = transport
        self.max_message_bytes = max_message_bytes
        self._client: Any = None
        self._lock = threading.RLock()
        self._folders: dict[str, str] = {}
        self._keywords: dict[str, bool] = {}
        self._delimiter: str | None = None
        self.ordering = Ordering()
        self.conversations = Conversations(
            lambda client: self._all_folders(client, hidden=False),
            lambda client, folder: self._select(client, folder, readonly=True),
        )
        self._selected: tuple[str, int] = ("", 0)
        self._flags: tuple[bytes, ...] = ()
        self._info: dict[bytes, Any] = {}
        # The local copy of the account's text (None: every search asks the server).
        self.store = ImapStore(index_path) if index_path is not None else None
        self.sync_interval = sync_interval
        self._sync_lock = threading.Lock()
        self._stop = threading.Event()
        self._syncer: threading.Thread | None = None

    # -- connection ------------------------------------------------------------------------

    def _connect(self) -> Any:
        client = connect(self.config, self.address)
        if self.store is not None and client.has_capability("ENABLE") and client.has_capability("CONDSTORE"):
            # every SELECT then reports HIGHESTMODSEQ, which the local copy's flag refresh starts from
            client.enable("CONDSTORE")
        return client

    @contextmanager
    def session(self) -> Iterator[Any]:
        """The connection (checked with NOOP, reconnected when the server dropped it)."""
        from imapclient.exceptions import IMAPClientError

        with self._lock:
            if self._client is not None:
                try:
                    self._client.noop()
                except (IMAPClientError, OSError) as exc:
                    log.info("IMAP connection lost (%s); reconnecting", exc)
                    self._drop()
            if self._client is None:
                self._client = self._connect()
            try:
                yield self._client
            except (IMAPClientError, OSError) as exc:
                self._drop()
                where = f"{self.config.host}:{self.config.effective_port}"
                if isinstance(exc, TimeoutError):
                    raise Timeout(
                        f"The IMAP server {where} did not answer in {self.config.timeout:g} s.", {"server": where}
                    ) from exc
                # The connection broke in the middle of a call (the server stopped or restarted):
                # the next call connects again.
                raise ExternalServiceError(
                    f"The IMAP server {where} failed in the middle of the call: {words(exc)}. Try again once"
                    " it answers; a move or label change may or may not have been made, so list the mail"
                    " again before repeating one.",
                    {"server": where},
                ) from exc

    def _drop(self) -> None:
        self._selected = ("", 0)
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(OSError):
                client.shutdown()

    def close(self) -> None:
        self._stop.set()
        if self._syncer is not None:
            self._syncer.join(timeout=self.config.timeout)
        if self.store is not None:
            with self._sync_lock:
                self.store.close()
        with self._lock:
            if self._client is not None:
                with contextlib.suppress(Exception):  # closing: nothing left to report to
                    self._client.logout()
                self._client = None

    # -- folders ---------------------------------------------------------------------------

    def _separator(self, client: Any) -> str:
        if self._delimiter is None:
            found = next((d for _f, d, _n in client.list_folders("", "INBOX") if d), None)
            separator = found.decode() if isinstance(found, bytes) else (found or "/")
            self._delimiter = separator
            return separator
        return self._delimiter

    def _mailbox(self, client: Any, label: str) -> str:
        """The server's name of a folder label (`Clients/Acme` is `Clients.Acme` where `.` separates)."""
        if any(ch in label for ch in "%*\r\n\0") or label.startswith("/") or "//" in label:
            # LIST wildcards would name other folders; the rest is no folder name at all.
            raise BadRequest(
                f"{label!r} is not a usable label: leave out %, *, line breaks and empty / parts.", {"label": label}
            )
        sep = self._separator(client)
        return label.replace("/", sep) if sep != "/" else label

    def folder_for(self, client: Any, label: str, *, create: bool = False) -> str:
        upper = label.upper()
        if upper == "INBOX":
            return "INBOX"
        key = "DRAFT" if upper == "DRAFTS" else upper
        if key in SPECIAL:
            if key not in self._folders:
                flag, fallback = SPECIAL[key]
                found = client.find_special_folder(flag)
                self._folders[key] = found or fallback
                if found is None and not client.folder_exists(fallback):
                    client.create_folder(fallback)
            return self._folders[key]
        name = self._mailbox(client, label)
        if not client.folder_exists(name):
            if not create:
                raise NotFound(f"No folder or label {label!r}; list_labels shows them.", {"label": label})
            client.create_folder(name)
        return name

    def _label_of_folder(self, folder: str) -> str | None:
        if folder.upper() == "INBOX":
            return "INBOX"
        for key, name in self._folders.items():
            if name == folder:
                return None if key == "ARCHIVE" else key
        sep = self._delimiter or "/"
        return folder.replace(sep, "/") if sep != "/" else folder

    def _all_folders(self, client: Any, *, hidden: bool) -> list[str]:
        """Every selectable folder (Trash and Spam only with `hidden`)."""
        self._find_specials(client)
        skip = set() if hidden else {self._folders[key] for key in HIDDEN if key in self._folders}
        out = []
        for flags, _delim, name in client.list_folders():
            if b"\\Noselect" in flags or b"\\NonExistent" in flags or name in skip:
                continue
            out.append(name)
        return out

    def _find_specials(self, client: Any) -> None:
        """Learn which folders are Sent, Drafts, Trash, Spam and Archive (none is created here)."""
        for key, (flag, fallback) in SPECIAL.items():
            if key not in self._folders:
                found = client.find_special_folder(flag)
                if found is None and client.folder_exists(fallback):
                    found = fallback
                if found is not None:
                    self._folders[key] = found

    def _select(self, client: Any, folder: str, *, readonly: bool = False) -> int:
        info = client.select_folder(folder, readonly=readonly)
        if not readonly:  # a read-only EXAMINE lists no permanent flags at all
            self._keywords[folder] = b"\\*" in info.get(b"PERMANENTFLAGS", ())
        self._selected = (folder, int(info[b"UIDVALIDITY"]))
        self._info = info
        self._flags = tuple(info.get(b"FLAGS", ()))
        return self._selected[1]

    def _keywords_allowed(self, client: Any, folder: str) -> bool:
        if folder not in self._keywords:
            self._select(client, folder)
        return self._keywords[folder]

    # -- reading ---------------------------------------------------------------------------

    def _scope(self, client: Any, plan: imap_search.Plan) -> tuple[list[str], list[Any]]:
        """The folders a query searches and any criterion its label adds (a keyword)."""
        if plan.label is None:
            return self._all_folders(client, hidden=plan.everywhere), []
        upper = plan.label.upper()
        if upper in ("INBOX", "DRAFTS", *SPECIAL):
            return [self.folder_for(client, plan.label)], []
        name = self._mailbox(client, plan.label)
        if client.folder_exists(name):
            return [name], []
        folders = [f for f in self._all_folders(client, hidden=False) if self._keywords_allowed(client, f)]
        if not folders:
            raise NotFound(f"No folder or label {plan.label!r}; list_labels shows them.", {"label": plan.label})
        return folders, ["KEYWORD", keyword_for(plan.label)]

    def list(self, query: Node | None, *, raw: str, limit: int, offset: int, after: list[Any] | None = None) -> Page:
        plan = imap_search.plan(query)
        mark = _mark(after)
        with self.session() as client:
            folders, extra = self._scope(client, plan)
            per_folder: dict[str, tuple[int, list[int]]] = {}
            # Without a boundary (an old cursor), an offset into the merged list: each folder
            # gives its first offset + limit + 1 (one folder: the slice itself).
            skip = 0 if mark is not None else offset
            # Only a label inside the query needs to know whether keywords work here (a
            # read-write SELECT, which a read-only listing otherwise never makes).
            labelled = imap_search.names_label(plan.rest)
            asked = imap_search.local_terms(plan, MIN_WORD) if self.store is not None and not extra else None
            # The folders the local copy is true for answer from it: every state checked first,
            # then one pass of its text index for them all.
            local = self._local(client, folders, asked, None if mark is not None else skip + limit + 1)
            current = {folder for folder, (_v, _u, now) in local.items() if now}
            for folder in folders:
                keywords = self._keywords_allowed(client, folder) if labelled else True
                if folder not in local:
                    validity = self._select(client, folder, readonly=True)
                    criteria = [*extra, *imap_search.criteria(plan.rest, keywords)] or ["ALL"]
                    uids = self.ordering.with_structure(
                        client,
                        self._selected,
                        self.ordering.newest_first(client, self._selected, criteria),
                        plan.structure,
                    )
                else:  # answered without selecting the folder
                    validity, uids, _now = local[folder]
                where = (folder, validity)
                if mark is not None:
                    when, last_folder, uid, last_validity = mark
                    if folder == last_folder and validity != last_validity:
                        # The folder's uids were renumbered: its time alone places the boundary,
                        # and mail sent in that very second shows again rather than being skipped.
                        uid = _PAST_ANY_UID
                    boundary: Key = (when, last_folder, uid)
                    if self._selected[0] != folder and not self.ordering.knows(where, uids):
                        self._select(client, folder, readonly=True)  # sort times to ask for
                    uids = uids[self.ordering.after(client, where, uids, boundary) :]
                elif len(folders) == 1:
                    uids, skip = uids[offset:], 0
                per_folder[folder] = (validity, uids[: skip + limit + 1])
            if len(folders) == 1:
                folder = folders[0]
                validity, head = per_folder[folder]
                fetched = self._fetch_summaries(client, folder, validity, head, kept=folder in current)
            else:
                fetched = self._merged(client, per_folder, skip, limit, current)
            page, more = fetched[:limit], len(fetched) > limit
            summaries = self._summaries(client, page)
        end: list[Any] | None = None
        if page:
            last_folder, last_validity, last = page[-1]
            end = [last.time, last_folder, last.uid, last_validity]
        return Page(summaries, more, end)

    # -- the local copy ----------------------------------------------------------------------

    def _local(
        self, client: Any, folders: list[str], asked: imap_search.Local | None, head: int | None
    ) -> dict[str, tuple[int, list[int], bool]]:
        """For each of `folders` the local copy is true for right now (caught up here when a few
        messages behind): its UIDVALIDITY, its first `head` messages (None: all) answering
        `asked` (None: the copy cannot answer the query), newest first, and whether the copy's
        flags are true too (the server keeps a MODSEQ and it has not moved since the last sync:
        the summaries kept are then the server's). A query on flags (is:unread) is answered only
        for the folders whose flags are."""
        store = self.store
        if store is None or asked is None:
            return {}
        states = {}
        for folder in folders:
            state = self._local_state(client, store, folder)
            if state is not None and (state[1] or not asked.flags):
                states[folder] = state
        found = store.search_all(asked.words, first=head, flags=asked.flags) if states else {}
        out: dict[str, tuple[int, list[int], bool]] = {}
        for folder, (validity, now) in states.items():
            rows = found.get(folder, [])
            self.ordering.remember(folder, validity, dict(rows))
            out[folder] = (validity, [uid for uid, _time in rows], now)
        return out

    def _local_state(self, client: Any, store: ImapStore, folder: str) -> tuple[int, bool] | None:
        """The folder's UIDVALIDITY and whether its flags are current in the copy, when the copy
        holds its messages as they are now; None when it does not, and the server must answer.

        The state comes from STATUS, not SELECT: on a big Maildir folder Dovecot answers STATUS
        in milliseconds and EXAMINE in tens of milliseconds (it reads the folder)."""
        self._start_syncer()
        items = [b"MESSAGES", b"UIDNEXT", b"UIDVALIDITY"]
        if client.has_capability("CONDSTORE"):
            items.append(b"HIGHESTMODSEQ")
        live = imap_sync.state_of(client.folder_status(folder, items), exists_key=b"MESSAGES")
        known = store.state(folder)
        if not live.same_messages(known):
            lag = imap_sync.behind(store, folder, live)
            if lag is None or lag > INLINE_SYNC or not self._sync_lock.acquire(blocking=False):
                return None
            try:
                live = known = imap_sync.sync_folder(client, store, folder)
                self._selected = (folder, live.validity)
            finally:
                self._sync_lock.release()
        return live.validity, bool(live.modseq) and known is not None and known.modseq == live.modseq

    def _start_syncer(self) -> None:
        if self._syncer is None and not self._stop.is_set():
            self._syncer = threading.Thread(target=self._sync_forever, name="imap-sync", daemon=True)
            self._syncer.start()

    def _sync_forever(self) -> None:
        """Keep the local copy true in the background, on a connection of its own."""
        while not self._stop.is_set():
            try:
                self.sync_all()
            except SyncStopped:
                return
            except Exception:  # the outermost handler of the thread: log, try again later
                log.warning("background sync of the IMAP account failed; retrying later", exc_info=True)
            self._stop.wait(self.sync_interval)

    def _unless_closing(self, _done: int) -> None:
        """Between batches: stop a sync when the backend closes (the batches written stay, the
        folder is not claimed synced, and the next sync completes it)."""
        if self._stop.is_set():
            raise SyncStopped

    def sync_all(self) -> None:
        """Bring the local copy of every folder up to the server's state (its own connection)."""
        store = self.store
        if store is None:
            return
        client = self._connect()
        try:
            # QRESYNC on this connection only (it does nothing but sync): with it the server
            # names expunged messages, and reports VANISHED instead of EXPUNGE, which the
            # other commands' answers are not read for.
            vanished = client.has_capability("QRESYNC") and b"QRESYNC" in client.enable("QRESYNC")
            with self._lock:
                folders = self._all_folders(client, hidden=True)
            for folder in folders:
                if self._stop.is_set():
                    return
                with self._sync_lock:
                    imap_sync.sync_folder(client, store, folder, progress=self._unless_closing, vanished=vanished)
            for gone_folder in set(store.folders()) - set(folders):
                with self._sync_lock:
                    store.drop(gone_folder)
        finally:
            with contextlib.suppress(Exception):  # closing: nothing left to report to
                client.logout()

    def _merged(
        self,
        client: Any,
        per_folder: dict[str, tuple[int, list[int]]],
        offset: int,
        limit: int,
        current: set[str],
    ) -> list[tuple[str, int, imap_fetch.Fetched]]:
        """The newest `offset + limit + 1` across folders: sort times first, summaries for the page only."""
        keyed: list[tuple[Key, int]] = []
        for folder, (validity, uids) in per_folder.items():
            if not uids:
                continue
            if not self.ordering.knows((folder, validity), uids):  # (known: a search of the local copy)
                self._select(client, folder, readonly=True)
            times = self.ordering.times(client, (folder, validity), uids)
            keyed.extend(((times[u], folder, u), validity) for u in uids)
        keyed.sort(key=lambda item: order(item[0]))
        chosen = keyed[offset : offset + limit + 1]
        out: list[tuple[str, int, imap_fetch.Fetched]] = []
        for folder in per_folder:
            wanted = [key[2] for key, _v in chosen if key[1] == folder]
            if wanted:
                out.extend(self._fetch_summaries(client, folder, per_folder[folder][0], wanted, kept=folder in current))
        out.sort(key=lambda item: order((item[2].time, item[0], item[2].uid)))
        return out

    def _fetch_summaries(
        self, client: Any, folder: str, validity: int, uids: list[int], *, kept: bool = False
    ) -> list[tuple[str, int, imap_fetch.Fetched]]:
        """The summaries of the folder's messages `uids`: with `kept` (the local copy is true for
        the folder, flags included) from the copy when it has every one, else from the server."""
        if not uids:
            return []
        found = self._kept_summaries(client, folder, uids) if kept else None
        if found is None:
            if self._selected[0] != folder:
                self._select(client, folder, readonly=True)
            items = imap_fetch.summary_items(client.has_capability("PREVIEW"))
            data = client.fetch(uids, items)
            found = [imap_fetch.read(uid, data[uid]) for uid in uids if uid in data]
        self.ordering.remember(folder, validity, {got.uid: got.time for got in found})
        return [(folder, validity, got) for got in found]

    def _kept_summaries(self, client: Any, folder: str, uids: list[int]) -> list[imap_fetch.Fetched] | None:
        """The summaries the local copy kept of `uids` (None unless it kept all of them as a
        summary FETCH would return them now: with the server's preview where it makes one, else
        with the start of the text)."""
        if self.store is None:
            return None
        rows = self.store.kept(folder, uids)
        preview = client.has_capability("PREVIEW")
        if len(rows) < len(uids) or any((k.preview is not None) != preview for _f, k in rows.values()):
            return None
        out = []
        for uid in uids:
            flags, k = rows[uid]
            out.append(
                imap_fetch.from_parts(
                    uid,
                    flags,
                    headers=k.headers,
                    text=k.text,
                    preview=k.preview,
                    found=[Attachment(*a) for a in k.attachments],
                    arrived=k.arrived,
                )
            )
        return out

    def _summaries(self, client: Any, page: list[tuple[str, int, imap_fetch.Fetched]]) -> list[EmailSummary]:
        pending = {
            got.parsed.in_reply_to for _f, _v, got in page if got.parsed.in_reply_to and not got.parsed.references
        }
        self.conversations.resolve(client, {p for p in pending if p})
        return [self._summary(folder, validity, got) for folder, validity, got in page]

    def _summary(self, folder: str, validity: int, got: imap_fetch.Fetched) -> EmailSummary:
        parsed, flags = got.parsed, got.flags
        mid = encode_id(folder, validity, got.uid)
        root = self.conversations.root(parsed)
        date, date_source = shown_date(parsed.date, parsed.header_dated, got.arrived)
        return EmailSummary(
            id=mid,
            thread_id=thread_token(root) if root else mid,
            rfc_message_id=parsed.rfc_message_id,
            subject=parsed.subject,
            sender=parsed.sender,
            to=parsed.to,
            cc=parsed.cc,
            date=date,
            date_source=date_source,
            snippet=got.snippet,
            labels=self._labels_of(folder, flags),
            unread=SEEN not in flags,
            has_attachments=bool(got.attachments),
        )

    def _labels_of(self, folder: str, flags: tuple[bytes, ...]) -> list[str]:
        labels: list[str] = []
        folder_label = self._label_of_folder(folder)
        if folder_label:
            labels.append(folder_label)
        labels.extend(label_for_keyword(f) for f in flags if is_user_keyword(f))
        if SEEN not in flags:
            labels.append("UNREAD")
        if FLAGGED in flags:
            labels.append("STARRED")
        return labels

    def _locate(self, client: Any, message_id: str, *, readonly: bool = True) -> tuple[str, int]:
        folder, validity, uid = decode_id(message_id)
        try:
            current = self._select(client, folder, readonly=readonly)
        except imaplib.IMAP4.error as exc:  # the server refused the folder: it is gone
            raise NotFound(f"No message {message_id!r}: its folder is gone. List the mail again.") from exc
        if current != validity:
            raise NotFound(
                f"Message ids of {folder} changed on the server; call list_emails again.", {"message_id": message_id}
            )
        if not readonly and not client.search(["UID", uid]):
            # Moved or expunged meanwhile: a STORE or COPY on its UID would change nothing and say OK.
            raise gone(message_id)
        return folder, uid

    def fetch(self, message_id: str) -> tuple[EmailSummary, bytes]:
        with self.session() as client:
            folder, uid = self._locate(client, message_id)
            items = imap_fetch.summary_items(client.has_capability("PREVIEW"))
            data = client.fetch([uid], [*items, "BODY.PEEK[]"]).get(uid)
            if data is None:
                raise gone(message_id)
            if int(data.get(b"RFC822.SIZE", 0)) > self.max_message_bytes:
                raise BadRequest(f"The message is larger than {self.max_message_bytes:,} bytes.")
            raw = data.get(b"BODY[]", b"") or b""
            page = [(folder, decode_id(message_id)[1], imap_fetch.read(uid, data))]
            return self._summaries(client, page)[0], raw

    def thread(self, thread_id: str, *, limit: int) -> list[str]:
        try:
            root = base64.urlsafe_b64decode(thread_id + "=" * (-len(thread_id) % 4)).decode()
        except (binascii.Error, UnicodeDecodeError) as exc:
            raise NotFound(f"No thread {thread_id!r}.", {"thread_id": thread_id}) from exc
        if not root.startswith("<"):  # a message without a Message-ID is a conversation of its own
            with contextlib.suppress(NotFound):
                decode_id(thread_id)
                self.fetch(thread_id)
                return [thread_id]
            raise NotFound(f"No thread {thread_id!r}. Use a thread_id from list_emails.", {"thread_id": thread_id})
        with self.session() as client:
            found = self.conversations.members(client, root)
        if not found:
            raise NotFound(f"No thread {thread_id!r}. Use a thread_id from list_emails.", {"thread_id": thread_id})
        return [encode_id(folder, validity, uid) for _t, folder, validity, uid in found][: limit + 1]

    def labels(self) -> list[LabelInfo]:
        out: list[LabelInfo] = []
        keywords: dict[str, list[int]] = {}
        with self.session() as client:
            for key in ("SENT", "DRAFT", "TRASH", "SPAM"):
                self.folder_for(client, key)
            self._separator(client)
            for flags, _delim, name in client.list_folders():
                if b"\\Noselect" in flags or b"\\NonExistent" in flags:
                    continue
                status = client.folder_status(name, [b"MESSAGES", b"UNSEEN"])
                label = self._label_of_folder(name) or name
                kind = "system" if label in ("INBOX", *SPECIAL) else "folder"
                out.append(
                    LabelInfo(name=label, kind=kind, total=int(status[b"MESSAGES"]), unread=int(status[b"UNSEEN"]))
                )
                self._select(client, name, readonly=True)
                for flag in self._flags:
                    if is_user_keyword(flag):
                        counts = keywords.setdefault(label_for_keyword(flag), [0, 0])
                        counts[0] += len(client.search(["KEYWORD", flag]))
                        counts[1] += len(client.search(["KEYWORD", flag, "UNSEEN"]))
        folders = {i.name.lower() for i in out}
        for label, (total, unread) in sorted(keywords.items()):
            if label.lower() not in folders:
                out.append(LabelInfo(name=label, kind="keyword", total=total, unread=unread))
        return out

    # -- writing ---------------------------------------------------------------------------

    def _append(self, client: Any, label: str, message: EmailMessage, flags: tuple[bytes, ...]) -> Sent:
        folder = self.folder_for(client, label, create=True)
        client.append(folder, bytes(message), flags=flags)
        found = self._find(client, folder, str(message["Message-ID"]))
        if found is None:
            raise ExternalServiceError(f"The message was saved to {folder} but cannot be found there.")
        return found

    def _find(self, client: Any, folder: str, rfc: str) -> Sent | None:
        validity = self._select(client, folder, readonly=True)
        uids = client.search(["HEADER", "Message-ID", rfc])
        if not uids:
            return None
        uid = max(uids)
        raw = client.fetch([uid], ["BODY.PEEK[HEADER]"])[uid].get(b"BODY[HEADER]", b"")
        parsed = decode(parse_bytes(raw))
        if parsed.in_reply_to and not parsed.references:
            self.conversations.resolve(client, {parsed.in_reply_to})
        root = self.conversations.root(parsed)
        mid = encode_id(folder, validity, uid)
        return Sent(mid, thread_token(root) if root else mid)

    def send(self, message: EmailMessage, thread_id: str | None) -> Sent:
        if self.transport is None:
            raise BadRequest("Sending over IMAP needs an SMTP server: set MAIL_SMTP_HOST (and user and password).")
        self.transport(message)
        with self.session() as client:
            if self.config.sent_copy:
                return self._append(client, "SENT", message, (SEEN,))
            sent = self._find(client, self.folder_for(client, "SENT"), str(message["Message-ID"]))
        return sent or Sent(encode_id("SENT", 0, 0), thread_id or "")

    def find_sent(self, rfc_message_id: str) -> Sent | None:
        with self.session() as client:
            return self._find(client, self.folder_for(client, "SENT"), rfc_message_id)

    def save_draft(self, message: EmailMessage, thread_id: str | None) -> Sent:
        with self.session() as client:
            return self._append(client, "DRAFT", message, (SEEN, DRAFT))

    def delete_draft(self, message_id: str) -> None:
        with self.session() as client:
            _, uid = self._locate(client, message_id, readonly=False)
            client.delete_messages([uid])
            client.expunge([uid]) if client.has_capability("UIDPLUS") else client.expunge()

    def _moved(self, client: Any, message_id: str, target: str) -> Labelled:
        folder, uid = self._locate(client, message_id, readonly=False)
        if folder == target:
            return self._labelled(client, message_id)
        item = client.fetch([uid], ["BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)]", "RFC822.SIZE"]).get(uid)
        if item is None:
            raise gone(message_id)
        rfc = decode(parse_bytes(next((v for k, v in item.items() if k.startswith(b"BODY")), b""))).rfc_message_id
        size = item.get(b"RFC822.SIZE")
        # The target's next UID, read before the move: the moved copy is at or after it, which
        # finds it even when it has no Message-ID to search for.
        next_uid = int(client.folder_status(target, [b"UIDNEXT"])[b"UIDNEXT"])
        self._select(client, folder)
        if client.has_capability("MOVE"):
            client.move([uid], target)
        else:
            client.copy([uid], target)
            client.delete_messages([uid])
            client.expunge()
        validity = self._select(client, target, readonly=True)
        arrived = [u for u in client.search(["UID", f"{next_uid}:*"]) if u >= next_uid]
        if len(arrived) > 1:  # others arrived meanwhile: the one with this Message-ID and size
            sizes = client.fetch(arrived, ["RFC822.SIZE", "BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)]"])
            arrived = [
                u
                for u in arrived
                if sizes.get(u, {}).get(b"RFC822.SIZE") == size
                and (not rfc or rfc.encode() in next((v for k, v in sizes[u].items() if k.startswith(b"BODY")), b""))
            ][-1:]
        if not arrived:
            raise ExternalServiceError(f"The message was moved to {target} but cannot be found there; list it again.")
        return self._labelled(client, encode_id(target, validity, arrived[-1]))

    def _labelled(self, client: Any, message_id: str) -> Labelled:
        folder, uid = self._locate(client, message_id)
        flags = client.get_flags([uid]).get(uid)
        if flags is None:  # gone meanwhile: whatever was asked cannot be reported done
            raise gone(message_id)
        return Labelled(message_id, self._labels_of(folder, tuple(flags)))

    def move(self, message_id: str, label: str) -> Labelled:
        with self.session() as client:
            return self._moved(client, message_id, self.folder_for(client, label, create=True))

    def _flag(self, message_id: str, flag: bytes, on: bool) -> Labelled:
        with self.session() as client:
            _, uid = self._locate(client, message_id, readonly=False)
            (client.add_flags if on else client.remove_flags)([uid], [flag])
            return self._labelled(client, message_id)

    def set_read(self, message_id: str, read: bool) -> Labelled:
        return self._flag(message_id, SEEN, read)

    def add_label(self, message_id: str, label: str) -> Labelled:
        upper = label.upper()
        if upper == "UNREAD":
            return self.set_read(message_id, False)
        if upper == "STARRED":
            return self._flag(message_id, FLAGGED, True)
        with self.session() as client:
            folder, uid = self._locate(client, message_id, readonly=False)
            if upper not in ("INBOX", "DRAFTS", *SPECIAL) and self._keywords_allowed(client, folder):
                self._select(client, folder)
                client.add_flags([uid], [keyword_for(label)])
                return self._labelled(client, message_id)
            target = self.folder_for(client, label, create=True)
            self._select(client, folder)
            client.copy([uid], target)
            labelled = self._labelled(client, message_id)
            return Labelled(message_id, [*labelled.labels, label])

    def remove_label(self, message_id: str, label: str) -> Labelled:
        upper = label.upper()
        if upper == "UNREAD":
            return self.set_read(message_id, True)
        if upper == "STARRED":
            return self._flag(message_id, FLAGGED, False)
        with self.session() as client:
            folder, uid = self._locate(client, message_id, readonly=False)
            own = self._label_of_folder(folder)
            if own is not None and own.lower() == label.lower():
                return self._moved(client, message_id, self.folder_for(client, "ARCHIVE"))
            flags = client.get_flags([uid]).get(uid)
            if flags is None:
                raise gone(message_id)
            keyword = keyword_for(label)
            present = [f for f in flags if f.lower() == keyword.lower()]
            if present:
                client.remove_flags([uid], present)
                return self._labelled(client, message_id)
            raise NotFound(
                f"Message has no label {label!r} here; to drop a folder copy, open it with in:{label}.",
                {"message_id": message_id, "label": label},
            )
