"""`TriageService`: what the orchestrator's MCP tools do, without MCP.

It works on the vault in this process (the tools run beside the vault server, in `serve all`
or alone), and opens an MCP connection to the mail server only for the length of a pass.
"""

from __future__ import annotations

from typing import Literal

from deskmcp.core.errors import BadRequest, Conflict, NotFound
from deskmcp.orchestrator import layout
from deskmcp.orchestrator.access import MailAccess
from deskmcp.orchestrator.deciders import create_decider
from deskmcp.orchestrator.layout import DRAFTS, NEEDS_ACTION
from deskmcp.orchestrator.mcp_client import MCPClient
from deskmcp.orchestrator.mcp_vault import open_vault
from deskmcp.orchestrator.models import (
    ApprovedDraft,
    ItemResult,
    PassSummary,
    PendingItem,
    PendingList,
    StateView,
    TriageDecision,
)
from deskmcp.orchestrator.runner import server_environment
from deskmcp.orchestrator.service import Orchestrator, vault_folder_counts
from deskmcp.orchestrator.settings import OrchestratorSettings
from deskmcp.orchestrator.state import State, VaultLock, lock_holder
from deskmcp.orchestrator.vault_port import list_paths

MAX_BODY = 4_000


class TriageService:
    def __init__(self, settings: OrchestratorSettings) -> None:
        self.settings = settings
        self.root = settings.root
        self.vault = open_vault(self.root)  # the files in this process: no index of its own
        self.orchestrator = Orchestrator(settings, self.vault, None, None)

    def close(self) -> None:
        """Nothing to release: the vault is reached note by note, with no index held open."""

    def _ready(self) -> None:
        """Before a change: the flow's folders exist and the state is current."""
        self.orchestrator.ensure_layout()
        self.orchestrator._state = State.load(self.orchestrator.logs)

    def _look(self) -> State:
        """Before a read: the state as it is, writing nothing (no folder made, no file set aside)."""
        self.orchestrator._state = State.load(self.orchestrator.logs, set_aside=False)
        return self.orchestrator._state

    async def list_items(self, stage: Literal["decision", "approval"], limit: int) -> PendingList:
        if stage == "decision":
            paths = await list_paths(self.vault, NEEDS_ACTION)
            wanted = ("pending", "needs_info")
        else:
            paths = await list_paths(self.vault, DRAFTS)
            wanted = ("pending_approval",)
        items: list[PendingItem] = []
        total = 0
        for path in paths:
            try:
                note = await self.vault.read_note(path)
            except NotFound:
                continue
            front = note.frontmatter
            if note.frontmatter_error:
                front = {"status": "pending"}
            status = str(front.get("status") or "")
            if status not in wanted:
                continue
            total += 1
            if len(items) >= limit:
                continue
            body = note.body
            items.append(
                PendingItem(
                    path=path,
                    status=status,
                    sender=str(front.get("from") or front.get("to") or ""),
                    subject=str(front.get("subject") or ""),
                    received=str(front.get("received") or front.get("created") or ""),
                    priority=str(front.get("priority") or "normal"),
                    reason=str(note.frontmatter_error or front.get("reason") or ""),
                    body=body if len(body) <= MAX_BODY else body[:MAX_BODY] + "\n[…]",
                )
            )
        items.sort(key=lambda i: (i.priority != "urgent", i.received))
        return PendingList(items=items, total=total)

    async def decide(self, path: str, decision: TriageDecision) -> ItemResult:
        self._ready()
        rel = _note_path(path)
        if layout.folder_of(rel) != NEEDS_ACTION:
            raise BadRequest(f"{path} is not in {NEEDS_ACTION}/; call triage_list for items to decide.", {"path": path})
        note = await self.vault.read_note(rel)
        if note.frontmatter_error:
            raise BadRequest(f"{rel} has corrupt frontmatter ({note.frontmatter_error}); fix it first.")
        status = note.frontmatter.get("status")
        if status not in ("pending", "needs_info"):
            raise Conflict(f"{rel} is {status}, not awaiting a decision.", {"path": rel, "status": status})
        return await self.orchestrator.apply_decision(rel, decision, by="assistant", note=note)

    async def draft_to_approve(self, path: str) -> tuple[ApprovedDraft, str]:
        """The draft as a person is shown it before approving, and its note's content hash."""
        self._look()
        return await self.orchestrator.draft_to_approve(_note_path(path))

    async def approve(self, path: str, shown_hash: str | None = None) -> ItemResult:
        """Approve a draft as a person did (the MCP tool asks them first; `deskmcp orchestrate
        approve` asks on the terminal)."""
        self._ready()
        return await self.orchestrator.approve(_note_path(path), shown_hash)

    async def reject(self, path: str, reason: str) -> ItemResult:
        self._ready()
        return await self.orchestrator.reject(_note_path(path), reason)

    async def run_pass(self, *, dry_run: bool) -> PassSummary:
        settings = self.settings
        lock = VaultLock(self.orchestrator.logs)
        if not dry_run:  # a dry run writes nothing: no folder, no lock, no rules file
            self.orchestrator.ensure_layout()
            lock.acquire()
        try:
            mail_client = MCPClient(
                "mail",
                settings.server_command("mail"),
                self.root,
                url=settings.mcp_url,
                timeout=settings.call_timeout,
                env=server_environment(settings),
            )
            async with mail_client:
                decider = create_decider(settings, dry_run=dry_run)
                orchestrator = Orchestrator(settings, self.vault, MailAccess(mail_client), decider, dry_run=dry_run)
                return await orchestrator.run_pass()
        finally:
            lock.release()

    async def status(self) -> StateView:
        state = self._look()
        holder = lock_holder(self.orchestrator.logs)
        return StateView(
            vault=str(self.root),
            decider=self.settings.decider,
            folders=vault_folder_counts(self.root),
            ingested=len(state.ingested),
            sent=len(state.sent),
            running_pid=holder["pid"] if holder else None,
            last_pass=state.last_pass,
            recent_events=self.orchestrator.journal.recent(10),
            send_audit=self.orchestrator.journal.recent(4, "gmail_mcp_*.jsonl"),
            problem=self.orchestrator.check_vault(),
        )


def _note_path(path: str) -> str:
    return path if path.endswith(".md") else path + ".md"
