"""The mailbox as the orchestrator uses it: the mail server's tools, over MCP only.

`MailAccess` has no fallback: when mail is unavailable nothing is fetched or sent and the items
wait for the next pass. The orchestrator imports nothing from `deskmcp.mail` (the architecture
test checks it): the mail server's tools are the whole contract, whichever backend serves them.
The vault is reached through `VaultPort` (vault_port.py).
"""

from __future__ import annotations

from typing import Any

from deskmcp.orchestrator.mcp_client import MCPClient


class MailAccess:
    def __init__(self, client: MCPClient) -> None:
        self.client = client

    async def list_emails(self, query: str, max_results: int) -> list[dict[str, Any]]:
        result = await self.client.call_tool("list_emails", {"query": query, "max_results": max_results})
        return list(result.get("emails", []))

    async def get_email(self, message_id: str) -> dict[str, Any]:
        return await self.client.call_tool("get_email", {"message_id": message_id})

    async def send_email(self, **arguments: Any) -> dict[str, Any]:
        return await self.client.call_tool("send_email", {k: v for k, v in arguments.items() if v is not None})

    async def add_label(self, message_id: str, label: str) -> dict[str, Any]:
        return await self.client.call_tool("add_label", {"message_id": message_id, "label_name": label})
