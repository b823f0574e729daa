"""The settings several packages read, each declared once: a server's settings class inherits the
ones it needs, so one environment name has one field, one default and one meaning everywhere.

- `VaultFolderSettings` (`VAULT_PATH`): the vault server's folder, which the documents server keeps
  out of, mail's send audit log goes to and the triage flow lives in;
- `ProtectedFoldersSettings` (`VAULT_PROTECTED_FOLDERS`): the vault's folders no tool writes into;
- `DocumentsFolderSettings` (`DOCUMENTS_PATH`): the documents server's folder, which mail attaches from;
- `RecipientSettings` (`MAIL_ALLOWED_RECIPIENTS`): the only addresses mail may go to;
- `DatabaseSettings` (`DESKMCP_DATABASE_URL`): the PostgreSQL database the processes of one
  deployment share;
- `ServerTokenSettings` (`DESKMCP_TOKEN`): the static bearer token of deskmcp's HTTP server, which
  `serve --http` requires and `deskmcp connect` sends.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr

from deskmcp.core.config import OptionalPath, OptionalText, WorkspaceSettings
from deskmcp.core.protected_folders import TRIAGE_FOLDERS, folder_names
from deskmcp.core.settings import Settings, env_alias


class VaultFolderSettings(WorkspaceSettings):
    """Environment: `VAULT_PATH`, plus the workspace's."""

    vault_path: OptionalPath = Field(
        default=None,
        validation_alias=env_alias("vault_path", "VAULT_PATH"),
        description="The vault folder (default: <workspace>/vault, created when missing; a folder set here is "
        "never created). The documents server never writes into its protected folders, mail writes its send "
        "audit log into its Logs/ and the email triage flow lives in it.",
    )

    @property
    def vault(self) -> Path:
        return self.vault_path or self.workspace / "vault"


class ProtectedFoldersSettings(Settings):
    """Environment: `VAULT_PROTECTED_FOLDERS`."""

    protected_folders: str = Field(
        default=",".join(TRIAGE_FOLDERS),
        validation_alias=env_alias("protected_folders", "VAULT_PROTECTED_FOLDERS"),
        description=(
            "Comma-separated top-level folders of the vault no tool writes into, out of or within (the vault's "
            "writing tools, and the documents server's notes when the vault is one of its roots); default: the "
            "email triage folders, changed only by the triage flow and the person; empty for none."
        ),
    )

    @property
    def protected(self) -> tuple[str, ...]:
        return folder_names(self.protected_folders)


class DocumentsFolderSettings(WorkspaceSettings):
    """Environment: `DOCUMENTS_PATH`, plus the workspace's."""

    documents_path: OptionalPath = Field(
        default=None,
        validation_alias=env_alias("documents_path", "DOCUMENTS_PATH"),
        description="The main documents folder (default: <workspace>/documents, created if missing; a folder set "
        "here is never created), where notes are written and which mail attaches files from.",
    )

    @property
    def documents(self) -> Path:
        return self.documents_path or self.workspace / "documents"


class RecipientSettings(Settings):
    """Environment: `MAIL_ALLOWED_RECIPIENTS`."""

    allowed_recipients: str = Field(
        default="",
        validation_alias=env_alias("allowed_recipients", "MAIL_ALLOWED_RECIPIENTS"),
        description="Comma-separated addresses and @domains mail may go to (To, Cc and Bcc), and the only ones: "
        "mail to them is sent without asking, to anyone else it is refused; empty: no such limit.",
    )

    @property
    def allowlist(self) -> tuple[str, ...]:
        return tuple(p.strip().lower() for p in self.allowed_recipients.split(",") if p.strip())


class DatabaseSettings(Settings):
    """Environment: `DESKMCP_DATABASE_URL`."""

    database_url: OptionalText = Field(
        default=None,
        validation_alias=env_alias("database_url", "DESKMCP_DATABASE_URL"),
        description="PostgreSQL shared by the deskmcp processes of one deployment (replicas, users): mail's send "
        "journal and confirmations, the users' Google tokens (sealed with DESKMCP_TOKEN_KEYS) and the one-time ids "
        "of sign-ins are kept there, so any process agrees; unset: SQLite in each workspace and this process's "
        "memory.",
    )


class ServerTokenSettings(Settings):
    """Environment: `DESKMCP_TOKEN`."""

    token: SecretStr | None = Field(
        default=None,
        validation_alias=env_alias("token", "DESKMCP_TOKEN"),
        description="Static bearer token of deskmcp's HTTP server: `serve --http` requires it on every request "
        "(unset: none on loopback, one generated elsewhere) and `deskmcp connect` sends it when "
        "DESKMCP_REMOTE_TOKEN is unset.",
    )

    @property
    def token_text(self) -> str | None:
        return (self.token.get_secret_value() or None) if self.token is not None else None
