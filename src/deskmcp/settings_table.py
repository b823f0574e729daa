"""Every setting of every package in one table: its names, the value in effect, where that value
came from, and whether it is a secret.

`deskmcp settings` prints it (`settings_command`), and docs/configuration.md is checked against
`markdown_table()` so that the page cannot fall behind the settings classes. The classes are
found here and nowhere else: the core's, each server's through the registry, Google's, serving's
and connect's. Each environment name is declared by one field of one class (a test checks it); a
field is listed under the package whose class declares it, and a class several packages' settings
inherit (`deskmcp.core.shared_settings`) under the package whose name it carries, with the others
that read it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from enum import Enum
from pathlib import Path

from pydantic import SecretStr, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from deskmcp.core.errors import BadRequest, DeskError
from deskmcp.core.settings import (
    Settings,
    environment,
    environment_names,
    is_conventional,
    is_secret,
    origin,
    renamed,
)

MASK = "********"
SHARED_MODULE = "deskmcp.core.shared_settings"
"""Where the settings several packages read are declared (each package's own class inherits them)."""
UNSET = "(unset)"


@dataclass(frozen=True)
class Setting:
    """One setting as declared: the class and field, and the names it is read by."""

    package: str
    owner: type[Settings]
    field: str
    name: str
    conventional: tuple[str, ...]
    old: tuple[str, ...]
    secret: bool
    description: str
    also_read_by: tuple[str, ...] = ()
    """Other packages whose settings class reads the same setting (a server's path another one needs)."""

    @property
    def info(self) -> FieldInfo:
        return self.owner.model_fields[self.field]

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.conventional, *self.old)

    @property
    def default(self) -> str:
        info = self.info
        if info.default_factory is not None:
            made = info.default_factory()  # type: ignore[call-arg]
            return "your data folder" if isinstance(made, Path) else shown(made, secret=False)
        if info.default is PydanticUndefined:
            return "required"
        return shown(info.default, secret=False)


@dataclass(frozen=True)
class Reading:
    """A setting's value in effect and where it came from."""

    setting: Setting
    value: str
    source: str
    """`default`, `environment (NAME)` or `settings file (PATH)`."""


def settings_classes() -> list[tuple[str, type[Settings]]]:
    """(package, class) for every settings class, the shared ones first; the settings several
    servers read just before the server whose name they carry."""
    from deskmcp.connect.settings import ConnectSettings
    from deskmcp.core.config import WorkspaceSettings
    from deskmcp.core.search.embedders.store import ModelStoreSettings
    from deskmcp.core.shared_settings import (
        DatabaseSettings,
        DocumentsFolderSettings,
        ProtectedFoldersSettings,
        RecipientSettings,
        ServerTokenSettings,
        VaultFolderSettings,
    )
    from deskmcp.google.auth import GoogleSettings
    from deskmcp.servers import SERVERS
    from deskmcp.serving.auth.settings import AuthorizationSettings
    from deskmcp.serving.options import HttpSettings
    from deskmcp.serving.replicas import ReplicaSettings
    from deskmcp.serving.users import UsersSettings

    shared: dict[str, tuple[type[Settings], ...]] = {
        "vault": (VaultFolderSettings, ProtectedFoldersSettings),
        "documents": (DocumentsFolderSettings,),
        "mail": (RecipientSettings,),
    }
    classes: list[tuple[str, type[Settings]]] = [
        ("deskmcp", WorkspaceSettings),
        ("deskmcp", ModelStoreSettings),
        ("deskmcp", DatabaseSettings),
        ("google", GoogleSettings),
    ]
    for name, spec in SERVERS.items():
        classes += [(name, cls) for cls in shared.get(name, ())]
        classes.append((name, spec.load().Settings))
    classes += [
        ("serving", ServerTokenSettings),
        ("serving", HttpSettings),
        ("serving", ReplicaSettings),
        ("serving", UsersSettings),
        ("serving", AuthorizationSettings),
        ("connect", ConnectSettings),
    ]
    return classes


