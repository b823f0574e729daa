"""Each user their own deskmcp: one workspace, one composition and one MCP session manager per user.

With a users root configured (`DESKMCP_USERS_ROOT`), the principal a request was verified for
(`deskmcp.core.principal`) selects the workspace `<users root>/<principal.key>/`: indexes,
vault, documents, mail, spreadsheets, the Google token and the send journal all live there. Its
settings come from the file `settings.env` in that workspace (KEY=VALUE lines, the variable
names of the single-user setup, read as data: nothing in them is expanded from this process's
environment), never from the process environment, whose values every user would otherwise share;
a user may set only what `user_keys()` lists, and only the deployment-wide `DESKMCP_TOOLSETS`, `DESKMCP_TOOL_NAMES`,
`DESKMCP_OUTPUT_SCHEMAS`, `DESKMCP_MAX_FILE_CHARS` and `DESKMCP_TIMEZONE` are taken from it. Every folder
and file a user's settings name must lie inside that user's workspace after symlinks (`confine`);
team folders (`DESKMCP_TEAM_FOLDERS`) are the one exception, shown to each user as extra
documents folders that the documents tools may not write into.

`UserDispatcher` is the ASGI app in front of `/mcp` and the tool API: for each principal it
builds that user's own `DeskServer` (so no session id, cursor, cache or index is ever shared
between users), runs its session manager in a task of its own, and keeps at most
`DESKMCP_USERS_LIVE` of them alive, closing the least recently used idle one cleanly (its
sessions end, its services close their indexes). Routing happens here, per request, because a
principal bound later (inside a tool) would not reach the task of an MCP session already running.

The orchestrator is not offered per user: it starts mail and vault servers as subprocesses of
this machine's environment.
"""

from __future__ import annotations

import logging
import os
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Annotated, Any

import anyio
import anyio.to_thread
from pydantic import AliasChoices, Field, ValidationError, field_validator
from pydantic_settings import NoDecode
from starlette.types import ASGIApp, Receive, Scope, Send

from deskmcp.core.config import WorkspaceSettings, expand, literal_paths
from deskmcp.core.errors import AuthRequired, BadRequest, DeskError, PermissionDenied
from deskmcp.core.files import PRIVATE_FOLDER
from deskmcp.core.principal import Principal, current_principal
from deskmcp.core.settings import Settings, current_name, env_alias
from deskmcp.gateway import Composition, compose
from deskmcp.google.auth import GoogleSettings
from deskmcp.google.sealed_tokens import SealingKeys
from deskmcp.servers import SERVERS, ServerSpec
from deskmcp.serving.responses import error_response

log = logging.getLogger("deskmcp.serving.users")

SETTINGS_FILE = "settings.env"
"""A user's own settings, in their workspace."""

PER_USER_SERVERS = tuple(name for name in SERVERS if name != "orchestrator")

DEPLOYMENT_FIELDS = ("tool_names", "toolsets", "output_schemas", "max_chars", "timezone")
"""Settings every user takes from the process environment: how tools are published, not whose data."""

DEPLOYMENT_GOOGLE_FIELDS = (
    "google_client_secrets",
    "google_client_id",
    "google_client_secret",
    "google_token_database",
    "google_token_keys",
)
"""The deployment's Google OAuth client and token database, the same for every user."""

FORBIDDEN_KEYS = frozenset(
    {
        "DESKMCP_WORKSPACE",
        "workspace",
        "DESKMCP_USERS_ROOT",
        "DESKMCP_DATABASE_URL",
        "DESKMCP_TOKEN_KEYS",
        *DEPLOYMENT_GOOGLE_FIELDS,
        "google_token_principal",
        "database_url",
        "DESKMCP_GOOGLE_TOKEN_PRINCIPAL",
        "google_use_adc",
        "GOOGLE_USE_ADC",
        "relative_paths",
        "DESKMCP_RELATIVE_PATHS",
        "git_public_only",
        "DIAGRAMS_GIT_PUBLIC_ONLY",
    }
)
"""Keys a `settings.env` may never set: who the user is, where their data lives, the deployment's
secrets, this machine's own Google credentials (application default credentials), whether answers show the
server's full paths (they never do to a user: `WorkspaceSettings.relative_paths`), and whether
clones may reach non-public addresses (a user's never do: `git_public_only`)."""

