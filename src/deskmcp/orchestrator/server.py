"""The orchestrator as MCP tools, so the user's own assistant can be the decider.

`deskmcp serve orchestrator` (and `serve all`) publishes the triage flow: items awaiting a
decision or an approval, recording a decision with its draft, approving or rejecting a draft,
running one pass, and the state. The tools work on the vault in this process; a pass talks to
the mail server over MCP like the `deskmcp orchestrate` command does.
"""

# Annotations are evaluated here, not postponed: the resolvers of triage_approve are local to
# `register` and the SDK reads them from the annotations.
from typing import TYPE_CHECKING, Annotated, Any, Literal

from mcp.server.mcpserver import Context, Elicit, Resolve
from pydantic import BaseModel, Field

from deskmcp.core.errors import BadRequest, PermissionDenied
from deskmcp.core.server import READ_ONLY, Answer, Confirmation, DeskServer, ask_person, person_agreed, writes
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
from deskmcp.servers import SERVERS, ServerModule, UserPolicy

INSTRUCTIONS = """Email triage in the user's vault: mail becomes notes in Needs_Action/, replies are
drafted into Drafts/, the user approves a draft (triage_approve asks them in the client; or they
move it to Approved/ themselves) and the next pass sends it, only to the mail's sender, and files everything in Done/.
Nothing is sent without approval; the vault tools cannot write in these folders. Call
triage_list for mail awaiting a decision, then triage_decide with a decision and, for draft_reply
or urgent, the reply text."""

Settings = OrchestratorSettings

TOOLSETS: dict[str, str] = {
    "triage": "Email triage: pending items, decisions, rejections, passes and state",
    "approve": "Approve a reply draft for sending (leave it out to keep approval to the person alone)",
}
DEFAULT_TOOLSETS: tuple[str, ...] = ("triage", "approve")

USERS = UserPolicy(
    offered=False,
    not_offered="a pass starts the mail and vault servers as processes of this machine's environment (or "
    "reaches ORCHESTRATOR_MCP_URL), not the user's own servers",
)

NotePath = Annotated[str, Field(description="Note path from triage_list")]

HOW_A_PERSON_APPROVES = (
    "Only a person approves a reply, and this client cannot ask them (it does not support MCP elicitation). "
    "Nothing was approved. Ask the user to approve it themselves: move the note from Drafts/ to Approved/ "
    "in their vault app, or run `deskmcp orchestrate approve {path}` in a terminal. The next pass sends it."
)


class DraftShown(BaseModel):
    """A draft as the person is shown it, and the hash of its note then."""

    text: str
    content_hash: str


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
            Field(description="Mail to decide on, or drafts to approve"),
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
        """Decide on a Needs_Action item: draft_reply/urgent write a draft for the user to approve; archive
        files it in Done; needs_info leaves it; delegate notes who handles it."""
        if decision in ("draft_reply", "urgent") and not (reply or "").strip():
            raise BadRequest(f"{decision} needs the reply text in `reply`.", {"decision": decision})
        chosen = TriageDecision(decision=decision, reason=reason, reply=reply, delegate_to=delegate_to)
        return await service.decide(path, chosen)

    async def draft_shown(path: str) -> DraftShown:
        draft, content_hash = await service.draft_to_approve(path)
        return DraftShown(text=draft.for_person(), content_hash=content_hash)

    def ask_approval(
        shown: Annotated[DraftShown, Resolve(draft_shown)], context: Context[Any, Any]
    ) -> Elicit[Confirmation] | str:
        return ask_person(context, shown.text)

    @server.tool("triage_approve", annotations=writes(destructive=False, idempotent=False), toolset="approve")
    async def triage_approve(
        path: NotePath,
        shown: Annotated[DraftShown, Resolve(draft_shown)],
        answer: Annotated[Answer, Resolve(ask_approval)],
    ) -> ItemResult:
        """Ask the user in their client to approve a draft from Drafts/; on their yes it moves to Approved/
        and the next pass sends it as written."""
        unasked = PermissionDenied(HOW_A_PERSON_APPROVES.format(path=path), {"path": path, "elicitation": False})
        person_agreed(answer, "nothing was approved", unasked)
        return await service.approve(path, shown.content_hash)

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
        """One pass: send approved drafts, fetch new mail into Needs_Action, apply the decider; counts and events."""
        return await service.run_pass(dry_run=dry_run)

    @server.tool("triage_status", annotations=READ_ONLY, toolset="triage")
    async def triage_status() -> StateView:
        """Items per folder, mails ingested and replies sent so far, the last pass and recent events."""
        return await service.status()


if TYPE_CHECKING:
    # The type checker holds this module to the contract of a server module (`servers.ServerModule`).
    from deskmcp.orchestrator import server as _this

    _CONTRACT: ServerModule = _this
