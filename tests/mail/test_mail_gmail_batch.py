"""Gmail listings in one round trip: the summaries of a page come from one batch request."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from deskmcp.google.auth import SCOPES, FileTokenStore
from deskmcp.mail.backends.gmail import GmailBackend
from deskmcp.mail.server import Settings, create_server
from deskmcp.mail.service import MailService
from tests.helpers.tool_calls import call
from tests.mail.gmail_stub import FakeGmail, StubHttp

pytestmark = pytest.mark.anyio


def gmail_client(workspace: Path, fake: FakeGmail) -> Client:
    settings = Settings(
        workspace=workspace, backend="gmail", address="me@gmail.test", google_client_id="cid", google_client_secret="cs"
    )
    FileTokenStore(settings.google_token_path).save(
        {
            "token": "access",
            "refresh_token": "refresh",
            "token_uri": "https://oauth2.googleapis.com/token",
            "client_id": "cid",
            "client_secret": "cs",
            "scopes": list(SCOPES["mail"]),
            "expiry": "2999-01-01T00:00:00Z",
        }
    )
    backend = GmailBackend(settings, http=StubHttp(fake))
    return Client(create_server(settings, MailService(settings, backend=backend)))


def api_calls(fake: FakeGmail) -> list[str]:
    return [f"{method} {target.split('?')[0]}" for method, target in fake.requests if "/labels" not in target]


async def test_gmail_list_of_20_fetches_the_summaries_in_one_batch_request(workspace: Path) -> None:
    fake = FakeGmail(50)
    async with gmail_client(workspace, fake) as c:
        page = await call(c, "list_emails", {"query": "", "max_results": 20})
    assert [e["subject"] for e in page["emails"]] == [f"Message {i}" for i in range(20)]
    assert page["emails"][3]["id"] == "m3" and page["emails"][3]["snippet"] == "snippet 3"
    assert api_calls(fake) == ["GET /gmail/v1/users/me/messages", "POST /batch"]


async def test_gmail_batch_part_that_fails_is_asked_for_alone_and_the_page_is_complete(workspace: Path) -> None:
    fake = FakeGmail(5)
    fake.failing = {"m2"}
    async with gmail_client(workspace, fake) as c:
        page = await call(c, "list_emails", {"query": "", "max_results": 5})
    assert [e["id"] for e in page["emails"]] == ["m0", "m1", "m2", "m3", "m4"]
    assert api_calls(fake) == [
        "GET /gmail/v1/users/me/messages",
        "POST /batch",
        "GET /gmail/v1/users/me/messages/m2",
    ]


async def test_gmail_list_labels_kind_says_system_or_keyword(workspace: Path) -> None:
    async with gmail_client(workspace, FakeGmail(1)) as c:
        labels = (await call(c, "list_labels"))["labels"]
    assert {x["name"]: x["kind"] for x in labels} == {"INBOX": "system", "Paid": "keyword"}
