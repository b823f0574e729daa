"""Safe resolution of user-supplied paths under a root.

`safe_join` is the only way a tool turns a path it was given into a file system path;
`visible_join` is `safe_join` that also refuses hidden parts (`is_hidden`), for the vault's notes
and the files mail may attach.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath, PureWindowsPath

from deskmcp.core.errors import BadRequest, PermissionDenied

_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:")


def _denied(user_path: str, why: str) -> PermissionDenied:
    return PermissionDenied(
        f"Path {user_path!r} is not allowed: {why}. Use a path relative to the root, without '..'.",
        {"path": user_path},
    )


def split_relative(user_path: str) -> tuple[str, ...]:
    """Validate a relative path's form and return its parts (no file system access)."""
    if not isinstance(user_path, str):  # defensive: tools may pass through JSON values
        raise BadRequest("A path must be a string.")
    if "\x00" in user_path:
        raise _denied(user_path.replace("\x00", "\\0"), "it contains a NUL byte")
    text = user_path.replace("\\", "/")
    if text.startswith("//"):
        raise _denied(user_path, "UNC paths are outside the root")
    if _WINDOWS_DRIVE.match(text):
        raise _denied(user_path, "drive paths are outside the root")
    if text.startswith("/") or PureWindowsPath(user_path).is_absolute():
        raise _denied(user_path, "it is an absolute path outside the root")
    parts = tuple(p for p in PurePosixPath(text).parts if p not in ("", "."))
    if ".." in parts:
        raise _denied(user_path, "'..' leaves the root")
    return parts


def is_absolute(user_path: str) -> bool:
    text = user_path.replace("\\", "/")
    return text.startswith("/") or bool(_WINDOWS_DRIVE.match(text)) or PureWindowsPath(user_path).is_absolute()


def root_relative(root: Path, user_path: str) -> str | None:
    """The root-relative form of an absolute `user_path` that resolves (through symlinks) inside
    `root`; None for an absolute path elsewhere. Relative paths are returned as given.

    Assistants pass on whatever path the person gave them, often absolute: a path inside the
    root names the same file as its relative form, and anything else is still refused.
    """
    if not isinstance(user_path, str) or "\x00" in user_path or not is_absolute(user_path):
        return user_path
    if user_path.replace("\\", "/").startswith("//"):
        return None  # UNC: never inside a local root
    real_root = root.resolve()
    resolved = Path(user_path).resolve()
    if not is_within(real_root, resolved):
        return None
    return resolved.relative_to(real_root).as_posix() if resolved != real_root else ""


HIDDEN_RULE = "hidden files and folders (.obsidian, .git, .trash, dotfiles)"
"""What `is_hidden` refuses, as the error says it: the folders of Obsidian, git and other tools
hold plugin secrets, credentials and deleted notes, not the user's material."""


def is_hidden(rel: str) -> bool:
    """Whether a root-relative path (or a single name) has a part starting with '.'."""
    return any(part.startswith(".") for part in rel.replace("\\", "/").split("/") if part)


def hidden_denied(user_path: str) -> PermissionDenied:
    return PermissionDenied(
        f"Path {user_path!r} is not allowed: {HIDDEN_RULE} belong to other tools, not to deskmcp."
        " Use a path without a part starting with '.'.",
        {"path": user_path, "rule": "hidden"},
    )


def visible_join(root: Path, user_path: str, *, allow_root: bool = False) -> Path:
    """`safe_join`, refusing a hidden part (`is_hidden`) in the path as given and in the file it
    resolves to, so a visible symlink into `.obsidian/` is refused too."""
    relative = root_relative(root, user_path)
    if is_hidden("/".join(split_relative(user_path if relative is None else relative))):
        raise hidden_denied(user_path)
    full = safe_join(root, user_path, allow_root=allow_root)
    if full != root.resolve() and is_hidden(relative_posix(root, full)):
        raise hidden_denied(user_path)
    return full


def is_within(root: Path, candidate: Path) -> bool:
    try:
        candidate.relative_to(root)
    except ValueError:
        return False
    return True


def safe_join(root: Path, user_path: str, *, allow_root: bool = False) -> Path:
    """Resolve `user_path` under `root`, following symlinks, and refuse anything outside it.

    Rejects NUL bytes, UNC paths, `..`, absolute and drive paths outside the root, and any
    path (existing or not) whose resolved location, through symlinks, is not inside the
    resolved root. An absolute path that resolves inside the root is accepted.
    """
    relative = root_relative(root, user_path)
    parts = split_relative(user_path if relative is None else relative)
    if not parts and not allow_root:
        raise BadRequest("A path is required.", {"path": user_path})
    real_root = root.resolve()
    joined = real_root.joinpath(*parts)
    # resolve() follows every symlink that exists along the way, even for a missing leaf.
    resolved = joined.resolve()
    if not is_within(real_root, resolved):
        raise _denied(user_path, "it resolves outside the root")
    return resolved


def relative_posix(root: Path, path: Path) -> str:
    """The root-relative POSIX form of `path` (which must be inside `root`)."""
    return path.resolve().relative_to(root.resolve()).as_posix()


def shown_path(path: Path, workspace: Path | None) -> str:
    """How an answer names the folder or file `path` of this machine.

    `workspace` None (one person's own server): the full path. Otherwise (a user of a shared
    server, whose workspace that is, `WorkspaceSettings.shown_root`): relative to that workspace
    in POSIX form (`vault`, `.deskmcp/audit/sends.jsonl`, `.` for the workspace itself), and a folder
    outside it (a team folder of the deployment) by its name alone, so no answer tells a user
    where the server keeps its users."""
    if workspace is None:
        return str(path)
    home = workspace.resolve()
    for candidate in (path, path.resolve()):
        if candidate.is_absolute() and is_within(home, candidate):
            return candidate.relative_to(home).as_posix()
        if candidate.is_absolute() and is_within(workspace, candidate):
            return candidate.relative_to(workspace).as_posix()
    return path.name if path.is_absolute() else path.as_posix()


def shown_text(text: str, workspace: Path | None) -> str:
    """`text` (a message a server wrote before it knew who reads it, such as the reason it is not
    running) with every mention of `workspace` made relative to it, as `shown_path` does."""
    if workspace is None:
        return text
    for root in sorted({str(workspace), str(workspace.resolve())}, key=len, reverse=True):
        text = text.replace(root + "/", "").replace(root, ".")
    return text
