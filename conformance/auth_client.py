"""The client the conformance suite's authorization scenarios drive: `deskmcp connect`'s own code.

`conformance client --suite auth --command "python conformance/auth_client.py"` starts a resource
server and an authorization server per scenario and runs this with the MCP URL as its argument
(the scenario's name in MCP_CONFORMANCE_SCENARIO, its extra data, such as a pre-registered client,
in MCP_CONFORMANCE_CONTEXT). It builds what `deskmcp connect URL` builds (the forwarding server
and its OAuth client, `deskmcp.connect.oauth.oauth_for`), lists the remote's tools and calls
`test-tool`; the only stand-in is the browser: the suite's authorization server approves at once,
so "opening" the authorization address is following its redirects, which end at connect's own
loopback listener. Exit status 0 when the call succeeded.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import anyio
import httpx2

from deskmcp.connect.bridge import ForwardingServer
from deskmcp.connect.oauth import ClientSettings, oauth_for

CIMD_URL = "https://conformance-test.local/client-metadata.json"
"""The client ID metadata document URL the suite's scenarios accept (its basic-cimd scenario)."""


async def follow(url: str) -> None:
    """The person's browser, where the authorization server approves without asking."""
    async with httpx2.AsyncClient(follow_redirects=True, timeout=30) as http:
        await http.get(url)


async def main(url: str) -> int:
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    client = ClientSettings(
        client_metadata_url=CIMD_URL,
        client_id=context.get("client_id"),
        client_secret=context.get("client_secret"),
    )
    with tempfile.TemporaryDirectory(prefix="deskmcp-connect-") as folder:
        server = ForwardingServer(url, auth=oauth_for(url, folder=Path(folder), client=client, browser=follow))
        tools = await server.list_tools()
        result = await server.call_tool("test-tool", {})
    text = " ".join(getattr(c, "text", "") for c in result.content)
    print(f"tools: {[t.name for t in tools]}; test-tool: {'error ' if result.is_error else ''}{text[:300]}")
    return 1 if result.is_error else 0


if __name__ == "__main__":
    sys.exit(anyio.run(main, sys.argv[1]))