USER_FILE_SCHEMES = frozenset({"file"})
"""Clone URL schemes that reach files of this machine, refused in a user's DIAGRAMS_GIT_ALLOWED_SCHEMES."""


class UsersSettings(Settings):
    """Environment: `DESKMCP_USERS_ROOT`, `DESKMCP_USERS_LIVE`, `DESKMCP_TEAM_FOLDERS`."""

    users_root: Path | None = Field(
        default=None,
        validation_alias=env_alias("users_root", "DESKMCP_USERS_ROOT"),
        description="Folder of the users' workspaces, one per verified principal; unset: one user.",
    )
    live: int = Field(
        default=16,
        ge=1,
        validation_alias=env_alias("live", "DESKMCP_USERS_LIVE"),
        description="Most users whose servers are kept running; the least recently used idle one is closed.",
    )
    team_folders: Annotated[tuple[Path, ...], NoDecode] = Field(
        default=(),
        validation_alias=env_alias("team_folders", "DESKMCP_TEAM_FOLDERS"),
        description="Folders every user may read (extra documents folders, never written into), "
        "separated by the OS path separator.",
    )

    @field_validator("users_root", mode="before")
    @classmethod
    def _expand(cls, value: object) -> object:
        if isinstance(value, str):
            return expand(value) if value else None
        return value

    @field_validator("team_folders", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        if isinstance(value, str):
            value = value.split(os.pathsep)
        if isinstance(value, list | tuple):
            return tuple(expand(str(v).strip()).resolve() for v in value if str(v).strip())
        return value


# -- one user's settings --------------------------------------------------------------------


def user_workspace(root: Path, principal: Principal) -> Path:
    """`<root>/<principal.key>`, created private on first use."""
    workspace = root / principal.key
    workspace.mkdir(mode=PRIVATE_FOLDER, parents=True, exist_ok=True)
    return workspace


def _names(cls: type[Any], fields: Iterable[str] | None = None) -> set[str]:
    """The names `cls` takes its `fields` (all by default) by: each field's name and its aliases."""
    names: set[str] = set()
    for name, info in cls.model_fields.items():
        if fields is not None and name not in fields:
            continue
        names.add(name)
        alias = info.validation_alias
        if isinstance(alias, str):
            names.add(alias)
        elif isinstance(alias, AliasChoices):
            names.update(choice for choice in alias.choices if isinstance(choice, str))
    return names


@cache
def deployment_keys() -> frozenset[str]:
    """The keys of the settings every user takes from the deployment (`DEPLOYMENT_FIELDS`)."""
    return frozenset(_names(WorkspaceSettings, DEPLOYMENT_FIELDS))


@cache
def user_keys() -> frozenset[str]:
    """The keys a `settings.env` may set: those of the per-user servers' settings, less the
    deployment's and the forbidden ones."""
    names: set[str] = set()
    for server in PER_USER_SERVERS:
        names |= _names(SERVERS[server].load().Settings)
    return frozenset(names - deployment_keys() - FORBIDDEN_KEYS)


def read_user_settings(workspace: Path) -> dict[str, str]:
    """The user's `settings.env` (KEY=VALUE lines), or nothing when there is none. Its values are
    data: `${VAR}` is kept as written (never this process's environment), and only `user_keys()`
    may be set."""
    from dotenv import dotenv_values

    path = workspace / SETTINGS_FILE
    if not path.is_file():
        return {}
    read = dotenv_values(path, encoding="utf-8", interpolate=False)
    # A name from before its package's prefix is read as the new one (with the deprecation line).
    values = {current_name(k): v for k, v in read.items() if v is not None}
    refused = sorted(FORBIDDEN_KEYS & values.keys())
    if refused:
        raise PermissionDenied(
            f"{SETTINGS_FILE} may not set {', '.join(refused)}: a user's workspace is chosen by who they are, "
            "and the deployment's secrets and credentials are not theirs.",
            {"keys": refused},
        )
    deployment = sorted(deployment_keys() & values.keys())
    if deployment:
        raise PermissionDenied(
            f"{SETTINGS_FILE} may not set {', '.join(deployment)}: how tools are published is the same for "
            "every user of this server. Remove those lines.",
            {"keys": deployment},
        )
    unknown = sorted(values.keys() - user_keys())
    if unknown:
        raise BadRequest(
            f"{SETTINGS_FILE} sets {', '.join(unknown)}, which no server reads. Remove those lines, or fix "
            "their names (the variables of a one-person setup, e.g. VAULT_PATH, MAIL_ADDRESS).",
            {"keys": unknown},
        )
    return values


_ISOLATED: dict[type, type] = {}


def isolated(cls: type[WorkspaceSettings]) -> type[WorkspaceSettings]:
    """`cls` reading only the values it is given: no environment variable, no .env file."""
    if cls not in _ISOLATED:

        def sources(_cls: type, settings_cls: type, init_settings: Any, **_others: Any) -> tuple[Any, ...]:
            return (init_settings,)

        _ISOLATED[cls] = type(f"User{cls.__name__}", (cls,), {"settings_customise_sources": classmethod(sources)})
    return _ISOLATED[cls]


def user_settings(
    spec: ServerSpec,
    workspace: Path,
    values: dict[str, str],
    team_folders: tuple[Path, ...] = (),
    principal: Principal | None = None,
) -> Any:
    """Server `spec`'s settings for the user of `workspace`, confined to it (`confine`). A server
    using Google gets the deployment's OAuth client and token database, and `principal` as the
    owner of its token (`deskmcp.google.sealed_tokens`)."""
    return settings_of(spec.load().Settings, spec.name, workspace, values, team_folders, principal)


def settings_of(
    cls: type[Any],
    name: str,
    workspace: Path,
    values: dict[str, str],
    team_folders: tuple[Path, ...] = (),
    principal: Principal | None = None,
) -> Any:
    """`user_settings` for any settings class (`name` says whose, in messages). The values are read
    as data (`literal_paths`: no `~` nor `$VAR` taken from this process)."""
    with literal_paths():
        return _settings_of(cls, name, workspace, values, team_folders, principal)


def _granola_source(values: dict[str, str]) -> dict[str, str]:
    """A user's meetings come from their own API key or their own cache folder: the hosted Granola
    MCP server's sign-in is kept in this machine's folder, so it is its OS user's, never a user's."""
    chosen = next((values[k] for k in ("GRANOLA_SOURCE", "source") if k in values), "auto").strip().lower()
    if chosen == "mcp":
        raise PermissionDenied(
            f"GRANOLA_SOURCE=mcp in {SETTINGS_FILE} is not offered on a shared server: its sign-in would be "
            "this machine's. Set GRANOLA_API_KEY (a key from Granola's Settings -> API) instead.",
            {"setting": "GRANOLA_SOURCE", "file": SETTINGS_FILE},
        )
    if chosen == "auto":
        has_key = any(values.get(k, "").strip() for k in ("GRANOLA_API_KEY", "api_key"))
        return {"source": "api" if has_key else "cache"}
    return {}


def _settings_of(
    cls: type[Any],
    name: str,
    workspace: Path,
    values: dict[str, str],
    team_folders: tuple[Path, ...],
    principal: Principal | None,
) -> Any:
    deployment = WorkspaceSettings()
    given: dict[str, Any] = {name: getattr(deployment, name) for name in DEPLOYMENT_FIELDS}
    allowed: dict[str, tuple[Path, ...]] = {}
    if issubclass(cls, GoogleSettings):
        google = GoogleSettings()
        given.update({name: getattr(google, name) for name in DEPLOYMENT_GOOGLE_FIELDS})
        if google.google_client_secrets is not None:
            allowed["google_client_secrets"] = (google.google_client_secrets.resolve(),)
        if principal is not None:
            given["google_token_principal"] = (principal.issuer, principal.subject)
        if "database_url" in cls.model_fields:  # the send journal, in the same database
            given["database_url"] = google.google_token_database
    given.update(values)
    given["workspace"] = workspace
    given["relative_paths"] = True  # a user never learns where the server keeps its users
    if "os_keyring" in cls.model_fields:  # the keyring is this server's OS user's, not theirs
        given["os_keyring"] = False
    if "git_public_only" in cls.model_fields:  # a user's clones never reach this server's own network
        given["git_public_only"] = True
    if name == "meetings" and not {"cache_path", "GRANOLA_CACHE_PATH"} & values.keys():
        given["cache_path"] = workspace / "granola"  # never the Granola app folder of this machine
    if name == "meetings":  # a user's GRANOLA_API_KEY is sent to Granola's own API only
        given.pop("GRANOLA_API_URL", None)
        given.pop("api_url", None)
        if source := _granola_source(values):
            given.pop("GRANOLA_SOURCE", None)
            given.update(source)
    if name == "documents" and team_folders:
        given["extra_roots"] = (*_paths_of(values.get("DOCUMENTS_EXTRA_ROOTS")), *team_folders)
        given["read_only_roots"] = team_folders
    try:
        settings = isolated(cls)(**given)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'value'}: {e['msg']}" for e in exc.errors())
        raise BadRequest(
            f"The {name} settings in {SETTINGS_FILE} are invalid ({problems}); fix that file.",
            {"server": name, "file": SETTINGS_FILE},
        ) from None
    if name == "documents":
        allowed.update(dict.fromkeys(("extra_roots", "read_only_roots", "read_only_folders"), team_folders))
    _confine_accounts_file(settings, workspace)
    confine(settings, workspace, allowed)
    schemes = {
        s.strip().lower().removesuffix("://") for s in str(getattr(settings, "git_allowed_schemes", "")).split(",")
    }
    if schemes & USER_FILE_SCHEMES:
        raise PermissionDenied(
            "DIAGRAMS_GIT_ALLOWED_SCHEMES in a user's settings may not list file: a file:// clone URL reads "
            "folders of this server, other users' included. Clone over https.",
            {"setting": "DIAGRAMS_GIT_ALLOWED_SCHEMES"},
        )
    if "password_env" in str(getattr(settings, "accounts", "")):
        raise PermissionDenied(
            "MAIL_ACCOUNTS in a user's settings may not name *_password_env: those read this server's own "
            "environment. Write the account's password as its MAIL_*_PASSWORD setting instead.",
            {"setting": "MAIL_ACCOUNTS"},
        )
    return settings


