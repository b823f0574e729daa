"""The contract every mail backend implements (Maildir, IMAP, Gmail)."""

from __future__ import annotations

from dataclasses import dataclass
from email.message import EmailMessage
from typing import Any, Protocol, runtime_checkable

from deskmcp.core.errors import NotFound, SendFailed
from deskmcp.core.search.fusion import Mode
from deskmcp.mail.models import EmailSummary, LabelInfo
from deskmcp.mail.query import Node


class DeliveryUnknown(SendFailed):
    """The provider may or may not have the message (timeout, reset, 5xx after the data went out)."""

    def __init__(self, message: str, details: dict[str, object] | None = None) -> None:
        super().__init__(message, {**(details or {}), "ambiguous": True})


def gone(message_id: str) -> NotFound:
    """A message id that names no message any more: moved (by another mail program, or by an earlier
    call, which gave it a new id) or deleted. Nothing was changed."""
    return NotFound(
        f"No message has the id {message_id!r} now: it was moved or deleted since it was listed (on IMAP a"
        " move gives it a new id), or the id is wrong; nothing was changed. Find the message with list_emails (query"
        " rfc822msgid:<its Message-ID> in:anywhere, or its subject) and use the id it has now.",
        {"message_id": message_id},
    )


@dataclass(frozen=True)
class Sent:
    """Where a sent (or saved) message now lives."""

    message_id: str
    thread_id: str


@dataclass(frozen=True)
class Labelled:
    """A message's id after a change (IMAP moves give it a new one) and its labels."""

    message_id: str
    labels: list[str]


@dataclass(frozen=True)
class Page:
    """A page of a listing and where it ended.

    `after` is the backend's own mark of the last message shown (JSON-able: numbers, strings),
    carried inside the opaque cursor, so the next page starts right after that message even in
    another server process and even when newer mail arrived meanwhile (an offset would repeat one).
    """

    emails: list[EmailSummary]
    more: bool
    after: list[Any] | None = None


@runtime_checkable
class Counting(Protocol):
    """A backend that can count a query's matches cheaply (the local index); others answer no total."""

    def count(self, query: Node | None) -> int: ...


@dataclass(frozen=True)
class Ranked:
    """A page found by meaning (or by meaning and words): summaries best first, each with its ranks;
    the mode it ran in, and how many messages are not embedded yet."""

    emails: list[EmailSummary]
    mode: Mode
    pending: int = 0


@runtime_checkable
class ByMeaning(Protocol):
    """A backend that keeps its mail's text here and can rank it by meaning (the local index);
    `has_model` says whether an embedding model is set up for it."""

    @property
    def has_model(self) -> bool: ...

    def by_meaning(self, filters: Node | None, text: str, *, mode: Mode, limit: int, offset: int) -> Ranked:
        """Messages passing `filters`, ranked for `text` in `mode` (semantic or hybrid)."""
        ...


class MailBackend(Protocol):
    name: str

    def list(self, query: Node | None, *, raw: str, limit: int, offset: int, after: list[Any] | None = None) -> Page:
        """A page of messages matching `query`, newest first, whether more follow and where it ended.
        `after` is the previous page's `Page.after` (then `offset` is only the fallback when the
        mark no longer applies); None: start at `offset`."""
        ...

    def fetch(self, message_id: str) -> tuple[EmailSummary, bytes]:
        """A message's summary and its raw RFC 5322 bytes (`NotFound` when unknown)."""
        ...

    def thread(self, thread_id: str, *, limit: int) -> list[str]:
        """Ids of a conversation's messages, oldest first."""
        ...

    def send(self, message: EmailMessage, thread_id: str | None) -> Sent:
        """Deliver `message` (its Message-ID already set) and file it in Sent."""
        ...

    def find_sent(self, rfc_message_id: str) -> Sent | None:
        """The sent copy of a message, looked up by its Message-ID (after an ambiguous failure)."""
        ...

    def save_draft(self, message: EmailMessage, thread_id: str | None) -> Sent: ...

    def delete_draft(self, message_id: str) -> None: ...

    def move(self, message_id: str, label: str) -> Labelled: ...

    def add_label(self, message_id: str, label: str) -> Labelled: ...

    def remove_label(self, message_id: str, label: str) -> Labelled: ...

    def set_read(self, message_id: str, read: bool) -> Labelled: ...

    def labels(self) -> list[LabelInfo]: ...

    def close(self) -> None: ...
