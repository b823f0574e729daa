"""Configuration shared by every server: the workspace, the index folder and the time zone.

Each server has one frozen settings class that subclasses `WorkspaceSettings` (itself a
`deskmcp.core.settings.Settings`, the one way settings are read). Only the CLI (and tests) build
them; servers receive them as arguments.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Annotated, Literal

import platformdirs
from pydantic import BeforeValidator, Field, field_validator

from deskmcp.core.settings import Settings, env_alias

APP_NAME = "deskmcp"


def default_workspace() -> Path:
    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


_LITERAL_PATHS: ContextVar[bool] = ContextVar("deskmcp_literal_paths", default=False)


def expand(path: Path | str) -> Path:
    """`~` and `$VARS` expanded from this process's environment, except inside `literal_paths()`."""
    import os

    if _LITERAL_PATHS.get():
        return Path(str(path))
    return Path(os.path.expandvars(str(path))).expanduser()


@contextmanager
def literal_paths() -> Iterator[None]:
    """Within the block, `expand` takes a path as written: settings that are someone's data (a
    user's `settings.env` on a shared server) never read this process's environment or home."""
    reset = _LITERAL_PATHS.set(True)
    try:
        yield
    finally:
        _LITERAL_PATHS.reset(reset)


def _optional_path(value: object) -> object:
    if isinstance(value, str | Path):
        return expand(value) if str(value) else None
    return value


OptionalPath = Annotated[Path | None, BeforeValidator(_optional_path)]
"""A path setting that may be unset; `~` and `$VARS` are expanded, an empty value means unset."""
OptionalText = Annotated[str | None, BeforeValidator(lambda value: value or None)]
"""A text setting that may be unset; an empty value means unset."""


class WorkspaceSettings(Settings):
    """Where deskmcp keeps its data and how every server publishes its tools (`DESKMCP_*`)."""

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
    max_chars: int = Field(
        default=200_000,
        ge=1_000,
        validation_alias=env_alias("max_chars", "DESKMCP_MAX_FILE_CHARS", old="MAX_FILE_CHARS"),
        description="Longest text one tool answer carries (exports, transcripts, document text).",
    )
    tool_names: Literal["spec", "safe"] = Field(
        default="safe",
        validation_alias=env_alias("tool_names", "DESKMCP_TOOL_NAMES"),
        description="'safe' publishes dotted tool names with underscores, which every client accepts (calls by "
        "the dotted name are answered too); 'spec' publishes them as specified, with dots.",
    )
    toolsets: str = Field(
        default="default",
        validation_alias=env_alias("toolsets", "DESKMCP_TOOLSETS"),
        description="Which tools clients see: default, all, dynamic, server names, toolset ids, -exclusions.",
    )
    output_schemas: bool = Field(
        default=False,
        validation_alias=env_alias("output_schemas", "DESKMCP_OUTPUT_SCHEMAS"),
        description="Publish each tool's output schema in tools/list (results are structured either way).",
    )
    timezone: str | None = Field(
        default=None,
        validation_alias=env_alias("timezone", "DESKMCP_TIMEZONE"),
        description="IANA time zone for day boundaries (default: the system's).",
    )
    relative_paths: bool = Field(
        default=False,
        validation_alias=env_alias("relative_paths", "DESKMCP_RELATIVE_PATHS"),
        description="Answers name folders and files relative to the workspace, never by their full path "
        "(always on for the users of a shared server).",
    )
    embedder: OptionalText = Field(
        default=None,
        validation_alias=env_alias("embedder", "DESKMCP_EMBEDDER"),
        description="Model of the model store that search by meaning uses (`deskmcp models list`); unset: words only.",
    )

    @field_validator("workspace", "index_dir", mode="before")
    @classmethod
    def _expand(cls, value: object) -> object:
        if isinstance(value, str | Path):
            return expand(value)
        return value

    @property
    def shown_root(self) -> Path | None:
        """The folder answers name paths relative to (`core.paths.shown_path`), or None: full paths."""
        return self.workspace if self.relative_paths else None

    @property
    def index_folder(self) -> Path:
        return self.index_dir or self.workspace / ".deskmcp" / "index"