def _confine_accounts_file(settings: Any, workspace: Path) -> None:
    """MAIL_ACCOUNTS naming a file: that file must be inside the workspace, as any path setting."""
    accounts = str(getattr(settings, "accounts", "") or "").strip()
    if not accounts or accounts.startswith(("[", "{")):
        return
    path = Path(accounts)
    # `$` too: the mail server reads the file later, expanding `$VARS` from this process's environment.
    if "$" in accounts or not path.is_absolute() or not path.resolve().is_relative_to(workspace.resolve()):
        raise PermissionDenied(
            "MAIL_ACCOUNTS in a user's settings names a file outside their workspace; give inline JSON, or "
            "the absolute path of a file inside it.",
            {"setting": "MAIL_ACCOUNTS"},
        )


def _paths_of(value: str | None) -> list[Path]:
    return [Path(part.strip()) for part in (value or "").split(os.pathsep) if part.strip()]


def _named_paths(settings: Any) -> Iterator[tuple[str, Path, bool]]:
    """(setting, path, relative allowed) for every path a settings object holds or derives."""
    fields = type(settings).model_fields
    for name, info in fields.items():
        value = getattr(settings, name)
        values = value if isinstance(value, list | tuple) else [value]
        relative_ok = isinstance(info.default, Path) and not info.default.is_absolute()
        for item in values:
            if isinstance(item, Path):
                yield name, item, relative_ok
    for name in dir(type(settings)):
        if not name.startswith("_") and isinstance(getattr(type(settings), name, None), property):
            try:
                value = getattr(settings, name)
            except (DeskError, OSError, ValueError):
                continue
            for item in value if isinstance(value, list | tuple) else [value]:
                if isinstance(item, Path):
                    yield name, item, False


