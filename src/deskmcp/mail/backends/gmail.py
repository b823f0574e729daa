"""The Gmail API backend (google-api-python-client), authorised by `deskmcp.google.auth`.

Queries go to Gmail as written (it speaks its own syntax). Failures are mapped by
`deskmcp.google.errors`; calls are retried with backoff on 429 and rate-limit reasons,
honouring `Retry-After`, and on 5xx for reads; a send is never retried
blindly: a 5xx or timeout on `messages.send` is ambiguous, and the service then looks for the
message's Message-ID in Sent before answering.
"""

from __future__ import annotations

import base64
import html
import logging
import threading
from collections.abc import Callable
from email.message import EmailMessage
from typing import Any, TypeVar

from deskmcp.core.clock import SYSTEM_CLOCK, Clock
from deskmcp.core.errors import DeskError, NotFound
from deskmcp.core.retry import Retry, RetryPolicy
from deskmcp.google.auth import SCOPES, GoogleSettings, build_service, credentials
from deskmcp.google.errors import GoogleApi, map_error, may_have_applied
from deskmcp.mail.backends.base import DeliveryUnknown, Labelled, Page, Sent, gone
from deskmcp.mail.mime import decode, iso_utc, parse_bytes, parse_date, shown_date
from deskmcp.mail.models import EmailSummary, LabelInfo
from deskmcp.mail.query import Node

log = logging.getLogger(__name__)
T = TypeVar("T")
HEADERS = ["Subject", "From", "To", "Cc", "Date", "Message-ID"]
FOLDER_LABELS = ("INBOX", "SPAM", "TRASH")
BATCH = 50  # Gmail takes 100 calls a batch but advises at most 50 (larger ones hit rate limits)
GMAIL = GoogleApi(
    name="Gmail",
    key="gmail",
    listing="Call list_emails for valid ids.",
    forbidden="Check that `deskmcp auth google --scopes mail` was granted for this account.",
)


