"""A message id that no longer names a message (moved by another mail program or an earlier call,
or deleted): every write answers not_found naming the id and how to find the message again, changes
nothing, and a write on a list answers id by id without stopping at it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.mail import deliver, make_mail
from tests.helpers.tool_calls import Connect, call, fail
from tests.mail.dovecot import (
    BASE_DAY,
    Dovecot,
    Loaded,
    append_all,
    dovecot_fixture,  # noqa: F401  (fixture)
    mailbox_fixture,  # noqa: F401  (fixture)
)
from tests.mail.test_mail_gmail import LABELS, Gmail, error, ok

pytestmark = pytest.mark.anyio

WRITES = [
    ("add_label", {"label_name": "Follow"}),
    ("mark_read", {}),
    ("mark_unread", {}),
    ("move_email", {"destination_label": "Done"}),
    ("remove_label", {"label_name": "INBOX"}),
]


def three() -> list[bytes]:
    return [make_mail(f"Mail {n}", f"body {n}", days_ago=3 - i, msgid=f"<{n}@corp.test>") for i, n in enumerate("abc")]


async def by_subject(c: Any, query: str = "") -> dict[str, str]:
    emails = (await call(c, "list_emails", {"query": query, "max_results": 100}))["emails"]
    return {e["subject"]: e["id"] for e in emails}


async def stale_answers(c: Any, stale: str) -> list[dict[str, Any]]:
    return [await fail(c, tool, {"message_id": stale, **args}) for tool, args in WRITES]


def says_how_to_find_it(answer: dict[str, Any], stale: str) -> bool:
    return (
        answer["error"] == "not_found"
        and stale in answer["message"]
        and "rfc822msgid:" in answer["message"]
        and "list_emails" in answer["message"]
    )


@pytest.mark.e2e
async def test_imap_writes_on_the_id_of_a_message_another_program_moved_answer_not_found_and_change_nothing(
    connect: Connect, dovecot: Dovecot, mailbox: str
) -> None:
    append_all(dovecot, mailbox, [Loaded("INBOX", raw, BASE_DAY) for raw in three()])
    async with connect(**dovecot.settings(mailbox)) as c:
        ids = await by_subject(c)
        other = dovecot.client(mailbox)
        try:
            other.create_folder("Elsewhere")
            other.select_folder("INBOX")
            other.move(other.search(["HEADER", "Message-ID", "<a@corp.test>"]), "Elsewhere")
        finally:
            other.logout()
        answers = await stale_answers(c, ids["Mail a"])
        elsewhere = (await call(c, "list_emails", {"query": "in:Elsewhere"}))["emails"]
    assert [a["error"] for a in answers] == ["not_found"] * len(WRITES), answers
    assert all(says_how_to_find_it(a, ids["Mail a"]) for a in answers), answers
    [moved] = elsewhere
    assert moved["labels"] == ["Elsewhere", "UNREAD"]


@pytest.mark.e2e
async def test_imap_move_of_a_list_with_a_stale_id_moves_the_others_and_answers_each(
    connect: Connect, dovecot: Dovecot, mailbox: str
) -> None:
    append_all(dovecot, mailbox, [Loaded("INBOX", raw, BASE_DAY) for raw in three()])
    async with connect(**dovecot.settings(mailbox)) as c:
        ids = await by_subject(c)
        first = await call(c, "move_email", {"message_id": ids["Mail a"], "destination_label": "Archive"})
        batch = await call(
            c, "move_email", {"message_id": [ids["Mail b"], ids["Mail a"], ids["Mail c"]], "destination_label": "Done"}
        )
        again = await fail(c, "add_label", {"message_id": ids["Mail b"], "label_name": "Follow"})
        done = await by_subject(c, "in:Done")
        inbox = await by_subject(c, "in:inbox")
    results = batch["results"]
    assert [r["error"] for r in results] == [None, "not_found", None]
    assert says_how_to_find_it({"error": results[1]["error"], "message": results[1]["message"]}, ids["Mail a"])
    assert {results[0]["id"], results[2]["id"]} == {done["Mail b"], done["Mail c"]}
    assert first["id"] not in ids.values() and inbox == {}
    assert says_how_to_find_it(again, ids["Mail b"])


async def test_maildir_writes_on_a_deleted_message_answer_not_found_and_a_list_answers_each(
    connect: Connect, workspace: Path
) -> None:
    paths = [deliver(workspace, raw) for raw in three()]
    async with connect() as c:
        ids = await by_subject(c)
        paths[0].unlink()  # another mail program deleted it
        answers = await stale_answers(c, ids["Mail a"])
        batch = await call(
            c, "move_email", {"message_id": [ids["Mail b"], ids["Mail a"], ids["Mail c"]], "destination_label": "Done"}
        )
        done = await by_subject(c, "in:Done")
    assert all(says_how_to_find_it(a, ids["Mail a"]) for a in answers), answers
    assert [r["error"] for r in batch["results"]] == [None, "not_found", None]
    assert done == {"Mail b": ids["Mail b"], "Mail c": ids["Mail c"]}


async def test_gmail_writes_on_a_deleted_message_answer_not_found_and_a_list_answers_each(workspace: Path) -> None:
    gmail = Gmail(
        workspace,
        [
            LABELS,
            ok({"id": "m1", "labelIds": ["Label_7"]}),
            error(404, "Requested entity was not found."),
            ok({"id": "m2", "labelIds": ["Label_7"]}),
            error(404, "Requested entity was not found."),
        ],
    )
    async with gmail.client() as c:
        batch = await call(c, "add_label", {"message_id": ["m1", "gone", "m2"], "label_name": "AI_PROCESSED"})
        single = await fail(c, "mark_read", {"message_id": "gone"})
    assert [(r["id"], r["error"]) for r in batch["results"]] == [("m1", None), (None, "not_found"), ("m2", None)]
    assert "gone" in batch["results"][1]["message"]
    assert says_how_to_find_it(single, "gone")
    assert [json.loads(b)["addLabelIds"] for _, _, b in gmail.api_requests("/modify")][:3] == [["Label_7"]] * 3
