"""Configuration of the mail server: backend, Maildir, SMTP, safety switches, and several
accounts (`MAIL_ACCOUNTS`), each one a `MailSettings` of its own."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from deskmcp.core.config import OptionalPath, env_alias, expand
from deskmcp.core.errors import BadRequest, NotFound
from deskmcp.core.settings import variable as environment_variable
from deskmcp.core.shared_settings import DocumentsFolderSettings, RecipientSettings, VaultFolderSettings
from deskmcp.google.auth import GoogleSettings

MailMode = Literal["read_only", "draft_only", "send"]
DEFAULT_ACCOUNT = "default"
ACCOUNT_NAME = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$"


class MailSettings(GoogleSettings, DocumentsFolderSettings, VaultFolderSettings, RecipientSettings):
    """Environment: `MAIL_*` (backend, Maildir, SMTP, IMAP, mode, accounts); `MAIL_ALLOWED_RECIPIENTS`,
    `DOCUMENTS_PATH`, `VAULT_PATH` and `DESKMCP_DATABASE_URL`, which other packages read too
    (`deskmcp.core.shared_settings`); `GOOGLE_*`; plus the workspace's."""

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
    os_keyring: bool = Field(
        default=True,
        validation_alias=env_alias("os_keyring", "MAIL_OS_KEYRING"),
        description="Look a password left unset up in this machine's OS keyring (the optional keyring package); "
        "always off for the users of a multi-user deployment, whose passwords are their own settings.",
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
    confirm_sends: bool = Field(
        default=True,
        validation_alias=env_alias("confirm_sends", "MAIL_CONFIRM_SENDS"),
        description="Ask the person, in a client that supports MCP elicitation, before mail goes to an address"
        " not on MAIL_ALLOWED_RECIPIENTS; false for unattended setups.",
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

    account: str = Field(
        default=DEFAULT_ACCOUNT,
        pattern=ACCOUNT_NAME,
        validation_alias=env_alias("account", "MAIL_ACCOUNT"),
        description="The name of the account the MAIL_* variables describe (when MAIL_ACCOUNTS is unset).",
    )
    accounts: str = Field(
        default="",
        validation_alias=env_alias("accounts", "MAIL_ACCOUNTS"),
        description="Several accounts: JSON (a list of objects with a name, or an object of name -> settings),"
        " or the path of a .json or .toml file holding it. Unset: one account from the MAIL_* variables.",
    )

    @field_validator("smtp_host", "imap_host", "smtp_user", "imap_user", mode="before")
    @classmethod
    def _empty_is_none(cls, value: object) -> object:
        return None if value == "" else value

    @property
    def maildir_root(self) -> Path:
        return self.maildir or self.workspace / self._per_account("mail")

    def missing_maildir(self) -> NotFound | None:
        """The error for a configured Maildir (MAIL_MAILDIR, or an account's `maildir`) that does not
        exist. It is never created: a typo must not quietly become an empty mailbox. Only the
        default one in the workspace is."""
        if self.backend != "maildir" or self.maildir is None or self.maildir.is_dir():
            return None
        whose = "The" if self.account == DEFAULT_ACCOUNT else f"Mail account {self.account!r}: the"
        where = "MAIL_MAILDIR" if self.account == DEFAULT_ACCOUNT else "its maildir in MAIL_ACCOUNTS (or MAIL_MAILDIR)"
        details: dict[str, Any] = {"variable": "MAIL_MAILDIR", "path": str(self.maildir)}
        if self.account != DEFAULT_ACCOUNT:
            details["account"] = self.account
        return NotFound(
            f"{whose} Maildir {self.maildir} (MAIL_MAILDIR) does not exist, and a configured Maildir is never"
            f" created. Create that folder (an empty one is made a Maildir) or fix {where}.",
            details,
        )

    def _per_account(self, name: str, suffix: str = "") -> str:
        """`name` for the default account (the files a single account always used), else `name-<account>`."""
        return f"{name}{suffix}" if self.account == DEFAULT_ACCOUNT else f"{name}-{self.account}{suffix}"

    @property
    def effective_mode(self) -> MailMode:
        if self.mode is not None:
            return self.mode
        return "send" if self.backend == "maildir" else "draft_only"

    @property
    def read_only(self) -> bool:
        """MAIL_MODE=read_only (every account's mode, with MAIL_ACCOUNTS): only the reading tools are
        offered (`servers.keep_read_only`). An account that is read-only among others refuses
        changes in the service."""
        try:
            accounts = self.account_settings()
        except BadRequest:
            return self.effective_mode == "read_only"
        return all(a.effective_mode == "read_only" for a in accounts.values())

    read_only_switch: ClassVar[str] = "MAIL_MODE=read_only"
    """The setting named when a changing tool is called in read-only mode."""

    @property
    def attachment_roots(self) -> dict[str, Path]:
        """The folders outgoing attachments may come from, by the first part of their path."""
        return {"documents": self.documents, "vault": self.vault}

    @property
    def audit_folder(self) -> Path:
        return self.vault / "Logs"

    @property
    def index_path(self) -> Path:
        return self.index_folder / self._per_account("mail", ".sqlite3")

    @property
    def state_path(self) -> Path:
        """The send journal (idempotency keys); user data, not a rebuildable index."""
        return self.workspace / ".deskmcp" / self._per_account("mail-sends", ".sqlite3")

    def account_settings(self) -> dict[str, MailSettings]:
        """Every account by name, the first one the default: those of MAIL_ACCOUNTS, or this one alone.
        An account starts from these settings (the MAIL_* variables are every account's defaults) and
        changes what its entry sets, except that a user and password go only to the host they were
        configured for: an account naming an SMTP or IMAP host other than MAIL_SMTP_HOST /
        MAIL_IMAP_HOST gets neither MAIL_*_USER nor MAIL_*_PASSWORD, only what its entry gives.
        A configuration that cannot be read is a `bad_request`."""
        if not self.accounts.strip():
            return {self.account: self}
        accounts: dict[str, MailSettings] = {}
        for entry in _account_entries(self.accounts):
            update: dict[str, Any] = entry.model_dump(
                exclude_unset=True, exclude={"smtp_password_env", "imap_password_env"}
            )
            for kind in ("smtp", "imap"):
                variable = getattr(entry, f"{kind}_password_env")
                if variable is None and self._other_host(entry, kind):
                    update[f"{kind}_password"] = None
                    update.setdefault(f"{kind}_user", None)
                if variable is not None:
                    password = environment_variable(variable)
                    if password is None:
                        raise BadRequest(
                            f"Mail account {entry.name!r}: {kind}_password_env names {variable}, which is not set."
                            f" Set it, or leave {kind}_password_env out to use the OS keyring.",
                            {"account": entry.name, "variable": variable},
                        )
                    update[f"{kind}_password"] = SecretStr(password)
            update["account"] = update.pop("name")
            update["accounts"] = ""
            accounts[entry.name] = self.model_copy(update=update)
        return accounts

    def password_variables(self) -> list[str]:
        """The environment variables MAIL_ACCOUNTS' entries take passwords from (`*_password_env`)."""
        if not self.accounts.strip():
            return []
        return [
            variable
            for entry in _account_entries(self.accounts)
            for variable in (entry.smtp_password_env, entry.imap_password_env)
            if variable is not None
        ]

    def _other_host(self, entry: AccountEntry, kind: str) -> bool:
        """Whether `entry` names a `kind` (smtp, imap) host other than the one MAIL_* configured."""
        host: str | None = getattr(entry, f"{kind}_host")
        own: str | None = getattr(self, f"{kind}_host")
        return host is not None and host.strip().lower() != (own or "").strip().lower()


class AccountEntry(BaseModel):
    """One entry of MAIL_ACCOUNTS: a name and the settings a single account has (without MAIL_);
    what it leaves out comes from the MAIL_* variables, save a user and password for a host other
    than theirs. Passwords are never written here: each comes from the environment variable
    `*_password_env` names, else from the OS keyring."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=ACCOUNT_NAME)
    backend: Literal["maildir", "imap", "gmail"] = "maildir"
    maildir: OptionalPath = None
    address: str = "me@localhost"
    display_name: str = ""
    smtp_host: str | None = None
    smtp_port: int | None = None
    smtp_user: str | None = None
    smtp_password_env: str | None = None
    smtp_security: Literal["starttls", "ssl", "none"] = "starttls"
    imap_host: str | None = None
    imap_port: int | None = None
    imap_user: str | None = None
    imap_password_env: str | None = None
    imap_security: Literal["ssl", "starttls", "none"] = "ssl"
    imap_sent_copy: bool = True
    mode: MailMode | None = None
    allowed_recipients: str = ""
    max_recipients: int = Field(default=20, ge=1)
    google_token_file: OptionalPath = None


def _account_entries(value: str) -> list[AccountEntry]:
    """The entries of a MAIL_ACCOUNTS value: inline JSON, or a .json / .toml file. Either holds a list
    of objects with a `name`, or an object of name -> settings (optionally under `accounts`)."""
    text = value.strip()
    try:
        if text.startswith(("[", "{")):
            data: Any = json.loads(text)
        else:
            path = expand(text)
            raw = path.read_text(encoding="utf-8")
            data = tomllib.loads(raw) if path.suffix.lower() == ".toml" else json.loads(raw)
    except OSError as exc:
        raise BadRequest(
            f"MAIL_ACCOUNTS names the file {text}, which cannot be read ({exc.strerror}). Give inline JSON"
            " or the path of a .json or .toml file.",
            {"variable": "MAIL_ACCOUNTS"},
        ) from exc
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        raise BadRequest(f"MAIL_ACCOUNTS is not valid JSON or TOML: {exc}.", {"variable": "MAIL_ACCOUNTS"}) from exc
    if isinstance(data, dict) and set(data) == {"accounts"}:
        data = data["accounts"]
    if isinstance(data, dict):
        data = [
            {"name": name, **entry} if isinstance(entry, dict) else {"name": name, "invalid": entry}
            for name, entry in data.items()
        ]
    if not isinstance(data, list) or not data:
        raise BadRequest(
            "MAIL_ACCOUNTS must hold at least one account: a list of objects with a name, or an object of"
            ' name -> settings, e.g. {"work": {"backend": "imap", "imap_host": "imap.example.org"}}.',
            {"variable": "MAIL_ACCOUNTS"},
        )
    entries: list[AccountEntry] = []
    for index, item in enumerate(data):
        try:
            entry = AccountEntry.model_validate(item)
        except ValidationError as exc:
            name = item.get("name") if isinstance(item, dict) else None
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'entry'}: {e['msg']}" for e in exc.errors())
            raise BadRequest(
                f"MAIL_ACCOUNTS account {name or index!r} is not valid ({problems}). Each account takes"
                f" name and the MAIL_* settings in lower case without MAIL_: {', '.join(AccountEntry.model_fields)}.",
                {"variable": "MAIL_ACCOUNTS", "account": name or index},
            ) from exc
        if any(e.name == entry.name for e in entries):
            raise BadRequest(
                f"MAIL_ACCOUNTS names the account {entry.name!r} twice; give each account its own name.",
                {"variable": "MAIL_ACCOUNTS", "account": entry.name},
            )
        entries.append(entry)
    return entries
