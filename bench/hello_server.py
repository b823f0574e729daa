"""A bare MCPServer hello-world: the baseline for cold-start and latency comparisons."""

import sys
from pathlib import Path

# bench/http.py would shadow the standard library's `http`: keep this folder off the import path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from mcp.server.mcpserver import MCPServer

server = MCPServer("hello")


@server.tool()
def hello(name: str = "world") -> str:
    """Say hello."""
    return f"hello {name}"


if __name__ == "__main__":
    server.run("stdio")
