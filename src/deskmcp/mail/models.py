"""The mail server's result models (field names shared by every backend)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

DateSource = Literal["header", "received"]


class EmailSummary(BaseModel):
    id: str = Field(description="The backend's message id, used by every other tool")
    thread_id: str
    rfc_message_id: str = Field(description="The Message-ID header, angle brackets included ('' when absent)")
    subject: str
    sender: str
    to: str
    cc: str = ""
    date: str = Field(
        description="When it was sent, ISO 8601 UTC: its Date header; when that is missing or unreadable, when"
        " the mail server received it (date_source says which)"
    )
    date_source: DateSource = Field(
        default="header", description="header: the Date header; received: the server's arrival time (no usable Date)"
    )
    snippet: str
    labels: list[str] = Field(default_factory=list)
    unread: bool = False
    has_attachments: bool = False
    lexical_rank: int | None = Field(default=None, description="By meaning: its rank by words (null: not matched)")
    semantic_rank: int | None = Field(default=None, description="By meaning: its rank by meaning (null: not near)")


class EmailList(BaseModel):
    emails: list[EmailSummary]
    next_cursor: str | None = None
    total: int | None = Field(default=None, description="Messages matching in all (local mailbox; else null)")
    mode: Literal["lexical", "semantic", "hybrid"] = Field(
        default="lexical",
        description="lexical: every word matched, newest first; semantic, hybrid: ranked by meaning (and words)",
    )
    semantic_pending: int | None = Field(
        default=None, description="Messages not embedded yet: the meaning side covers the rest"
    )


class AttachmentInfo(BaseModel):
    index: int = Field(description="Pass to get_attachment")
    filename: str
    content_type: str
    size: int = Field(description="Decoded bytes (what get_attachment saves); text lines count as CRLF")


class EmailFull(EmailSummary):
    body: str
    body_truncated: bool = Field(default=False, description="More text follows: call again with offset=next_offset")
    body_offset: int = Field(default=0, description="Where in the body this text starts")
    body_chars: int = Field(default=0, description="Length of the whole text body")
    next_offset: int | None = None
    attachment_names: list[str] = Field(default_factory=list)
    attachments: list[AttachmentInfo] = Field(default_factory=list)
    in_reply_to: str | None = None
    references: list[str] = Field(default_factory=list)
    bcc: str = ""


class OutgoingAttachment(BaseModel):
    """A file to attach: one from the documents or vault folder, or content given inline."""

    model_config = ConfigDict(extra="forbid")

    path: str | None = Field(default=None, description="documents/<path> or vault/<path>")
    content_base64: str | None = None
    filename: str | None = Field(default=None, description="Name to show; needed with content_base64")


class SendEmailResult(BaseModel):
    message_id: str
    thread_id: str
    sent_at: str
    rfc_message_id: str
    duplicate: bool = False
    audit_log: str | None = Field(
        default=None,
        description="The audit log file the send was recorded in (relative to your workspace on a shared server)",
    )


class LabelOutcome(BaseModel):
    message_id: str = Field(description="The id asked for")
    id: str | None = Field(default=None, description="Its id now (a move over IMAP gives a new one)")
    labels: list[str] = Field(default_factory=list)
    error: str | None = Field(default=None, description="Error code when this message failed")
    message: str | None = None


class LabelResult(BaseModel):
    id: str | None = Field(default=None, description="The message's id now (one id asked)")
    labels: list[str] = Field(default_factory=list)
    results: list[LabelOutcome] | None = Field(default=None, description="One per id when a list was given")


class LabelInfo(BaseModel):
    name: str
    kind: str = Field(
        description="system (INBOX, SENT, DRAFT, TRASH, SPAM), folder, or keyword (a tag, many per message)"
    )
    total: int | None = None
    unread: int | None = None


class LabelList(BaseModel):
    labels: list[LabelInfo]


class ThreadResult(BaseModel):
    thread_id: str
    messages: list[EmailFull]
    truncated: bool = Field(default=False, description="More messages exist than were returned")


class DraftResult(BaseModel):
    draft_id: str
    message_id: str
    thread_id: str
    rfc_message_id: str
    subject: str
    to: str


class DraftList(BaseModel):
    drafts: list[EmailSummary]
    next_cursor: str | None = None


class AttachmentContent(BaseModel):
    message_id: str
    index: int
    filename: str
    content_type: str
    size: int
    text: str | None = Field(default=None, description="Decoded text of a text-like attachment")
    text_truncated: bool = False
    saved_path: str | None = Field(default=None, description="Workspace-relative path when saved")


class AuditLogEntry(BaseModel):
    event: str = "pre_send_audit"
    timestamp: str
    to: str
    subject: str
    body_preview: str
    reply_to_message_id: str | None
    severity: str = "INFO"
    cc: str | None = None
    bcc: str | None = None
    rfc_message_id: str | None = None
    idempotency_key: str | None = None
    backend: str | None = None
    outcome: str | None = None
    message_id: str | None = None
    error: str | None = None
    attachments: list[str] | None = None
    account: str | None = Field(default=None, description="The mail account that sent (MAIL_ACCOUNTS name)")


class AccountInfo(BaseModel):
    name: str = Field(description="Pass as the account argument of the other tools")
    address: str
    backend: str
    mode: str = Field(description="read_only, draft_only or send")
    default: bool = Field(default=False, description="Used when a tool is called without account")


class AccountList(BaseModel):
    accounts: list[AccountInfo]
