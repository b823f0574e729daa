"""The mail MCP server: tools over `MailService` (local Maildir, IMAP + SMTP, or Gmail)."""

# Annotations are evaluated here, not postponed: the resolvers that ask the person before a send
# are local to `register` and the SDK reads them from the annotations.
from collections.abc import Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import anyio.to_thread
from mcp.server.mcpserver import Context, Elicit, Resolve
from pydantic import Field

from deskmcp.core.errors import BadRequest, PermissionDenied
from deskmcp.core.pagination import CursorArg
from deskmcp.core.search.fusion import Mode
from deskmcp.core.server import (
    NOT_ASKED,
    READ_ONLY,
    Answer,
    Confirmation,
    DeskServer,
    ask_person,
    person_agreed,
    sealed_request_state,
    writes,
)
from deskmcp.mail import confirm
from deskmcp.mail.compose import forward_subject
from deskmcp.mail.models import (
    AccountList,
    AttachmentContent,
    DraftList,
    DraftResult,
    EmailFull,
    EmailList,
    LabelList,
    LabelResult,
    OutgoingAttachment,
    SendEmailResult,
    ThreadResult,
)
from deskmcp.mail.service import MAX_RESULTS, MailAccounts, MailService
from deskmcp.mail.settings import MailSettings
from deskmcp.servers import SERVERS, ServerModule, UserPolicy

INSTRUCTIONS = """The user's mailbox. Find mail with list_emails (Gmail search syntax on every
backend: from:, to:, subject:, is:unread, label:, in:inbox, has:attachment, after:2024/01/31,
newer_than:7d, "phrases", OR, -word), read one with get_email or a conversation with get_thread,
then act: send_email (reply_to_message_id threads the reply; pass an idempotency_key so a retry
never sends twice), move_email, add_label (remove_label and mark_read are in the labels toolset).
Ids come from list_emails. With several accounts every tool takes `account` (list_accounts names
them; default: the first); ids and cursors are valid only in the account that gave them.
Errors are JSON objects with an `error` code and a `message` saying how to recover."""

TOOLSETS: dict[str, str] = {
    "read": "list, read and search mail, conversations",
    "write": "send, move and label mail",
    "labels": "list labels, remove a label, mark read or unread",
    "drafts": "create, list and send drafts",
    "forward": "forward mail with its attachments",
    "attachments": "read or save attachments",
    "accounts": "name the configured mail accounts",
}
DEFAULT_TOOLSETS: tuple[str, ...] = ("read", "write")


def _users_accounts(settings: MailSettings, workspace: Path) -> None:
    """MAIL_ACCOUNTS in a user's settings: a file it names lies inside their workspace, and no entry
    takes a password from this server's environment (`*_password_env`)."""
    accounts = settings.accounts.strip()
    if accounts and not accounts.startswith(("[", "{")):
        path = Path(accounts)
        # `$` too: the file is read later, expanding `$VARS` from this process's environment.
        if "$" in accounts or not path.is_absolute() or not path.resolve().is_relative_to(workspace.resolve()):
            raise PermissionDenied(
                "MAIL_ACCOUNTS in a user's settings names a file outside their workspace; give inline JSON, or "
                "the absolute path of a file inside it.",
                {"setting": "MAIL_ACCOUNTS"},
            )
    if "password_env" in accounts or settings.password_variables():
        raise PermissionDenied(
            "MAIL_ACCOUNTS in a user's settings may not name *_password_env: those read this server's own "
            "environment. Write the account's password as its MAIL_*_PASSWORD setting instead.",
            {"setting": "MAIL_ACCOUNTS"},
        )


USERS = UserPolicy(
    # The keyring is this server's OS user's. The send journal is kept in the deployment's database
    # (DESKMCP_DATABASE_URL), which every user's Google settings take from the deployment.
    fixed={"os_keyring": False},
    check=_users_accounts,
)

MessageId = Annotated[str, Field(description="Message id from list_emails")]
MessageIds = Annotated[
    str | list[str], Field(description="Id from list_emails, or a list of up to 100 (a result each)")
]
LabelName = Annotated[str, Field(min_length=1, max_length=100, description="Label name, see list_labels")]
Addresses = Annotated[str | None, Field(description="Comma-separated addresses")]
IdempotencyKey = Annotated[str | None, Field(max_length=200, description="Same key on a retry: never sent twice")]
Attachments = Annotated[
    list[OutgoingAttachment] | None,
    Field(max_length=20, description="{path: 'documents/...' or 'vault/...'} or {content_base64, filename}"),
]