def confine(settings: Any, workspace: Path, allowed: dict[str, tuple[Path, ...]] | None = None) -> None:
    """Refuse settings naming a path outside `workspace` (after symlinks), other than the deployment's
    own (`allowed`: setting -> paths, e.g. the team folders as read-only documents roots), and
    relative paths that would be read from the server's working folder."""
    allowed = allowed or {}
    home = workspace.resolve()
    objects: list[Any] = [settings]
    if hasattr(settings, "account_settings"):
        objects += list(settings.account_settings().values())
    for each in objects:
        for name, path, relative_ok in _named_paths(each):
            if not path.is_absolute():
                if relative_ok and ".." not in path.parts:
                    continue
                raise PermissionDenied(
                    f"The setting {name} is the relative path {path}; in a user's settings every path is "
                    f"absolute and inside their workspace.",
                    {"setting": name},
                )
            resolved = path.resolve()
            if resolved.is_relative_to(home):
                continue
            if resolved in allowed.get(name, ()):
                continue
            raise PermissionDenied(
                f"The setting {name} names {path}, outside this user's workspace; a user's settings may only "
                f"name folders inside it.",
                {"setting": name},
            )


def compose_for(
    principal: Principal,
    settings: UsersSettings,
    *,
    name: str = "deskmcp",
    toolsets: str | None = None,
    request_state_security: Any = None,
) -> Composition:
    """The composition of `principal`'s own servers, on their own workspace and settings;
    `request_state_security` is the key ring replicas share (`deskmcp.serving.replicas`)."""
    assert settings.users_root is not None
    workspace = user_workspace(settings.users_root, principal)
    values = read_user_settings(workspace)
    return compose(
        [SERVERS[n] for n in PER_USER_SERVERS],
        workspace=workspace,
        name=name,
        toolsets=toolsets,
        request_state_security=request_state_security,
        settings_for=lambda spec: user_settings(spec, workspace, values, settings.team_folders, principal),
    )


