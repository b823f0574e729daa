"""The triage flow: ingest mail into notes, decide, send approved drafts, file what is done.

One pass does three things, in this order:

1. **send**: every draft in `Approved/` is sent through the mail server with the draft's id as
   idempotency key, recorded in the state file, marked done and moved to `Done/` (with the mail
   it answers). A failed send stays in `Approved/` with the error in its frontmatter.
2. **ingest**: new mail becomes `Needs_Action/` notes (status pending) and is labelled so it is
   never fetched again. A mail that cannot be read becomes a note saying so.
3. **decide**: the decider handles pending notes: draft_reply and urgent write a draft into
   `Drafts/`; archive files the note in `Done/`; needs_info and delegate leave it in place.

Every step can be interrupted at any point and redone: note paths derive from mail ids, a note
already written is found instead of written twice, and a repeated send with the same key is
answered by the mail server without sending again.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import signal
from pathlib import Path
from typing import Any

import anyio

from deskmcp.core.dates import utc_stamp
from deskmcp.core.errors import BadRequest, Conflict, DeskError, MCPUnavailable, NotFound, PermissionDenied
from deskmcp.core.paths import safe_join
from deskmcp.core.settings import variable
from deskmcp.orchestrator import layout
from deskmcp.orchestrator.access import MailAccess
from deskmcp.orchestrator.deciders import Decider
from deskmcp.orchestrator.journal import Journal
from deskmcp.orchestrator.layout import APPROVED, DONE, DRAFTS, FOLDERS, NEEDS_ACTION
from deskmcp.orchestrator.ledger import DraftLedger, addresses
from deskmcp.orchestrator.models import (
    REPLY_DECISIONS,
    ApprovedDraft,
    Deferred,
    ItemResult,
    PassSummary,
    TriageDecision,
)
from deskmcp.orchestrator.settings import OrchestratorSettings
from deskmcp.orchestrator.state import SendLock, State
from deskmcp.orchestrator.vault_port import VaultPort, list_paths, update_note
from deskmcp.vault.models import NoteContent

log = logging.getLogger("deskmcp.orchestrator")

FAULT_ENV = "DESKMCP_ORCHESTRATOR_FAULT"
"""Names a point (before_send, sent_unrecorded, after_send, during_move) where the process kills itself: the
crash tests use it to prove that a restart still sends exactly once."""


def _fault(point: str) -> None:
    if variable(FAULT_ENV) == point:
        log.error("fault injection: killing the process at %s", point)
        os.kill(os.getpid(), signal.SIGKILL)


class Orchestrator:
    def __init__(
        self,
        settings: OrchestratorSettings,
        vault: VaultPort,
        mail: MailAccess | None,
        decider: Decider | None,
        *,
        dry_run: bool = False,
    ) -> None:
        self.settings = settings
        self.root = settings.root
        self.logs = self.root / layout.LOGS
        self.vault = vault
        self.mail = mail
        self.decider = decider
        self.dry_run = dry_run
        self.journal = Journal(self.logs, enabled=not dry_run)
        self.ledger = DraftLedger(self.logs)
        self._state: State | None = None

    # -- the state file ---------------------------------------------------------------------

    @property
    def state(self) -> State:
        if self._state is None:
            self._state = State.load(self.logs, set_aside=not self.dry_run)
        return self._state

    def check_vault(self) -> str | None:
        """Why a pass cannot run on the vault (a configured folder that is missing), writing nothing;
        a missing default vault is fine: a real pass creates it."""
        if self.root.is_dir() or self.settings.vault_path is None:
            return None
        return (
            f"The vault folder {self.root} does not exist (moved, unmounted or deleted?). "
            "Nothing was done; the next pass tries again."
        )

    def ensure_layout(self) -> None:
        if not self.root.is_dir():
            if self.settings.vault_path is not None:
                raise NotFound(
                    f"The vault folder {self.root} does not exist (moved, unmounted or deleted?). "
                    "Nothing was done; the next pass tries again.",
                    {"root": str(self.root)},
                )
            self.root.mkdir(parents=True, exist_ok=True)
        for folder in FOLDERS:
            (self.root / folder).mkdir(exist_ok=True)

    # -- one pass ---------------------------------------------------------------------------

    async def run_pass(self, *, approved_only: bool = False, hints: tuple[str, ...] = ()) -> PassSummary:
        """Send approved drafts, then (unless `approved_only`) ingest and decide."""
        summary = PassSummary(dry_run=self.dry_run)
        try:
            if self.dry_run:  # a dry run writes nothing: no folder, no rules file, no state, no log
                if (problem := self.check_vault()) is not None:
                    raise NotFound(problem, {"root": str(self.root)})
            else:
                self.ensure_layout()
                prepare = getattr(self.decider, "prepare", None)
                if prepare is not None:
                    prepare()
            self._state = State.load(self.logs, set_aside=not self.dry_run)
        except (DeskError, OSError) as exc:
            message = exc.message if isinstance(exc, DeskError) else str(exc)
            self.journal.write("pass_skipped", "ERROR", reason=message)
            summary.skipped = message
            return summary
        await self.send_approved(summary, hints)
        if not approved_only:
            await self.ingest(summary)
            await self.decide_pending(summary)
        if not self.dry_run:
            self.state.last_pass = {"at": utc_stamp(), **summary.model_dump(exclude={"events", "dry_run"})}
            try:
                self.state.save()
            except DeskError as exc:
                self.journal.write("state_not_saved", "ERROR", reason=exc.message)
        return summary

    def _failed(self, summary: PassSummary, event: str, path: str, exc: BaseException) -> None:
        message = exc.message if isinstance(exc, DeskError) else f"{type(exc).__name__}: {exc}"
        self.journal.write(event, "ERROR", note=path, error=message)
        summary.failed += 1
        summary.events.append(f"{event}: {path}: {message}")

    # -- send -------------------------------------------------------------------------------

    async def send_approved(self, summary: PassSummary, hints: tuple[str, ...] = ()) -> None:
        if self.mail is None:
            return
        try:
            listed = await list_paths(self.vault, APPROVED)
        except DeskError as exc:
            self._failed(summary, "list_failed", APPROVED, exc)
            return
        found = set(listed) | {h for h in hints if layout.folder_of(h) == APPROVED and h.endswith(".md")}
        if not self.dry_run:
            await self._finish_interrupted(found)
        for path in sorted(found):
            try:
                await self.send_one(path, summary)
            except MCPUnavailable as exc:
                summary.waiting += 1
                summary.events.append(f"waiting: {path}: {exc.message}")
                return  # the mail server is down: every other draft would wait too
            except PermissionDenied as exc:
                self._failed(summary, "send_refused", path, exc)
            except (DeskError, OSError) as exc:
                self._failed(summary, "send_failed", path, exc)

    async def send_one(self, path: str, summary: PassSummary) -> None:
        assert self.mail is not None
        try:
            note = await self.vault.read_note(path)
        except NotFound:
            return  # moved away since it was listed
        if note.frontmatter_error:
            raise BadRequest(
                f"{path} has corrupt frontmatter ({note.frontmatter_error}); fix it and it is sent on the next pass."
            )
        front = note.frontmatter
        try:
            draft = layout.approved_draft(self.root, path, note)
        except BadRequest as exc:
            if not self.dry_run and front.get("send_error") != exc.message:
                await update_note(self.vault, path, {"send_error": exc.message, "last_attempt": utc_stamp()})
            raise
        record = self.state.sent.get(draft.draft_id) if draft.draft_id else None
        if record is None and (refusal := self.refusal(draft)) is not None:
            if not self.dry_run and front.get("send_error") != refusal:
                await update_note(self.vault, path, {"send_error": refusal, "last_attempt": utc_stamp()})
            raise PermissionDenied(refusal, {"path": path})
        if not draft.draft_id:
            draft.draft_id = "draft-" + layout.short_id(f"{path}:{note.content_hash}")
            if not self.dry_run:  # the key must be on disk before anything is sent with it
                await update_note(self.vault, path, {"draft_id": draft.draft_id})
        if self.dry_run:
            verb = "would file" if record else "would send"
            summary.events.append(f"{verb}: {path} to {draft.to}: {draft.subject}")
            summary.sent += 0 if record else 1
            return
        if record is None:
            _fault("before_send")
            # Held until the send is recorded: a rejection meanwhile waits for none of it and is
            # refused, and one made before this is taken is seen by the check below.
            sending = SendLock(self.logs)
            await anyio.to_thread.run_sync(functools.partial(sending.acquire, wait=True))
            try:
                record = await self._send_locked(path, front, draft, summary)
            finally:
                sending.release()
            _fault("after_send")
        await self._file_sent(path, draft.draft_id, record, draft.source_note)
        summary.done += 1

    async def _send_locked(
        self, path: str, front: dict[str, Any], draft: ApprovedDraft, summary: PassSummary
    ) -> dict[str, Any]:
        """Send an approved reply and record it, holding the send lock: the draft is checked once
        more (a person may have rejected it since it was read)."""
        assert self.mail is not None
        if (refusal := self.refusal(draft)) is not None:
            with contextlib.suppress(NotFound):  # a rejection filed it meanwhile
                await update_note(self.vault, path, {"send_error": refusal, "last_attempt": utc_stamp()})
            raise PermissionDenied(refusal, {"path": path})
        self.journal.write("sending", draft_id=draft.draft_id, note=path, to=draft.to, subject=draft.subject)
        try:
            result = await self.mail.send_email(
                to=draft.to,
                subject=draft.subject,
                body=draft.body,
                cc=draft.cc,
                reply_to_message_id=draft.reply_to_message_id,
                idempotency_key=draft.draft_id,
            )
        except MCPUnavailable:
            raise
        except DeskError as exc:
            attempts = int(front.get("send_attempts") or 0) + 1
            await update_note(
                self.vault,
                path,
                {
                    "send_error": f"{exc.code}: {exc.message}",
                    "send_attempts": attempts,
                    "last_attempt": utc_stamp(),
                },
            )
            raise
        _fault("sent_unrecorded")
        record = {
            "note": path,
            "at": utc_stamp(),
            "to": draft.to,
            "subject": draft.subject,
            **{k: result.get(k) for k in ("message_id", "thread_id", "sent_at", "rfc_message_id", "duplicate")},
        }
        self.state.sent[draft.draft_id] = record
        self.state.save()
        self.journal.write(
            "sent",
            draft_id=draft.draft_id,
            note=path,
            to=draft.to,
            message_id=record.get("message_id"),
            duplicate=bool(record.get("duplicate")),
        )
        summary.sent += 1
        summary.events.append(f"sent: {draft.subject} to {draft.to}")
        return record

    def refusal(self, draft: ApprovedDraft, *, approving: bool = False) -> str | None:
        """Why a reply must not be sent (deskmcp did not draft it, or its recipients were changed,
        and ORCHESTRATOR_TRUSTED_RECIPIENTS does not cover them), or None."""
        return self.ledger.refusal(draft.draft_id, draft.to, draft.cc, self.settings.trusted, approving=approving)

    async def _finish_interrupted(self, approved: set[str]) -> None:
        """Finish sends whose draft reached Done/ but whose bookkeeping was cut short by a crash."""
        for draft_id, record in list(self.state.sent.items()):
            path = str(record.get("note") or "")
            if record.get("done") or not path or path in approved:
                continue
            done = f"{DONE}/{layout.name_of(path)}"
            try:
                note = await self.vault.read_note(done)
            except NotFound:
                continue
            if str(note.frontmatter.get("draft_id") or "") != draft_id:
                continue
            source = note.frontmatter.get("source_note")
            if isinstance(source, str) and layout.folder_of(source) == NEEDS_ACTION:
                try:
                    await update_note(self.vault, source, {"status": "done", "reply": f"[[{done}]]"})
                    await self._move_to_done(source)
                except NotFound:
                    pass
            record["done"] = done
            self.state.save()
            self.journal.write("done", draft_id=draft_id, note=done, resumed=True)

    async def _file_sent(self, path: str, draft_id: str, record: dict[str, Any], source: str | None) -> None:
        changes = {
            "status": "done",
            "sent_at": record.get("sent_at") or record.get("at"),
            "sent_message_id": record.get("message_id"),
            "send_error": None,
        }
        await update_note(self.vault, path, changes)
        _fault("during_move")
        done = await self._move_to_done(path)
        if source and layout.folder_of(source) == NEEDS_ACTION:
            try:
                await update_note(self.vault, source, {"status": "done", "reply": f"[[{done}]]"})
                await self._move_to_done(source)
            except NotFound:
                pass  # filed already, or moved by the person
        self.state.sent[draft_id]["done"] = done
        self.state.save()
        self.journal.write("done", draft_id=draft_id, note=done)

    async def _move_to_done(self, path: str) -> str:
        """Move a note into Done/ under its name (or a free variant), finishing an interrupted move."""
        name = layout.name_of(path)
        stem = name[:-3] if name.endswith(".md") else name
        for n in range(1, 100):
            dest = f"{DONE}/{name}" if n == 1 else f"{DONE}/{stem}-{n}.md"
            try:
                await self.vault.move_note(path, dest)
                return dest
            except Conflict:
                if self._same_file(path, dest):
                    # A move cut short after the new name was linked: the copy in Done is this note.
                    safe_join(self.root, path).unlink()
                    return dest
        raise Conflict(f"No free name for {name} in {DONE}/.", {"path": path})

    def _same_file(self, a: str, b: str) -> bool:
        try:
            first, second = safe_join(self.root, a), safe_join(self.root, b)
            return first.samefile(second) or first.read_bytes() == second.read_bytes()
        except (OSError, DeskError):
            return False

    # -- ingest -----------------------------------------------------------------------------

    async def ingest(self, summary: PassSummary) -> None:
        if self.mail is None:
            return
        try:
            if not self.dry_run:
                await self._retry_labels()
            emails = await self.mail.list_emails(self.settings.query, self.settings.batch)
        except MCPUnavailable as exc:
            summary.waiting += 1
            summary.events.append(f"waiting: mail: {exc.message}")
            return
        except DeskError as exc:
            self._failed(summary, "ingest_failed", "mail", exc)
            return
        for email in emails:
            message_id = str(email.get("id") or "")
            if not message_id or message_id in self.state.ingested:
                continue
            try:
                await self.ingest_one(email, summary)
            except MCPUnavailable as exc:
                summary.waiting += 1
                summary.events.append(f"waiting: mail: {exc.message}")
                return
            except (DeskError, OSError) as exc:
                self._failed(summary, "ingest_failed", message_id, exc)

    async def ingest_one(self, summary_email: dict[str, Any], summary: PassSummary) -> None:
        assert self.mail is not None
        message_id = str(summary_email["id"])
        subject = str(summary_email.get("subject") or "")
        name = layout.note_name(message_id, subject, str(summary_email.get("date") or ""))
        path = f"{NEEDS_ACTION}/{name}"
        if self.dry_run:
            summary.ingested += 1
            summary.events.append(f"would ingest: {subject} from {summary_email.get('sender', '')}")
            return
        now = utc_stamp()
        try:
            email = await self.mail.get_email(message_id)
            front, body = layout.email_note(email, ingested_at=now, max_chars=self.settings.max_body_chars)
        except MCPUnavailable:
            raise
        except DeskError as exc:
            front, body = layout.failed_email_note(summary_email, f"{exc.code}: {exc.message}", ingested_at=now)
        try:
            await self._write_new(path, body, front)
        except MCPUnavailable:
            raise
        except DeskError as exc:
            if front.get("ingest_error"):
                raise
            front, body = layout.failed_email_note(summary_email, f"{exc.code}: {exc.message}", ingested_at=now)
            await self._write_new(path, body, front)
        self.state.ingested[message_id] = {"note": path, "at": now, "labelled": False}
        self.state.save()
        self.journal.write(
            "ingested",
            message_id=message_id,
            note=path,
            sender=front.get("from"),
            subject=front.get("subject"),
            error=front.get("ingest_error"),
        )
        summary.ingested += 1
        summary.events.append(f"ingested: {front.get('subject')} from {front.get('from')}")
        await self._label(message_id)

    async def _write_new(self, path: str, body: str, front: dict[str, Any]) -> None:
        with contextlib.suppress(Conflict):  # written by a pass cut short before it recorded the mail
            await self.vault.write_note(path, body, front)

    async def _label(self, message_id: str) -> None:
        assert self.mail is not None
        try:
            await self.mail.add_label(message_id, self.settings.processed_label)
        except MCPUnavailable:
            raise
        except DeskError as exc:
            self.journal.write("label_failed", "WARNING", message_id=message_id, error=exc.message)
            return
        self.state.ingested[message_id]["labelled"] = True
        self.state.save()

    async def _retry_labels(self) -> None:
        for message_id, entry in list(self.state.ingested.items()):
            if not entry.get("labelled"):
                await self._label(message_id)

    # -- decide -----------------------------------------------------------------------------

    async def decide_pending(self, summary: PassSummary) -> None:
        if self.decider is None or self.decider.name == "assistant":
            return
        try:
            paths = await list_paths(self.vault, NEEDS_ACTION, status="pending")
        except DeskError as exc:
            self._failed(summary, "list_failed", NEEDS_ACTION, exc)
            return
        for path in paths:
            try:
                await self.decide_one(path, summary)
            except MCPUnavailable as exc:
                summary.waiting += 1
                summary.events.append(f"waiting: {path}: {exc.message}")
            except (DeskError, OSError) as exc:
                self._failed(summary, "decide_failed", path, exc)

    async def decide_one(self, path: str, summary: PassSummary) -> None:
        assert self.decider is not None
        note = await self.vault.read_note(path)
        if note.frontmatter_error:
            raise BadRequest(f"{path} has corrupt frontmatter ({note.frontmatter_error}); it is left as it is.")
        if note.frontmatter.get("status") != "pending":
            return
        item = layout.triage_item(path, note)
        result = await self.decider.decide(item)
        if result is None:
            summary.waiting += 1
            return
        if isinstance(result, Deferred):
            summary.waiting += 1
            summary.events.append(f"undecided: {path}: {result.reason}")
            if not self.dry_run and note.frontmatter.get("decision_error") != result.reason:
                self.journal.write("undecided", "WARNING", note=path, reason=result.reason)
                await update_note(self.vault, path, {"decision_error": result.reason, "decision_checked": utc_stamp()})
            return
        if self.dry_run:
            summary.decided += 1
            summary.events.append(f"would decide {result.decision}: {item.subject}")
            return
        outcome = await self.apply_decision(path, result, by=self.decider.name, note=note)
        summary.decided += 1
        summary.events.append(f"decided {result.decision}: {item.subject} -> {outcome.path}")

    async def apply_decision(
        self, path: str, decision: TriageDecision, *, by: str, note: NoteContent | None = None
    ) -> ItemResult:
        """Carry out one decision about the Needs_Action note at `path`."""
        note = note or await self.vault.read_note(path)
        front = note.frontmatter
        common = {
            "decision": decision.decision,
            "reason": decision.reason,
            "decided_by": by,
            "decided": utc_stamp(),
            "decision_error": None,
        }
        outcome: ItemResult
        if decision.decision in REPLY_DECISIONS:
            draft = await self._write_draft(path, front, decision)
            priority = "urgent" if decision.decision == "urgent" else front.get("priority", "normal")
            changes = {**common, "status": "pending_approval", "priority": priority, "draft": f"[[{draft}]]"}
            await update_note(self.vault, path, changes)
            outcome = ItemResult(path=path, status="pending_approval", draft=draft, message="Draft written")
        elif decision.decision == "archive":
            await update_note(self.vault, path, {**common, "status": "done"})
            done = await self._move_to_done(path)
            outcome = ItemResult(path=done, status="done", message="Archived")
        elif decision.decision == "needs_info":
            await update_note(self.vault, path, {**common, "status": "needs_info"})
            outcome = ItemResult(path=path, status="needs_info", message="Left for a person")
        else:  # delegate
            who = decision.delegate_to or "someone else"
            body = note.body.rstrip("\n") + f"\n\n## Delegated\n\nDelegate to {who}: {decision.reason}\n"
            changes = {**common, "status": "pending_approval", "delegate_to": decision.delegate_to}
            await update_note(self.vault, path, changes, body=body)
            outcome = ItemResult(path=path, status="pending_approval", message=f"Delegated to {who}")
        self.journal.write(
            "decided", note=path, decision=decision.decision, by=by, reason=decision.reason, result=outcome.path
        )
        return outcome

    async def _write_draft(self, path: str, front: dict[str, Any], decision: TriageDecision) -> str:
        revision = int(front.get("revision") or 0)
        message_id = str(front.get("message_id") or path)
        stem = layout.name_of(path)[:-3]
        draft_path = f"{DRAFTS}/Re-{stem}.md" if revision == 0 else f"{DRAFTS}/Re-{stem}-r{revision}.md"
        draft_front = {
            "type": "reply_draft",
            "status": "pending_approval",
            "priority": "urgent" if decision.decision == "urgent" else "normal",
            "draft_id": layout.draft_id_for(message_id, revision),
            "to": front.get("from", ""),
            "subject": layout.reply_subject(str(front.get("subject") or "")),
            "reply_to_message_id": front.get("message_id") or None,
            "thread_id": front.get("thread_id") or None,
            "source_note": path,
            "decision": decision.decision,
            "reason": decision.reason,
            "created": utc_stamp(),
        }
        body = (decision.reply or "").strip() + "\n"
        # Recorded before the note exists: only what is in the ledger is ever sent (see ledger.py).
        self.ledger.record(str(draft_front["draft_id"]), draft_path, addresses(str(draft_front["to"])))
        await self._write_new(draft_path, body, draft_front)
        return draft_path

    # -- a person's actions (through the MCP tools) --------------------------------------------

    async def draft_to_approve(self, path: str) -> tuple[ApprovedDraft, str]:
        """The draft at `path` as it would be sent, and the content hash of its note: what a
        person is shown before approving it. Refuses what `approve` would refuse."""
        if layout.folder_of(path) != DRAFTS:
            raise BadRequest(
                f"{path} is not a draft; approve a note in {DRAFTS}/ (see triage_list with stage='approval').",
                {"path": path},
            )
        note = await self.vault.read_note(path)
        if note.frontmatter_error:
            raise BadRequest(f"{path} has corrupt frontmatter ({note.frontmatter_error}); fix it first.")
        draft = layout.approved_draft(self.root, path, note)  # refuses a draft without recipient, subject or text
        if (refusal := self.refusal(draft, approving=True)) is not None:
            raise PermissionDenied(refusal, {"path": path})
        return draft, note.content_hash

    async def approve(self, path: str, shown_hash: str | None = None) -> ItemResult:
        """Approve the draft at `path`: a person's act. `shown_hash` is the content hash of the
        note as the person saw it; a draft changed since is refused, not approved unseen."""
        _draft, content_hash = await self.draft_to_approve(path)
        if shown_hash is not None and content_hash != shown_hash:
            raise Conflict(
                f"{path} changed while the person was asked; nothing was approved. Ask again.",
                {"path": path},
            )
        await update_note(self.vault, path, {"approved": utc_stamp()})
        dest = f"{APPROVED}/{layout.name_of(path)}"
        await self.vault.move_note(path, dest)
        self.journal.write("approved", note=dest)
        return ItemResult(path=dest, status="pending_approval", message="Approved; it is sent on the next pass")

    async def reject(self, path: str, reason: str) -> ItemResult:
        if layout.folder_of(path) not in (DRAFTS, APPROVED):
            raise BadRequest(f"{path} is not a draft waiting to be sent.", {"path": path})
        note = await self.vault.read_note(path)
        front = note.frontmatter
        draft_id = str(front.get("draft_id") or "")
        sending = SendLock(self.logs)
        if not sending.acquire(wait=False):
            raise Conflict(
                f"{path} is being sent right now, so it can no longer be rejected; it is filed in {DONE}/ once sent.",
                {"path": path},
            )
        try:
            # What any process on this vault sent is in the state file (a running `deskmcp
            # orchestrate` sends too); once rejected in the ledger, no process sends it.
            if draft_id and (draft_id in self.state.sent or draft_id in State.load(self.logs, set_aside=False).sent):
                raise Conflict(f"{path} was already sent; it can no longer be rejected.", {"path": path})
            if draft_id:
                self.ledger.reject(draft_id)
        finally:
            sending.release()
        await update_note(self.vault, path, {"status": "rejected", "rejected": utc_stamp(), "reject_reason": reason})
        done = await self._move_to_done(path)
        source = front.get("source_note")
        if isinstance(source, str) and layout.folder_of(source) == NEEDS_ACTION:
            try:
                source_note = await self.vault.read_note(source)
                revision = int(source_note.frontmatter.get("revision") or 0) + 1
                changes = {"status": "needs_info", "reason": f"Draft rejected: {reason}", "revision": revision}
                await update_note(self.vault, source, {**changes, "draft": None})
            except NotFound:
                pass
        self.journal.write("rejected", note=done, reason=reason)
        return ItemResult(path=done, status="rejected", message="Rejected; the mail is back in Needs_Action")


def vault_folder_counts(root: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for folder in (NEEDS_ACTION, DRAFTS, APPROVED, DONE):
        try:
            counts[folder] = sum(1 for p in (root / folder).iterdir() if p.suffix == ".md")
        except OSError:
            counts[folder] = 0
    return counts
