"""The orchestrator's data contracts: what a decider sees and answers, drafts, and pass results."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

Decision = Literal["draft_reply", "archive", "needs_info", "urgent", "delegate"]
DECISIONS: tuple[Decision, ...] = ("draft_reply", "archive", "needs_info", "urgent", "delegate")
REPLY_DECISIONS: tuple[Decision, ...] = ("draft_reply", "urgent")


class TriageItem(BaseModel):
    """One ingested mail as a decider sees it (read from its Needs_Action note)."""

    note: str = Field(description="Vault path of the item's note")
    message_id: str = ""
    thread_id: str = ""
    sender: str = ""
    to: str = ""
    cc: str = ""
    subject: str = ""
    received: str = ""
    labels: list[str] = []
    body: str = ""
    status: str = "pending"


class TriageDecision(BaseModel):
    """A decision about one item. `reply` is the draft body for draft_reply and urgent."""

    decision: Decision
    reason: str = Field(default="", max_length=2000)
    reply: str | None = None
    delegate_to: str | None = None


class Deferred(BaseModel):
    """No decision this time; the item stays pending and `reason` is written into its note."""

    reason: str


class ApprovedDraft(BaseModel):
    """A reply a person approved by moving it into Approved/: what is in it is what is sent."""

    filepath: Path = Field(description="Absolute path of the draft file")
    path: str = Field(description="Vault-relative path of the draft")
    draft_id: str = Field(description="Stable id of the draft: the send's idempotency key")
    to: str
    subject: str
    body: str
    reply_to_message_id: str | None = None
    cc: str | None = None
    source_note: str | None = None

    def for_person(self, excerpt_chars: int = 600) -> str:
        """The draft as a person reads it before approving: recipients, subject, the reply's start."""
        text = self.body.strip()
        if len(text) > excerpt_chars:
            text = text[:excerpt_chars].rstrip() + " [...]"
        lines = [f"Send this reply? ({self.path})", f"To: {self.to}"]
        if self.cc:
            lines.append(f"Cc: {self.cc}")
        lines += [f"Subject: {self.subject}", "Attachments: none", "", text]
        return "\n".join(lines)


class PassSummary(BaseModel):
    """What one pass did."""

    ingested: int = 0
    decided: int = 0
    sent: int = 0
    done: int = 0
    failed: int = 0
    waiting: int = Field(default=0, description="Items left for later (a server unavailable, no decision)")
    dry_run: bool = False
    skipped: str | None = Field(default=None, description="Why the pass did nothing, when it did nothing")
    events: list[str] = Field(default=[], description="One line per thing done or failed")

    def line(self) -> str:
        parts = [
            f"ingested {self.ingested}",
            f"decided {self.decided}",
            f"sent {self.sent}",
            f"done {self.done}",
            f"failed {self.failed}",
            f"waiting {self.waiting}",
        ]
        prefix = "dry run: would have " if self.dry_run else ""
        return prefix + ", ".join(parts)


class PendingItem(BaseModel):
    path: str = Field(description="Note path; pass it to triage_decide, triage_approve or triage_reject")
    status: str
    sender: str = ""
    subject: str = ""
    received: str = ""
    priority: str = "normal"
    reason: str = ""
    body: str = Field(default="", description="The mail text (or the draft text for drafts), bounded")


class PendingList(BaseModel):
    items: list[PendingItem]
    total: int


class ItemResult(BaseModel):
    """Where an item is after an action."""

    path: str = Field(description="The item's note path now")
    status: str
    draft: str | None = Field(default=None, description="The draft written for it, when there is one")
    message: str = ""


class StateView(BaseModel):
    """The orchestrator's state: counts per folder and what the state file records."""

    vault: str
    decider: str
    folders: dict[str, int]
    ingested: int
    sent: int
    running_pid: int | None = Field(default=None, description="pid holding the vault's lock, if any")
    last_pass: dict[str, object] | None = None
    send_audit: list[dict[str, object]] = Field(
        default=[], description="The mail server's pre-send audit lines, newest first"
    )
    recent_events: list[dict[str, object]] = Field(default=[], description="The orchestrator's events, newest first")
    problem: str | None = Field(default=None, description="What stops a pass from running, when something does")
