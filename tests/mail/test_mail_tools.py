"""Every mail tool through the MCP client, on the local Maildir backend."""

from __future__ import annotations

import mailbox
from collections.abc import Callable
from pathlib import Path

import pytest

from deskmcp.mail.server import Settings
from tests.helpers.mail import audit_lines, deliver, make_mail
from tests.helpers.tool_calls import Connect, call, fail

pytestmark = pytest.mark.anyio


def seed(workspace: Path) -> None:
    deliver(workspace, make_mail("Budget review", "The budget is tight this quarter.", days_ago=3, msgid="<b1@x>"))
    deliver(
        workspace,
        make_mail("Launch plan", "Launch slips a week.", sender="Bob <bob@corp.test>", days_ago=2, msgid="<l1@x>"),
    )
    deliver(
        workspace,
        make_mail("Old news", "Seen already.", days_ago=30, msgid="<o1@x>"),
        flags="S",
    )
    deliver(
        workspace,
        make_mail(
            "Photos",
            "See attached.",
            days_ago=1,
            msgid="<p1@x>",
            attachment=("notes.txt", b"hello notes", "text/plain"),
        ),
    )


async def test_list_emails_defaults_to_unread_newest_first(connect: Connect, workspace: Path) -> None:
    seed(workspace)
    async with connect() as c:
        result = await call(c, "list_emails")
    subjects = [e["subject"] for e in result["emails"]]
    assert subjects == ["Photos", "Launch plan", "Budget review"]
    first = result["emails"][0]
    assert first["unread"] is True and "INBOX" in first["labels"] and "UNREAD" in first["labels"]
    assert first["has_attachments"] is True
    assert first["rfc_message_id"] == "<p1@x>"
    assert first["date"] == "2026-11-19T12:00:00Z"
    assert result["next_cursor"] is None


async def test_list_emails_pages_with_a_cursor(connect: Connect, workspace: Path) -> None:
    seed(workspace)
    async with connect() as c:
        first = await call(c, "list_emails", {"query": "", "max_results": 3})
        second = await call(c, "list_emails", {"query": "", "max_results": 3, "cursor": first["next_cursor"]})
    assert len(first["emails"]) == 3 and first["next_cursor"]
    assert [e["subject"] for e in second["emails"]] == ["Old news"]
    assert second["next_cursor"] is None


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("budget", ["Budget review"]),
        ("from:bob", ["Launch plan"]),
        ("from:bob@corp.test", ["Launch plan"]),
        ("subject:launch OR subject:budget", ["Launch plan", "Budget review"]),
        ("is:read", ["Old news"]),
        ("has:attachment", ["Photos"]),
        ("filename:notes.txt", ["Photos"]),
        ("-is:unread", ["Old news"]),
        ("in:inbox -budget -launch", ["Photos", "Old news"]),
        ('"budget is tight"', ["Budget review"]),
        ("after:2026/11/18 before:2026/11/19", ["Launch plan"]),
        ("older_than:1y", []),
        ("rfc822msgid:o1@x", ["Old news"]),
        ("(budget OR photos) is:unread", ["Photos", "Budget review"]),
    ],
)
async def test_list_emails_translates_gmail_query_syntax(
    connect: Connect, workspace: Path, query: str, expected: list[str]
) -> None:
    seed(workspace)
    async with connect() as c:
        result = await call(c, "list_emails", {"query": query, "max_results": 50})
    assert [e["subject"] for e in result["emails"]] == expected


async def test_list_emails_marks_matched_words_in_snippets(connect: Connect, workspace: Path) -> None:
    seed(workspace)
    async with connect() as c:
        result = await call(c, "list_emails", {"query": "tight"})
    assert "⟦tight⟧" in result["emails"][0]["snippet"]


async def test_list_emails_rejects_an_unsupported_operator_by_name(connect: Connect, workspace: Path) -> None:
    seed(workspace)
    async with connect() as c:
        error = await fail(c, "list_emails", {"query": "category:social budget"})
    assert error["error"] == "bad_request"
    assert "category:" in error["message"] and error["details"]["operator"] == "category"


