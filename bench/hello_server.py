"""A bare MCPServer hello-world: the baseline for cold-start and latency comparisons."""

from mcp.server.mcpserver import MCPServer

server = MCPServer("hello")


@server.tool()
def hello(name: str = "world") -> str:
    """Say hello."""
    return f"hello {name}"


if __name__ == "__main__":
    server.run("stdio")
