"""The replies the orchestrator drafted, and to whom: `Logs/drafted_replies.jsonl`.

A reply in `Approved/` is sent only when it is vouched for: this ledger says the orchestrator
drafted it (its `draft_id`) and its recipients are among those it was drafted for, or every one of
its recipients is on `ORCHESTRATOR_TRUSTED_RECIPIENTS`. A note put into `Approved/` by anyone else
(a hand-written reply, a draft whose `to` was changed) is therefore refused unless that list
covers it, and the reason is written into the note.

The ledger is append-only: one JSON line per draft written (before its note is written) and per
draft rejected, appended with O_APPEND and fsynced, so the orchestrator's tools and a running
`deskmcp orchestrate` can both write it, and it outlives a corrupt state file.
"""

from __future__ import annotations

import logging
from email.utils import getaddresses
from pathlib import Path

import orjson

from deskmcp.core.dates import utc_stamp
from deskmcp.core.errors import IOFailure
from deskmcp.core.files import PRIVATE_FILE, append_durably

log = logging.getLogger("deskmcp.orchestrator")

LEDGER_FILE = "drafted_replies.jsonl"


def addresses(*fields: str | None) -> list[str]:
    """The e-mail addresses in address header values, lowercased, in order, without duplicates."""
    found: list[str] = []
    for _, address in getaddresses([f for f in fields if f]):
        address = address.strip().lower()
        if address and address not in found:
            found.append(address)
    return found


def is_trusted(address: str, trusted: tuple[str, ...]) -> bool:
    """Whether `address` is an entry of ORCHESTRATOR_TRUSTED_RECIPIENTS, or in one of its `@domain` entries."""
    domain = "@" + address.rpartition("@")[2]
    return any(entry in (address, domain) for entry in trusted)


class DraftLedger:
    def __init__(self, logs: Path) -> None:
        self.path = logs / LEDGER_FILE

    def _append(self, entry: dict[str, object]) -> None:
        try:
            # A leading newline isolates a line a crash cut short from the one written after it.
            append_durably(self.path, b"\n" + orjson.dumps(entry) + b"\n", PRIVATE_FILE)
        except OSError as exc:
            raise IOFailure(
                f"The drafts ledger {self.path} could not be written: {exc.strerror}. Nothing was drafted.",
                {"path": str(self.path)},
            ) from exc

    def record(self, draft_id: str, note: str, recipients: list[str]) -> None:
        """Remember a draft about to be written, with the addresses it goes to."""
        self._append(
            {"event": "drafted", "draft_id": draft_id, "note": note, "recipients": recipients, "at": utc_stamp()}
        )

    def reject(self, draft_id: str) -> None:
        """A rejected draft is never vouched for again, wherever its note goes."""
        self._append({"event": "rejected", "draft_id": draft_id, "at": utc_stamp()})

    def entry(self, draft_id: str) -> dict[str, object] | None:
        """The last line about `draft_id`, or None when the orchestrator never drafted it."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise IOFailure(f"The drafts ledger {self.path} cannot be read: {exc.strerror}.") from exc
        found: dict[str, object] | None = None
        for line in raw.splitlines():
            if not line.strip():
                continue
            try:
                entry = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue  # a line cut short by a crash: the draft it named is simply not vouched for
            if isinstance(entry, dict) and entry.get("draft_id") == draft_id:
                found = entry
        return found

    def refusal(
        self, draft_id: str, to: str, cc: str | None, trusted: tuple[str, ...], *, approving: bool = False
    ) -> str | None:
        """Why a reply must not be sent (or approved), or None when it may be."""
        wanted = addresses(to, cc)
        if trusted and wanted and all(is_trusted(a, trusted) for a in wanted):
            return None
        entry = self.entry(draft_id) if draft_id else None
        if entry is None:
            why = "deskmcp did not draft this reply"
        elif entry.get("event") == "rejected":
            why = "this reply was rejected"
        else:
            drafted = entry.get("recipients")
            drafted = [str(a) for a in drafted] if isinstance(drafted, list) else []
            added = [a for a in wanted if a not in drafted]
            if not added:
                return None
            why = f"its recipients were changed after deskmcp drafted it (added: {', '.join(added)})"
        after = "" if approving else "; move the note out of Approved/ to stop the retries"
        return (
            f"Not {'approved' if approving else 'sent'}: {why}. A reply is sent only to the people it was drafted "
            "for, unless every recipient is on ORCHESTRATOR_TRUSTED_RECIPIENTS. Put the recipients back, add them "
            f"to ORCHESTRATOR_TRUSTED_RECIPIENTS, or send it from your mail client{after}."
        )
