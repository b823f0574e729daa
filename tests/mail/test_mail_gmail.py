"""The Gmail backend at the HTTP layer (`HttpMockSequence`, the discovery document the client ships)."""

from __future__ import annotations

import base64
import json
from email import message_from_bytes, policy
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from googleapiclient.http import HttpMockSequence
from mcp import Client

from deskmcp.core.retry import RetryPolicy
from deskmcp.google.auth import SCOPES, FileTokenStore
from deskmcp.mail.backends.gmail import GmailBackend
from deskmcp.mail.server import Settings, create_server
from deskmcp.mail.service import MailService
from tests.helpers.clock import ManualClock
from tests.helpers.mail import audit_lines, make_mail
from tests.helpers.tool_calls import call, fail

pytestmark = pytest.mark.anyio

Response = tuple[dict[str, str], bytes]


class RecordingHttp(HttpMockSequence):
    """HttpMockSequence that also keeps every request it answered."""

    def __init__(self, responses: list[Response]) -> None:
        super().__init__(responses)
        self.requests: list[tuple[str, str, bytes | str | None]] = []

    def request(self, uri: str, method: str = "GET", body: Any = None, *args: Any, **kwargs: Any) -> Any:
        self.requests.append((method, uri, body))
        return super().request(uri, method, body, *args, **kwargs)


def ok(body: dict[str, Any]) -> Response:
    return {"status": "200", "content-type": "application/json"}, json.dumps(body).encode()


def error(status: int, reason: str, extra: dict[str, str] | None = None) -> Response:
    body = {"error": {"code": status, "message": reason, "errors": [{"reason": reason, "message": reason}]}}
    return {"status": str(status), "content-type": "application/json", **(extra or {})}, json.dumps(body).encode()


LABELS = ok(
    {
        "labels": [
            {"id": "INBOX", "name": "INBOX", "type": "system"},
            {"id": "UNREAD", "name": "UNREAD", "type": "system"},
            {"id": "SENT", "name": "SENT", "type": "system"},
            {"id": "Label_7", "name": "AI_PROCESSED", "type": "user"},
        ]
    }
)


def metadata(message_id: str, subject: str, labels: list[str]) -> Response:
    headers = [
        {"name": "Subject", "value": subject},
        {"name": "From", "value": "Alice <alice@example.org>"},
        {"name": "To", "value": "me@gmail.test"},
        {"name": "Date", "value": "Thu, 19 Nov 2026 12:00:00 +0000"},
        {"name": "Message-ID", "value": f"<{message_id}@mail.example.org>"},
    ]
    return ok(
        {
            "id": message_id,
            "threadId": f"t-{message_id}",
            "labelIds": labels,
            "snippet": "Budget &amp; plan",
            "payload": {"mimeType": "multipart/mixed", "headers": headers},
        }
    )


def token_response(token: str = "fresh") -> Response:
    return ok({"access_token": token, "expires_in": 3600, "token_type": "Bearer"})


class Gmail:
    def __init__(self, workspace: Path, responses: list[Response], *, expired: bool = False) -> None:
        self.settings = Settings(
            workspace=workspace,
            backend="gmail",
            mode="send",
            address="me@gmail.test",
            google_client_id="cid",
            google_client_secret="csecret",
        )
        FileTokenStore(self.settings.google_token_path).save(
            {
                "token": "old-access",
                "refresh_token": "refresh-1",
                "token_uri": "https://oauth2.googleapis.com/token",
                "client_id": "cid",
                "client_secret": "csecret",
                "scopes": list(SCOPES["mail"]),
                "expiry": "2020-01-01T00:00:00Z" if expired else "2999-01-01T00:00:00Z",
            }
        )
        self.http = RecordingHttp(responses)
        self.clock = ManualClock()
        retry = RetryPolicy(attempts=4, base=1.0, cap=16.0, max_wait=60.0, clock=self.clock)
        backend = GmailBackend(self.settings, http=self.http, clock=self.clock, retry=retry)
        self.service = MailService(self.settings, backend=backend)

    def client(self) -> Client:
        return Client(create_server(self.settings, self.service))

    def api_requests(self, fragment: str) -> list[tuple[str, str, Any]]:
        return [r for r in self.http.requests if fragment in r[1]]


