"""deskmcp: MCP servers for the material of a working day, over one local-first core."""

__version__ = "0.1.0"