def google_settings(principal: Principal, settings: UsersSettings) -> GoogleSettings:
    """The Google settings of `principal` (their token's store), for the sign-in routes."""
    assert settings.users_root is not None
    workspace = user_workspace(settings.users_root, principal)
    return settings_of(GoogleSettings, "google", workspace, read_user_settings(workspace), (), principal)


def state_keys() -> SealingKeys:
    """The keys sealing the Google sign-in state: DESKMCP_TOKEN_KEYS, else one key of this process
    (a sign-in must then come back to the process that began it)."""
    configured = GoogleSettings().google_token_keys
    if configured is not None:
        return SealingKeys.parse(configured.get_secret_value())
    return SealingKeys({"process": os.urandom(32)}, "process")


# -- the dispatcher -------------------------------------------------------------------------


UserAppFactory = Callable[[Principal], tuple[ASGIApp, Callable[[], AbstractAsyncContextManager[Any]]]]
"""Builds one user's ASGI app and the context its session manager runs in."""


@dataclass
class _Live:
    key: str
    app: ASGIApp
    busy: int = 0
    stop: anyio.Event = field(default_factory=anyio.Event)
    stopped: anyio.Event = field(default_factory=anyio.Event)
    ready: anyio.Event = field(default_factory=anyio.Event)
    failed: BaseException | None = None


