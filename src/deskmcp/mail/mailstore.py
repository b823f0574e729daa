"""A Maildir++ tree on disk: folders, atomic delivery, flags and moves that keep a message's key.

Layout (readable by the stdlib `mailbox.Maildir`, Dovecot, mutt, ...): INBOX is the root
(`cur/ new/ tmp/`), every other folder is a `.Name` sub-Maildir (`.Sent`, `.Drafts`, `.Trash`,
`.Junk`, `.Archive`, `.AI_PROCESSED`, nested labels as `.Work.Projects`). A message file is
`cur/<key>:2,<flags>` (S seen, F flagged, D draft, R replied, T trashed) or `new/<key>`.
Files are never rewritten: a flag change or a move is a rename, so the key (and the id the
tools show, derived from it) stays the same.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from deskmcp.core.errors import BadRequest, IOFailure, NotFound
from deskmcp.core.files import PRIVATE_FILE, PRIVATE_FOLDER, fsync_dir

INBOX = "INBOX"
SYSTEM_FOLDERS = {"SENT": ".Sent", "DRAFT": ".Drafts", "TRASH": ".Trash", "SPAM": ".Junk"}
ARCHIVE_DIR = ".Archive"
_DIR_TO_LABEL = {v.lower(): k for k, v in SYSTEM_FOLDERS.items()}
_LABEL = re.compile(r"^[\w][\w \-&+@/]*$", re.UNICODE)
_counter = 0
_counter_lock = threading.Lock()


@dataclass(frozen=True)
class Entry:
    """One message file: where it is and what its name says."""

    folder: str  # directory name: "" for INBOX, ".Sent", ...
    sub: str  # "new" or "cur"
    name: str

    @property
    def key(self) -> str:
        return self.name.split(":", 1)[0]

    @property
    def flags(self) -> str:
        _, _, info = self.name.partition(":2,")
        return info if ":2," in self.name else ""

    @property
    def relpath(self) -> str:
        return f"{self.folder}/{self.sub}/{self.name}" if self.folder else f"{self.sub}/{self.name}"


def check_label(name: str) -> str:
    """A label name usable as a folder; dots and path tricks are refused."""
    text = name.strip()
    if not text or len(text) > 100 or not _LABEL.match(text) or "//" in text or text.endswith("/"):
        raise BadRequest(
            f"{name!r} is not a valid label name: use letters, digits, spaces, - _ & + @ and / for nesting.",
            {"label": name},
        )
    return text


def folder_dir(label: str) -> str:
    """The directory of the folder holding `label` (`INBOX` -> root)."""
    upper = label.upper()
    if upper == INBOX:
        return ""
    if upper in SYSTEM_FOLDERS:
        return SYSTEM_FOLDERS[upper]
    if upper in ("DRAFTS",):
        return SYSTEM_FOLDERS["DRAFT"]
    if upper == "ARCHIVE":
        return ARCHIVE_DIR
    return "." + check_label(label).replace("/", ".")


def folder_label(directory: str) -> str | None:
    """The label a folder gives its messages (`None` for the archive)."""
    if directory == "":
        return INBOX
    if directory.lower() == ARCHIVE_DIR.lower():
        return None
    if directory.lower() in _DIR_TO_LABEL:
        return _DIR_TO_LABEL[directory.lower()]
    return directory[1:].replace(".", "/")


def new_key() -> str:
    global _counter
    with _counter_lock:
        _counter += 1
        count = _counter
    host = socket.gethostname().replace("/", "\\057").replace(":", "\\072") or "localhost"
    now = time.time_ns()
    return f"{now // 1_000_000_000}.M{(now // 1000) % 1_000_000}P{os.getpid()}Q{count}R{os.urandom(4).hex()}.{host}"


class MailStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    def ensure(self, directory: str = "") -> Path:
        base = self.root / directory if directory else self.root
        try:
            base.mkdir(parents=True, exist_ok=True, mode=PRIVATE_FOLDER)
            for sub in ("cur", "new", "tmp"):
                (base / sub).mkdir(exist_ok=True, mode=PRIVATE_FOLDER)
            if directory:
                (base / "maildirfolder").touch(exist_ok=True, mode=PRIVATE_FILE)
        except OSError as exc:
            raise IOFailure(f"The mail folder {base} could not be created: {exc.strerror}.") from exc
        return base

    def folders(self) -> list[str]:
        """Directory names of every folder ("" first)."""
        found = [""] if (self.root / "cur").is_dir() else []
        try:
            for entry in sorted(os.scandir(self.root), key=lambda e: e.name):
                if entry.name.startswith(".") and entry.is_dir() and (Path(entry.path) / "cur").is_dir():
                    found.append(entry.name)
        except FileNotFoundError:
            return []
        return found

    def path(self, entry: Entry) -> Path:
        return self.root / entry.relpath

    def list_names(self, directory: str, sub: str) -> set[str]:
        base = (self.root / directory if directory else self.root) / sub
        try:
            names = os.listdir(base)  # noqa: PTH208 (plain names, fast on big folders)
        except FileNotFoundError:
            return set()
        return {n for n in names if not n.startswith(".")}

    def list_dir(self, directory: str, sub: str) -> list[Entry]:
        return [Entry(directory, sub, n) for n in self.list_names(directory, sub)]

    def dir_mtime(self, directory: str, sub: str) -> int | None:
        base = (self.root / directory if directory else self.root) / sub
        try:
            return base.stat().st_mtime_ns
        except FileNotFoundError:
            return None

    def deliver(self, data: bytes, directory: str, flags: str = "") -> Entry:
        """Write a message atomically: tmp/, fsync, rename into new/ (no flags) or cur/."""
        base = self.ensure(directory)
        key = new_key()
        tmp = base / "tmp" / key
        try:
            with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE), "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            entry = Entry(directory, "cur", f"{key}:2,{_sorted(flags)}") if flags else Entry(directory, "new", key)
            tmp.replace(self.path(entry))
            fsync_dir(self.path(entry).parent)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise IOFailure(f"The message could not be written to the Maildir: {exc.strerror}.") from exc
        return entry

    def rename(self, entry: Entry, *, directory: str | None = None, flags: str | None = None) -> Entry:
        """Move to another folder and/or change flags; the key stays."""
        target_dir = entry.folder if directory is None else directory
        target_flags = entry.flags if flags is None else _sorted(flags)
        if target_dir == entry.folder and target_flags == entry.flags and entry.sub == "cur":
            return entry
        if entry.sub == "new" and not target_flags and target_dir != entry.folder:
            target = Entry(target_dir, "new", entry.key)
        else:
            target = Entry(target_dir, "cur", f"{entry.key}:2,{target_flags}")
        if target == entry:
            return entry
        self.ensure(target_dir)
        try:
            self.path(entry).replace(self.path(target))
        except FileNotFoundError as exc:
            raise NotFound(
                "The message file disappeared (moved by another mail program?). List the mail again.",
                {"file": entry.relpath},
            ) from exc
        except OSError as exc:
            raise IOFailure(f"The message could not be moved: {exc.strerror}.") from exc
        fsync_dir(self.path(target).parent)
        return target

    def delete(self, entry: Entry) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path(entry).unlink()


def _sorted(flags: str) -> str:
    return "".join(sorted(set(flags)))