async def test_gmail_list_emails_passes_the_query_and_maps_labels(workspace: Path) -> None:
    gmail = Gmail(
        workspace,
        [
            ok({"messages": [{"id": "m1", "threadId": "t-m1"}], "nextPageToken": "page-2"}),
            metadata("m1", "Budget", ["INBOX", "UNREAD", "Label_7"]),
            LABELS,
        ],
    )
    async with gmail.client() as c:
        result = await call(c, "list_emails", {"query": "is:unread -label:AI_PROCESSED", "max_results": 1})
    [email] = result["emails"]
    assert email["labels"] == ["INBOX", "UNREAD", "AI_PROCESSED"] and email["unread"] is True
    assert email["date"] == "2026-11-19T12:00:00Z" and email["snippet"] == "Budget & plan"
    assert email["rfc_message_id"] == "<m1@mail.example.org>" and email["thread_id"] == "t-m1"
    assert result["next_cursor"]
    query = parse_qs(urlparse(gmail.api_requests("/messages?")[0][1]).query)
    assert query["q"] == ["is:unread -label:AI_PROCESSED"]


async def test_gmail_401_refreshes_the_token_and_retries(workspace: Path) -> None:
    gmail = Gmail(workspace, [error(401, "authError"), token_response("fresh-token"), ok({"messages": []})])
    async with gmail.client() as c:
        result = await call(c, "list_emails", {})
    assert result["emails"] == []
    stored = json.loads(gmail.settings.google_token_path.read_text(encoding="utf-8"))
    assert stored["token"] == "fresh-token" and stored["refresh_token"] == "refresh-1"


async def test_gmail_429_waits_for_retry_after_then_succeeds(workspace: Path) -> None:
    gmail = Gmail(workspace, [error(429, "rateLimitExceeded", {"retry-after": "7"}), ok({"messages": []})])
    started = gmail.clock.monotonic()
    async with gmail.client() as c:
        await call(c, "list_emails", {})
    assert gmail.clock.monotonic() - started == 7


async def test_gmail_429_asking_too_long_a_wait_is_rate_limited_with_retry_after(workspace: Path) -> None:
    gmail = Gmail(workspace, [error(429, "rateLimitExceeded", {"retry-after": "600"})])
    async with gmail.client() as c:
        result = await fail(c, "list_emails", {})
    assert result["error"] == "rate_limited" and result["details"]["retry_after"] == 600


async def test_gmail_500_on_send_finds_the_message_in_sent_and_sends_once(workspace: Path) -> None:
    gmail = Gmail(
        workspace,
        [error(500, "backendError"), ok({"messages": [{"id": "sent-1", "threadId": "thread-1"}]})],
    )
    async with gmail.client() as c:
        result = await call(
            c, "send_email", {"to": "bob@example.org", "subject": "Hi", "body": "x", "idempotency_key": "g-1"}
        )
        again = await call(
            c, "send_email", {"to": "bob@example.org", "subject": "Hi", "body": "x", "idempotency_key": "g-1"}
        )
    assert result["message_id"] == "sent-1" and result["thread_id"] == "thread-1"
    assert again["duplicate"] is True
    sends = gmail.api_requests("/messages/send")
    assert len(sends) == 1
    lookup = parse_qs(urlparse(gmail.api_requests("/messages?")[0][1]).query)["q"][0]
    assert lookup == f"rfc822msgid:{result['rfc_message_id'].strip('<>')} in:sent"
    assert [line.get("outcome") for line in audit_lines(workspace)] == [None, "sent"]


