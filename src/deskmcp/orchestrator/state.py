"""What the orchestrator remembers between runs, and the lock that keeps one running per vault.

`Logs/orchestrator_state.json` records which mails were ingested (and into which note) and
which drafts were sent (with the provider's answer). It is written atomically after every
change, so a crash leaves the previous version or the new one. A corrupt state file is set
aside, never silently overwritten; nothing is lost by starting afresh, because notes have
paths derived from the mail id and sends carry the draft's id as idempotency key.

`Logs/orchestrator.lock` holds the pid and host of the running orchestrator. A second one on
the same vault refuses to start; a lock whose process is gone is stale and taken over.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import socket
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from deskmcp.core.dates import utc_stamp
from deskmcp.core.errors import Conflict, IOFailure
from deskmcp.core.files import PRIVATE_FILE, atomic_write_bytes, lock_exclusively, process_alive, unlock

log = logging.getLogger("deskmcp.orchestrator")

STATE_FILE = "orchestrator_state.json"
LOCK_FILE = "orchestrator.lock"


class State:
    """The state file's content, loaded once and saved after each change."""

    def __init__(self, path: Path, data: dict[str, Any] | None = None) -> None:
        self.path = path
        data = data or {}
        self.ingested: dict[str, dict[str, Any]] = dict(data.get("ingested") or {})
        self.sent: dict[str, dict[str, Any]] = dict(data.get("sent") or {})
        self.last_pass: dict[str, Any] | None = data.get("last_pass")

    @classmethod
    def load(cls, logs: Path, *, set_aside: bool = True) -> State:
        """The state in `logs`; a corrupt file is renamed aside (unless `set_aside` is False: a dry
        run or a status query writes nothing) and an empty state returned."""
        path = logs / STATE_FILE
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return cls(path)
        except OSError as exc:
            raise IOFailure(f"The state file {path} cannot be read: {exc.strerror}.", {"path": str(path)}) from exc
        try:
            data = orjson.loads(raw)
            if not isinstance(data, dict):
                raise ValueError("not an object")
        except (orjson.JSONDecodeError, ValueError) as exc:
            if not set_aside:
                log.error("the state file %s is corrupt (%s); read as empty", path, exc)
                return cls(path)
            aside = path.with_name(f"{STATE_FILE}.corrupt-{datetime.now(UTC):%Y%m%dT%H%M%S}")
            with contextlib.suppress(OSError):
                path.replace(aside)
            log.error("the state file %s is corrupt (%s); kept as %s, starting afresh", path, exc, aside.name)
            return cls(path)
        return cls(path, data)

    def to_dict(self) -> dict[str, Any]:
        return {"version": 1, "ingested": self.ingested, "sent": self.sent, "last_pass": self.last_pass}

    def save(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(self.path, orjson.dumps(self.to_dict(), option=orjson.OPT_INDENT_2), mode=PRIVATE_FILE)
        except OSError as exc:
            raise IOFailure(
                f"The state file {self.path} could not be written: {exc.strerror}.", {"path": str(self.path)}
            ) from exc


def lock_holder(logs: Path) -> dict[str, Any] | None:
    """The live holder of the vault's lock, or None (no lock, or a stale one)."""
    try:
        info = orjson.loads((logs / LOCK_FILE).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    if not isinstance(info, dict) or not isinstance(info.get("pid"), int):
        return None
    if info.get("host") == socket.gethostname() and not process_alive(info["pid"]):
        return None
    return info


class VaultLock:
    """An exclusive lock file; `acquire` raises `Conflict` when a live process holds it."""

    def __init__(self, logs: Path) -> None:
        self.path = logs / LOCK_FILE
        self.held = False

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        payload = orjson.dumps({"pid": os.getpid(), "host": socket.gethostname(), "started": utc_stamp()})
        for _ in range(3):
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
            except FileExistsError:
                holder = lock_holder(self.path.parent)
                if holder is not None:
                    raise Conflict(
                        f"Another orchestrator (pid {holder['pid']} on {holder.get('host')}) is running on this "
                        f"vault since {holder.get('started')}. Stop it first; a lock left by a crash is "
                        "taken over automatically once its process is gone.",
                        {"pid": holder["pid"], "lock": str(self.path)},
                    ) from None
                log.warning("taking over the stale lock %s", self.path)
                with contextlib.suppress(FileNotFoundError):
                    self.path.unlink()
                continue
            except OSError as exc:
                raise IOFailure(f"Cannot create the lock {self.path}: {exc.strerror}.") from exc
            try:
                os.write(fd, payload)
                os.fsync(fd)
            finally:
                os.close(fd)
            self.held = True
            return
        raise Conflict(f"Could not take the lock {self.path}; another orchestrator keeps starting.", {})

    def release(self) -> None:
        if not self.held:
            return
        self.held = False
        try:
            info = orjson.loads(self.path.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return
        if isinstance(info, dict) and info.get("pid") == os.getpid():
            try:
                self.path.unlink()
            except OSError as exc:
                if exc.errno != errno.ENOENT:
                    log.warning("could not remove the lock %s: %s", self.path, exc)

    def __enter__(self) -> VaultLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


SEND_LOCK_FILE = "sending.lock"


class SendLock:
    """Held from the last check of a reply to its send recorded, and by a rejection while it
    decides: a draft is either sent or rejected, never sent while a person rejects it (in this
    process or another on the same vault). An OS lock on `Logs/sending.lock`, let go by the
    system when its process ends."""

    def __init__(self, logs: Path) -> None:
        self.path = logs / SEND_LOCK_FILE
        self._fd = -1

    def acquire(self, *, wait: bool) -> bool:
        """Take the lock: waiting for it, or (`wait=False`) only when it is free. Whether it was taken."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, PRIVATE_FILE)
        try:
            if not lock_exclusively(fd, wait=wait):
                os.close(fd)
                return False
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return True

    def release(self) -> None:
        if self._fd < 0:
            return
        fd, self._fd = self._fd, -1
        try:
            unlock(fd)
        finally:
            os.close(fd)
