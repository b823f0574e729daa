"""The mail service: what the tools do, over whichever backend the configuration chose.

Sending is the careful part: checks first (mode, addresses, allowlist, sizes, header
injection), then the Message-ID is assigned, the idempotency key journalled, one audit line
written and fsynced, the backend called, and a second audit line records the outcome.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging
import threading
from collections.abc import Callable
from contextlib import nullcontext
from email.message import EmailMessage
from pathlib import Path
from typing import Any, TypeVar

import orjson
from pydantic import SecretStr

from deskmcp.core.dates import utc_stamp
from deskmcp.core.errors import (
    BadRequest,
    Conflict,
    DeskError,
    IOFailure,
    NotFound,
    ParseError,
    PermissionDenied,
    Timeout,
)
from deskmcp.core.files import PRIVATE_FILE, PRIVATE_FOLDER, atomic_write_bytes
from deskmcp.core.pagination import decode_cursor, query_key
from deskmcp.core.paths import safe_join, shown_path
from deskmcp.core.principal import Principal
from deskmcp.core.search import fusion
from deskmcp.core.search.embedders import configured_embedder
from deskmcp.core.search.fusion import Mode
from deskmcp.mail import audit
from deskmcp.mail.backends.base import ByMeaning, Counting, DeliveryUnknown, Labelled, MailBackend, Sent
from deskmcp.mail.compose import (
    Draft,
    build_forward,
    build_message,
    check_draft,
    draft_to_send,
    envelope_recipients,
    forward_subject,
    load_attachments,
)
from deskmcp.mail.journal import SendJournal
from deskmcp.mail.journal_postgres import PostgresSendJournal
from deskmcp.mail.mime import ParsedMail, crlf, decode, parse_bytes, part_text
from deskmcp.mail.models import (
    AccountInfo,
    AccountList,
    AttachmentContent,
    AttachmentInfo,
    AuditLogEntry,
    DraftList,
    DraftResult,
    EmailFull,
    EmailList,
    EmailSummary,
    LabelList,
    LabelOutcome,
    LabelResult,
    OutgoingAttachment,
    SendEmailResult,
    ThreadResult,
)
from deskmcp.mail.query import parse_query, split_words
from deskmcp.mail.settings import MailSettings

log = logging.getLogger(__name__)

MAX_RESULTS = 100
TEXT_TYPES = ("text/", "application/json", "application/xml", "application/csv", "message/")
ATTACHMENT_TEXT_CHARS = 100_000


def account_password(settings: MailSettings, kind: str) -> str | None:
    """The `kind` (smtp, imap) password of the account `settings` describes (see `secret`)."""
    if kind == "smtp":
        return secret(settings.smtp_password, kind, settings.smtp_user, settings.smtp_host, settings.os_keyring)
    user = settings.imap_user or settings.address
    return secret(settings.imap_password, kind, user, settings.imap_host, settings.os_keyring)


def secret(
    value: SecretStr | None, kind: str, user: str | None, host: str | None, os_keyring: bool = True
) -> str | None:
    """A password from the environment, else from the OS keyring (service `deskmcp`, user
    `kind:host:user`) when the optional `keyring` package is installed and `os_keyring` allows it
    (`MAIL_OS_KEYRING`; never for a user of a multi-user deployment). The entry names the host, so
    a password is only ever sent to the host it was stored for, whichever account has that user."""
    if value is not None:
        return value.get_secret_value()
    if not user or not host or not os_keyring:
        return None
    try:
        import keyring  # type: ignore[import-not-found]
        import keyring.errors  # type: ignore[import-not-found]
    except ImportError:
        return None
    try:
        return keyring.get_password("deskmcp", f"{kind}:{host.lower()}:{user}")
    except keyring.errors.KeyringError as exc:
        log.warning("the OS keyring could not be read: %s", type(exc).__name__)
        return None


def create_backend(settings: MailSettings) -> MailBackend:
    """The one place the backend is chosen (`MAIL_BACKEND`)."""
    transport: Callable[[EmailMessage], None] | None = None
    if settings.smtp_host:
        from deskmcp.mail.smtp import SmtpConfig, deliver

        config = SmtpConfig(
            host=settings.smtp_host,
            port=settings.smtp_port,
            user=settings.smtp_user,
            password=account_password(settings, "smtp"),
            security=settings.smtp_security,
            timeout=settings.timeout,
        )

        def smtp_transport(message: EmailMessage) -> None:
            deliver(config, message, sender=settings.address, recipients=envelope_recipients(message))

        transport = smtp_transport

    if settings.backend == "maildir":
        from deskmcp.mail.backends.maildir import MaildirBackend

        missing = settings.missing_maildir()
        if missing is not None:
            raise missing

        return MaildirBackend(
            settings.maildir_root,
            settings.index_path,
            address=settings.address,
            max_message_bytes=settings.max_message_bytes,
            transport=transport,
            embedder=configured_embedder(settings),
        )
    if settings.backend == "imap":
        from deskmcp.mail.backends.imap import ImapBackend, ImapConfig

        if not settings.imap_host:
            raise BadRequest("MAIL_BACKEND=imap needs MAIL_IMAP_HOST, MAIL_IMAP_USER and MAIL_IMAP_PASSWORD.")
        imap = ImapConfig(
            host=settings.imap_host,
            port=settings.imap_port,
            user=settings.imap_user or settings.address,
            password=account_password(settings, "imap"),
            security=settings.imap_security,
            timeout=settings.timeout,
            sent_copy=settings.imap_sent_copy,
        )
        return ImapBackend(
            imap,
            address=settings.address,
            transport=transport,
            max_message_bytes=settings.max_message_bytes,
            # the local copy word searches answer from, beside the account's other indexes
            index_path=settings.index_path.with_name(f"imap-{settings.index_path.name}"),
        )
    from deskmcp.mail.backends.gmail import GmailBackend

    return GmailBackend(settings)


class MailService:
    def __init__(self, settings: MailSettings, backend: MailBackend | None = None) -> None:
        self.settings = settings
        self.backend = backend or create_backend(settings)
        self.mode = settings.effective_mode
        self._journal: SendJournal | PostgresSendJournal | None = None
        self._send_lock = threading.Lock()

    @property
    def journal(self) -> SendJournal | PostgresSendJournal:
        """The send journal: SQLite in the workspace, or the database several processes share
        (DESKMCP_DATABASE_URL), its rows under this user's and account's name."""
        if self._journal is None:
            s = self.settings
            if s.database_url:
                issuer, subject = s.google_token_principal or ("", "")
                owner = f"{Principal(issuer, subject).key if s.google_token_principal else 'local'}:{s.account}"
                self._journal = PostgresSendJournal(s.database_url, owner)
            else:
                self._journal = SendJournal(s.state_path)
        return self._journal

    def close(self) -> None:
        self.backend.close()
        if self._journal is not None:
            self._journal.close()

    # -- reading ---------------------------------------------------------------------------

    def list_emails(
        self, query: str = "is:unread", max_results: int = 10, cursor: str | None = None, mode: str | None = None
    ) -> EmailList:
        """A page of messages for `query`: by words (every word matched, newest first: the default),
        or ranked by meaning (`semantic`) or by meaning and words (`hybrid`) for the query's words
        among the messages its operators allow, on a mailbox indexed here with a model set up."""
        if not 1 <= max_results <= MAX_RESULTS:
            raise BadRequest(f"max_results must be between 1 and {MAX_RESULTS}.", {"max_results": max_results})
        node = parse_query(query)
        words, filters = split_words(node)
        chosen = self._mode(mode, words)
        backend = self.backend
        if chosen != "lexical" and isinstance(backend, ByMeaning):
            key = query_key("list_emails", self.settings.account, query, max_results, chosen)
            offset = decode_cursor(cursor, key)
            ranked = backend.by_meaning(filters, words, mode=chosen, limit=max_results + 1, offset=offset)
            more = len(ranked.emails) > max_results
            return EmailList(
                emails=ranked.emails[:max_results],
                next_cursor=_encode_cursor(offset + max_results, key, None) if more else None,
                mode=ranked.mode,
                semantic_pending=ranked.pending or None,
            )
        # The account is part of the key: a cursor is refused by every other account.
        key = query_key("list_emails", self.settings.account, query, max_results)
        offset = decode_cursor(cursor, key)
        listed = self.backend.list(node, raw=query, limit=max_results, offset=offset, after=_cursor_mark(cursor))
        emails, more = listed.emails, listed.more
        total = None
        if isinstance(self.backend, Counting):
            # A single page needs no count: it is everything.
            total = offset + len(emails) if not more else self.backend.count(node)
        next_cursor = None
        if more:
            next_cursor = _encode_cursor(offset + max_results, key, listed.after)
        return EmailList(emails=emails, next_cursor=next_cursor, total=total)

    def _mode(self, asked: str | None, words: str) -> Mode:
        """The mode `list_emails` runs in: lexical unless asked otherwise; by meaning only for a
        query with words, on a mailbox indexed here with a model set up (hybrid asked where it
        cannot run runs lexical, and the answer says so; `semantic` is refused saying why)."""
        backend = self.backend
        if asked == "semantic":
            if not words:
                raise BadRequest(
                    "mode='semantic' ranks messages by the meaning of the query's words, and this query has none"
                    " (only operators): add words, or search with mode='lexical'.",
                    {"mode": asked},
                )
            if not isinstance(backend, ByMeaning):
                raise BadRequest(
                    f"Search by meaning needs mail deskmcp indexes itself (a Maildir account); this account's"
                    f" backend is {backend.name}: search with mode='lexical'.",
                    {"mode": asked, "backend": backend.name},
                )
        if asked not in (None, "lexical", "semantic", "hybrid"):
            raise BadRequest(f"mode must be lexical, semantic or hybrid (got {asked!r}).", {"mode": asked})
        if asked is None or not words or not isinstance(backend, ByMeaning):
            return "lexical"
        return fusion.pick_mode(asked, backend.has_model)

    def _parsed(self, message_id: str) -> tuple[EmailSummary, ParsedMail]:
        summary, raw = self.backend.fetch(message_id)
        return summary, decode(parse_bytes(crlf(raw)))

    def get_email(self, message_id: str, *, max_chars: int | None = None, offset: int = 0) -> EmailFull:
        """A message with `max_chars` of its text body from `offset` (a long body is read in
        parts: `next_offset` says where the next one starts)."""
        if offset < 0:
            raise BadRequest("offset must be 0 or more.", {"offset": offset})
        limit = self.settings.max_chars
        if max_chars is not None and not 1 <= max_chars <= limit:
            raise BadRequest(
                f"max_chars must be between 1 and {limit:,} (DESKMCP_MAX_FILE_CHARS).", {"max_chars": max_chars}
            )
        summary, parsed = self._parsed(message_id)
        _readable(message_id, parsed)
        if offset and offset >= len(parsed.body):
            raise BadRequest(
                f"offset {offset:,} is past the end of the body ({len(parsed.body):,} characters);"
                " pass the next_offset of the previous part, or 0.",
                {"offset": offset, "body_chars": len(parsed.body)},
            )
        return self._full(summary, parsed, max_chars or limit, offset)

    def _full(self, summary: EmailSummary, parsed: ParsedMail, max_chars: int, offset: int = 0) -> EmailFull:
        body = parsed.body
        end = offset + max_chars
        truncated = len(body) > end
        return EmailFull(
            **summary.model_dump(),
            body=body[offset:end],
            body_truncated=truncated,
            body_offset=offset,
            body_chars=len(body),
            next_offset=end if truncated else None,
            attachment_names=[a.filename for a in parsed.attachments],
            attachments=[
                AttachmentInfo(index=a.index, filename=a.filename, content_type=a.content_type, size=a.size)
                for a in parsed.attachments
            ],
            in_reply_to=parsed.in_reply_to,
            references=parsed.references,
            bcc=parsed.bcc,
        )

    def get_thread(self, thread_id: str, *, max_messages: int = 50, max_chars_each: int = 4000) -> ThreadResult:
        ids = self.backend.thread(thread_id, limit=max_messages)
        truncated = len(ids) > max_messages
        messages = []
        for message_id in ids[:max_messages]:
            summary, parsed = self._parsed(message_id)
            messages.append(self._full(summary, parsed, max_chars_each))
        return ThreadResult(thread_id=thread_id, messages=messages, truncated=truncated)

    def list_labels(self) -> LabelList:
        return LabelList(labels=self.backend.labels())

    def get_attachment(self, message_id: str, index: int, *, save: bool = False) -> AttachmentContent:
        _, parsed = self._parsed(message_id)
        _readable(message_id, parsed)
        if not 0 <= index < len(parsed.attachments):
            raise NotFound(
                f"Message {message_id} has no attachment {index}; get_email lists {len(parsed.attachments)}.",
                {"message_id": message_id, "index": index, "count": len(parsed.attachments)},
            )
        item = parsed.attachments[index]
        result = AttachmentContent(
            message_id=message_id, index=index, filename=item.filename, content_type=item.content_type, size=item.size
        )
        if save:
            folder = self.settings.workspace / "attachments" / message_id
            folder.parent.mkdir(parents=True, exist_ok=True, mode=PRIVATE_FOLDER)
            folder.mkdir(exist_ok=True, mode=PRIVATE_FOLDER)
            target = safe_join(folder, _safe_filename(item.filename, index))
            data = item.part.as_bytes() if item.content_type.startswith("message/") else item.payload()
            atomic_write_bytes(target, data, mode=PRIVATE_FILE)
            result.saved_path = target.relative_to(self.settings.workspace).as_posix()
            return result
        if not item.content_type.startswith(TEXT_TYPES):
            raise BadRequest(
                f"{item.filename} is {item.content_type}, not text; call get_attachment with save=true to store it.",
                {"content_type": item.content_type},
            )
        text = item.part.as_string() if item.content_type.startswith("message/") else part_text(item.part)
        result.text = text[:ATTACHMENT_TEXT_CHARS]
        result.text_truncated = len(text) > ATTACHMENT_TEXT_CHARS
        return result

    # -- changing mail ---------------------------------------------------------------------

    def _require(self, action: str, needed: str) -> None:
        order = {"read_only": 0, "draft_only": 1, "send": 2}
        if order[self.mode] < order[needed]:
            raise PermissionDenied(
                f"{action} is switched off: MAIL_MODE is {self.mode}"
                + (" (drafts are allowed: use create_draft)." if self.mode == "draft_only" else "."),
                {"mode": self.mode},
            )

    def move_email(self, message_id: str | list[str], destination_label: str) -> LabelResult:
        self._require("Moving mail", "draft_only")
        return _each(message_id, lambda one: self.backend.move(one, destination_label))

    def add_label(self, message_id: str | list[str], label_name: str) -> LabelResult:
        self._require("Labelling mail", "draft_only")
        return _each(message_id, lambda one: self.backend.add_label(one, label_name))

    def remove_label(self, message_id: str | list[str], label_name: str) -> LabelResult:
        self._require("Labelling mail", "draft_only")
        return _each(message_id, lambda one: self.backend.remove_label(one, label_name))

    def mark_read(self, message_id: str, read: bool = True) -> LabelResult:
        self._require("Marking mail", "draft_only")
        return _labelled(self.backend.set_read(message_id, read))

    # -- composing -------------------------------------------------------------------------

    def check_outgoing(
        self,
        *,
        to: str,
        subject: str,
        body: str,
        cc: str | None,
        bcc: str | None,
        html_body: str | None = None,
        require_to: bool = True,
    ) -> Draft:
        """The checks every outgoing message passes (headers, addresses, this account's recipient
        count, body size and allowlist), before anything is built, asked or sent."""
        s = self.settings
        return check_draft(
            to=to,
            subject=subject,
            body=body,
            cc=cc,
            bcc=bcc,
            html_body=html_body,
            max_recipients=s.max_recipients,
            max_body_chars=s.max_body_chars,
            allowlist=s.allowlist,
            require_to=require_to,
        )

    def _compose(
        self,
        *,
        to: str,
        subject: str,
        body: str,
        reply_to_message_id: str | None,
        cc: str | None,
        bcc: str | None,
        html_body: str | None,
        require_to: bool = True,
        attachments: list[OutgoingAttachment] | None = None,
    ) -> tuple[EmailMessage, str | None]:
        s = self.settings
        draft = self.check_outgoing(
            to=to, subject=subject, body=body, cc=cc, bcc=bcc, html_body=html_body, require_to=require_to
        )
        parent: ParsedMail | None = None
        thread_id: str | None = None
        if reply_to_message_id:
            try:
                summary, parent = self._parsed(reply_to_message_id)
            except NotFound as exc:
                raise NotFound(
                    f"No message {reply_to_message_id!r} to reply to. Call list_emails for valid ids.",
                    {"reply_to_message_id": reply_to_message_id},
                ) from exc
            thread_id = summary.thread_id
        files = load_attachments(attachments or [], s.attachment_roots, s.max_attachment_bytes)
        message = build_message(draft, sender=s.address, display_name=s.display_name, parent=parent, attachments=files)
        return message, thread_id

    def send_email(
        self,
        to: str,
        subject: str,
        body: str,
        reply_to_message_id: str | None = None,
        cc: str | None = None,
        bcc: str | None = None,
        html_body: str | None = None,
        idempotency_key: str | None = None,
        attachments: list[OutgoingAttachment] | None = None,
    ) -> SendEmailResult:
        self._require("Sending mail", "send")
        _check_key(idempotency_key)
        asked: list[object] = [to, subject, body, reply_to_message_id, cc, bcc, html_body]
        if attachments:  # left out when there are none: keys journalled before attachments still match
            asked.append([_attachment_digest(a) for a in attachments])
        request = hashlib.sha256(orjson.dumps(asked)).hexdigest()

        def compose() -> tuple[EmailMessage, str | None]:
            return self._compose(
                to=to,
                subject=subject,
                body=body,
                reply_to_message_id=reply_to_message_id,
                cc=cc,
                bcc=bcc,
                html_body=html_body,
                attachments=attachments,
            )

        return self._keyed_send(idempotency_key, request, compose, reply_to_message_id)

    def forward_email(
        self,
        message_id: str,
        to: str,
        body: str = "",
        cc: str | None = None,
        bcc: str | None = None,
        idempotency_key: str | None = None,
    ) -> SendEmailResult:
        self._require("Forwarding mail", "send")
        _check_key(idempotency_key)
        request = hashlib.sha256(orjson.dumps(["forward_email", message_id, to, body, cc, bcc])).hexdigest()

        def compose() -> tuple[EmailMessage, str | None]:
            _, original = self._parsed(message_id)
            _readable(message_id, original)
            s = self.settings
            draft = self.check_outgoing(to=to, subject=forward_subject(original.subject), body=body, cc=cc, bcc=bcc)
            message = build_forward(draft, original, sender=s.address, display_name=s.display_name)
            return message, None

        return self._keyed_send(idempotency_key, request, compose, None)

    def _keyed_send(
        self,
        key: str | None,
        request: str,
        compose: Callable[[], tuple[EmailMessage, str | None]],
        reply_to: str | None,
    ) -> SendEmailResult:
        """The one way anything is sent: a key already journalled answers from the journal (the
        first result, or the resumed send); a key used for another request is a `conflict`;
        otherwise the message is composed, journalled, audited and delivered."""
        with self._send_lock, self.journal.claim(key) if key is not None else nullcontext():
            row = self.journal.get(key) if key is not None else None
            if row is not None and row.request != request:
                raise Conflict(
                    "This idempotency_key was already used for a different message; use a new key.",
                    {"idempotency_key": key},
                )
            if row is not None and row.status == "sent" and row.result:
                return SendEmailResult(**{**row.result, "duplicate": True})
            self._check_audit_folder()
            if key is not None and row is not None and row.status == "pending":
                return self._resume(key, row.rfc_message_id, row.raw, row.thread_hint, reply_to)
            message, thread_id = compose()
            return self._send(message, thread_id, key, request, reply_to)

    def _check_audit_folder(self) -> None:
        """The audit log must be writable before anything is journalled or sent. A configured
        VAULT_PATH is never created (a typo would scatter audit logs); the default vault is."""
        s = self.settings
        if s.vault_path is None:
            try:
                s.audit_folder.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise IOFailure(
                    f"The default vault {s.audit_folder.parent} for the send audit log could not be created"
                    f" ({exc.strerror}); nothing was sent. Set VAULT_PATH to an existing folder.",
                    {"path": str(s.audit_folder.parent)},
                ) from exc
        elif not s.vault_path.is_dir():
            raise NotFound(
                f"VAULT_PATH is {s.vault_path}, which does not exist; the send audit log goes to its Logs/ folder,"
                " so nothing was sent. Create that folder or point VAULT_PATH at the vault.",
                {"variable": "VAULT_PATH", "path": str(s.vault_path)},
            )

    def _audit(self, entry: AuditLogEntry) -> None:
        audit.append(self.settings.audit_folder, entry)

    def _entry(self, message: EmailMessage, key: str | None, reply_to: str | None, **extra: object) -> AuditLogEntry:
        body = message.get_body(("plain",)) if message.is_multipart() else message
        text = body.get_content() if body is not None else ""
        return AuditLogEntry(
            timestamp=utc_stamp(),
            to=str(message.get("To", "")),
            cc=str(message["Cc"]) if message["Cc"] else None,
            bcc=str(message["Bcc"]) if message["Bcc"] else None,
            subject=str(message.get("Subject", "")),
            body_preview=str(text)[:200],
            reply_to_message_id=reply_to,
            rfc_message_id=str(message["Message-ID"]),
            idempotency_key=key,
            backend=self.backend.name,
            attachments=[str(part.get_filename() or "") for part in message.iter_attachments()] or None,
            account=self.settings.account,
            **extra,  # type: ignore[arg-type]
        )

    def _send(
        self,
        message: EmailMessage,
        thread_id: str | None,
        key: str | None,
        request: str,
        reply_to: str | None,
    ) -> SendEmailResult:
        rfc = str(message["Message-ID"])
        if key is not None:
            self.journal.begin(key, request, rfc, bytes(message), thread_id)
        self._audit(self._entry(message, key, reply_to))
        return self._deliver(message, thread_id, key, reply_to)

    def _deliver(
        self, message: EmailMessage, thread_id: str | None, key: str | None, reply_to: str | None
    ) -> SendEmailResult:
        rfc = str(message["Message-ID"])
        try:
            sent = self.backend.send(message, thread_id)
        except (DeliveryUnknown, Timeout) as exc:
            # Ambiguous: the provider may have it. Look before anyone retries.
            found = self._look_in_sent(rfc)
            if found is None:
                self._audit(
                    self._entry(message, key, reply_to, event="send_result", outcome="unknown", error=exc.message)
                )
                raise
            sent = found
        except DeskError as exc:
            if key is not None:
                self.journal.fail(key)
            self._audit(self._entry(message, key, reply_to, event="send_result", outcome="failed", error=exc.message))
            raise
        return self._finish(message, sent, key, reply_to, duplicate=False)

    def _look_in_sent(self, rfc: str) -> Sent | None:
        try:
            return self.backend.find_sent(rfc)
        except DeskError as exc:
            log.warning("could not look for %s in Sent: %s", rfc, exc.message)
            return None

    def _finish(
        self, message: EmailMessage, sent: Sent, key: str | None, reply_to: str | None, *, duplicate: bool
    ) -> SendEmailResult:
        result = SendEmailResult(
            message_id=sent.message_id,
            thread_id=sent.thread_id,
            sent_at=utc_stamp(),
            rfc_message_id=str(message["Message-ID"]),
            duplicate=duplicate,
            audit_log=shown_path(audit.audit_path(self.settings.audit_folder), self.settings.shown_root),
        )
        if key is not None:
            self.journal.finish(key, result.model_dump(exclude={"duplicate"}))
        self._audit(
            self._entry(
                message,
                key,
                reply_to,
                event="send_result",
                outcome="found_in_sent" if duplicate else "sent",
                message_id=sent.message_id,
            )
        )
        return result

    def _resume(self, key: str, rfc: str, raw: bytes, thread_hint: str | None, reply_to: str | None) -> SendEmailResult:
        """A keyed send that never recorded its outcome (crash, ambiguous failure)."""
        message = parse_bytes(raw)
        found = self._look_in_sent(rfc)
        if found is not None:
            return self._finish(message, found, key, reply_to, duplicate=True)
        # Not in Sent: the provider never got it. Send the very same bytes (same Message-ID).
        self._audit(self._entry(message, key, reply_to, event="pre_send_audit", outcome="retry"))
        return self._deliver(message, thread_hint, key, reply_to)

    # -- drafts ----------------------------------------------------------------------------

    def create_draft(
        self,
        to: str,
        subject: str,
        body: str,
        reply_to_message_id: str | None = None,
        cc: str | None = None,
        bcc: str | None = None,
        html_body: str | None = None,
        attachments: list[OutgoingAttachment] | None = None,
    ) -> DraftResult:
        self._require("Creating drafts", "draft_only")
        message, thread_id = self._compose(
            to=to,
            subject=subject,
            body=body,
            reply_to_message_id=reply_to_message_id,
            cc=cc,
            bcc=bcc,
            html_body=html_body,
            require_to=False,
            attachments=attachments,
        )
        saved = self.backend.save_draft(message, thread_id)
        return DraftResult(
            draft_id=saved.message_id,
            message_id=saved.message_id,
            thread_id=saved.thread_id,
            rfc_message_id=str(message["Message-ID"]),
            subject=str(message["Subject"]),
            to=str(message.get("To", "")),
        )

    def list_drafts(self, max_results: int = 20, cursor: str | None = None) -> DraftList:
        page_ = self.list_emails("in:drafts", max_results, cursor)
        return DraftList(drafts=page_.emails, next_cursor=page_.next_cursor)

    def _draft(self, draft_id: str) -> tuple[EmailSummary, bytes]:
        summary, raw = self.backend.fetch(draft_id)
        if "DRAFT" not in summary.labels:
            raise NotFound(f"{draft_id} is not a draft; list_drafts shows the drafts.", {"draft_id": draft_id})
        return summary, raw

    def send_draft(self, draft_id: str, idempotency_key: str | None = None) -> SendEmailResult:
        self._require("Sending mail", "send")
        _check_key(idempotency_key)
        # The request is the draft's id: a retry with the same key after the draft was sent (and
        # removed) is answered from the journal without reading the draft again.
        request = hashlib.sha256(orjson.dumps(["send_draft", draft_id])).hexdigest()
        fetched: tuple[EmailSummary, bytes] | None = None
        key = idempotency_key
        if key is None:
            fetched = self._draft(draft_id)
            key = f"draft:{draft_id}:{hashlib.sha256(fetched[1]).hexdigest()[:16]}"

        def compose() -> tuple[EmailMessage, str | None]:
            summary, raw = fetched or self._draft(draft_id)
            s = self.settings
            message = draft_to_send(
                parse_bytes(raw),
                sender=s.address,
                display_name=s.display_name,
                max_recipients=s.max_recipients,
                max_body_chars=s.max_body_chars,
                allowlist=s.allowlist,
            )
            return message, summary.thread_id

        result = self._keyed_send(key, request, compose, None)
        try:
            self.backend.delete_draft(draft_id)
        except (NotFound, IOFailure) as exc:
            log.warning("sent draft %s could not be removed: %s", draft_id, exc.message)
        return result


T = TypeVar("T")


class MailAccounts:
    """Every configured mail account (MAIL_ACCOUNTS, or the MAIL_* variables as the one account
    "default"), each with a `MailService` of its own: its own backend, index,
    send journal (idempotency keys) and audit lines. Ids and cursors are valid only in the account
    that gave them."""

    def __init__(self, settings: MailSettings, services: dict[str, MailService] | None = None) -> None:
        self.settings = settings
        self.accounts = settings.account_settings()
        self.default = next(iter(self.accounts))
        self._services: dict[str, MailService] = dict(services or {})
        self._lock = threading.Lock()
        # The first account is built now, as a single account always was (its Maildir created
        # private before anything else writes there); the others when first used. A configured
        # Maildir that is missing is not: each call of that account answers not_found naming it.
        if self.accounts[self.default].missing_maildir() is None:
            self.service(self.default)

    @classmethod
    def of(cls, service: MailService) -> MailAccounts:
        """One service already built (tests, a backend given by hand) as the only account."""
        return cls(service.settings.model_copy(update={"accounts": ""}), {service.settings.account: service})

    def service(self, account: str | None = None) -> MailService:
        """The service of `account` (None or "": the first account)."""
        name = account or self.default
        if name not in self.accounts:
            raise NotFound(
                f"No mail account {name!r}. The accounts are: {', '.join(self.accounts)}; leave account out for"
                f" {self.default!r}.",
                {"account": name, "accounts": list(self.accounts)},
            )
        with self._lock:
            if name not in self._services:
                self._services[name] = MailService(self.accounts[name])
            return self._services[name]

    def run(self, account: str | None, action: Callable[[MailService], T]) -> T:
        """`action` on one account's service. With several accounts, something not found (a message,
        thread or draft id) or a cursor refused is answered naming the account it was looked for in,
        so the model can pass the account that gave the id."""
        service = self.service(account)
        try:
            return action(service)
        except (NotFound, BadRequest) as exc:
            if len(self.accounts) > 1 and (isinstance(exc, NotFound) or "cursor" in exc.details):
                name = service.settings.account
                exc.message = (
                    f"{exc.message.rstrip('.')} (in mail account {name!r}; ids and cursors are valid only in the"
                    " account that gave them: pass that account)."
                )
                exc.details = {**exc.details, "account": name}
            raise

    def list_accounts(self) -> AccountList:
        return AccountList(
            accounts=[
                AccountInfo(
                    name=name,
                    address=settings.address,
                    backend=settings.backend,
                    mode=settings.effective_mode,
                    default=name == self.default,
                )
                for name, settings in self.accounts.items()
            ]
        )

    def close(self) -> None:
        with self._lock:
            services = list(self._services.values())
            self._services.clear()
        for service in services:
            service.close()


def _readable(message_id: str, parsed: ParsedMail) -> None:
    """A message whose body could not be read is a `parse_error` for the tools that show it."""
    if parsed.unreadable is not None:
        raise ParseError(
            f"Message {message_id} cannot be read: {parsed.unreadable}. Its headers are in list_emails; open it"
            " in a mail program, or move it to TRASH with move_email.",
            {"message_id": message_id, "reason": parsed.unreadable},
        )


def _encode_cursor(offset: int, key: str, after: list[Any] | None) -> str:
    """The core's cursor (offset and query digest) plus where the page ended, in the backend's own
    terms: the next page starts after that message in any server process."""
    data: dict[str, Any] = {"o": offset, "k": key}
    if after is not None:
        data["a"] = after
    return base64.urlsafe_b64encode(orjson.dumps(data)).decode().rstrip("=")


def _cursor_mark(cursor: str | None) -> list[Any] | None:
    """The page end inside a cursor `decode_cursor` accepted; None for a cursor without one."""
    if not cursor:
        return None
    try:
        data = orjson.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (binascii.Error, ValueError, orjson.JSONDecodeError):
        return None
    after = data.get("a") if isinstance(data, dict) else None
    return after if isinstance(after, list) else None


def _attachment_digest(spec: OutgoingAttachment) -> list[str | None]:
    """What identifies an attachment in a send request: its path, or a digest of its content."""
    content = spec.content_base64
    return [spec.path, spec.filename, hashlib.sha256(content.encode()).hexdigest() if content else None]


def _check_key(key: str | None) -> None:
    if key is not None and not 1 <= len(key) <= 200:
        raise BadRequest("idempotency_key must be 1 to 200 characters.", {"field": "idempotency_key"})


def _labelled(result: Labelled) -> LabelResult:
    return LabelResult(id=result.message_id, labels=result.labels)


def _each(message_id: str | list[str], act: Callable[[str], Labelled]) -> LabelResult:
    """One change, or the same change on each of a list of messages: a message that fails is
    reported in its own result and the others go ahead."""
    if isinstance(message_id, str):
        return _labelled(act(message_id))
    if not 1 <= len(message_id) <= MAX_RESULTS:
        raise BadRequest(f"Pass 1 to {MAX_RESULTS} message ids.", {"count": len(message_id)})
    outcomes: dict[str, LabelOutcome] = {}
    for one in dict.fromkeys(message_id):  # an id given twice is changed once, and answered twice
        try:
            done = act(one)
        except DeskError as exc:
            outcomes[one] = LabelOutcome(message_id=one, error=exc.code, message=exc.message)
            continue
        except Exception:  # the outermost handler of this one message: the changes before it are reported
            log.exception("changing message %s failed", one)
            outcomes[one] = LabelOutcome(
                message_id=one,
                error="internal_error",
                message=f"Changing {one} failed unexpectedly (the server log has the details); the other"
                " messages were handled. Call get_email on it to see its state.",
            )
            continue
        outcomes[one] = LabelOutcome(message_id=one, id=done.message_id, labels=done.labels)
    return LabelResult(results=[outcomes[one] for one in message_id])


def _safe_filename(name: str, index: int) -> str:
    base = Path(name.replace("\\", "/")).name
    cleaned = "".join(ch if ch.isalnum() or ch in "._- " else "_" for ch in base).strip(" .")
    return cleaned[:150] or f"attachment-{index}"
