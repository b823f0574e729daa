"""The orchestrator as MCP tools, so the user's own assistant can be the decider.

`deskmcp serve orchestrator` (and `serve all`) publishes the triage flow: items awaiting a
decision or an approval, recording a decision with its draft, approving or rejecting a draft,
running one pass, and the state. The tools work on the vault in this process; a pass talks to
the mail server over MCP like the `deskmcp orchestrate` command does.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from deskmcp.core.errors import BadRequest
from deskmcp.core.server import READ_ONLY, DeskServer, writes
from deskmcp.orchestrator.models import (
    Decision,
    ItemResult,
    PassSummary,
    PendingList,
    StateView,
    TriageDecision,
)
from deskmcp.orchestrator.settings import OrchestratorSettings
from deskmcp.orchestrator.triage import TriageService
from deskmcp.servers import SERVERS

INSTRUCTIONS = """Email triage in the user's vault: mail becomes notes in Needs_Action/, replies are
drafted into Drafts/, the user approves a draft (by moving it to Approved/, or triage_approve when
they say so) and the next pass sends it, only to the mail's sender, and files everything in Done/.
Nothing is sent without approval; the vault tools cannot write in these folders. Call
triage_list for mail awaiting a decision, then triage_decide with a decision and, for draft_reply
or urgent, the reply text."""

Settings = OrchestratorSettings

TOOLSETS: dict[str, str] = {
    "triage": "Email triage: pending items, decisions, rejections, passes and state",
    "approve": "Approve a reply draft for sending (leave it out to keep approval to the person alone)",
}
DEFAULT_TOOLSETS: tuple[str, ...] = ("triage", "approve")

NotePath = Annotated[str, Field(description="Note path from triage_list")]


def create_service(settings: OrchestratorSettings) -> TriageService:
    return TriageService(settings)


def unavailable(settings: OrchestratorSettings) -> str | None:
    if settings.vault_path is not None and not settings.vault_path.is_dir():
        return f"the vault folder {settings.vault_path} does not exist; create it or fix VAULT_PATH"
    return None


def create_server(settings: OrchestratorSettings, service: TriageService | None = None) -> DeskServer:
    """The orchestrator tools alone on a server of their own (tests, benchmarks): `servers.create_server`."""
    return SERVERS["orchestrator"].create_server(settings, service)


def register(server: DeskServer, service: TriageService) -> None:
    server.close_on_shutdown(service)

    @server.tool("triage_list", annotations=READ_ONLY, toolset="triage")
    async def triage_list(
        stage: Annotated[
            Literal["decision", "approval"],
            Field(description="'decision': mail awaiting a decision; 'approval': drafts awaiting approval"),
        ] = "decision",
        limit: Annotated[int, Field(ge=1, le=100, description="Most items returned")] = 20,
    ) -> PendingList:
        """Items waiting for the user: mail to decide on (with its text) or reply drafts to approve."""
        return await service.list_items(stage, limit)

    @server.tool("triage_decide", annotations=writes(destructive=False, idempotent=False), toolset="triage")
    async def triage_decide(
        path: NotePath,
        decision: Annotated[Decision, Field(description="What to do with the mail")],
        reason: Annotated[str, Field(max_length=2000, description="Why, in one sentence")] = "",
        reply: Annotated[str | None, Field(description="Reply text; required for draft_reply and urgent")] = None,
        delegate_to: Annotated[str | None, Field(description="Who should handle it (delegate)")] = None,
    ) -> ItemResult:
        """Record a decision on a Needs_Action item. draft_reply/urgent write a draft for the user to
        approve; archive files it in Done; needs_info leaves it; delegate notes who handles it."""
        if decision in ("draft_reply", "urgent") and not (reply or "").strip():
            raise BadRequest(f"{decision} needs the reply text in `reply`.", {"decision": decision})
        chosen = TriageDecision(decision=decision, reason=reason, reply=reply, delegate_to=delegate_to)
        return await service.decide(path, chosen)

    @server.tool("triage_approve", annotations=writes(destructive=False, idempotent=False), toolset="approve")
    async def triage_approve(path: NotePath) -> ItemResult:
        """Approve a draft from Drafts/ (moves it to Approved/); the next pass sends it exactly as written.
        Only call this when the user has said to send it."""
        return await service.approve(path)

    @server.tool("triage_reject", annotations=writes(destructive=False, idempotent=False), toolset="triage")
    async def triage_reject(
        path: NotePath, reason: Annotated[str, Field(max_length=2000, description="Why")] = ""
    ) -> ItemResult:
        """Reject a draft not yet sent: it is filed in Done/ as rejected and the mail waits for a new decision."""
        return await service.reject(path, reason)

    @server.tool(
        "triage_run", annotations=writes(destructive=False, idempotent=False, open_world=True), toolset="triage"
    )
    async def triage_run(
        dry_run: Annotated[bool, Field(description="Only report what would happen")] = False,
    ) -> PassSummary:
        """Run one pass: send approved drafts, fetch new mail into Needs_Action, apply the configured decider.
        Returns counts and one line per event."""
        return await service.run_pass(dry_run=dry_run)

    @server.tool("triage_status", annotations=READ_ONLY, toolset="triage")
    async def triage_status() -> StateView:
        """Items per folder, mails ingested and replies sent so far, the last pass and recent events."""
        return await service.status()
