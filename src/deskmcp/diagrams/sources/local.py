"""The local source: files of the project folder (`DIAGRAMS_PROJECT_ROOT`), never anything outside it."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from deskmcp.core.errors import BadRequest, IOFailure, NotFound, PermissionDenied
from deskmcp.core.paths import is_within, safe_join, shown_path
from deskmcp.diagrams.sources.contract import FileInfo


class IgnoreRules:
    """The patterns of one ignore file, compiled once (pathspec's gitignore translation); the last
    pattern matching a path decides, as in git."""

    def __init__(self, patterns: list[tuple[re.Pattern[str], bool]]) -> None:
        self.patterns = patterns[::-1]

    @classmethod
    def load(cls, path: Path) -> IgnoreRules | None:
        from pathspec import GitIgnoreSpec

        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
        spec = GitIgnoreSpec.from_lines(text.splitlines())
        patterns = [
            (p.regex, bool(p.include))
            for p in spec.patterns
            if p.include is not None and isinstance(getattr(p, "regex", None), re.Pattern)
        ]
        return cls(patterns) if patterns else None  # type: ignore[arg-type]

    def verdict(self, rel: str) -> bool | None:
        for regex, include in self.patterns:
            if regex.search(rel):
                return include
        return None


IgnoreChain = tuple[tuple[str, IgnoreRules], ...]
"""(folder relative to the root, its rules), outermost first."""


def _load_rules(path: Path) -> IgnoreRules | None:
    return IgnoreRules.load(path)


def _ignored(chain: IgnoreChain, rel: str, is_dir: bool) -> bool:
    """Whether git would ignore `rel`: the deepest ignore file with an opinion decides."""
    verdict = False
    for base, rules in chain:
        if base:
            if not rel.startswith(base + "/"):
                continue
            sub = rel[len(base) + 1 :]
        else:
            sub = rel
        result = rules.verdict(sub + "/" if is_dir else sub)
        if result is not None:
            verdict = result
    return verdict


class LocalSource:
    """Files under `root`. `.git/` is never listed; .gitignore'd paths are left out unless asked."""

    kind: str = "local"
    ref: str | None = None

    def __init__(self, root: Path, shown_root: Path | None = None) -> None:
        """`shown_root`: the workspace answers name the folder relative to (`core.paths.shown_path`)."""
        self.root = root.resolve()
        self.label = shown_path(self.root, shown_root)

    def _folder(self, root: str) -> Path:
        folder = safe_join(self.root, root, allow_root=True)
        if not folder.is_dir():
            if folder.exists():
                raise BadRequest(f"{root!r} is a file, not a folder; read it with read_file.", {"root": root})
            raise NotFound(f"No folder {root!r} in the project. Call list_files with root='.'.", {"root": root})
        return folder

    def _chain(self, root: str) -> IgnoreChain:
        """The ignore rules that apply above and at `root`."""
        chain: list[tuple[str, IgnoreRules]] = []
        exclude = _load_rules(self.root / ".git" / "info" / "exclude")
        if exclude is not None:
            chain.append(("", exclude))
        parts = root.split("/") if root else []
        for depth in range(len(parts) + 1):
            base = "/".join(parts[:depth])
            spec = _load_rules(self.root / base / ".gitignore")
            if spec is not None:
                chain.append((base, spec))
        return tuple(chain)

    def walk(self, root: str, *, include_ignored: bool) -> Iterator[FileInfo]:
        folder = self._folder(root)
        chain: IgnoreChain = () if include_ignored else self._chain(root)
        stack: list[tuple[Path, str, IgnoreChain]] = [(folder, root, chain)]
        while stack:
            directory, rel_dir, rules = stack.pop()
            try:
                entries = list(os.scandir(directory))
            except OSError:
                continue  # unreadable folder: skipped, like git and ripgrep do
            if not include_ignored and rel_dir != root and any(e.name == ".gitignore" for e in entries):
                spec = _load_rules(directory / ".gitignore")
                if spec is not None:
                    rules = (*rules, (rel_dir, spec))
            for entry in entries:
                name = entry.name
                rel = f"{rel_dir}/{name}" if rel_dir else name
                try:
                    if entry.is_symlink():
                        target = Path(entry.path).resolve()
                        if not target.is_file() or not is_within(self.root, target):
                            continue  # links out of the project, and folder links, are not followed
                        is_dir = False
                        size = target.stat().st_size
                    else:
                        is_dir = entry.is_dir(follow_symlinks=False)
                        if not is_dir and not entry.is_file(follow_symlinks=False):
                            continue  # sockets, fifos, devices
                        size = None if is_dir else entry.stat(follow_symlinks=False).st_size
                except OSError:
                    continue
                if is_dir and name == ".git":
                    continue
                if rules and _ignored(rules, rel, is_dir):
                    continue
                if is_dir:
                    stack.append((Path(entry.path), rel, rules))
                else:
                    yield FileInfo(rel, size)

    def open(self, path: str) -> tuple[BinaryIO, int | None]:
        target = safe_join(self.root, path)
        if target.is_dir():
            raise BadRequest(f"{path!r} is a folder; list it with list_files(root={path!r}).", {"path": path})
        if not target.is_file():
            raise NotFound(f"No file {path!r} in the project. Call list_files for valid paths.", {"path": path})
        try:
            stream = target.open("rb")
            size = os.fstat(stream.fileno()).st_size
        except PermissionError as exc:
            raise PermissionDenied(f"The file {path!r} cannot be read (permission denied).", {"path": path}) from exc
        except OSError as exc:
            raise IOFailure(f"Reading {path!r} failed: {exc.strerror}.", {"path": path}) from exc
        return stream, size