MailMode = Annotated[Mode | None, Field(description="Default lexical: every word, newest first")]
"""By meaning only when asked: a listing keeps Gmail's meaning (every word) for every client."""

# No description: every tool carries it, and the token budget counts each; list_accounts and the
# not_found answer to an unknown account name the valid ones.
Account = str | None

Settings = MailSettings


def create_service(settings: MailSettings) -> MailAccounts:
    return MailAccounts(settings)


def unavailable(settings: MailSettings) -> str | None:
    """What keeps the mail server from running: MAIL_ACCOUNTS that cannot be read, or an account
    (named when there are several) missing what its backend needs."""
    try:
        accounts = settings.account_settings()
    except BadRequest as exc:
        return exc.message
    for name, account in accounts.items():
        reason = _account_unavailable(account)
        if reason is not None:
            return reason if len(accounts) == 1 else f"mail account {name!r}: {reason}"
    return None


def _account_unavailable(settings: MailSettings) -> str | None:
    if settings.backend == "imap" and not settings.imap_host:
        return "MAIL_BACKEND=imap needs MAIL_IMAP_HOST (and MAIL_IMAP_USER, MAIL_IMAP_PASSWORD)"
    if settings.backend == "gmail" and not (
        settings.google_service_account_file or settings.google_use_adc or settings.google_token_path.is_file()
    ):
        return "MAIL_BACKEND=gmail needs a Google authorisation: run `deskmcp auth google`"
    if settings.backend == "maildir" and settings.maildir is not None and not settings.maildir.is_dir():
        return f"the Maildir {settings.maildir} does not exist; create it or fix MAIL_MAILDIR"
    return None


def create_server(settings: MailSettings, service: MailService | None = None) -> DeskServer:
    """The mail tools alone on a server of their own (tests, benchmarks): `servers.create_server`."""
    return SERVERS["mail"].create_server(settings, service)


