"""The OAuth scope each tool needs when deskmcp is a resource server (`deskmcp.serving.auth`).

Three scopes, one per kind of action, derived from what every tool already declares:

- `read`: tools annotated read-only (`readOnlyHint`);
- `send`: tools that write and reach outside the machine (`openWorldHint`) in the servers whose
  outbound action is a message sent on the user's behalf (mail: send, forward, send a draft; the
  orchestrator's pass, which sends approved drafts);
- `write`: every other tool (local writes, Google Sheets changes, diagram renders, toolset switches).

The scopes are independent: `write` does not include `read`, nor `send` `write`. With no
authorization server configured there is no principal and no scope applies.
"""

from __future__ import annotations

READ = "read"
WRITE = "write"
SEND = "send"
SCOPES = (READ, WRITE, SEND)

SENDING_SERVERS = frozenset({"mail", "orchestrator"})
"""Servers whose open-world writes send messages for the user (the rest write to files or to a
cloud document, which `write` covers)."""


def tool_scope(toolset: str | None, *, read_only: bool, open_world: bool) -> str:
    """The scope a tool in `toolset` (`mail.write`) with these annotations needs."""
    if read_only:
        return READ
    server = (toolset or "").partition(".")[0]
    if open_world and server in SENDING_SERVERS:
        return SEND
    return WRITE
