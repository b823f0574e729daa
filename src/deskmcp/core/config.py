"""Configuration shared by every server: the workspace, the index folder and the time zone.

Each server has one frozen settings class that subclasses `WorkspaceSettings`. Only the CLI
(and tests) build them; servers receive them as arguments.
"""

from __future__ import annotations

from pathlib import Path

import platformdirs
from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

APP_NAME = "deskmcp"


def default_workspace() -> Path:
    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def env_alias(*names: str) -> AliasChoices:
    """Accept the field name (for keyword construction) and the given environment names."""
    return AliasChoices(*names)


def expand(path: Path | str) -> Path:
    import os

    return Path(os.path.expandvars(str(path))).expanduser()


class WorkspaceSettings(BaseSettings):
    """Where deskmcp keeps its data. Environment: `DESKMCP_WORKSPACE`, `DESKMCP_INDEX_DIR`, `DESKMCP_TIMEZONE`."""

    model_config = SettingsConfigDict(env_prefix="DESKMCP_", frozen=True, populate_by_name=True, extra="ignore")

    workspace: Path = Field(
        default_factory=default_workspace,
        validation_alias=env_alias("workspace", "DESKMCP_WORKSPACE"),
        description="Folder holding the vault, documents, mail, spreadsheets and indexes.",
    )
    index_dir: Path | None = Field(
        default=None,
        validation_alias=env_alias("index_dir", "DESKMCP_INDEX_DIR"),
        description="Where search indexes are kept (default: <workspace>/.deskmcp/index).",
    )
    timezone: str | None = Field(
        default=None,
        validation_alias=env_alias("timezone", "DESKMCP_TIMEZONE"),
        description="IANA time zone for day boundaries (default: the system's).",
    )

    @field_validator("workspace", "index_dir", mode="before")
    @classmethod
    def _expand(cls, value: object) -> object:
        if isinstance(value, str | Path):
            return expand(value)
        return value

    @property
    def index_folder(self) -> Path:
        return self.index_dir or self.workspace / ".deskmcp" / "index"