def _declared(cls: type[Settings]) -> Iterator[str]:
    """The fields `cls` declares itself (not those it inherits from another settings class)."""
    inherited: set[str] = set()
    for base in cls.__mro__[1:]:
        if isinstance(base, type) and issubclass(base, Settings):
            inherited |= base.model_fields.keys()
    for name in cls.model_fields:
        if name not in inherited:
            yield name


def _setting(package: str, cls: type[Settings], field: str) -> Setting | None:
    info = cls.model_fields[field]
    names = environment_names(field, info)
    if not names:
        return None  # set by deskmcp itself (a user's token owner), never by a person
    return Setting(
        package=package,
        owner=cls,
        field=field,
        name=names[0],
        conventional=tuple(n for n in names[1:] if is_conventional(n)),
        old=tuple(n for n in names[1:] if renamed(n) is not None),
        secret=is_secret(names[0], info),
        description=info.description or "",
    )


def all_settings() -> list[Setting]:
    """Every setting, each name once, under the package whose class declares it, with the other
    packages whose settings class inherits that one (the server settings the shared ones are part of)."""
    classes = settings_classes()
    out: list[Setting] = []
    for package, cls in classes:
        readers: tuple[str, ...] = ()
        if cls.__module__ == SHARED_MODULE:
            readers = tuple(dict.fromkeys(p for p, other in classes if p != package and issubclass(other, cls)))
        for field in _declared(cls):
            setting = _setting(package, cls, field)
            if setting is not None:
                out.append(replace(setting, also_read_by=readers))
    return out


def server_settings(server: str) -> list[Setting]:
    """Every setting server `server` reads, its inherited ones (workspace, Google, the shared ones)
    included, in the order of the whole table (the shared packages' first)."""
    from deskmcp.servers import SERVERS

    if server not in SERVERS:
        raise BadRequest(f"No server {server!r}; choose one of {', '.join(SERVERS)}.", {"server": server})
    cls = SERVERS[server].load().Settings
    classes = settings_classes()
    packages = {owner: package for package, owner in classes}
    order = {owner: index for index, (_package, owner) in enumerate(classes)}
    out: list[Setting] = []
    for field in cls.model_fields:
        owner = next(
            base
            for base in reversed(cls.__mro__)
            if isinstance(base, type) and field in getattr(base, "model_fields", {})
        )
        setting = _setting(packages.get(owner, server), owner if owner in packages else cls, field)
        if setting is not None:
            out.append(setting)
    return sorted(out, key=lambda s: order.get(s.owner, len(order)))


# -- values and their sources ---------------------------------------------------------------


def shown(value: object, *, secret: bool) -> str:
    """A value as a person reads it; a secret that is set is masked, and so is a URL's password."""
    if value is None or value == "" or value == () or value == []:
        return UNSET
    if isinstance(value, SecretStr):
        value = value.get_secret_value()
        if not value:
            return UNSET
        return MASK
    if secret:
        return MASK
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    return _without_password(str(value))


def _without_password(text: str) -> str:
    """`postgresql://me:pw@host/db` -> `postgresql://me:********@host/db`."""
    from urllib.parse import urlsplit

    if "://" not in text or "@" not in text:
        return text
    try:
        parts = urlsplit(text)
    except ValueError:
        return text
    if parts.password is None:
        return text
    return text.replace(f":{parts.password}@", f":{MASK}@", 1)


def _instance(cls: type[Settings]) -> tuple[Settings | None, dict[str, str]]:
    """`cls` built from the environment, or None and what is wrong by name when it does not validate
    (each value is then shown as written)."""
    try:
        return cls(), {}
    except ValidationError as exc:
        return None, {str(error["loc"][0]): error["msg"] for error in exc.errors() if error["loc"]}
    except (ValueError, DeskError) as exc:
        return None, {"": str(exc)}


