"""Each user their own deskmcp: one workspace, one composition and one MCP session manager per user.

With a users root configured (`DESKMCP_USERS_ROOT`), the principal a request was verified for
(`deskmcp.core.principal`) selects the workspace `<users root>/<principal.key>/`: every server's
data, indexes, the Google token and the send journal live there. Its settings come from the file
`settings.env` in that workspace (KEY=VALUE lines, the variable names of the single-user setup, read
as data: nothing in them is expanded from this process's environment), never from the process
environment, whose values every user would otherwise share. Each server declares on its module what
a user may set for it and where its data lives (`servers.UserPolicy`, the module's `USERS`); this
module applies those declarations to every server alike and names none. A user may set only what
`user_keys()` lists, and only the deployment-wide `DESKMCP_TOOLSETS`, `DESKMCP_TOOL_NAMES`,
`DESKMCP_OUTPUT_SCHEMAS`, `DESKMCP_MAX_FILE_CHARS` and `DESKMCP_TIMEZONE` are taken from it. Every folder
and file a user's settings name must lie inside that user's workspace after symlinks (`confine`);
team folders (`DESKMCP_TEAM_FOLDERS`) are the one exception, given to the settings each server
declares (`UserPolicy.team_folders`), never written into.

`user_composition` reads a user's settings, builds each offered server's settings from them (or the
error that keeps that server from running) and hands them to `gateway.compose` as data.

`UserDispatcher` is the ASGI app in front of `/mcp` and the tool API: for each principal it
builds that user's own `DeskServer` (so no session id, cursor, cache or index is ever shared
between users), runs its session manager in a task of its own, and keeps at most
`DESKMCP_USERS_LIVE` of them alive, closing the least recently used idle one cleanly (its
sessions end, its services close their indexes). Routing happens here, per request, because a
principal bound later (inside a tool) would not reach the task of an MCP session already running.
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
from typing import TYPE_CHECKING, Annotated, Any

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
from deskmcp.servers import SERVERS, USER_SETTINGS_FILE, RemoteSignIn, ServerSpec, UserPolicy
from deskmcp.serving.responses import error_response

if TYPE_CHECKING:
    from deskmcp.connect.remote_sign_in import RemoteAccount

log = logging.getLogger("deskmcp.serving.users")

SETTINGS_FILE = USER_SETTINGS_FILE
"""A user's own settings, in their workspace."""

NO_POLICY = UserPolicy()
"""The rules every server's settings follow, and all the Google sign-in's settings do."""

DEPLOYMENT_FIELDS = ("tool_names", "toolsets", "output_schemas", "max_chars", "timezone")
"""Settings every user takes from the process environment: how tools are published, not whose data."""

DEPLOYMENT_GOOGLE_FIELDS = (
    "google_client_secrets",
    "google_client_id",
    "google_client_secret",
    "database_url",
    "google_token_keys",
)
"""The deployment's Google OAuth client, its database (the users' tokens and every other store the
processes share) and the keys sealing the tokens, the same for every user."""

FORBIDDEN_KEYS = frozenset(
    {
        "DESKMCP_WORKSPACE",
        "workspace",
        "DESKMCP_USERS_ROOT",
        "DESKMCP_DATABASE_URL",
        "DESKMCP_TOKEN_KEYS",
        *DEPLOYMENT_GOOGLE_FIELDS,
        "google_token_principal",
        "DESKMCP_GOOGLE_TOKEN_PRINCIPAL",
        "google_use_adc",
        "GOOGLE_USE_ADC",
        "relative_paths",
        "DESKMCP_RELATIVE_PATHS",
    }
)
"""Keys a `settings.env` may never set, whichever server reads them: who the user is, where their
data lives, the deployment's secrets, this machine's own Google credentials (application default
credentials), and whether answers show the server's full paths (they never do to a user:
`WorkspaceSettings.relative_paths`). Each server adds its own (`UserPolicy.forbidden`)."""


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
        description="Folders every user may read (extra folders of the servers that take them, never written "
        "into), separated by the OS path separator.",
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


