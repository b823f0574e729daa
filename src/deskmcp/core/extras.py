"""The optional parts of deskmcp (the package's extras) and the one line that adds a missing one.

The default install serves every server on local data. Three extras add what only some setups
need: `google` (Gmail, Google Sheets, `deskmcp auth google`), `remote` (an OAuth authorization
server in front of the HTTP server, PostgreSQL stores) and `semantic` (search by meaning). Their
libraries are imported where they are used, inside `needs_extra`, so a setup that asks for a
missing one gets a `bad_request` naming the command that installs it, never a traceback.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

from deskmcp.core.errors import BadRequest

Extra = Literal["google", "remote", "semantic"]


def install_command(extra: Extra) -> str:
    """The command that installs deskmcp with `extra`, as a tool on the person's PATH."""
    return f"uv tool install 'deskmcp[{extra}]'"


def install_hint(extra: Extra) -> str:
    """Every way to add `extra`, in one line: the tool install, pip, and a checkout."""
    return f"{install_command(extra)} (or pip install 'deskmcp[{extra}]'; in a checkout: uv sync --extra {extra})"


class MissingExtra(BadRequest):
    """A setting asks for a part of deskmcp whose libraries are not installed."""

    def __init__(self, extra: Extra, feature: str, module: str | None) -> None:
        super().__init__(
            f"{feature} needs deskmcp's {extra} extra, which is not installed"
            f"{f' (no module {module!r})' if module else ''}. Add it: {install_hint(extra)}.",
            {"extra": extra, "module": module, "command": install_command(extra)},
        )
        self.extra: Extra = extra


@contextmanager
def needs_extra(extra: Extra, feature: str) -> Iterator[None]:
    """Wrap the imports of an extra's libraries: an `ImportError` becomes `MissingExtra`.

    Only imports belong inside: any `ImportError` raised within is read as the extra missing.
    """
    try:
        yield
    except ImportError as exc:
        raise MissingExtra(extra, feature, exc.name) from None