class GmailBackend:
    name = "gmail"

    def __init__(
        self,
        settings: GoogleSettings,
        *,
        http: Any = None,
        clock: Clock = SYSTEM_CLOCK,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.settings = settings
        self._http = http
        self._service: Any = None
        self._lock = threading.RLock()
        self.retry = retry or RetryPolicy(attempts=4, base=1.0, cap=16.0, max_wait=60.0, clock=clock)
        self._labels: dict[str, str] | None = None  # id -> name
        self._page_tokens: dict[tuple[str, int], str] = {}

    def close(self) -> None:
        self._service = None

    # -- calling the API -------------------------------------------------------------------

    @property
    def api(self) -> Any:
        if self._service is None:
            creds = credentials(self.settings, list(SCOPES["mail"]))
            self._service = build_service("gmail", "v1", creds, http=self._http)
        return self._service

    def _call(self, make: Callable[[Any], Any], *, sending: bool = False) -> Any:
        """Execute one request with retries; map every failure onto the taxonomy."""

        def attempt() -> Any:
            try:
                with self._lock:
                    return make(self.api).execute(num_retries=0)
            except DeskError:
                raise
            except Exception as exc:  # googleapiclient/httplib2 raise a wide family; mapped below
                raise self._signal(exc, sending) from exc

        return self.retry.call(attempt)

    def _signal(self, exc: Exception, sending: bool) -> DeskError | Retry:
        signal = map_error(exc, GMAIL, clock=self.retry.clock)
        if sending and may_have_applied(signal):
            # A 5xx, timeout or dropped connection while sending: the service looks in Sent first.
            error = signal.error if isinstance(signal, Retry) else signal
            return DeliveryUnknown(
                f"{error.message} It may or may not have been sent.", {"reason": error.code, **error.details}
            )
        return signal

    # -- labels ----------------------------------------------------------------------------

    def _label_names(self) -> dict[str, str]:
        if self._labels is None:
            found = self._call(lambda api: api.users().labels().list(userId="me"))
            self._labels = {item["id"]: item["name"] for item in found.get("labels", [])}
        return self._labels

    def _label_id(self, name: str, *, create: bool) -> str:
        names = self._label_names()
        for label_id, label_name in names.items():
            if label_name.lower() == name.lower() or label_id.lower() == name.lower():
                return label_id
        if not create:
            raise NotFound(f"No Gmail label {name!r}; list_labels shows them.", {"label": name})
        body = {"name": name, "labelListVisibility": "labelShow", "messageListVisibility": "show"}
        made = self._call(lambda api: api.users().labels().create(userId="me", body=body))
        names[made["id"]] = made.get("name", name)
        return made["id"]

    def labels(self) -> list[LabelInfo]:
        self._labels = None
        found = self._call(lambda api: api.users().labels().list(userId="me"))
        self._labels = {item["id"]: item["name"] for item in found.get("labels", [])}
        return [
            LabelInfo(
                name=item["name"],
                # Gmail's user labels tag a message, any number at once: keywords, not folders.
                kind="system" if str(item.get("type", "user")).lower() == "system" else "keyword",
                total=item.get("messagesTotal"),
                unread=item.get("messagesUnread"),
            )
            for item in found.get("labels", [])
        ]

    # -- reading ---------------------------------------------------------------------------

    def _summary(self, item: dict[str, Any], parsed_headers: dict[str, str] | None = None) -> EmailSummary:
        headers = parsed_headers or {
            h["name"].lower(): h.get("value", "") for h in item.get("payload", {}).get("headers", [])
        }
        names = self._label_names()
        label_ids = item.get("labelIds", [])
        moment = parse_date(headers.get("date", ""))
        arrived = int(item["internalDate"]) / 1000 if str(item.get("internalDate", "")).isdigit() else None
        date, date_source = shown_date(iso_utc(moment) if moment else "", moment is not None, arrived)
        mime = item.get("payload", {}).get("mimeType", "")
        return EmailSummary(
            id=item["id"],
            thread_id=item.get("threadId", item["id"]),
            rfc_message_id=headers.get("message-id", ""),
            subject=headers.get("subject", ""),
            sender=headers.get("from", ""),
            to=headers.get("to", ""),
            cc=headers.get("cc", ""),
            date=date,
            date_source=date_source,
            snippet=html.unescape(item.get("snippet", "")),
            labels=[str(names.get(i) or i) for i in label_ids],
            unread="UNREAD" in label_ids,
            has_attachments=mime == "multipart/mixed",
        )

    def list(self, query: Node | None, *, raw: str, limit: int, offset: int, after: list[Any] | None = None) -> Page:
        # The previous page's nextPageToken travels in the cursor; Gmail honours it in any process.
        token = after[0] if after and len(after) == 1 and isinstance(after[0], str) else None
        if token is None and offset:
            token = self._page_tokens.get((raw, offset)) or self._walk_to(raw, offset, limit)
        found = self._call(
            lambda api: api.users().messages().list(userId="me", q=raw, maxResults=limit, pageToken=token)
        )
        next_token = found.get("nextPageToken")
        if next_token:
            self._page_tokens[(raw, offset + limit)] = next_token
        ids = [ref["id"] for ref in found.get("messages", [])[:limit]]
        items = self._metadata(ids)
        summaries = [self._summary(items[mid]) for mid in ids]
        return Page(summaries, bool(next_token), [next_token] if next_token else None)

    def _metadata(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        """The summaries' metadata of `ids` in batch requests (BATCH calls each) instead of
        one request each; a message the batch could not answer is asked for alone, with retries."""

        def one(api: Any, mid: str) -> Any:
            return api.users().messages().get(userId="me", id=mid, format="metadata", metadataHeaders=HEADERS)

        found: dict[str, dict[str, Any]] = {}
        if len(ids) > 1:
            for start in range(0, len(ids), BATCH):
                chunk = ids[start : start + BATCH]
                self._call(lambda api, chunk=chunk: _Batch(api, [(mid, one(api, mid)) for mid in chunk], found))
        for mid in ids:
            if mid not in found:
                found[mid] = self._call(lambda api, mid=mid: one(api, mid))
        return found

    def _walk_to(self, raw: str, offset: int, limit: int) -> str | None:
        """The page token of `offset` when this process has not seen it (after a restart)."""
        token: str | None = None
        for start in range(0, offset, limit):
            found = self._call(
                lambda api, t=token: api.users().messages().list(userId="me", q=raw, maxResults=limit, pageToken=t)
            )
            token = found.get("nextPageToken")
            if token is None:
                return None
            self._page_tokens[(raw, start + limit)] = token
        return token

    def fetch(self, message_id: str) -> tuple[EmailSummary, bytes]:
        item = self._call(lambda api: api.users().messages().get(userId="me", id=message_id, format="raw"))
        raw = base64.urlsafe_b64decode(item.get("raw", "") + "=" * (-len(item.get("raw", "")) % 4))
        parsed = decode(parse_bytes(raw))
        headers = {
            "subject": parsed.subject,
            "from": parsed.sender,
            "to": parsed.to,
            "cc": parsed.cc,
            "date": "",
            "message-id": parsed.rfc_message_id,
        }
        summary = self._summary(item, headers)
        if parsed.header_dated:  # else the summary's internalDate stands
            summary.date, summary.date_source = parsed.date, "header"
        summary.has_attachments = bool(parsed.attachments)
        return summary, raw

    def thread(self, thread_id: str, *, limit: int) -> list[str]:
        found = self._call(lambda api: api.users().threads().get(userId="me", id=thread_id, format="minimal"))
        return [m["id"] for m in found.get("messages", [])][: limit + 1]

    # -- writing ---------------------------------------------------------------------------

    def send(self, message: EmailMessage, thread_id: str | None) -> Sent:
        body: dict[str, Any] = {"raw": _b64(message)}
        if thread_id:
            body["threadId"] = thread_id
        sent = self._call(lambda api: api.users().messages().send(userId="me", body=body), sending=True)
        return Sent(sent["id"], sent.get("threadId", sent["id"]))

    def find_sent(self, rfc_message_id: str) -> Sent | None:
        query = f"rfc822msgid:{rfc_message_id.strip('<>')} in:sent"
        found = self._call(lambda api: api.users().messages().list(userId="me", q=query, maxResults=1))
        refs = found.get("messages", [])
        return Sent(refs[0]["id"], refs[0].get("threadId", refs[0]["id"])) if refs else None

    def save_draft(self, message: EmailMessage, thread_id: str | None) -> Sent:
        inner: dict[str, Any] = {"raw": _b64(message)}
        if thread_id:
            inner["threadId"] = thread_id
        made = self._call(lambda api: api.users().drafts().create(userId="me", body={"message": inner}))
        msg = made.get("message", {})
        return Sent(msg.get("id", made["id"]), msg.get("threadId", ""))

    def delete_draft(self, message_id: str) -> None:
        found = self._call(lambda api: api.users().drafts().list(userId="me", maxResults=500))
        for draft in found.get("drafts", []):
            if draft.get("message", {}).get("id") == message_id:
                self._call(lambda api, d=draft["id"]: api.users().drafts().delete(userId="me", id=d))
                return

    def _modify(self, message_id: str, add: list[str], remove: list[str]) -> Labelled:
        body = {"addLabelIds": add, "removeLabelIds": [r for r in remove if r not in add]}
        try:
            item = self._call(lambda api: api.users().messages().modify(userId="me", id=message_id, body=body))
        except NotFound as exc:  # deleted (ids survive label changes and moves on Gmail)
            raise gone(message_id) from exc
        names = self._label_names()
        return Labelled(message_id, [str(names.get(i) or i) for i in item.get("labelIds", [])])

    def move(self, message_id: str, label: str) -> Labelled:
        target = self._label_id(label, create=True)
        return self._modify(message_id, [target], [x for x in FOLDER_LABELS if x != target])

    def add_label(self, message_id: str, label: str) -> Labelled:
        return self._modify(message_id, [self._label_id(label, create=True)], [])

    def remove_label(self, message_id: str, label: str) -> Labelled:
        return self._modify(message_id, [], [self._label_id(label, create=False)])

    def set_read(self, message_id: str, read: bool) -> Labelled:
        return self._modify(message_id, [] if read else ["UNREAD"], ["UNREAD"] if read else [])


class _Batch:
    """A Gmail batch request with the `execute(num_retries=)` of a single one, for `_call`.

    The answers that came back go into `found` (keyed by message id); a part answered with an
    error is left out for the caller to ask again. A failure of the whole batch raises as a
    single request's would, and `_call` retries it."""

    def __init__(self, api: Any, requests: list[tuple[str, Any]], found: dict[str, dict[str, Any]]) -> None:
        self.found = found
        self.batch = api.new_batch_http_request(callback=self._collect)
        for request_id, request in requests:
            self.batch.add(request, request_id=request_id)

    def _collect(self, request_id: str, response: Any, exception: Exception | None) -> None:
        if exception is None and isinstance(response, dict):
            self.found[request_id] = response
        elif exception is not None:
            log.info("Gmail batch part %s failed (%s); asking for it alone", request_id, type(exception).__name__)

    def execute(self, num_retries: int = 0) -> None:
        self.batch.execute()


def _b64(message: EmailMessage) -> str:
    return base64.urlsafe_b64encode(bytes(message)).decode()
