"""The vault's protected folders: top-level folders no tool writes into, whichever server writes.

By default these are the email triage folders, which only the triage flow and the person change
(the person approves a reply by moving its note from Drafts/ to Approved/). The protection belongs
to the folder: the vault server and the documents server (when the vault is, or holds, one of
its roots) ask `protected_folder` before every write.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from deskmcp.core.errors import PermissionDenied
from deskmcp.core.paths import is_within

SETTING = "VAULT_PROTECTED_FOLDERS"

TRIAGE_FOLDERS = ("Needs_Action", "Drafts", "Approved", "Done", "Logs")
"""Where the email triage flow keeps mail, drafts, approvals and its logs: only that flow and the person
change them, so that a reply is never approved by the assistant through the tools."""


def folder_names(setting: str) -> tuple[str, ...]:
    """The folder names of a comma-separated setting (`Drafts, Approved/` -> `('Drafts', 'Approved')`)."""
    return tuple(name.strip().strip("/") for name in setting.split(",") if name.strip().strip("/"))


def protected_folder(vault: Path, path: Path | str, protected: Iterable[str]) -> str | None:
    """The protected folder (as configured) that `path` is in or names, or None when it may be written.

    `path` is vault-relative (POSIX) or absolute; a path outside the vault is never protected. It is
    checked as written and through its symlinks, so a link named like a protected folder, or one
    leading into it, is protected too. Names compare case-insensitively, as macOS and Windows do.
    """
    names = {name.casefold(): name for name in protected}
    if not names:
        return None
    real = vault.resolve()
    full = real / path if isinstance(path, str) or not path.is_absolute() else path
    for candidate in (full, full.resolve()):
        for base in (real, vault):
            if is_within(base, candidate):
                parts = candidate.relative_to(base).parts
                if parts and parts[0].casefold() in names:
                    return names[parts[0].casefold()]
    return None


def protected_denied(
    folder: str, path: str, protected: Iterable[str], *, tools: str, linking_note: str | None = None
) -> PermissionDenied:
    """The refusal of a write into `folder`, naming the setting and saying how the person acts instead."""
    cause = f"{linking_note} links to this note and " if linking_note else ""
    hint = " To move the note anyway, pass update_links=false (that link is left as it is)." if linking_note else ""
    message = (
        f"{cause}{folder}/ is protected ({SETTING}): notes there cannot be written, moved or edited "
        f"through {tools}, and nothing was changed. By default these are the email triage folders, "
        "which only the triage flow and the person change: the person approves a reply by moving its note "
        "from Drafts/ to Approved/ in Obsidian or a file manager (or tells you to call triage_approve); "
        "use triage_decide and triage_reject for the rest." + hint
    )
    return PermissionDenied(message, {"path": path, "protected": sorted(protected), "variable": SETTING})