# -- what the servers declare -----------------------------------------------------------------


def policy_of(name: str) -> UserPolicy:
    """Server `name`'s declaration (`USERS`); `NO_POLICY` for settings no server owns."""
    return SERVERS[name].load().USERS if name in SERVERS else NO_POLICY


@cache
def per_user_servers() -> tuple[ServerSpec, ...]:
    """The servers offered to each user, in registry order (those whose policy says `offered`)."""
    return tuple(spec for spec in SERVERS.values() if spec.load().USERS.offered)


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


def _variable(cls: type[Any], name: str) -> str:
    """The environment variable setting `name` of `cls` is read from (its name when it has none), for messages."""
    return next((n for n in sorted(_names(cls, [name])) if n.isupper()), name)


@cache
def deployment_keys() -> frozenset[str]:
    """The keys of the settings every user takes from the deployment (`DEPLOYMENT_FIELDS`)."""
    return frozenset(_names(WorkspaceSettings, DEPLOYMENT_FIELDS))


@cache
def forbidden_keys() -> frozenset[str]:
    """`FORBIDDEN_KEYS` and the names of every setting a server's policy forbids (`UserPolicy.forbidden`)."""
    names = set(FORBIDDEN_KEYS)
    for spec in SERVERS.values():
        module = spec.load()
        names |= _names(module.Settings, module.USERS.forbidden)
    return frozenset(names)


@cache
def user_keys() -> frozenset[str]:
    """The keys a `settings.env` may set: those of the per-user servers' settings, less the
    deployment's and the forbidden ones."""
    names: set[str] = set()
    for spec in per_user_servers():
        names |= _names(spec.load().Settings)
    return frozenset(names - deployment_keys() - forbidden_keys())


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
    refused = sorted(forbidden_keys() & values.keys())
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
            "their names (the variables of a one-person setup).",
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
    """`user_settings` for any settings class: `name` says whose (the server whose policy applies,
    `policy_of`; and in messages). The values are read as data (`literal_paths`: no `~` nor `$VAR`
    taken from this process)."""
    with literal_paths():
        return _settings_of(cls, name, policy_of(name), workspace, values, team_folders, principal)


def _set(given: dict[str, Any], cls: type[Any], setting: str, value: Any) -> None:
    """`given[setting] = value`, whichever of the setting's names the user's values used."""
    for key in _names(cls, [setting]):
        given.pop(key, None)
    given[setting] = value


def _settings_of(
    cls: type[Any],
    name: str,
    policy: UserPolicy,
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
    given.update(values)
    given["workspace"] = workspace
    given["relative_paths"] = True  # a user never learns where the server keeps its users
    for setting, value in policy.fixed.items():
        _set(given, cls, setting, value)
    for setting, folder in policy.data.items():
        if not _names(cls, [setting]) & values.keys():
            given[setting] = workspace / folder
    for setting in policy.ignored:
        for key in _names(cls, [setting]):
            given.pop(key, None)
    if policy.deployment:
        own = cls()  # the deployment's own settings of this server: this process's environment
        for setting in policy.deployment:
            _set(given, cls, setting, getattr(own, setting))
    if (remote := policy.remote_sign_in) is not None:
        google = GoogleSettings()
        if principal is not None:
            given[remote.principal] = (principal.issuer, principal.subject)
        if remote.database is not None:
            given[remote.database] = google.database_url
        if remote.keys is not None:
            given[remote.keys] = google.google_token_keys
    if policy.chosen is not None:
        for setting, value in policy.chosen(values).items():
            _set(given, cls, setting, value)
    if team_folders:
        for setting, keep_own in policy.team_folders.items():
            own = next((values[k] for k in sorted(_names(cls, [setting])) if k in values), None) if keep_own else None
            _set(given, cls, setting, (*_paths_of(own), *team_folders))
    for setting in (*policy.team_folders, *policy.team_derived):
        allowed[setting] = team_folders
    try:
        settings = isolated(cls)(**given)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'value'}: {e['msg']}" for e in exc.errors())
        raise BadRequest(
            f"The {name} settings in {SETTINGS_FILE} are invalid ({problems}); fix that file.",
            {"server": name, "file": SETTINGS_FILE},
        ) from None
    if policy.check is not None:
        policy.check(settings, workspace)
    confine(settings, workspace, allowed)
    for setting, refused in policy.refused_schemes.items():
        listed = {s.strip().lower().removesuffix("://") for s in str(getattr(settings, setting, "")).split(",")}
        if listed & refused:
            variable = _variable(cls, setting)
            raise PermissionDenied(
                f"{variable} in a user's settings may not list {', '.join(sorted(listed & refused))}: a URL of "
                "that scheme reaches files of this server, other users' included.",
                {"setting": variable},
            )
    return settings


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
    own (`allowed`: setting -> paths, e.g. the team folders a server takes), and
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


