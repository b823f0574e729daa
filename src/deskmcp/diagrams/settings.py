"""Configuration of the diagrams server."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, model_validator

from deskmcp.core.config import OptionalPath, WorkspaceSettings, env_alias
from deskmcp.core.errors import PermissionDenied


class DiagramsSettings(WorkspaceSettings):
    """Environment: `DIAGRAMS_*` (and `GITHUB_TOKEN`), plus the workspace's (`DESKMCP_MAX_FILE_CHARS`
    bounds reads); the names without the prefix (`PROJECT_ROOT`, `KROKI_BASE_URL`, ...) are still read."""

    project_root: OptionalPath = Field(
        default=None,
        validation_alias=env_alias("project_root", "DIAGRAMS_PROJECT_ROOT", old="PROJECT_ROOT"),
        description="Folder the local source reads (default: <workspace>/project, created when missing).",
    )
    out_dir: Path = Field(
        default=Path("diagrams"),
        validation_alias=env_alias("out_dir", "DIAGRAMS_OUT_DIR", old="DIAGRAM_OUT_DIR"),
        description="Where render_mermaid saves images: a folder inside DIAGRAMS_PROJECT_ROOT (relative to it).",
    )
    kroki_base_url: str | None = Field(
        default=None,
        validation_alias=env_alias("kroki_base_url", "DIAGRAMS_KROKI_URL", old="KROKI_BASE_URL"),
        description="Render through Kroki (e.g. https://kroki.io or a self-hosted one) instead of offline.",
    )
    github_token: str | None = Field(
        default=None,
        validation_alias=env_alias("github_token", "DIAGRAMS_GITHUB_TOKEN", "GITHUB_TOKEN"),
        description="GitHub token (optional; raises the rate limit and reaches private repositories).",
    )
    github_api_url: str = Field(
        default="https://api.github.com",
        validation_alias=env_alias("github_api_url", "DIAGRAMS_GITHUB_API_URL", old="GITHUB_API_URL"),
        description="GitHub REST API base (GitHub Enterprise: https://HOST/api/v3).",
    )
    render_timeout: float = Field(
        default=60.0,
        gt=0,
        validation_alias=env_alias("render_timeout", "DIAGRAMS_RENDER_TIMEOUT", old="DIAGRAM_RENDER_TIMEOUT"),
        description="Seconds one render may take before it is stopped with a timeout error.",
    )
    render_memory_mb: int = Field(
        default=2048,
        ge=256,
        validation_alias=env_alias("render_memory_mb", "DIAGRAMS_RENDER_MEMORY_MB", old="DIAGRAM_RENDER_MEMORY_MB"),
        description="Address-space limit of the render worker process, in MiB.",
    )
    max_png_pixels: int = Field(
        default=16_000_000,
        ge=10_000,
        validation_alias=env_alias("max_png_pixels", "DIAGRAMS_MAX_PNG_PIXELS", old="DIAGRAM_MAX_PNG_PIXELS"),
        description="Largest PNG (width x height); bigger diagrams are scaled down to fit.",
    )
    render_queue: int = Field(
        default=8,
        ge=0,
        validation_alias=env_alias("render_queue", "DIAGRAMS_RENDER_QUEUE", old="DIAGRAM_RENDER_QUEUE"),
        description="Renders and validations that may wait behind the running ones; more are rate_limited.",
    )
    git_cache_ttl: float = Field(
        default=300.0,
        ge=0,
        validation_alias=env_alias("git_cache_ttl", "DIAGRAMS_GIT_CACHE_TTL", old="GIT_CACHE_TTL"),
        description="Seconds a cloned remote repository is used before it is fetched again.",
    )
    git_timeout: float = Field(
        default=60.0,
        gt=0,
        validation_alias=env_alias("git_timeout", "DIAGRAMS_GIT_TIMEOUT"),
        description="Seconds a clone or fetch waits for the remote to connect or to send more data.",
    )
    git_deadline: float = Field(
        default=600.0,
        gt=0,
        validation_alias=env_alias("git_deadline", "DIAGRAMS_GIT_DEADLINE"),
        description="Seconds a whole clone or fetch may take; a remote still sending then is cut off.",
    )
    git_allowed_schemes: str = Field(
        default="https",
        validation_alias=env_alias("git_allowed_schemes", "DIAGRAMS_GIT_ALLOWED_SCHEMES"),
        description="Comma-separated clone URL schemes allowed: https (default), http, git, file "
        "(ssh is accepted but never cloned: the ssh program's connections cannot be checked).",
    )
    git_allowed_hosts: str = Field(
        default="",
        validation_alias=env_alias("git_allowed_hosts", "DIAGRAMS_GIT_ALLOWED_HOSTS"),
        description="Comma-separated hosts (*.example.com) or networks (10.0.0.0/8) that may be cloned from; "
        "empty: any public host. Loopback, private and link-local addresses need an exact entry.",
    )
    git_public_only: bool = Field(
        default=False,
        validation_alias=env_alias("git_public_only", "DIAGRAMS_GIT_PUBLIC_ONLY"),
        description="Clone only from public addresses, whatever DIAGRAMS_GIT_ALLOWED_HOSTS lists (always on for "
        "the users of a shared server: a user cannot make the server reach its own network).",
    )
    git_max_blob_mb: int = Field(
        default=64,
        ge=1,
        validation_alias=env_alias("git_max_blob_mb", "DIAGRAMS_GIT_MAX_BLOB_MB"),
        description="Largest git file rebuilt in memory from a delta to be read (others are streamed).",
    )
    git_cache_repos: int = Field(
        default=20,
        ge=1,
        validation_alias=env_alias("git_cache_repos", "DIAGRAMS_GIT_CACHE_REPOS"),
        description="Most cloned remote repositories kept; the least recently used go first.",
    )
    git_cache_mb: int = Field(
        default=2048,
        ge=1,
        validation_alias=env_alias("git_cache_mb", "DIAGRAMS_GIT_CACHE_MB"),
        description="Most disk the cloned repositories may take together, in MiB; least recently used go first.",
    )
    http_timeout: float = Field(
        default=20.0,
        gt=0,
        validation_alias=env_alias("http_timeout", "DIAGRAMS_HTTP_TIMEOUT"),
        description="Seconds to wait for GitHub or Kroki to answer one request.",
    )
    max_wait: float = Field(
        default=30.0,
        ge=0,
        validation_alias=env_alias("max_wait", "DIAGRAMS_MAX_WAIT"),
        description="Longest wait for a rate limit before answering rate_limited instead.",
    )

    @model_validator(mode="after")
    def _public_hosts_only(self) -> DiagramsSettings:
        """With `git_public_only`, an entry of DIAGRAMS_GIT_ALLOWED_HOSTS naming a loopback, private,
        link-local or unspecified address or network is refused (a name is judged by what it resolves
        to, at each connection)."""
        if self.git_public_only:
            from deskmcp.diagrams.sources.git_remote import non_public_entries

            refused = non_public_entries(self.git_allowed_hosts)
            if refused:
                raise PermissionDenied(
                    f"DIAGRAMS_GIT_ALLOWED_HOSTS in a user's settings may not list {', '.join(refused)}: loopback, "
                    "private, link-local and unspecified addresses are this server's own network. List public "
                    "hosts only.",
                    {"setting": "DIAGRAMS_GIT_ALLOWED_HOSTS", "entries": refused},
                )
        return self

    @property
    def root(self) -> Path:
        return self.project_root or self.workspace / "project"

    @property
    def git_cache(self) -> Path:
        return self.workspace / ".deskmcp" / "git"