async def test_list_emails_sees_mail_delivered_while_serving(connect: Connect, workspace: Path) -> None:
    seed(workspace)
    async with connect() as c:
        before = await call(c, "list_emails", {"query": ""})
        deliver(workspace, make_mail("Fresh arrival", "New!", days_ago=0))
        after = await call(c, "list_emails", {"query": ""})
    assert len(after["emails"]) == len(before["emails"]) + 1
    assert after["emails"][0]["subject"] == "Fresh arrival"


async def test_get_email_returns_body_attachments_and_threading_fields(connect: Connect, workspace: Path) -> None:
    seed(workspace)
    deliver(
        workspace, make_mail("Re: Budget review", "Agreed.", msgid="<r1@x>", in_reply_to="<b1@x>", references="<b1@x>")
    )
    async with connect() as c:
        listed = await call(c, "list_emails", {"query": "subject:photos"})
        full = await call(c, "get_email", {"message_id": listed["emails"][0]["id"]})
        reply = (await call(c, "list_emails", {"query": "agreed"}))["emails"][0]
        parent = (await call(c, "list_emails", {"query": "rfc822msgid:b1@x"}))["emails"][0]
        reply_full = await call(c, "get_email", {"message_id": reply["id"]})
    assert full["body"] == "See attached."
    assert full["attachment_names"] == ["notes.txt"]
    assert full["body_truncated"] is False
    assert reply_full["in_reply_to"] == "<b1@x>" and reply_full["references"] == ["<b1@x>"]
    assert reply["thread_id"] == parent["thread_id"]


async def test_get_email_unknown_id_is_not_found(connect: Connect, workspace: Path) -> None:
    seed(workspace)
    async with connect() as c:
        error = await fail(c, "get_email", {"message_id": "0123456789abcdef"})
    assert error["error"] == "not_found" and "list_emails" in error["message"]


async def test_send_email_files_in_sent_and_delivers_to_own_inbox(connect: Connect, workspace: Path) -> None:
    async with connect() as c:
        sent = await call(c, "send_email", {"to": "me@localhost", "subject": "Note to self", "body": "Remember"})
        inbox = await call(c, "list_emails", {"query": "in:inbox"})
        in_sent = await call(c, "list_emails", {"query": "in:sent"})
    assert sent["rfc_message_id"].startswith("<") and sent["duplicate"] is False
    assert [e["subject"] for e in inbox["emails"]] == ["Note to self"]
    assert in_sent["emails"][0]["id"] == sent["message_id"]
    assert in_sent["emails"][0]["unread"] is False
    # The tree is a plain Maildir++ that the standard library reads.
    box = mailbox.Maildir(workspace / "mail", create=False)
    assert [m["Subject"] for m in box.get_folder("Sent")] == ["Note to self"]


async def test_send_email_reply_threads_with_headers_and_one_re(connect: Connect, workspace: Path) -> None:
    deliver(workspace, make_mail("Re: Plan", "v2", msgid="<p2@x>", in_reply_to="<p1@x>", references="<p0@x> <p1@x>"))
    async with connect() as c:
        parent = (await call(c, "list_emails"))["emails"][0]
        sent = await call(
            c,
            "send_email",
            {"to": "alice@example.org", "subject": "Re: Plan", "body": "Fine", "reply_to_message_id": parent["id"]},
        )
        full = await call(c, "get_email", {"message_id": sent["message_id"]})
    assert full["subject"] == "Re: Plan"
    assert full["in_reply_to"] == "<p2@x>"
    assert full["references"] == ["<p0@x>", "<p1@x>", "<p2@x>"]
    assert sent["thread_id"] == parent["thread_id"]


async def test_send_email_reply_adds_re_once_to_a_plain_subject(connect: Connect, workspace: Path) -> None:
    deliver(workspace, make_mail("Plan", "v1", msgid="<q1@x>"))
    async with connect() as c:
        parent = (await call(c, "list_emails"))["emails"][0]
        sent = await call(
            c,
            "send_email",
            {"to": "a@example.org", "subject": "Plan", "body": "ok", "reply_to_message_id": parent["id"]},
        )
        full = await call(c, "get_email", {"message_id": sent["message_id"]})
    assert full["subject"] == "Re: Plan"


