"""deskmcp as a client of remote MCP servers.

`bridge.py` is `deskmcp connect URL`: a stdio MCP server forwarding every call to a deskmcp
served over HTTP. `oauth.py` signs in to a remote MCP server that asks for OAuth (PKCE, dynamic
client registration, tokens kept 0600 and refreshed): the bridge uses it, and so does the meetings
server to reach Granola's hosted MCP server. It imports only `core`, so any server may use it.
"""
