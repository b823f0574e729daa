"""Configuration of the mail server: backend, Maildir, SMTP, safety switches."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field, SecretStr, field_validator

from deskmcp.core.config import OptionalPath, env_alias
from deskmcp.google.auth import GoogleSettings

MailMode = Literal["read_only", "draft_only", "send"]


class MailSettings(GoogleSettings):
    """Environment: `MAIL_*` (backend, Maildir, SMTP, IMAP, mode, allowlist), `VAULT_PATH`, `GOOGLE_*`,
    plus the workspace's."""

    backend: Literal["maildir", "imap", "gmail"] = Field(
        default="maildir",
        validation_alias=env_alias("backend", "MAIL_BACKEND"),
        description="maildir (local, offline), imap (any provider over IMAP + SMTP) or gmail (Gmail API).",
    )
    maildir: OptionalPath = Field(
        default=None,
        validation_alias=env_alias("maildir", "MAIL_MAILDIR"),
        description="The local Maildir++ tree (default: <workspace>/mail, created when missing).",
    )
    address: str = Field(
        default="me@localhost",
        validation_alias=env_alias("address", "MAIL_ADDRESS"),
        description="The user's own address: the From of sent mail.",
    )
    display_name: str = Field(
        default="",
        validation_alias=env_alias("display_name", "MAIL_DISPLAY_NAME"),
        description="The name shown with the user's address on sent mail.",
    )
    smtp_host: str | None = Field(default=None, validation_alias=env_alias("smtp_host", "MAIL_SMTP_HOST"))
    smtp_port: int | None = Field(default=None, validation_alias=env_alias("smtp_port", "MAIL_SMTP_PORT"))
    smtp_user: str | None = Field(default=None, validation_alias=env_alias("smtp_user", "MAIL_SMTP_USER"))
    smtp_password: SecretStr | None = Field(
        default=None, validation_alias=env_alias("smtp_password", "MAIL_SMTP_PASSWORD")
    )
    smtp_security: Literal["starttls", "ssl", "none"] = Field(
        default="starttls", validation_alias=env_alias("smtp_security", "MAIL_SMTP_SECURITY")
    )
    imap_host: str | None = Field(default=None, validation_alias=env_alias("imap_host", "MAIL_IMAP_HOST"))
    imap_port: int | None = Field(default=None, validation_alias=env_alias("imap_port", "MAIL_IMAP_PORT"))
    imap_user: str | None = Field(default=None, validation_alias=env_alias("imap_user", "MAIL_IMAP_USER"))
    imap_password: SecretStr | None = Field(
        default=None, validation_alias=env_alias("imap_password", "MAIL_IMAP_PASSWORD")
    )
    imap_security: Literal["ssl", "starttls", "none"] = Field(
        default="ssl", validation_alias=env_alias("imap_security", "MAIL_IMAP_SECURITY")
    )
    imap_sent_copy: bool = Field(
        default=True,
        validation_alias=env_alias("imap_sent_copy", "MAIL_IMAP_SENT_COPY"),
        description="Append sent mail to the IMAP Sent folder (false for servers that do it, e.g. Gmail).",
    )
    mode: MailMode | None = Field(
        default=None,
        validation_alias=env_alias("mode", "MAIL_MODE"),
        description="read_only, draft_only or send (default: send on maildir, draft_only on imap and gmail).",
    )
    allowed_recipients: str = Field(
        default="",
        validation_alias=env_alias("allowed_recipients", "MAIL_ALLOWED_RECIPIENTS"),
        description="Comma-separated addresses and @domains mail may go to; empty means anyone.",
    )
    max_recipients: int = Field(default=20, ge=1, validation_alias=env_alias("max_recipients", "MAIL_MAX_RECIPIENTS"))
    max_body_chars: int = Field(
        default=200_000, ge=1_000, validation_alias=env_alias("max_body_chars", "MAIL_MAX_BODY_CHARS")
    )
    max_message_bytes: int = Field(
        default=50 * 1024 * 1024,
        ge=1024,
        validation_alias=env_alias("max_message_bytes", "MAIL_MAX_MESSAGE_BYTES"),
        description="Largest message read from the Maildir.",
    )
    timeout: float = Field(
        default=30.0, gt=0, validation_alias=env_alias("timeout", "MAIL_TIMEOUT"), description="Network timeout (s)."
    )
    max_attachment_bytes: int = Field(
        default=25 * 1024 * 1024,
        ge=1024,
        validation_alias=env_alias("max_attachment_bytes", "MAIL_MAX_ATTACHMENT_BYTES"),
        description="Most bytes of attachments, all together, on one outgoing message.",
    )
    documents_path: OptionalPath = Field(
        default=None,
        validation_alias=env_alias("documents_path", "DOCUMENTS_PATH"),
        description="The documents folder files can be attached from (default: <workspace>/documents).",
    )
    vault_path: OptionalPath = Field(
        default=None,
        validation_alias=env_alias("vault_path", "VAULT_PATH"),
        description="The vault whose Logs/ folder receives the send audit log (default: <workspace>/vault).",
    )

    @field_validator("smtp_host", "imap_host", "smtp_user", "imap_user", mode="before")
    @classmethod
    def _empty_is_none(cls, value: object) -> object:
        return None if value == "" else value

    @property
    def maildir_root(self) -> Path:
        return self.maildir or self.workspace / "mail"

    @property
    def effective_mode(self) -> MailMode:
        if self.mode is not None:
            return self.mode
        return "send" if self.backend == "maildir" else "draft_only"

    @property
    def read_only(self) -> bool:
        """MAIL_MODE=read_only: only the reading tools are offered (`servers.keep_read_only`)."""
        return self.effective_mode == "read_only"

    read_only_switch: ClassVar[str] = "MAIL_MODE=read_only"
    """The setting named when a changing tool is called in read-only mode."""

    @property
    def attachment_roots(self) -> dict[str, Path]:
        """The folders outgoing attachments may come from, by the first part of their path."""
        return {
            "documents": self.documents_path or self.workspace / "documents",
            "vault": self.vault_path or self.workspace / "vault",
        }

    @property
    def audit_folder(self) -> Path:
        return (self.vault_path or self.workspace / "vault") / "Logs"

    @property
    def index_path(self) -> Path:
        return self.index_folder / "mail.sqlite3"

    @property
    def state_path(self) -> Path:
        """The send journal (idempotency keys); user data, not a rebuildable index."""
        return self.workspace / ".deskmcp" / "mail-sends.sqlite3"

    @property
    def allowlist(self) -> tuple[str, ...]:
        return tuple(p.strip().lower() for p in self.allowed_recipients.split(",") if p.strip())
