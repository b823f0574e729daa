"""The LLM decider: any OpenAI-compatible chat-completions endpoint (Ollama, vLLM, llama.cpp, OpenAI).

The model is asked for one JSON object; the answer is validated by pydantic. A failed call
(timeout, refused connection, HTTP error) or an answer that is not exactly what was asked
leaves the item pending with the reason written into its note: nothing is ever guessed.
"""

from __future__ import annotations

import logging
import re

import httpx2
import orjson
from pydantic import ValidationError

from deskmcp.orchestrator.models import DECISIONS, REPLY_DECISIONS, Deferred, TriageDecision, TriageItem

log = logging.getLogger("deskmcp.orchestrator")

MAX_MAIL_CHARS = 8_000

SYSTEM_PROMPT = f"""You triage the user's email. For the mail given, answer with ONE JSON object and nothing else:
{{"decision": one of {list(DECISIONS)},
  "reason": "one short sentence saying why",
  "reply": "the reply text to send (required for draft_reply and urgent; plain text, no subject line)",
  "delegate_to": "who should handle it (only for delegate)"}}
draft_reply: the mail needs an answer you can write. urgent: the same, but it cannot wait.
archive: nothing to do (newsletters, notifications, FYI). needs_info: the user must look at it.
delegate: someone else should handle it. A person approves every reply before it is sent."""

_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


def user_prompt(item: TriageItem) -> str:
    body = item.body if len(item.body) <= MAX_MAIL_CHARS else item.body[:MAX_MAIL_CHARS] + "\n[…cut]"
    return (
        f"From: {item.sender}\nTo: {item.to}\nCc: {item.cc}\nSubject: {item.subject}\n"
        f"Date: {item.received}\nLabels: {', '.join(item.labels)}\n\n{body}"
    )


def parse_answer(content: str) -> TriageDecision | Deferred:
    text = content.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1)
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError:
        return Deferred(reason=f"The model's answer is not JSON: {content[:200]!r}")
    if not isinstance(data, dict):
        return Deferred(reason=f"The model's answer is not a JSON object: {content[:200]!r}")
    try:
        decision = TriageDecision.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:3])
        return Deferred(reason=f"The model's answer is invalid ({problems})")
    if decision.decision in REPLY_DECISIONS and not (decision.reply or "").strip():
        return Deferred(reason=f"The model chose {decision.decision} without a reply text")
    return decision


class LLMDecider:
    name = "llm"

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float = 60.0,
        transport: httpx2.AsyncBaseTransport | None = None,
    ) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.api_key = api_key
        self.timeout = timeout
        self.transport = transport

    async def decide(self, item: TriageItem) -> TriageDecision | Deferred | None:
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        payload = {
            "model": self.model,
            "temperature": 0,
            "response_format": {"type": "json_object"},
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": user_prompt(item)},
            ],
        }
        try:
            async with httpx2.AsyncClient(timeout=self.timeout, transport=self.transport) as client:
                response = await client.post(self.url, json=payload, headers=headers)
        except httpx2.TimeoutException:
            return Deferred(reason=f"The model did not answer within {self.timeout:g}s")
        except httpx2.HTTPError as exc:
            return Deferred(reason=f"The model could not be reached: {type(exc).__name__}: {exc}")
        if response.status_code != 200:
            return Deferred(reason=f"The model's server answered HTTP {response.status_code}: {response.text[:200]}")
        try:
            content = response.json()["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            return Deferred(reason=f"The model's server sent no chat completion: {response.text[:200]}")
        if not isinstance(content, str):
            return Deferred(reason="The model's answer has no text content")
        return parse_answer(content)