def readings(settings: list[Setting], *, user_workspace: Path | None = None) -> list[Reading]:
    """The value in effect of each of `settings`, and its source: this process's environment, or,
    for a user's workspace (users mode), that user's settings file for what a user may set."""
    env = environment()
    file_values: dict[str, str] = {}
    file_label = ""
    user_fields: set[tuple[type, str]] = set()
    if user_workspace is not None:
        from deskmcp.serving.users import SETTINGS_FILE, read_user_settings, user_keys

        file_values = read_user_settings(user_workspace)
        file_label = f"settings file ({user_workspace / SETTINGS_FILE})"
        keys = user_keys()
        user_fields = {(s.owner, s.field) for s in settings if set(s.names) & keys}
    instances: dict[type[Settings], tuple[Settings | None, dict[str, str]]] = {}
    out: list[Reading] = []
    for setting in settings:
        per_user = (setting.owner, setting.field) in user_fields
        if per_user:
            found = next((n for n in (*setting.names, setting.field) if n in file_values), None)
            text = file_values.get(found) if found else None
            source = file_label if found else "default"
            value = shown(text, secret=setting.secret) if found else setting.default
            out.append(Reading(setting, value, source))
            continue
        name = origin(setting.owner, setting.field, env)
        if setting.owner not in instances:
            instances[setting.owner] = _instance(setting.owner)
        instance, errors = instances[setting.owner]
        if instance is not None:
            value = shown(getattr(instance, setting.field), secret=setting.secret)
        elif name is not None:
            value = shown(env[name], secret=setting.secret)
            wrong = errors.get(name) or errors.get(setting.field)
            if wrong:
                value += f"  (refused: {wrong})"
        else:
            value = setting.default
        source = f"environment ({name})" if name else "default"
        if (
            user_workspace is not None
            and setting.owner.__name__ == "WorkspaceSettings"
            and setting.field == "workspace"
        ):
            value, source = str(user_workspace), "the user's workspace"
        out.append(Reading(setting, value, source))
    return out


# -- what `deskmcp settings` prints and the docs page holds ----------------------------------


def as_json(rows: list[Reading]) -> str:
    return json.dumps(
        [
            {
                "package": r.setting.package,
                "name": r.setting.name,
                "also": list(r.setting.conventional),
                "old": list(r.setting.old),
                "value": r.value,
                "source": r.source,
                "secret": r.setting.secret,
            }
            for r in rows
        ],
        indent=2,
    )


def as_text(rows: list[Reading]) -> str:
    lines: list[str] = []
    package = None
    for r in rows:
        if r.setting.package != package:
            package = r.setting.package
            lines.append(f"[{package}]")
        names = r.setting.name
        if r.setting.conventional:
            names += f" (also {', '.join(r.setting.conventional)})"
        if r.setting.old:
            names += f" (old: {', '.join(r.setting.old)})"
        lines.append(f"  {names} = {r.value}    [{r.source}]")
    return "\n".join(lines)


def settings_command(server: str | None, *, as_json_output: bool, user_workspace: Path | None) -> str:
    """The body of `deskmcp settings`: every setting (of `server`, or all) with its value and source."""
    settings = server_settings(server) if server else all_settings()
    rows = readings(settings, user_workspace=user_workspace)
    return as_json(rows) if as_json_output else as_text(rows)


TABLE_START = "<!-- settings table: generated from the settings classes by deskmcp.settings_table -->"
TABLE_END = "<!-- end of the settings table -->"


def markdown_table() -> str:
    """The table of docs/configuration.md: name, other names, package, secret, default, meaning."""
    lines = [
        "| name | also read | package | secret | default | meaning |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for s in all_settings():
        also = ", ".join([*(f"`{n}`" for n in s.conventional), *(f"`{n}` (old)" for n in s.old)])
        package = s.package + "".join(f", {p}" for p in s.also_read_by)
        meaning = s.description.replace("|", "\\|")
        default = s.default.replace("|", "\\|")
        lines.append(f"| `{s.name}` | {also} | {package} | {'yes' if s.secret else ''} | `{default}` | {meaning} |")
    return "\n".join(lines) + "\n"


def with_table(page: str) -> str:
    """`page` with the text between its table markers replaced by `markdown_table()`."""
    start, end = page.index(TABLE_START) + len(TABLE_START), page.index(TABLE_END)
    return page[:start] + "\n\n" + markdown_table() + "\n" + page[end:]


if __name__ == "__main__":  # uv run python -m deskmcp.settings_table docs/configuration.md
    import sys

    target = Path(sys.argv[1])
    target.write_text(with_table(target.read_text(encoding="utf-8")), encoding="utf-8")
