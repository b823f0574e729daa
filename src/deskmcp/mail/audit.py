"""The send audit log: one JSON line per event, flushed and fsynced before the action it announces."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from pathlib import Path

import orjson

from deskmcp.core.errors import IOFailure
from deskmcp.core.files import PRIVATE_FILE, PRIVATE_FOLDER, append_durably
from deskmcp.mail.models import AuditLogEntry

_lock = threading.Lock()
_SPEC_FIELDS = ("event", "timestamp", "to", "subject", "body_preview", "reply_to_message_id", "severity")


def audit_path(folder: Path, when: datetime | None = None) -> Path:
    day = (when or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%d")
    return folder / f"gmail_mcp_{day}.jsonl"


def append(folder: Path, entry: AuditLogEntry) -> Path:
    """Append `entry` durably; an audit line that cannot be written stops the send."""
    path = audit_path(folder)
    data = {k: v for k, v in entry.model_dump().items() if v is not None or k in _SPEC_FIELDS}
    line = orjson.dumps(data) + b"\n"
    with _lock:
        try:
            # Logs/ only, inside a vault that exists (a configured one is never created); 0700
            # because the lines name every recipient, Bcc included.
            folder.mkdir(exist_ok=True, mode=PRIVATE_FOLDER)
            append_durably(path, line, PRIVATE_FILE)
        except OSError as exc:
            raise IOFailure(
                f"The audit log {path} could not be written ({exc.strerror}); nothing was sent.", {"path": str(path)}
            ) from exc
    return path