async def test_send_email_unknown_reply_id_is_not_found(connect: Connect) -> None:
    async with connect() as c:
        error = await fail(
            c, "send_email", {"to": "a@example.org", "subject": "x", "body": "y", "reply_to_message_id": "nope"}
        )
    assert error["error"] == "not_found"


async def test_send_email_with_the_same_idempotency_key_sends_once(connect: Connect, workspace: Path) -> None:
    args = {"to": "a@example.org", "subject": "Once", "body": "only once", "idempotency_key": "k-1"}
    async with connect() as c:
        first = await call(c, "send_email", args)
        second = await call(c, "send_email", args)
    async with connect() as c:  # a new process: the key is on disk
        third = await call(c, "send_email", args)
        sent = await call(c, "list_emails", {"query": "in:sent"})
    assert first["duplicate"] is False and second["duplicate"] is True and third["duplicate"] is True
    assert first["message_id"] == second["message_id"] == third["message_id"]
    assert len(sent["emails"]) == 1


async def test_send_email_reusing_a_key_for_another_message_is_a_conflict(connect: Connect) -> None:
    async with connect() as c:
        await call(c, "send_email", {"to": "a@example.org", "subject": "A", "body": "a", "idempotency_key": "k"})
        error = await fail(
            c, "send_email", {"to": "a@example.org", "subject": "B", "body": "b", "idempotency_key": "k"}
        )
    assert error["error"] == "conflict"


async def test_send_email_writes_audit_lines_before_and_after(connect: Connect, workspace: Path) -> None:
    async with connect() as c:
        sent = await call(c, "send_email", {"to": "a@example.org", "subject": "Audited", "body": "x" * 300})
    before, after = audit_lines(workspace)
    assert before["event"] == "pre_send_audit" and before["severity"] == "INFO"
    assert before["to"] == "a@example.org" and before["subject"] == "Audited"
    assert before["body_preview"] == "x" * 200 and before["reply_to_message_id"] is None
    assert before["rfc_message_id"] == sent["rfc_message_id"]
    assert after["event"] == "send_result" and after["outcome"] == "sent" and after["message_id"] == sent["message_id"]


async def test_send_email_is_permission_denied_in_draft_only_mode(connect: Connect, workspace: Path) -> None:
    async with connect(mode="draft_only") as c:
        error = await fail(c, "send_email", {"to": "a@example.org", "subject": "x", "body": "y"})
        draft = await call(c, "create_draft", {"to": "a@example.org", "subject": "x", "body": "y"})
    assert error["error"] == "permission_denied" and "create_draft" in error["message"]
    assert draft["draft_id"]
    assert audit_lines(workspace) == []


async def test_read_only_mode_refuses_every_change(connect: Connect, workspace: Path) -> None:
    seed(workspace)
    async with connect(mode="read_only") as c:
        names = {t.name for t in (await c.list_tools()).tools}
        message_id = (await call(c, "list_emails"))["emails"][0]["id"]
        errors = {
            tool: await fail(c, tool, args)
            for tool, args in [
                ("send_email", {"to": "a@example.org", "subject": "x", "body": "y"}),
                ("move_email", {"message_id": message_id, "destination_label": "Done"}),
                ("add_label", {"message_id": message_id, "label_name": "X"}),
                ("mark_read", {"message_id": message_id}),
                ("create_draft", {"to": "a@example.org", "subject": "x", "body": "y"}),
            ]
        }
        unread = await call(c, "list_emails", {"query": "is:unread"})
    assert {"list_emails", "get_email", "get_thread", "list_labels", "list_drafts"} <= names
    assert names.isdisjoint(
        {"send_email", "forward_email", "move_email", "add_label", "remove_label", "mark_read", "mark_unread"}
        | {"create_draft", "send_draft", "get_attachment"}
    )
    assert all(error["error"] == "permission_denied" for error in errors.values())
    assert "mail is read-only (MAIL_MODE=read_only): send_email is not available" in errors["send_email"]["message"]
    assert message_id in {m["id"] for m in unread["emails"]}
    assert audit_lines(workspace) == []


