"""Who decides what happens to a mail: the rules file, an LLM, or the assistant through MCP tools."""

from __future__ import annotations

from typing import Protocol

from deskmcp.core.errors import BadRequest
from deskmcp.orchestrator.models import Deferred, TriageDecision, TriageItem
from deskmcp.orchestrator.settings import OrchestratorSettings


class Decider(Protocol):
    """A decider may also have `prepare()`, called at the start of every real pass (the rules decider
    writes its example file there)."""

    name: str

    async def decide(self, item: TriageItem) -> TriageDecision | Deferred | None:
        """A decision, a reason to leave the item pending, or None to leave it for someone else."""
        ...


class AssistantDecider:
    """Decides nothing by itself: the user's MCP client records decisions with triage_decide."""

    name = "assistant"

    async def decide(self, item: TriageItem) -> TriageDecision | Deferred | None:
        return None


def create_decider(settings: OrchestratorSettings, *, dry_run: bool = False) -> Decider:
    """The configured decider; for a dry run it writes nothing (the rules example is read in memory)."""
    if settings.decider == "llm":
        if not settings.llm_base_url or not settings.llm_model:
            raise BadRequest(
                "The LLM decider needs ORCHESTRATOR_LLM_BASE_URL (e.g. http://localhost:11434/v1) and "
                "ORCHESTRATOR_LLM_MODEL.",
                {"decider": "llm"},
            )
        from deskmcp.orchestrator.llm import LLMDecider

        key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
        return LLMDecider(settings.llm_base_url, settings.llm_model, api_key=key, timeout=settings.llm_timeout)
    if settings.decider == "assistant":
        return AssistantDecider()
    from deskmcp.orchestrator.rules import RulesDecider

    return RulesDecider(settings.root, write_example=not dry_run)
