"""The one way deskmcp reads its settings, and the one place it reads this process's environment.

Every package declares its settings once, in one frozen class that subclasses `Settings`; each
field names its environment variable with `env_alias`: the package's own prefixed name first
(`DIAGRAMS_PROJECT_ROOT`), then any conventional name other tools share (`GITHUB_TOKEN`,
`OPENAI_API_KEY`), then the name it had before it took the prefix (`PROJECT_ROOT`), accepted for
one more release with one warning per name per process. Only these names are read: a field's
own name (`project_root`) is for keyword construction, never an environment variable.

What is not a setting but still comes from the environment (a copy of it for a child process,
a platform folder variable, a variable a setting names) is read through the small functions at
the end of this module, so that nothing else in deskmcp touches `os.environ`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

from pydantic import AliasChoices, SecretStr
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

log = logging.getLogger("deskmcp.settings")

_RENAMED: dict[str, str] = {}
"""Old environment name -> the prefixed name that replaces it."""
_CONVENTIONAL: set[str] = set()
"""Names other tools share (`GITHUB_TOKEN`), accepted beside the prefixed one without a warning."""
_WARNED: set[str] = set()

SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD")
"""A setting whose name holds one of these words is a secret: its value is never shown."""


def env_alias(field: str, name: str, *conventional: str, old: str | tuple[str, ...] = ()) -> AliasChoices:
    """The names field `field` is read by: `name` (prefixed with its package's prefix), then the
    `conventional` names, then the `old` names (deprecated: one warning naming `name`)."""
    olds = (old,) if isinstance(old, str) else old
    for previous in olds:
        _RENAMED[previous] = name
    _CONVENTIONAL.update(conventional)
    return AliasChoices(field, name, *conventional, *olds)


def environment_names(field_name: str, info: FieldInfo) -> tuple[str, ...]:
    """The environment names of a field, its own name first, in the order they are looked up."""
    alias = info.validation_alias
    if isinstance(alias, AliasChoices):
        return tuple(c for c in alias.choices if isinstance(c, str) and c != field_name)
    if isinstance(alias, str) and alias != field_name:
        return (alias,)
    return ()


def renamed(name: str) -> str | None:
    """The prefixed name that replaces the deprecated `name`, or None when `name` is current."""
    return _RENAMED.get(name)


def is_conventional(name: str) -> bool:
    return name in _CONVENTIONAL


def current_name(name: str) -> str:
    """`name`, or the name that replaces it (with the deprecation warning, once per process)."""
    new = _RENAMED.get(name)
    if new is None:
        return name
    deprecated(name, f"{name} is deprecated and will stop working in the next release: set {new} instead.")
    return new


def deprecated(key: str, message: str) -> None:
    """Log `message` (what stops working in the next release, and what to set instead) once per
    process for `key`: an old name, or an old use of a name that stays (a setting another package
    no longer reads for its own purpose after the next release)."""
    if key not in _WARNED:
        _WARNED.add(key)
        log.warning("%s", message)


def is_secret(name: str, info: FieldInfo) -> bool:
    """Whether a setting's value is a secret: a `SecretStr`, or text under a name holding the word
    KEY, TOKEN, SECRET or PASSWORD (a path, a number or a switch so named is not)."""
    annotation = info.annotation
    if annotation is SecretStr or "SecretStr" in str(annotation):
        return True
    if annotation not in (str, str | None) and "str | None" not in str(annotation):
        return False
    words = name.upper().split("_")
    return any(word.rstrip("S") in SECRET_WORDS for word in words)


class EnvironmentSource(EnvSettingsSource):
    """The environment as a settings source: only the names `env_alias` declared, exactly as
    written, and a deprecated name reported once."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        for name in environment_names(field_name, field):
            value = self.env_vars.get(name)
            if value is not None:
                current_name(name)
                return value, name, False
        return None, field_name, False


class Settings(BaseSettings):
    """The base of every settings class: frozen, built from keywords (tests, a user's settings
    file) and the environment, unknown keys ignored."""

    model_config = SettingsConfigDict(frozen=True, populate_by_name=True, extra="ignore", case_sensitive=True)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, EnvironmentSource(settings_cls))


def origin(cls: type[BaseSettings], field_name: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The environment name a field of `cls` is set by in `environ` (this process's by default), or None."""
    env = os.environ if environ is None else environ
    for name in environment_names(field_name, cls.model_fields[field_name]):
        if name in env:
            return name
    return None


def raw(cls: type[BaseSettings], field_name: str) -> str | None:
    """The text a field of `cls` is set to in the environment (by any of its names), or None."""
    name = origin(cls, field_name)
    if name is None:
        return None
    current_name(name)
    return os.environ[name]


# -- the environment beyond settings ---------------------------------------------------------


def environment() -> dict[str, str]:
    """A copy of this process's environment, for a child process to start with."""
    return dict(os.environ)


def variable(name: str) -> str | None:
    """One variable that is not a deskmcp setting: a platform folder (`APPDATA`, `XDG_CONFIG_HOME`),
    the system time zone (`TZ`), a variable a setting names (a mail password's), a test's fault point."""
    return os.environ.get(name)


def set_variable(name: str, value: str) -> None:
    """Set a variable a library reads from the environment (`HF_HUB_OFFLINE`), for this process."""
    os.environ[name] = value