def register(server: DeskServer, service: MailAccounts | MailService) -> None:
    accounts = MailAccounts.of(service) if isinstance(service, MailService) else service

    @asynccontextmanager
    async def running():
        try:
            yield accounts
        finally:
            await anyio.to_thread.run_sync(accounts.close)

    server.add_service_context(running)

    @server.tool("list_emails", annotations=READ_ONLY, toolset="read")
    def list_emails(
        query: Annotated[str, Field(max_length=2000, description="Gmail search syntax; '' for all")] = "is:unread",
        max_results: Annotated[int, Field(ge=1, le=MAX_RESULTS, description="Page size (1-100)")] = 10,
        cursor: CursorArg = None,
        account: Account = None,
        mode: MailMode = None,
    ) -> EmailList:
        """Messages matching a Gmail-style query, newest first, with ids for the other tools."""
        return accounts.run(account, lambda s: s.list_emails(query, max_results, cursor, mode))

    @server.tool("get_email", annotations=READ_ONLY, toolset="read")
    def get_email(
        message_id: MessageId,
        offset: Annotated[int, Field(ge=0, description="next_offset of the previous part")] = 0,
        max_chars: Annotated[int | None, Field(ge=1, description="Body characters per part")] = None,
        account: Account = None,
    ) -> EmailFull:
        """One message: headers, text body (HTML as text), attachments, threading ids; a long body comes
        in parts (call again with offset=next_offset)."""
        return accounts.run(account, lambda s: s.get_email(message_id, max_chars=max_chars, offset=offset))

    @server.tool("get_thread", annotations=READ_ONLY, toolset="read")
    def get_thread(
        thread_id: Annotated[str, Field(description="thread_id from list_emails or get_email")],
        max_messages: Annotated[int, Field(ge=1, le=100, description="Most messages returned")] = 50,
        account: Account = None,
    ) -> ThreadResult:
        """A conversation, oldest first, each body cut at 4,000 characters."""
        return accounts.run(account, lambda s: s.get_thread(thread_id, max_messages=max_messages))

    def ask_before_sending(
        context: Context[Any, Any],
        account: str | None,
        idempotency_key: str | None,
        question: Callable[[MailService], str],
    ) -> Elicit[Confirmation] | str:
        """The person's confirmation of what `question` shows, when the account wants one for this send."""
        text = accounts.run(account, lambda s: question(s) if confirm.needs_person(s, idempotency_key) else None)
        return NOT_ASKED if text is None else ask_person(context, text)

    def ask_to_send(
        context: Context[Any, Any],
        to: str,
        subject: str,
        body: str,
        cc: str | None,
        bcc: str | None,
        idempotency_key: str | None,
        attachments: list[OutgoingAttachment] | None,
        account: str | None,
    ) -> Elicit[Confirmation] | str:
        def question(s: MailService) -> str:
            s.check_outgoing(to=to, cc=cc, bcc=bcc, subject=subject, body=body)
            names = confirm.attachment_names(attachments)
            return confirm.outgoing_text(
                "Send this email?", s, to=to, cc=cc, bcc=bcc, subject=subject, body=body, attachments=names
            )

        return ask_before_sending(context, account, idempotency_key, question)

    def ask_to_forward(
        context: Context[Any, Any],
        message_id: str,
        to: str,
        body: str,
        cc: str | None,
        bcc: str | None,
        idempotency_key: str | None,
        account: str | None,
    ) -> Elicit[Confirmation] | str:
        def question(s: MailService) -> str:
            original = s.get_email(message_id, max_chars=1)
            subject = forward_subject(original.subject)
            s.check_outgoing(to=to, cc=cc, bcc=bcc, subject=subject, body=body)
            names = [a.filename for a in original.attachments]
            text = f"{body}\n\n(the message from {original.sender} of {original.date} follows)"
            return confirm.outgoing_text(
                "Forward this email?", s, to=to, cc=cc, bcc=bcc, subject=subject, body=text, attachments=names
            )

        return ask_before_sending(context, account, idempotency_key, question)

    def ask_to_send_draft(
        context: Context[Any, Any], draft_id: str, idempotency_key: str | None, account: str | None
    ) -> Elicit[Confirmation] | str:
        def question(s: MailService) -> str:
            draft = s.get_email(draft_id, max_chars=confirm.EXCERPT_CHARS + 1)
            s.check_outgoing(to=draft.to, cc=draft.cc, bcc=draft.bcc, subject=draft.subject, body="")
            return confirm.outgoing_text(
                "Send this draft?",
                s,
                to=draft.to,
                cc=draft.cc,
                bcc=draft.bcc,
                subject=draft.subject,
                body=draft.body,
                attachments=draft.attachment_names,
            )

        return ask_before_sending(context, account, idempotency_key, question)

    def agreed(answer: Answer, account: str | None, idempotency_key: str | None) -> str | None:
        """Go on only with the person's yes (or when none was needed), and spend that yes
        (`confirm.spend_yes`); the idempotency key the send goes on with."""
        if person_agreed(answer, "nothing was sent", None):
            state = sealed_request_state()
            return accounts.run(account, lambda s: confirm.spend_yes(s, state, idempotency_key))
        return idempotency_key

    @server.tool(
        "send_email", annotations=writes(destructive=False, idempotent=False, open_world=True), toolset="write"
    )
    def send_email(
        to: Annotated[str, Field(description="Recipients, comma-separated")],
        subject: Annotated[str, Field(max_length=900)],
        body: Annotated[str, Field(description="Plain-text body")],
        reply_to_message_id: Annotated[
            str | None, Field(description="Id of the message replied to: threads the reply")
        ] = None,
        cc: Addresses = None,
        bcc: Addresses = None,
        html_body: Annotated[str | None, Field(description="HTML alternative")] = None,
        idempotency_key: IdempotencyKey = None,
        attachments: Attachments = None,
        account: Account = None,
        answer: Annotated[Answer, Resolve(ask_to_send)] = NOT_ASKED,  # type: ignore[assignment]
    ) -> SendEmailResult:
        """Send a message (audited; the user confirms when their client can ask). A repeated
        idempotency_key returns the first result, duplicate=true."""
        key = agreed(answer, account, idempotency_key)
        return accounts.run(
            account,
            lambda s: s.send_email(to, subject, body, reply_to_message_id, cc, bcc, html_body, key, attachments),
        )

    @server.tool(
        "forward_email", annotations=writes(destructive=False, idempotent=False, open_world=True), toolset="forward"
    )
    def forward_email(
        message_id: MessageId,
        to: Annotated[str, Field(description="Recipients, comma-separated")],
        body: Annotated[str, Field(description="Optional note above the forwarded message")] = "",
        cc: Addresses = None,
        bcc: Addresses = None,
        idempotency_key: IdempotencyKey = None,
        account: Account = None,
        answer: Annotated[Answer, Resolve(ask_to_forward)] = NOT_ASKED,  # type: ignore[assignment]
    ) -> SendEmailResult:
        """Forward a message with its attachments ("Fwd: " subject, checked, confirmed and audited like send_email)."""
        key = agreed(answer, account, idempotency_key)
        return accounts.run(account, lambda s: s.forward_email(message_id, to, body, cc, bcc, key))

    @server.tool("move_email", annotations=writes(destructive=False, idempotent=True), toolset="write")
    def move_email(message_id: MessageIds, destination_label: LabelName, account: Account = None) -> LabelResult:
        """Move messages to a folder/label (INBOX, TRASH, a user label; created when missing)."""
        return accounts.run(account, lambda s: s.move_email(message_id, destination_label))

    @server.tool("add_label", annotations=writes(destructive=False, idempotent=True), toolset="write")
    def add_label(message_id: MessageIds, label_name: LabelName, account: Account = None) -> LabelResult:
        """Add a label to messages (created when missing); returns their labels."""
        return accounts.run(account, lambda s: s.add_label(message_id, label_name))

    @server.tool("remove_label", annotations=writes(destructive=False, idempotent=True), toolset="labels")
    def remove_label(message_id: MessageIds, label_name: LabelName, account: Account = None) -> LabelResult:
        """Remove a label; removing INBOX archives the message."""
        return accounts.run(account, lambda s: s.remove_label(message_id, label_name))

    @server.tool("mark_read", annotations=writes(destructive=False, idempotent=True), toolset="labels")
    def mark_read(message_id: MessageId, account: Account = None) -> LabelResult:
        """Mark a message read."""
        return accounts.run(account, lambda s: s.mark_read(message_id, True))

    @server.tool("mark_unread", annotations=writes(destructive=False, idempotent=True), toolset="labels")
    def mark_unread(message_id: MessageId, account: Account = None) -> LabelResult:
        """Mark a message unread."""
        return accounts.run(account, lambda s: s.mark_read(message_id, False))

    @server.tool("list_labels", annotations=READ_ONLY, toolset="labels")
    def list_labels(account: Account = None) -> LabelList:
        """Every folder and label with message and unread counts."""
        return accounts.run(account, lambda s: s.list_labels())

    @server.tool("create_draft", annotations=writes(destructive=False, idempotent=False), toolset="drafts")
    def create_draft(
        to: Annotated[str, Field(description="Recipient address(es), comma-separated; may be empty")],
        subject: Annotated[str, Field(max_length=900)],
        body: str,
        reply_to_message_id: Annotated[str | None, Field(description="Id of the message replied to")] = None,
        cc: Addresses = None,
        bcc: Addresses = None,
        html_body: str | None = None,
        attachments: Attachments = None,
        account: Account = None,
    ) -> DraftResult:
        """Save a draft (allowed in draft_only mode); send it later with send_draft."""
        return accounts.run(
            account, lambda s: s.create_draft(to, subject, body, reply_to_message_id, cc, bcc, html_body, attachments)
        )

    @server.tool("list_drafts", annotations=READ_ONLY, toolset="drafts")
    def list_drafts(
        max_results: Annotated[int, Field(ge=1, le=MAX_RESULTS)] = 20,
        cursor: CursorArg = None,
        account: Account = None,
    ) -> DraftList:
        """Saved drafts, newest first."""
        return accounts.run(account, lambda s: s.list_drafts(max_results, cursor))

    @server.tool(
        "send_draft", annotations=writes(destructive=False, idempotent=False, open_world=True), toolset="drafts"
    )
    def send_draft(
        draft_id: Annotated[str, Field(description="Id from list_drafts or create_draft")],
        idempotency_key: Annotated[str | None, Field(max_length=200)] = None,
        account: Account = None,
        answer: Annotated[Answer, Resolve(ask_to_send_draft)] = NOT_ASKED,  # type: ignore[assignment]
    ) -> SendEmailResult:
        """Send a saved draft (confirmed like send_email, audited); the draft is removed once sent."""
        key = agreed(answer, account, idempotency_key)
        return accounts.run(account, lambda s: s.send_draft(draft_id, key))

    @server.tool("get_attachment", annotations=writes(destructive=False, idempotent=True), toolset="attachments")
    def get_attachment(
        message_id: MessageId,
        index: Annotated[int, Field(ge=0, description="Attachment index from get_email")],
        save: Annotated[
            bool, Field(description="Save under <workspace>/attachments/ instead of returning text")
        ] = False,
        account: Account = None,
    ) -> AttachmentContent:
        """A text attachment's content (bounded), or any attachment saved into the workspace."""
        return accounts.run(account, lambda s: s.get_attachment(message_id, index, save=save))

    @server.tool("list_accounts", annotations=READ_ONLY, toolset="accounts")
    def list_accounts() -> AccountList:
        """The mail accounts (MAIL_ACCOUNTS): the name to pass as `account`, address, backend, mode."""
        return accounts.list_accounts()


if TYPE_CHECKING:
    # The type checker holds this module to the contract of a server module (`servers.ServerModule`).
    from deskmcp.mail import server as _this

    _CONTRACT: ServerModule = _this