def test_read_only_mail_service_still_refuses_changes_by_itself(
    workspace: Path, settings_for: Callable[..., Settings]
) -> None:
    from deskmcp.core.errors import PermissionDenied
    from deskmcp.mail.service import MailService

    seed(workspace)
    service = MailService(settings_for(mode="read_only"))
    try:
        message_id = service.list_emails("", 10, None).emails[0].id
        with pytest.raises(PermissionDenied):
            service.move_email(message_id, "Done")
        with pytest.raises(PermissionDenied):
            service.send_email("a@example.org", "x", "y")
    finally:
        service.close()


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"to": "a@example.org", "subject": "hi\r\nBcc: evil@example.net", "body": "x"}, "subject"),
        ({"to": "a@example.org\nBcc: evil@example.net", "subject": "hi", "body": "x"}, "to"),
        ({"to": "a@example.org", "cc": "b@example.org\r\nX: y", "subject": "hi", "body": "x"}, "cc"),
        ({"to": "not an address", "subject": "hi", "body": "x"}, "to"),
        ({"to": "a@example.org, @@", "subject": "hi", "body": "x"}, "to"),
    ],
)
async def test_send_email_refuses_header_injection_and_bad_addresses(
    connect: Connect, workspace: Path, args: dict[str, str], field: str
) -> None:
    async with connect() as c:
        error = await fail(c, "send_email", args)
        sent = await call(c, "list_emails", {"query": "in:sent"})
    assert error["error"] == "bad_request" and error["details"]["field"] == field
    assert sent["emails"] == [] and audit_lines(workspace) == []


async def test_send_email_enforces_the_recipient_allowlist(connect: Connect, workspace: Path) -> None:
    async with connect(allowed_recipients="boss@corp.test, @example.org") as c:
        ok = await call(c, "send_email", {"to": "x@example.org", "cc": "boss@corp.test", "subject": "s", "body": "b"})
        error = await fail(
            c, "send_email", {"to": "x@example.org", "bcc": "leak@other.test", "subject": "s", "body": "b"}
        )
    assert ok["message_id"]
    assert error["error"] == "permission_denied" and error["details"]["refused"] == ["leak@other.test"]


async def test_send_email_enforces_max_recipients_and_body_size(connect: Connect) -> None:
    many = ", ".join(f"u{i}@example.org" for i in range(4))
    async with connect(max_recipients=3, max_body_chars=1000) as c:
        too_many = await fail(c, "send_email", {"to": many, "subject": "s", "body": "b"})
        too_long = await fail(c, "send_email", {"to": "a@example.org", "subject": "s", "body": "x" * 1001})
    assert too_many["error"] == "bad_request" and too_many["details"]["limit"] == 3
    assert too_long["error"] == "bad_request" and too_long["details"]["field"] == "body"


async def test_move_email_and_labels_change_what_queries_find(connect: Connect, workspace: Path) -> None:
    seed(workspace)
    async with connect() as c:
        target = (await call(c, "list_emails", {"query": "budget"}))["emails"][0]
        labelled = await call(c, "add_label", {"message_id": target["id"], "label_name": "AI_PROCESSED"})
        unprocessed = await call(c, "list_emails", {"query": "-label:AI_PROCESSED", "max_results": 50})
        moved = await call(c, "move_email", {"message_id": target["id"], "destination_label": "Done"})
        in_inbox = await call(c, "list_emails", {"query": "in:inbox budget"})
        in_done = await call(c, "list_emails", {"query": "label:done"})
        read = await call(c, "mark_read", {"message_id": target["id"]})
        unread = await call(c, "mark_unread", {"message_id": target["id"]})
        removed = await call(c, "remove_label", {"message_id": target["id"], "label_name": "AI_PROCESSED"})
        labels = await call(c, "list_labels")
        full = await call(c, "get_email", {"message_id": target["id"]})
    assert "AI_PROCESSED" in labelled["labels"] and labelled["id"] == target["id"]
    assert target["id"] not in [e["id"] for e in unprocessed["emails"]]
    assert moved["labels"][0] == "Done" and "INBOX" not in moved["labels"]
    assert in_inbox["emails"] == [] and [e["id"] for e in in_done["emails"]] == [target["id"]]
    assert "UNREAD" not in read["labels"] and "UNREAD" in unread["labels"]
    assert "AI_PROCESSED" not in removed["labels"]
    names = {label["name"]: label for label in labels["labels"]}
    assert names["Done"]["total"] == 1 and names["INBOX"]["total"] == 3 and "SENT" in names
    assert full["body"] == "The budget is tight this quarter."  # the id survived the move and flag changes


