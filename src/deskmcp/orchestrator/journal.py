"""The orchestrator's event log: one JSON line per event in `Logs/orchestrator_{date}.jsonl`.

Every ingest, decision, send and failure (including `mcp_unavailable`, when a server did not
answer and a fallback ran or the item waited) gets a line, flushed and fsynced, so a person
can see afterwards what happened and why. A log that cannot be written (vault gone, disk
full) is reported on stderr and never stops the loop.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from deskmcp.core.dates import utc_stamp
from deskmcp.core.files import PRIVATE_FILE, append_durably

log = logging.getLogger("deskmcp.orchestrator")


class Journal:
    def __init__(self, logs: Path, *, enabled: bool = True) -> None:
        self.logs = logs
        self.enabled = enabled  # False for a dry run: events go to the process log only, nothing is written

    def path_for(self, when: datetime) -> Path:
        return self.logs / f"orchestrator_{when:%Y-%m-%d}.jsonl"

    def write(self, event: str, severity: str = "INFO", **fields: Any) -> dict[str, Any]:
        now = datetime.now(UTC)
        entry = {"event": event, "timestamp": utc_stamp(now), "severity": severity, **fields}
        line = orjson.dumps(entry, default=str) + b"\n"
        level = logging.WARNING if severity in ("WARNING", "ERROR") else logging.INFO
        log.log(level, "%s %s", event, " ".join(f"{k}={v}" for k, v in fields.items()))
        if not self.enabled:
            return entry
        try:
            self.logs.mkdir(exist_ok=True)  # never re-creates a vault that vanished
            append_durably(self.path_for(now), line, PRIVATE_FILE)
        except OSError as exc:
            log.error("could not write the event log in %s: %s; event was %s", self.logs, exc, line.decode())
        return entry

    def recent(self, limit: int = 20, pattern: str = "orchestrator_*.jsonl") -> list[dict[str, Any]]:
        """The last `limit` lines of the log files matching `pattern`, newest first."""
        try:
            files = sorted(self.logs.glob(pattern), reverse=True)
        except OSError:
            return []
        lines: list[bytes] = []
        for path in files:
            try:
                lines = path.read_bytes().splitlines() + lines
            except OSError:
                continue
            if len(lines) >= limit:
                break
        out: list[dict[str, Any]] = []
        for raw in lines[-limit:]:
            try:
                out.append(orjson.loads(raw))
            except orjson.JSONDecodeError:
                continue
        out.reverse()
        return out
