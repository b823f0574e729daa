"""A person answering a server's questions through the SDK client's elicitation callback: what each
question showed them, and the answer they give (accept with the box ticked or not, decline, cancel)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from mcp import types

Reply = Literal["accept", "unticked", "decline", "cancel"]


@dataclass
class Person:
    """Pass `person.answer` as a `Client`'s `elicitation_callback`; `asked` holds each question's text."""

    reply: Reply = "accept"
    asked: list[str] = field(default_factory=list)
    schemas: list[dict[str, Any]] = field(default_factory=list)

    async def answer(self, _context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams), params
        self.asked.append(params.message)
        self.schemas.append(params.requested_schema)
        if self.reply == "accept":
            return types.ElicitResult(action="accept", content={"confirm": True})
        if self.reply == "unticked":
            return types.ElicitResult(action="accept", content={"confirm": False})
        return types.ElicitResult(action=self.reply)
