"""Configuration of the triage orchestrator."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr

from deskmcp.core.config import env_alias
from deskmcp.core.settings import deprecated
from deskmcp.core.shared_settings import RecipientSettings, VaultFolderSettings

DeciderName = Literal["rules", "llm", "assistant"]

DEFAULT_QUERY = "in:inbox newer_than:7d -label:AI_PROCESSED"
"""The last week of the inbox: a first run does not draft replies to years of old mail."""


class OrchestratorSettings(VaultFolderSettings, RecipientSettings):
    """Environment: `ORCHESTRATOR_*`, `OPENAI_*` (for the LLM decider); `VAULT_PATH`, and
    `MAIL_ALLOWED_RECIPIENTS` (read by the mail server the replies go through, and, while
    `ORCHESTRATOR_TRUSTED_RECIPIENTS` is unset, in its place until the next release); plus the workspace's."""

    decider: DeciderName = Field(
        default="rules",
        validation_alias=env_alias("decider", "ORCHESTRATOR_DECIDER"),
        description="Who decides: 'rules' (triage-rules.yaml), 'llm' (chat completions) or 'assistant' (MCP tools).",
    )
    mcp_url: str | None = Field(
        default=None,
        validation_alias=env_alias("mcp_url", "ORCHESTRATOR_MCP_URL"),
        description="URL of a running `deskmcp serve all --http` (…/mcp); default: start stdio subprocesses.",
    )
    mail_command: str | None = Field(
        default=None,
        validation_alias=env_alias("mail_command", "ORCHESTRATOR_MAIL_COMMAND"),
        description="Command starting the mail server over stdio (default: `deskmcp serve mail`).",
    )
    vault_command: str | None = Field(
        default=None,
        validation_alias=env_alias("vault_command", "ORCHESTRATOR_VAULT_COMMAND"),
        description="Command starting the vault server over stdio (default: `deskmcp serve vault`).",
    )
    call_timeout: float = Field(
        default=30.0,
        gt=0,
        validation_alias=env_alias("call_timeout", "ORCHESTRATOR_CALL_TIMEOUT"),
        description="Seconds one MCP call (or starting a server) may take before it counts as unavailable.",
    )
    poll_seconds: float = Field(
        default=60.0,
        gt=0,
        validation_alias=env_alias("poll_seconds", "ORCHESTRATOR_POLL_SECONDS"),
        description="Seconds between two passes in --watch mode (approvals are picked up at once).",
    )
    query: str = Field(
        default=DEFAULT_QUERY,
        validation_alias=env_alias("query", "ORCHESTRATOR_QUERY"),
        description="Mail search (Gmail syntax) selecting what to ingest.",
    )
    processed_label: str = Field(
        default="AI_PROCESSED",
        validation_alias=env_alias("processed_label", "ORCHESTRATOR_LABEL"),
        description="Label put on ingested mail so it is never ingested twice.",
    )
    batch: int = Field(
        default=25,
        ge=1,
        le=100,
        validation_alias=env_alias("batch", "ORCHESTRATOR_BATCH"),
        description="Most mails ingested in one pass.",
    )
    max_body_chars: int = Field(
        default=20_000,
        ge=500,
        validation_alias=env_alias("max_body_chars", "ORCHESTRATOR_MAX_BODY_CHARS"),
        description="Longest mail text copied into a note (the rest is cut, with a line saying so).",
    )
    trusted_recipients: str | None = Field(
        default=None,
        validation_alias=env_alias("trusted_recipients", "ORCHESTRATOR_TRUSTED_RECIPIENTS"),
        description=(
            "Comma-separated addresses and @domains a reply deskmcp did not draft (or whose recipients were "
            "changed) may still be sent to; empty: such replies are never sent. Unset: MAIL_ALLOWED_RECIPIENTS "
            "in its place, until the next release (with a deprecation warning), else nobody."
        ),
    )
    llm_base_url: str | None = Field(
        default=None,
        validation_alias=env_alias("llm_base_url", "ORCHESTRATOR_LLM_BASE_URL", "OPENAI_BASE_URL"),
        description="OpenAI-compatible API base, e.g. http://localhost:11434/v1 (Ollama).",
    )
    llm_model: str | None = Field(
        default=None,
        validation_alias=env_alias("llm_model", "ORCHESTRATOR_LLM_MODEL", "OPENAI_MODEL"),
        description="Model name for the LLM decider.",
    )
    llm_api_key: SecretStr | None = Field(
        default=None,
        validation_alias=env_alias("llm_api_key", "ORCHESTRATOR_LLM_API_KEY", "OPENAI_API_KEY"),
        description="API key for the LLM decider (not needed for local servers).",
    )
    llm_timeout: float = Field(
        default=60.0,
        gt=0,
        validation_alias=env_alias("llm_timeout", "ORCHESTRATOR_LLM_TIMEOUT"),
        description="Seconds one LLM answer may take; a slower one leaves the item pending.",
    )

    @property
    def trusted(self) -> tuple[str, ...]:
        """The addresses and @domains a reply deskmcp did not draft may still go to: those of
        ORCHESTRATOR_TRUSTED_RECIPIENTS; while it is unset, those of MAIL_ALLOWED_RECIPIENTS, as
        before that name had one meaning, said once per process (the safe default stays: nobody)."""
        if self.trusted_recipients is not None:
            return tuple(p.strip().lower() for p in self.trusted_recipients.split(",") if p.strip())
        if self.allowlist:
            deprecated(
                "orchestrator:MAIL_ALLOWED_RECIPIENTS",
                "MAIL_ALLOWED_RECIPIENTS as the recipients of replies the orchestrator did not draft is deprecated "
                "and will stop working in the next release (it will only limit where mail may go): set "
                "ORCHESTRATOR_TRUSTED_RECIPIENTS instead (empty: nobody).",
            )
        return self.allowlist

    @property
    def root(self) -> Path:
        return self.vault

    def server_command(self, name: Literal["mail", "vault"]) -> list[str]:
        configured = self.mail_command if name == "mail" else self.vault_command
        if configured:
            return shlex.split(configured)
        return [sys.executable, "-m", "deskmcp.cli", "serve", name]