class UserDispatcher:
    """ASGI: each request goes to the app of the principal it was verified for (see the module
    docstring). Requests without a principal are refused with auth_required."""

    def __init__(self, build: UserAppFactory, *, live: int = 16, stream_path: str = "/mcp") -> None:
        self.build = build
        self.live = live
        self.stream_path = stream_path
        """`GET` here is an MCP client's standing event stream: open for as long as the client is,
        so it does not keep its user busy (a user holding only streams is closed like an idle one,
        which ends the streams; the client reconnects and the user's servers are built again)."""
        self._users: OrderedDict[str, _Live] = OrderedDict()
        self._lock = anyio.Lock()
        self._builds = anyio.CapacityLimiter(1)
        self._tasks: anyio.abc.TaskGroup | None = None

    @property
    def running(self) -> list[str]:
        """The keys of the users whose servers are running, least recently used first."""
        return list(self._users)

    @asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        """The dispatcher's lifetime (the HTTP app's lifespan): every user's server stops at its end."""
        async with anyio.create_task_group() as tasks:
            self._tasks = tasks
            try:
                yield
            finally:
                for user in list(self._users.values()):
                    user.stop.set()
                self._users.clear()
                self._tasks = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        principal = current_principal()
        if principal is None:
            denied = AuthRequired("This server keeps each user's own data: send an access token that names you.")
            await error_response(denied)(scope, receive, send)
            return
        standing = scope.get("method") == "GET" and scope.get("path", "").rstrip("/") == self.stream_path
        try:
            user = await self._user(principal, busy=not standing)
        except DeskError as exc:
            await error_response(exc)(scope, receive, send)
            return
        try:
            await user.app(scope, receive, send)
        finally:
            if not standing:
                user.busy -= 1

    async def _user(self, principal: Principal, *, busy: bool = True) -> _Live:
        if self._tasks is None:
            raise RuntimeError("UserDispatcher.run() is not running")
        async with self._lock:
            user = self._users.get(principal.key)
            new = user is None
            if user is None:
                user = _Live(principal.key, _unbuilt)
                self._users[principal.key] = user
            self._users.move_to_end(principal.key)
            user.busy += busy
            self._evict()
        if new:
            await self._build(user, principal)
        await user.ready.wait()
        if user.failed is not None:
            user.busy -= busy
            raise user.failed
        return user

    async def _build(self, user: _Live, principal: Principal) -> None:
        """Build `user`'s app in a worker thread, one user at a time: reading their settings and
        registering their servers takes a good part of a second, during which this process's
        event loop goes on answering everyone else (and the proxy's health checks, which would
        otherwise find a replica that a crowd of new users keeps busy dead). No index is opened yet."""
        assert self._tasks is not None
        try:
            app, lifespan = await anyio.to_thread.run_sync(self.build, principal, limiter=self._builds)
        except Exception as exc:  # the requests waiting for this user report it
            if not isinstance(exc, DeskError):  # a user's own settings mistake is theirs to read
                log.exception("the servers of user %s could not be built", user.key)
            user.failed = exc
            if self._users.get(user.key) is user:
                del self._users[user.key]
            user.ready.set()
            user.stopped.set()
            return
        user.app = app
        self._tasks.start_soon(self._serve, user, lifespan)

    def _evict(self) -> None:
        """Close the least recently used idle users beyond `live` (busy ones are kept until idle)."""
        for key in list(self._users):
            if len(self._users) <= self.live:
                return
            user = self._users[key]
            if user.busy == 0:
                del self._users[key]
                user.stop.set()
                log.info("closed the servers of user %s (least recently used)", key)

    async def _serve(self, user: _Live, lifespan: Callable[[], AbstractAsyncContextManager[Any]]) -> None:
        try:
            async with lifespan():
                user.ready.set()
                await user.stop.wait()
        except Exception as exc:  # the outermost handler of this user's task: the request reports it
            log.exception("the servers of user %s failed", user.key)
            user.failed = exc
            self._users.pop(user.key, None)
        finally:
            user.ready.set()
            user.stopped.set()


async def _unbuilt(scope: Scope, receive: Receive, send: Send) -> None:
    """The app of a user whose own is still being built (never called: requests wait until it is)."""
    raise RuntimeError("a user's app was called before it was built")