async def test_gmail_reply_carries_thread_id_and_threading_headers(workspace: Path) -> None:
    parent = make_mail("Plan", "v1", msgid="<p1@x>", references="<p0@x>")
    raw = base64.urlsafe_b64encode(parent).decode()
    gmail = Gmail(
        workspace,
        [
            ok({"id": "m9", "threadId": "thr-9", "labelIds": ["INBOX"], "raw": raw}),
            LABELS,
            ok({"id": "s9", "threadId": "thr-9", "labelIds": ["SENT"]}),
        ],
    )
    async with gmail.client() as c:
        sent = await call(
            c, "send_email", {"to": "alice@example.org", "subject": "Plan", "body": "ok", "reply_to_message_id": "m9"}
        )
    [(_, _, body)] = gmail.api_requests("/messages/send")
    payload = json.loads(body)
    wire = message_from_bytes(base64.urlsafe_b64decode(payload["raw"]), policy=policy.default)
    assert payload["threadId"] == "thr-9" and sent["thread_id"] == "thr-9"
    assert wire["In-Reply-To"] == "<p1@x>" and wire["References"] == "<p0@x> <p1@x>"
    assert wire["Subject"] == "Re: Plan"


async def test_gmail_invalid_grant_is_auth_required_naming_the_command(workspace: Path) -> None:
    refused = ({"status": "400", "content-type": "application/json"}, b'{"error": "invalid_grant"}')
    gmail = Gmail(workspace, [refused], expired=True)
    async with gmail.client() as c:
        result = await fail(c, "list_emails", {})
    assert result["error"] == "auth_required" and "deskmcp auth google" in result["message"]


async def test_gmail_labels_move_and_mark_read_modify_label_ids(workspace: Path) -> None:
    gmail = Gmail(
        workspace,
        [
            LABELS,
            ok({"id": "m1", "labelIds": ["Label_7", "INBOX", "UNREAD"]}),
            ok({"id": "Label_8", "name": "Done"}),
            ok({"id": "m1", "labelIds": ["Label_8", "Label_7", "UNREAD"]}),
            ok({"id": "m1", "labelIds": ["Label_8", "Label_7"]}),
        ],
    )
    async with gmail.client() as c:
        added = await call(c, "add_label", {"message_id": "m1", "label_name": "ai_processed"})
        moved = await call(c, "move_email", {"message_id": "m1", "destination_label": "Done"})
        read = await call(c, "mark_read", {"message_id": "m1"})
    assert added["labels"] == ["AI_PROCESSED", "INBOX", "UNREAD"]
    assert moved["labels"] == ["Done", "AI_PROCESSED", "UNREAD"]
    assert read["labels"] == ["Done", "AI_PROCESSED"]
    modify_bodies = [json.loads(b) for _, _, b in gmail.api_requests("/modify")]
    assert modify_bodies[1] == {"addLabelIds": ["Label_8"], "removeLabelIds": ["INBOX", "SPAM", "TRASH"]}
    assert modify_bodies[2] == {"addLabelIds": [], "removeLabelIds": ["UNREAD"]}


async def test_gmail_403_rate_limit_reason_beside_a_details_list_is_retried(workspace: Path) -> None:
    # Newer Gmail answers carry both error.errors[] and error.details[]: the reason is in errors[].
    body = {
        "error": {
            "code": 403,
            "message": "Rate Limit Exceeded",
            "errors": [{"domain": "usageLimits", "reason": "rateLimitExceeded", "message": "Rate Limit Exceeded"}],
            "status": "PERMISSION_DENIED",
            "details": [{"@type": "type.googleapis.com/google.rpc.Help", "links": []}],
        }
    }
    limited = ({"status": "403", "content-type": "application/json", "retry-after": "3"}, json.dumps(body).encode())
    gmail = Gmail(workspace, [limited, ok({"messages": []})])
    started = gmail.clock.monotonic()
    async with gmail.client() as c:
        result = await call(c, "list_emails", {})
    assert result["emails"] == []
    assert gmail.clock.monotonic() - started == 3


async def test_gmail_403_domain_policy_is_permission_denied_without_retrying(workspace: Path) -> None:
    gmail = Gmail(workspace, [error(403, "domainPolicy")])
    async with gmail.client() as c:
        result = await fail(c, "list_emails", {})
    assert result["error"] == "permission_denied"
    assert result["details"]["reason"] == "domainPolicy"
    assert len(gmail.api_requests("/messages")) == 1
