"""What `tools/list` costs a model: characters and estimated tokens, per server and for `serve all`.

`deskmcp tools --stats` and `bench/tool_tokens.py` print this table. Tokens are estimated as
characters / 4 (compact JSON, as the tool list travels on the wire); real tokenizers differ by
some 10-20% either way, so compare rows, not the absolute figure, across tokenizers.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CHARS_PER_TOKEN = 4
TOKEN_BUDGET = 7_000
"""What `serve all` with the default toolsets may cost, in estimated tokens."""


@dataclass(frozen=True)
class Cost:
    servers: str
    toolsets: str
    tools: int
    chars: int
    description_chars: int
    input_schema_chars: int
    output_schema_chars: int

    @property
    def tokens(self) -> int:
        return math.ceil(self.chars / CHARS_PER_TOKEN)


def cost_of(definitions: list[dict[str, Any]], servers: str, toolsets: str) -> Cost:
    import orjson

    def size(value: Any) -> int:
        return len(orjson.dumps(value)) if value is not None else 0

    return Cost(
        servers=servers,
        toolsets=toolsets,
        tools=len(definitions),
        chars=size(definitions),
        description_chars=sum(len(d.get("description", "")) for d in definitions),
        input_schema_chars=sum(size(d.get("inputSchema")) for d in definitions),
        output_schema_chars=sum(size(d.get("outputSchema")) for d in definitions),
    )


def measure(*, workspace: Path | None = None, toolsets: str | None = None) -> list[Cost]:
    """One row per server and one for all of them, with `toolsets` (default: the configured
    selection) and with every tool. The tool list is the one `tools/list` answers with; the
    servers are only composed, never started, so measuring opens no index and writes nothing."""
    import anyio

    from deskmcp.gateway import compose, select
    from deskmcp.servers import SERVERS

    async def listed(names: list[str], selection: str | None) -> list[dict[str, Any]]:
        composition = compose(select(names), workspace=workspace, keep_unavailable=True, toolsets=selection)
        tools = await composition.server.list_tools()
        return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]

    rows: list[Cost] = []
    for selection in dict.fromkeys([toolsets or "configured", "all"]):
        chosen = None if selection == "configured" else selection
        for name in [*SERVERS, "all"]:
            names = [] if name == "all" else [name]
            rows.append(cost_of(anyio.run(listed, names, chosen), name, selection))
    return rows


def print_table(rows: list[Cost], echo: Callable[[str], Any] = print) -> None:
    head = ("servers", "toolsets", "tools", "chars", "~tokens", "descr", "input", "output")
    echo("{:<12} {:<12} {:>5} {:>7} {:>8} {:>6} {:>7} {:>7}".format(*head))
    for r in rows:
        echo(
            f"{r.servers:<12} {r.toolsets:<12} {r.tools:>5} {r.chars:>7} {r.tokens:>8} "
            f"{r.description_chars:>6} {r.input_schema_chars:>7} {r.output_schema_chars:>7}"
        )
    echo(f"tokens estimated as characters / {CHARS_PER_TOKEN}; budget for `serve all` by default: {TOKEN_BUDGET}")
