"""IMAP + SMTP for any provider (Fastmail, iCloud, Outlook, Dovecot, Gmail by app password).

Reading goes through `imapclient` (TLS verified); the Gmail query is translated into IMAP
SEARCH criteria, within one folder at a time (INBOX unless the query names one with `in:` or
`label:`). Labels are IMAP keywords where the server allows them, else folders (a copy of
the message, the way Gmail's own IMAP shows labels). Ids name the folder, its UIDVALIDITY and
the UID, so a move gives the message a new id, which the tools return.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import logging
import ssl
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from typing import Any

import orjson

from deskmcp.core.errors import AuthRequired, BadRequest, ExternalServiceError, NotFound, Timeout
from deskmcp.mail.backends.base import Labelled, Sent
from deskmcp.mail.mime import decode, parse_bytes, thread_root
from deskmcp.mail.models import EmailSummary, LabelInfo
from deskmcp.mail.query import And, Node, Not, Or, Term, parse_day, relative_seconds, size_bytes

log = logging.getLogger(__name__)

SEEN, FLAGGED, DRAFT, DELETED = b"\\Seen", b"\\Flagged", b"\\Draft", b"\\Deleted"
SPECIAL = {"SENT": (b"\\Sent", "Sent"), "DRAFT": (b"\\Drafts", "Drafts"), "TRASH": (b"\\Trash", "Trash"),
           "SPAM": (b"\\Junk", "Junk"), "ARCHIVE": (b"\\Archive", "Archive")}  # fmt: skip
SUMMARY_BYTES = 16_384


@dataclass(frozen=True)
class ImapConfig:
    host: str
    port: int | None = None
    user: str | None = None
    password: str | None = None
    security: str = "ssl"
    timeout: float = 30.0
    sent_copy: bool = True

    @property
    def effective_port(self) -> int:
        return self.port or (993 if self.security == "ssl" else 143)


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
    ) -> None:
        self.config = config
        self.address = address
        self.transport = transport
        self.max_message_bytes = max_message_bytes
        self._client: Any = None
        self._lock = threading.RLock()
        self._folders: dict[str, str] = {}
        self._keywords: dict[str, bool] = {}

    # -- connection ------------------------------------------------------------------------

    def _connect(self) -> Any:
        from imapclient import IMAPClient
        from imapclient.exceptions import LoginError

        c = self.config
        where = f"{c.host}:{c.effective_port}"
        context = ssl.create_default_context()
        try:
            client = IMAPClient(
                c.host, port=c.effective_port, ssl=c.security == "ssl", ssl_context=context, timeout=c.timeout
            )
            if c.security == "starttls":
                client.starttls(context)
            client.login(c.user or self.address, c.password or "")
        except LoginError as exc:
            raise AuthRequired(
                f"The IMAP server {where} refused the login; check MAIL_IMAP_USER and MAIL_IMAP_PASSWORD"
                " (most providers need an app password).",
                {"server": where},
            ) from exc
        except TimeoutError as exc:
            raise Timeout(f"The IMAP server {where} did not answer in {c.timeout:g} s.", {"server": where}) from exc
        except (OSError, ssl.SSLError) as exc:
            raise ExternalServiceError(
                f"The IMAP server {where} could not be reached: {exc}.", {"server": where}
            ) from exc
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
                if isinstance(exc, TimeoutError):
                    raise Timeout(f"The IMAP server did not answer in {self.config.timeout:g} s.") from exc
                raise ExternalServiceError(f"The IMAP server failed: {exc}.") from exc

    def _drop(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(OSError):
                client.shutdown()

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                with contextlib.suppress(Exception):  # closing: nothing left to report to
                    self._client.logout()
                self._client = None

    # -- folders ---------------------------------------------------------------------------

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
        name = label
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
        return folder

    def _select(self, client: Any, folder: str, *, readonly: bool = False) -> int:
        info = client.select_folder(folder, readonly=readonly)
        return int(info[b"UIDVALIDITY"])

    def _keywords_allowed(self, client: Any, folder: str) -> bool:
        if folder not in self._keywords:
            info = client.select_folder(folder)
            self._keywords[folder] = b"\\*" in info.get(b"PERMANENTFLAGS", ())
        return self._keywords[folder]

    # -- search translation ----------------------------------------------------------------

    def _split_folder(self, node: Node | None) -> tuple[str, Node | None]:
        """The folder a query names at its top level (INBOX by default) and the rest."""
        terms = list(node.nodes) if isinstance(node, And) else ([node] if node is not None else [])
        for term in terms:
            if (
                isinstance(term, Term)
                and term.op in ("in", "label")
                and term.value.lower() not in ("unread", "starred")
            ):
                rest = [t for t in terms if t is not term]
                value = "INBOX" if term.value.lower() == "anywhere" else term.value
                return value, (And(tuple(rest)) if len(rest) > 1 else (rest[0] if rest else None))
        return "INBOX", node

    def criteria(self, node: Node | None, keywords: bool) -> list[Any]:
        if node is None:
            return ["ALL"]
        if isinstance(node, And):
            return [c for n in node.nodes for c in self.criteria(n, keywords)]
        if isinstance(node, Not):
            return ["NOT", self.criteria(node.node, keywords)]
        if isinstance(node, Or):
            parts = [self.criteria(n, keywords) for n in node.nodes]
            combined = parts[-1]
            for part in reversed(parts[:-1]):
                combined = ["OR", part, combined]
            return combined
        return self._term(node, keywords)

    def _term(self, term: Term, keywords: bool) -> list[Any]:
        op, value = term.op, term.value
        simple = {None: "TEXT", "from": "FROM", "to": "TO", "cc": "CC", "bcc": "BCC", "subject": "SUBJECT"}
        if op in simple:
            return [simple[op], value]
        if op == "is":
            return [{"unread": "UNSEEN", "read": "SEEN", "starred": "FLAGGED", "unstarred": "UNFLAGGED"}[value.lower()]]
        if op == "has":
            return ["HEADER", "Content-Type", "multipart/mixed"]
        if op == "filename":
            return ["BODY", value]
        if op in ("after", "before"):
            day = parse_day(value).date()
            return ["SINCE" if op == "after" else "BEFORE", day]
        if op in ("newer_than", "older_than"):
            day = (datetime.now(UTC) - timedelta(seconds=relative_seconds(value))).date()
            return ["SINCE" if op == "newer_than" else "BEFORE", day]
        if op in ("larger", "smaller"):
            return [op.upper(), size_bytes(value)]
        if op == "rfc822msgid":
            return ["HEADER", "Message-ID", value if value.startswith("<") else f"<{value}>"]
        if op in ("label", "in"):
            lower = value.lower()
            if lower in ("unread", "starred"):
                return ["UNSEEN" if lower == "unread" else "FLAGGED"]
            if keywords:
                return ["KEYWORD", _keyword(value)]
            raise BadRequest(
                f"On IMAP a query can name one folder (in:/label: at its top level); '{op}:{value}' inside OR or"
                " after '-' needs keyword support, which this server lacks.",
                {"operator": op, "value": value},
            )
        raise BadRequest(f"The search operator '{op}:' is not supported on IMAP.", {"operator": op})

    # -- reading ---------------------------------------------------------------------------

    def list(self, query: Node | None, *, raw: str, limit: int, offset: int) -> tuple[list[EmailSummary], bool]:
        label, rest = self._split_folder(query)
        with self.session() as client:
            folder = self.folder_for(client, label)
            keywords = self._keywords_allowed(client, folder)
            validity = self._select(client, folder, readonly=True)
            uids = sorted(client.search(self.criteria(rest, keywords)), reverse=True)
            page = uids[offset : offset + limit]
            summaries = self._summaries(client, folder, validity, page)
        return summaries, len(uids) > offset + limit

    def _summaries(self, client: Any, folder: str, validity: int, uids: list[int]) -> list[EmailSummary]:
        if not uids:
            return []
        part = f"BODY.PEEK[]<0.{SUMMARY_BYTES}>"
        data = client.fetch(uids, ["FLAGS", "RFC822.SIZE", part])
        out = []
        for uid in uids:
            item = data.get(uid)
            if item is None:
                continue
            raw = next((v for k, v in item.items() if k.startswith(b"BODY[]")), b"") or b""
            out.append(self._summary(folder, validity, uid, item.get(b"FLAGS", ()), raw))
        return out

    def _summary(self, folder: str, validity: int, uid: int, flags: tuple[bytes, ...], raw: bytes) -> EmailSummary:
        parsed = decode(parse_bytes(raw))
        labels: list[str] = []
        folder_label = self._label_of_folder(folder)
        if folder_label:
            labels.append(folder_label)
        labels.extend(_label_from_keyword(f) for f in flags if not f.startswith(b"\\") and not f.startswith(b"$"))
        unread = SEEN not in flags
        if unread:
            labels.append("UNREAD")
        if FLAGGED in flags:
            labels.append("STARRED")
        mid = encode_id(folder, validity, uid)
        root = thread_root(parsed)
        return EmailSummary(
            id=mid,
            thread_id=thread_token(root) if root else mid,
            rfc_message_id=parsed.rfc_message_id,
            subject=parsed.subject,
            sender=parsed.sender,
            to=parsed.to,
            cc=parsed.cc,
            date=parsed.date,
            snippet=parsed.snippet,
            labels=labels,
            unread=unread,
            has_attachments=bool(parsed.attachments),
        )

    def _locate(self, client: Any, message_id: str, *, readonly: bool = True) -> tuple[str, int]:
        folder, validity, uid = decode_id(message_id)
        try:
            current = self._select(client, folder, readonly=readonly)
        except Exception as exc:  # any refusal by the server means the folder is gone
            raise NotFound(f"No message {message_id!r}: its folder is gone. List the mail again.") from exc
        if current != validity:
            raise NotFound(
                f"Message ids of {folder} changed on the server; call list_emails again.", {"message_id": message_id}
            )
        return folder, uid

    def fetch(self, message_id: str) -> tuple[EmailSummary, bytes]:
        with self.session() as client:
            folder, uid = self._locate(client, message_id)
            data = client.fetch([uid], ["FLAGS", "RFC822.SIZE", "BODY.PEEK[]"]).get(uid)
            if data is None:
                raise NotFound(
                    f"No message {message_id!r}. Call list_emails for valid ids.", {"message_id": message_id}
                )
            if int(data.get(b"RFC822.SIZE", 0)) > self.max_message_bytes:
                raise BadRequest(f"The message is larger than {self.max_message_bytes:,} bytes.")
            raw = data.get(b"BODY[]", b"") or b""
            return self._summary(folder, decode_id(message_id)[1], uid, data.get(b"FLAGS", ()), raw), raw

    def thread(self, thread_id: str, *, limit: int) -> list[str]:
        try:
            root = base64.urlsafe_b64decode(thread_id + "=" * (-len(thread_id) % 4)).decode()
        except (binascii.Error, UnicodeDecodeError) as exc:
            raise NotFound(f"No thread {thread_id!r}.", {"thread_id": thread_id}) from exc
        found: list[tuple[datetime, str]] = []
        with self.session() as client:
            for label in ("INBOX", "SENT"):
                folder = self.folder_for(client, label)
                validity = self._select(client, folder, readonly=True)
                uids = client.search(["OR", ["HEADER", "Message-ID", root], ["HEADER", "References", root]])
                if uids:
                    for uid, item in client.fetch(uids, ["INTERNALDATE"]).items():
                        when = item.get(b"INTERNALDATE") or datetime.min
                        found.append((when.replace(tzinfo=None), encode_id(folder, validity, uid)))
        if not found:
            raise NotFound(f"No thread {thread_id!r}. Use a thread_id from list_emails.", {"thread_id": thread_id})
        return [mid for _, mid in sorted(found)][: limit + 1]

    def labels(self) -> list[LabelInfo]:
        out: list[LabelInfo] = []
        with self.session() as client:
            for key in ("SENT", "DRAFT", "TRASH", "SPAM"):
                self.folder_for(client, key)
            for flags, _delim, name in client.list_folders():
                if b"\\Noselect" in flags or b"\\NonExistent" in flags:
                    continue
                status = client.folder_status(name, [b"MESSAGES", b"UNSEEN"])
                label = self._label_of_folder(name) or name
                kind = "system" if label.isupper() and label in ("INBOX", *SPECIAL) else "user"
                out.append(
                    LabelInfo(name=label, kind=kind, total=int(status[b"MESSAGES"]), unread=int(status[b"UNSEEN"]))
                )
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
        root = thread_root(decode(parse_bytes(raw)))
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
        raw = client.fetch([uid], ["BODY.PEEK[HEADER]"])[uid].get(b"BODY[HEADER]", b"")
        rfc = decode(parse_bytes(raw)).rfc_message_id
        if client.has_capability("MOVE"):
            client.move([uid], target)
        else:
            client.copy([uid], target)
            client.delete_messages([uid])
            client.expunge()
        found = self._find(client, target, rfc) if rfc else None
        if found is None:
            raise ExternalServiceError(f"The message was moved to {target} but cannot be found there; list it again.")
        return self._labelled(client, found.message_id)

    def _labelled(self, client: Any, message_id: str) -> Labelled:
        folder, uid = self._locate(client, message_id)
        flags = client.get_flags([uid]).get(uid, ())
        summary_labels = [self._label_of_folder(folder)] if self._label_of_folder(folder) else []
        summary_labels += [_label_from_keyword(f) for f in flags if not f.startswith((b"\\", b"$"))]
        if SEEN not in flags:
            summary_labels.append("UNREAD")
        if FLAGGED in flags:
            summary_labels.append("STARRED")
        return Labelled(message_id, [x for x in summary_labels if x])

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
            if upper not in ("INBOX", *SPECIAL) and self._keywords_allowed(client, folder):
                self._select(client, folder)
                client.add_flags([uid], [_keyword(label)])
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
            flags = client.get_flags([uid]).get(uid, ())
            keyword = _keyword(label)
            if keyword in flags:
                client.remove_flags([uid], [keyword])
                return self._labelled(client, message_id)
            raise NotFound(
                f"Message has no label {label!r} here; to drop a folder copy, open it with in:{label}.",
                {"message_id": message_id, "label": label},
            )


def _keyword(label: str) -> bytes:
    return "".join(ch if ch.isalnum() or ch in "_-" else "_" for ch in label).encode()


def _label_from_keyword(flag: bytes) -> str:
    return flag.decode("utf-8", "replace")
