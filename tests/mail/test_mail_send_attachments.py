"""Attachments on send_email and create_draft: files from the documents or vault folder, or
base64 content; paths confined to their folder, sizes capped (Maildir backend)."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from tests.helpers.mail import audit_lines
from tests.helpers.tool_calls import Connect, call, fail

pytestmark = pytest.mark.anyio

PDF = b"%PDF-1.4\n" + bytes(range(256)) * 8


def files(workspace: Path) -> None:
    (workspace / "documents" / "reports").mkdir(parents=True)
    (workspace / "documents" / "reports" / "q3.pdf").write_bytes(PDF)
    (workspace / "vault" / "Notes").mkdir(parents=True)
    (workspace / "vault" / "Notes" / "plan.md").write_text("# Plan\n\nShip it.\n", encoding="utf-8")


async def sent_messages(c: object) -> list[dict[str, object]]:
    return (await call(c, "list_emails", {"query": "in:sent", "max_results": 50}))["emails"]  # type: ignore[arg-type]


async def test_send_email_attaches_a_documents_file_and_base64_content_with_guessed_types(
    connect: Connect, workspace: Path
) -> None:
    files(workspace)
    attachments = [
        {"path": "documents/reports/q3.pdf"},
        {"content_base64": base64.b64encode(b"a,b\n1,2\n").decode(), "filename": "figures.csv"},
    ]
    async with connect() as c:
        sent = await call(
            c, "send_email", {"to": "bob@corp.test", "subject": "Q3", "body": "Attached.", "attachments": attachments}
        )
        opened = await call(c, "get_email", {"message_id": sent["message_id"]})
        saved = await call(c, "get_attachment", {"message_id": sent["message_id"], "index": 0, "save": True})
        csv = await call(c, "get_attachment", {"message_id": sent["message_id"], "index": 1})
    assert opened["body"].strip() == "Attached."
    assert [(a["filename"], a["content_type"]) for a in opened["attachments"]] == [
        ("q3.pdf", "application/pdf"),
        ("figures.csv", "text/csv"),
    ]
    assert (workspace / saved["saved_path"]).read_bytes() == PDF
    assert csv["text"] == "a,b\n1,2\n"
    assert audit_lines(workspace)[0]["attachments"] == ["q3.pdf", "figures.csv"]


async def test_create_draft_attaches_a_vault_note_and_send_draft_keeps_it(connect: Connect, workspace: Path) -> None:
    files(workspace)
    async with connect() as c:
        draft = await call(
            c,
            "create_draft",
            {
                "to": "bob@corp.test",
                "subject": "Plan",
                "body": "See note.",
                "attachments": [{"path": "vault/Notes/plan.md"}],
            },
        )
        sent = await call(c, "send_draft", {"draft_id": draft["draft_id"]})
        opened = await call(c, "get_email", {"message_id": sent["message_id"]})
    assert opened["attachment_names"] == ["plan.md"]


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("documents/../vault/Notes/plan.md", "permission_denied"),
        ("documents/escape/secret.txt", "permission_denied"),
        ("/etc/passwd", "bad_request"),
        ("home/me/.ssh/id_rsa", "bad_request"),
        ("documents/missing.pdf", "not_found"),
        ("documents/reports", "not_found"),
    ],
)
async def test_security_attachment_path_outside_its_folder_or_not_a_file_is_refused_and_nothing_is_sent(
    connect: Connect, workspace: Path, tmp_path: Path, path: str, code: str
) -> None:
    files(workspace)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret", encoding="utf-8")
    (workspace / "documents" / "escape").symlink_to(outside)
    async with connect() as c:
        error = await fail(
            c, "send_email", {"to": "bob@corp.test", "subject": "x", "body": "x", "attachments": [{"path": path}]}
        )
        sent = await sent_messages(c)
    assert error["error"] == code
    assert sent == [] and audit_lines(workspace) == []


async def test_attachments_over_the_size_cap_or_malformed_are_bad_request_and_nothing_is_sent(
    connect: Connect, workspace: Path
) -> None:
    files(workspace)
    big = base64.b64encode(b"x" * 3000).decode()
    cases = [
        [{"path": "documents/reports/q3.pdf"}],  # 2,057 bytes: over the 2,048 allowed
        [{"content_base64": big, "filename": "big.bin"}],
        [{"content_base64": "not base64!", "filename": "a.bin"}],
        [{"content_base64": "aGk="}],  # no filename
        [{"path": "documents/reports/q3.pdf", "content_base64": "aGk=", "filename": "a"}],
        [{}],
    ]
    async with connect(max_attachment_bytes=2048) as c:
        errors = [
            await fail(c, "send_email", {"to": "bob@corp.test", "subject": "x", "body": "x", "attachments": case})
            for case in cases
        ]
        sent = await sent_messages(c)
    assert [e["error"] for e in errors] == ["bad_request"] * len(cases)
    assert "MAIL_MAX_ATTACHMENT_BYTES" in errors[0]["message"]
    assert sent == []


def hidden_files(workspace: Path) -> None:
    """Files the vault and documents tools refuse to read: plugin secrets, git config, dotfiles."""
    files(workspace)
    secrets = {
        "vault/.obsidian/plugins/sync/data.json": '{"apiKey": "sk-live-123"}',
        "vault/.git/config": "[remote]\n\turl = https://token@example.org/x.git\n",
        "vault/.trash/old.md": "deleted\n",
        "vault/Notes/.private.md": "private\n",
        "documents/.env": "API_KEY=sk-live-123\n",
        "documents/reports/.cache/q3.pdf": "cached\n",
    }
    for rel, text in secrets.items():
        (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        (workspace / rel).write_text(text, encoding="utf-8")
    # A visible name leading into a hidden file is refused as well.
    (workspace / "documents" / "settings.txt").symlink_to(workspace / "documents" / ".env")


@pytest.mark.parametrize(
    "path",
    [
        "vault/.obsidian/plugins/sync/data.json",
        "vault/.git/config",
        "vault/.trash/old.md",
        "vault/Notes/.private.md",
        "documents/.env",
        "documents/reports/.cache/q3.pdf",
        "documents/settings.txt",
        "documents/./.env",
    ],
)
@pytest.mark.parametrize("tool", ["send_email", "create_draft"])
async def test_security_attachment_from_a_hidden_file_or_folder_is_refused_like_a_vault_read(
    connect: Connect, workspace: Path, path: str, tool: str
) -> None:
    hidden_files(workspace)
    async with connect() as c:
        error = await fail(
            c, tool, {"to": "bob@corp.test", "subject": "x", "body": "x", "attachments": [{"path": path}]}
        )
        sent = await sent_messages(c)
        drafts = await call(c, "list_drafts", {})
    assert error["error"] == "permission_denied"
    assert "hidden files and folders (.obsidian, .git, .trash, dotfiles)" in error["message"]
    assert sent == [] and audit_lines(workspace) == []
    assert drafts["drafts"] == []
