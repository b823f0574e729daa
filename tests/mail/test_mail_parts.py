"""Reading a long body in parts, and acting on several messages in one call (Maildir backend)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.mail import deliver, make_mail
from tests.helpers.tool_calls import Connect, call, fail

pytestmark = pytest.mark.anyio


def newsletter(chars: int) -> str:
    """A body of `chars` characters whose every line is numbered, so any part can be placed."""
    lines = []
    total = 0
    n = 0
    while total < chars:
        line = f"line {n:07d} of the newsletter\n"
        lines.append(line)
        total += len(line)
        n += 1
    return "".join(lines)[:chars]


async def test_get_email_reads_a_long_body_in_parts_with_next_offset(connect: Connect, workspace: Path) -> None:
    body = newsletter(450_000)
    deliver(workspace, make_mail("Weekly digest", body, msgid="<digest@x>"))
    async with connect() as c:
        target = (await call(c, "list_emails", {"query": ""}))["emails"][0]
        parts = [await call(c, "get_email", {"message_id": target["id"]})]
        while parts[-1]["next_offset"] is not None:
            parts.append(await call(c, "get_email", {"message_id": target["id"], "offset": parts[-1]["next_offset"]}))
        small = await call(c, "get_email", {"message_id": target["id"], "offset": 100, "max_chars": 50})
    text = "".join(p["body"] for p in parts)
    assert text.rstrip("\n") == body.rstrip("\n")
    assert [p["body_offset"] for p in parts] == [0, 200_000, 400_000]
    assert [p["body_truncated"] for p in parts] == [True, True, False]
    assert parts[0]["body_chars"] == len(text)
    assert small["body"] == text[100:150] and small["next_offset"] == 150


async def test_get_email_offset_past_the_body_is_bad_request_naming_its_length(
    connect: Connect, workspace: Path
) -> None:
    deliver(workspace, make_mail("Short", "Just this.", msgid="<short@x>"))
    async with connect() as c:
        target = (await call(c, "list_emails", {"query": ""}))["emails"][0]
        error = await fail(c, "get_email", {"message_id": target["id"], "offset": 5000})
        too_many = await fail(c, "get_email", {"message_id": target["id"], "max_chars": 10_000_000})
    assert error["error"] == "bad_request" and error["details"]["body_chars"] == len("Just this.")
    assert too_many["error"] == "bad_request"


async def test_add_label_move_and_remove_label_take_a_list_and_one_bad_id_does_not_stop_the_others(
    connect: Connect, workspace: Path
) -> None:
    for i in range(3):
        deliver(workspace, make_mail(f"Invoice {i}", "x", days_ago=3 - i, msgid=f"<inv{i}@x>"))
    async with connect() as c:
        ids = [e["id"] for e in (await call(c, "list_emails", {"query": ""}))["emails"]]
        labelled = await call(c, "add_label", {"message_id": [ids[0], "nosuchid", ids[1]], "label_name": "Paid"})
        paid = await call(c, "list_emails", {"query": "label:Paid"})
        unlabelled = await call(c, "remove_label", {"message_id": ids, "label_name": "Paid"})
        moved = await call(
            c, "move_email", {"message_id": [ids[0], ids[1], ids[0]], "destination_label": "Archive2026"}
        )
        single = await call(c, "add_label", {"message_id": ids[2], "label_name": "Paid"})
    assert [r["message_id"] for r in labelled["results"]] == [ids[0], "nosuchid", ids[1]]
    assert [r["error"] for r in labelled["results"]] == [None, "not_found", None]
    assert "Paid" in labelled["results"][0]["labels"] and "list_emails" in labelled["results"][1]["message"]
    assert {e["id"] for e in paid["emails"]} == {ids[0], ids[1]}
    assert [r["error"] for r in unlabelled["results"]] == [None, None, "not_found"]
    # An id given twice is moved once and answered in each of its places.
    assert [r["message_id"] for r in moved["results"]] == [ids[0], ids[1], ids[0]]
    assert [r["labels"][0] for r in moved["results"]] == ["Archive2026"] * 3
    assert moved["results"][0] == moved["results"][2]
    assert single["id"] == ids[2] and "Paid" in single["labels"] and single["results"] is None


async def test_a_list_of_more_than_100_ids_is_bad_request(connect: Connect, workspace: Path) -> None:
    async with connect() as c:
        error = await fail(c, "add_label", {"message_id": [f"m{i}" for i in range(101)], "label_name": "X"})
    assert error["error"] == "bad_request"
