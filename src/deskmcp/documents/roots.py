"""The folders the server may read, and how a caller names a file in them.

A document is addressed by a path relative to the main documents folder (`reports/q3.pdf`),
or, for a file in an extra root, by that root's name, a colon and the path inside it
(`archive:2019/plan.docx`). Root names come from the folders' own names, lower-cased, and
are at least two characters long so they never read as a Windows drive letter. Every path
goes through `safe_join` against the root it names.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from deskmcp.core.errors import BadRequest, IOFailure, NotFound
from deskmcp.core.paths import is_absolute, relative_posix, root_relative, safe_join, shown_path

MAIN = "documents"
_NAME_CHARS = re.compile(r"[^a-z0-9_-]+")


MAIN_VARIABLE = "DOCUMENTS_PATH"
EXTRA_VARIABLE = "DOCUMENTS_EXTRA_ROOTS"


def missing_folder(shown: str, variable: str) -> str:
    """The one way a configured folder that does not exist is reported (start-up and tools); `shown`
    is the folder as answers name it (`core.paths.shown_path`)."""
    return f"The documents folder {shown} does not exist. Create it or fix {variable}."


@dataclass(frozen=True)
class Root:
    name: str
    path: Path
    main: bool
    shown: str
    """The folder as answers name it: its full path, or relative to the workspace on a shared server."""

    @property
    def variable(self) -> str:
        """The setting that names this folder."""
        return MAIN_VARIABLE if self.main else EXTRA_VARIABLE

    def missing(self) -> NotFound:
        return NotFound(
            missing_folder(self.shown, self.variable),
            {"root": self.name, "path": self.shown, "variable": self.variable},
        )

    def prefix(self, rel: str) -> str:
        return rel if self.main else f"{self.name}:{rel}"


@dataclass(frozen=True)
class Located:
    root: Root
    path: Path
    rel: str

    @property
    def address(self) -> str:
        """The canonical way to name this file in tool calls (and its key in the index)."""
        return self.root.prefix(self.rel)


def root_name(folder: Path, taken: set[str]) -> str:
    base = _NAME_CHARS.sub("-", folder.name.lower()).strip("-") or "root"
    if len(base) < 2:
        base = f"{base}-root"
    name, n = base, 2
    while name in taken:
        name, n = f"{base}-{n}", n + 1
    return name


class Roots:
    """The main documents folder and the extra roots, by name.

    Only the default main folder (in the workspace) is created when missing. A folder the user
    configured is never created: a typo in DOCUMENTS_PATH must not quietly make an empty
    folder; the tools answer not_found naming the variable and the full path instead.
    """

    def __init__(
        self, main: Path, extra: Sequence[Path] = (), *, create_main: bool = False, shown_root: Path | None = None
    ) -> None:
        """`shown_root`: the workspace answers name folders relative to (`core.paths.shown_path`)."""
        if create_main:
            try:
                main.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                where = shown_path(main, shown_root)
                raise IOFailure(
                    f"The documents folder {where} cannot be created: {exc.strerror}. "
                    f"Set {MAIN_VARIABLE} to a writable folder.",
                    {"path": where, "variable": MAIN_VARIABLE},
                ) from exc
        self.main = Root(MAIN, main.resolve(), True, shown_path(main.resolve(), shown_root))
        taken = {MAIN}
        self.extra: dict[str, Root] = {}
        for folder in extra:
            name = root_name(folder, taken)
            taken.add(name)
            path = folder.expanduser().resolve()
            self.extra[name] = Root(name, path, False, shown_path(path, shown_root))

    def all(self) -> list[Root]:
        return [self.main, *self.extra.values()]

    def split(self, address: str) -> tuple[Root, str]:
        """The root an address names and the path inside it (not yet checked).

        An absolute path names the configured root it lies in (after symlinks); one outside
        every root stays absolute, and `safe_join` refuses it.
        """
        if not isinstance(address, str):
            raise BadRequest("A document path must be a string.")
        if is_absolute(address):
            for root in self.all():
                relative = root_relative(root.path, address)
                if relative is not None:
                    return root, relative
            return self.main, address
        head, sep, rest = address.partition(":")
        if sep and head in self.extra:
            return self.extra[head], rest
        if sep and head == MAIN:
            return self.main, rest
        return self.main, address

    def locate(self, address: str, *, allow_root: bool = False) -> Located:
        """Resolve an address to a path inside its root; PermissionDenied for anything outside."""
        root, rel = self.split(address.strip() if isinstance(address, str) else address)
        if not root.path.is_dir():
            raise root.missing()
        path = safe_join(root.path, rel, allow_root=allow_root)
        return Located(root, path, relative_posix(root.path, path) if path != root.path else "")