async def test_remove_label_inbox_archives_and_unknown_label_is_not_found(connect: Connect, workspace: Path) -> None:
    seed(workspace)
    async with connect() as c:
        target = (await call(c, "list_emails", {"query": "budget"}))["emails"][0]
        missing = await fail(c, "remove_label", {"message_id": target["id"], "label_name": "Nope"})
        archived = await call(c, "remove_label", {"message_id": target["id"], "label_name": "INBOX"})
        anywhere = await call(c, "list_emails", {"query": "budget"})
    assert missing["error"] == "not_found"
    assert "INBOX" not in archived["labels"]
    assert [e["id"] for e in anywhere["emails"]] == [target["id"]]


async def test_label_names_with_path_tricks_are_refused(connect: Connect, workspace: Path) -> None:
    seed(workspace)
    async with connect() as c:
        message_id = (await call(c, "list_emails"))["emails"][0]["id"]
        for bad in ("../escape", ".hidden", "a/../b", "x\ny"):
            error = await fail(c, "move_email", {"message_id": message_id, "destination_label": bad})
            assert error["error"] == "bad_request", bad
    assert not (workspace / "escape").exists()


async def test_trash_is_hidden_unless_asked_for(connect: Connect, workspace: Path) -> None:
    seed(workspace)
    async with connect() as c:
        target = (await call(c, "list_emails", {"query": "budget"}))["emails"][0]
        await call(c, "move_email", {"message_id": target["id"], "destination_label": "TRASH"})
        hidden = await call(c, "list_emails", {"query": "budget"})
        shown = await call(c, "list_emails", {"query": "in:trash"})
    assert hidden["emails"] == [] and [e["id"] for e in shown["emails"]] == [target["id"]]


async def test_get_thread_returns_the_conversation_oldest_first(connect: Connect, workspace: Path) -> None:
    deliver(workspace, make_mail("Plan", "first", msgid="<t1@x>", days_ago=3))
    deliver(
        workspace,
        make_mail("Re: Plan", "second", msgid="<t2@x>", in_reply_to="<t1@x>", references="<t1@x>", days_ago=2),
    )
    deliver(workspace, make_mail("Other", "unrelated", msgid="<u1@x>", days_ago=1))
    async with connect() as c:
        first = (await call(c, "list_emails", {"query": "first"}))["emails"][0]
        sent = await call(
            c,
            "send_email",
            {"to": "a@example.org", "subject": "x", "body": "third", "reply_to_message_id": first["id"]},
        )
        thread = await call(c, "get_thread", {"thread_id": first["thread_id"]})
        missing = await fail(c, "get_thread", {"thread_id": "nope"})
    assert [m["body"] for m in thread["messages"]] == ["first", "second", "third"]
    assert thread["messages"][-1]["id"] == sent["message_id"]
    assert missing["error"] == "not_found"


async def test_drafts_are_created_listed_and_sent_once(connect: Connect, workspace: Path) -> None:
    async with connect() as c:
        draft = await call(c, "create_draft", {"to": "a@example.org", "subject": "Later", "body": "draft body"})
        listed = await call(c, "list_drafts")
        sent = await call(c, "send_draft", {"draft_id": draft["draft_id"]})
        after = await call(c, "list_drafts")
        in_sent = await call(c, "list_emails", {"query": "in:sent"})
    assert [d["id"] for d in listed["drafts"]] == [draft["draft_id"]]
    assert sent["rfc_message_id"] == draft["rfc_message_id"]
    assert after["drafts"] == [] and len(in_sent["emails"]) == 1
    assert [line["event"] for line in audit_lines(workspace)] == ["pre_send_audit", "send_result"]