def user_composition(
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
    specs = per_user_servers()
    return compose(
        specs,
        workspace=workspace,
        name=name,
        toolsets=toolsets,
        request_state_security=request_state_security,
        settings=each_settings(specs, workspace, values, settings.team_folders, principal),
    )


def each_settings(
    specs: Iterable[ServerSpec],
    workspace: Path,
    values: dict[str, str],
    team_folders: tuple[Path, ...] = (),
    principal: Principal | None = None,
) -> dict[str, Any]:
    """Server name -> that server's settings for the user of `workspace` (`user_settings`), or the
    `DeskError` their settings gave it (`gateway.compose` skips that server saying why)."""
    built: dict[str, Any] = {}
    for spec in specs:
        try:
            built[spec.name] = user_settings(spec, workspace, values, team_folders, principal)
        except DeskError as exc:
            built[spec.name] = exc
    return built


def described_composition(
    *, name: str = "deskmcp", toolsets: str | None = None, request_state_security: Any = None
) -> Composition:
    """Every server offered to users, composed only to say what they publish (tool names, scopes,
    toolsets: the authorization gate's view), from default settings: no user's data and none of
    this machine's is looked for, no folder is created and nothing is opened."""
    specs = per_user_servers()
    return compose(
        specs,
        name=name,
        toolsets=toolsets,
        request_state_security=request_state_security,
        settings={spec.name: spec.load().Settings.model_construct() for spec in specs},
        keep_unavailable=True,
        check_available=False,
    )


def google_settings(principal: Principal, settings: UsersSettings) -> GoogleSettings:
    """The Google settings of `principal` (their token's store), for the sign-in routes."""
    assert settings.users_root is not None
    workspace = user_workspace(settings.users_root, principal)
    return settings_of(GoogleSettings, "google", workspace, read_user_settings(workspace), (), principal)


def remote_sign_ins() -> list[tuple[ServerSpec, RemoteSignIn]]:
    """The remote MCP servers the users sign in to, each with the server that declares it."""
    return [(spec, remote) for spec in per_user_servers() if (remote := spec.load().USERS.remote_sign_in) is not None]


def remote_account(principal: Principal, settings: UsersSettings, spec: ServerSpec) -> RemoteAccount:
    """`principal`'s account at the remote server `spec` declares (`UserPolicy.remote_sign_in`): the
    remote's address and their own token record, from their settings of that server."""
    from deskmcp.connect.remote_sign_in import RemoteAccount

    assert settings.users_root is not None
    remote = spec.load().USERS.remote_sign_in
    assert remote is not None
    workspace = user_workspace(settings.users_root, principal)
    values = read_user_settings(workspace)
    own = user_settings(spec, workspace, values, settings.team_folders, principal)
    return RemoteAccount(remote.url(own), remote.record(own))


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
