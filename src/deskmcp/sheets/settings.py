"""Configuration of the sheets server."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, ClassVar, Literal

from pydantic import BeforeValidator, Field
from pydantic_settings import NoDecode

from deskmcp.core.config import OptionalPath, env_alias, expand
from deskmcp.google.auth import GoogleSettings
from deskmcp.sheets.formulas.budget import DEFAULT_CELLS


def _path_list(value: object) -> object:
    if isinstance(value, str):
        return [expand(p.strip()) for p in value.replace(";", ",").split(",") if p.strip()]
    return value


class SheetsSettings(GoogleSettings):
    """Environment: `SHEETS_BACKEND`, `SHEETS_PATH`, `SHEETS_FOLDERS`, `SHEETS_READ_ONLY`,
    `SHEETS_REQUESTS_PER_MINUTE`, `SHEETS_MAX_CELLS`, `SHEETS_FORMULA_BUDGET_CELLS`,
    `SHEETS_CSV_ESCAPE_FORMULAS`, plus the Google and
    workspace settings."""

    backend: Literal["local", "google"] = Field(
        default="local",
        validation_alias=env_alias("backend", "SHEETS_BACKEND"),
        description="'local' (workbook files, offline) or 'google' (Google Sheets through the API).",
    )
    sheets_path: OptionalPath = Field(
        default=None,
        validation_alias=env_alias("sheets_path", "SHEETS_PATH"),
        description="Folder of local workbooks; new ones are created here (default: <workspace>/sheets).",
    )
    folders: Annotated[list[Path], NoDecode, BeforeValidator(_path_list)] = Field(
        default_factory=list,
        validation_alias=env_alias("folders", "SHEETS_FOLDERS"),
        description="More folders of workbooks, comma-separated; their ids start with the folder's name and ':'.",
    )
    read_only: bool = Field(
        default=False,
        validation_alias=env_alias("read_only", "SHEETS_READ_ONLY"),
        description="Offer only the reading tools (the others answer permission_denied).",
    )
    requests_per_minute: int = Field(
        default=60,
        ge=1,
        validation_alias=env_alias("requests_per_minute", "SHEETS_REQUESTS_PER_MINUTE"),
        description="Client-side limit on Google Sheets API requests (Google's default quota is 60/min/user).",
    )
    fast_writes: bool = Field(
        default=True,
        validation_alias=env_alias("fast_writes", "SHEETS_FAST_WRITES"),
        description="Cell writes patch an .xlsx in place when they can; 0: always load and save it whole (openpyxl).",
    )
    csv_escape_formulas: bool = Field(
        default=True,
        validation_alias=env_alias("csv_escape_formulas", "SHEETS_CSV_ESCAPE_FORMULAS"),
        description="Text written to a .csv that apps would run as a formula gets a leading ' (0: as sent).",
    )
    formula_budget_cells: int = Field(
        default=DEFAULT_CELLS,
        ge=1,
        validation_alias=env_alias("formula_budget_cells", "SHEETS_FORMULA_BUDGET_CELLS"),
        description="Most cells the formulas of one change may read when computed (beyond: left uncomputed, listed).",
    )
    max_cells: int = Field(
        default=2_000_000,
        ge=1_000,
        validation_alias=env_alias("max_cells", "SHEETS_MAX_CELLS"),
        description="Most cells one search scans (beyond: truncated).",
    )

    read_only_switch: ClassVar[str] = "SHEETS_READ_ONLY=1"
    """The setting named when a writing tool is called in read-only mode."""

    @property
    def root(self) -> Path:
        return self.sheets_path or self.workspace / "sheets"