async def test_get_attachment_returns_text_or_saves_inside_the_workspace(connect: Connect, workspace: Path) -> None:
    deliver(
        workspace,
        make_mail("Files", "see", attachment=("../../evil name.txt", b"secret text", "text/plain")),
    )
    deliver(workspace, make_mail("Pic", "see", attachment=("p.png", b"\x89PNG....", "image/png")))
    async with connect() as c:
        files = (await call(c, "list_emails", {"query": "subject:files"}))["emails"][0]
        pic = (await call(c, "list_emails", {"query": "subject:pic"}))["emails"][0]
        text = await call(c, "get_attachment", {"message_id": files["id"], "index": 0})
        saved = await call(c, "get_attachment", {"message_id": files["id"], "index": 0, "save": True})
        binary = await fail(c, "get_attachment", {"message_id": pic["id"], "index": 0})
        saved_pic = await call(c, "get_attachment", {"message_id": pic["id"], "index": 0, "save": True})
        missing = await fail(c, "get_attachment", {"message_id": pic["id"], "index": 5})
    assert text["text"] == "secret text"
    path = (workspace / saved["saved_path"]).resolve()
    assert path.is_relative_to((workspace / "attachments").resolve()) and path.read_bytes() == b"secret text"
    assert binary["error"] == "bad_request" and "save" in binary["message"]
    assert (workspace / saved_pic["saved_path"]).read_bytes() == b"\x89PNG...."
    assert missing["error"] == "not_found"


async def test_send_email_html_alternative_and_bcc_kept_on_the_sent_copy(connect: Connect, workspace: Path) -> None:
    async with connect() as c:
        sent = await call(
            c,
            "send_email",
            {
                "to": "a@example.org",
                "bcc": "hidden@example.org",
                "subject": "Rich",
                "body": "plain",
                "html_body": "<p>rich</p>",
            },
        )
        full = await call(c, "get_email", {"message_id": sent["message_id"]})
    assert full["body"] == "plain" and full["bcc"] == "hidden@example.org"


async def test_changes_made_by_another_mail_program_are_followed(connect: Connect, workspace: Path) -> None:
    seen_path = deliver(workspace, make_mail("Read elsewhere", "one", msgid="<e1@x>"))
    moved_path = deliver(workspace, make_mail("Filed elsewhere", "two", msgid="<e2@x>"))
    gone_path = deliver(workspace, make_mail("Deleted elsewhere", "three", msgid="<e3@x>"))
    async with connect() as c:
        before = {e["subject"]: e for e in (await call(c, "list_emails", {"query": ""}))["emails"]}
        # Another client marks one read, files one in a folder and deletes the third.
        seen_path.rename(workspace / "mail" / "cur" / f"{seen_path.name}:2,S")
        archive = workspace / "mail" / ".Projects"
        for sub in ("cur", "new", "tmp"):
            (archive / sub).mkdir(parents=True)
        moved_path.rename(archive / "cur" / f"{moved_path.name}:2,S")
        gone_path.unlink()
        after = {e["subject"]: e for e in (await call(c, "list_emails", {"query": ""}))["emails"]}
        projects = await call(c, "list_emails", {"query": "label:Projects"})
    assert set(after) == {"Read elsewhere", "Filed elsewhere"}
    assert after["Read elsewhere"]["unread"] is False
    assert after["Read elsewhere"]["id"] == before["Read elsewhere"]["id"]
    assert [e["id"] for e in projects["emails"]] == [before["Filed elsewhere"]["id"]]
    assert after["Filed elsewhere"]["labels"] == ["Projects"]


async def test_list_emails_answers_how_many_match_in_all(connect: Connect, workspace: Path) -> None:
    seed(workspace)
    deliver(workspace, make_mail("Binned", "gone", days_ago=0), folder=".Trash")
    async with connect() as c:
        first = await call(c, "list_emails", {"query": "is:unread", "max_results": 2})
        second = await call(c, "list_emails", {"query": "is:unread", "max_results": 2, "cursor": first["next_cursor"]})
        everything = await call(c, "list_emails", {"query": "", "max_results": 50})
        words = await call(c, "list_emails", {"query": "budget OR launch", "max_results": 1})
    assert first["total"] == 3 and second["total"] == 3 and len(second["emails"]) == 1
    assert everything["total"] == 4 and len(everything["emails"]) == 4
    assert words["total"] == 2
