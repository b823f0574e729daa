"""deskmcp over HTTP: everything between a socket and a composition of servers.

`http.py` builds the Starlette app (streamable MCP at `/mcp`, the tool API, the Google sign-in
routes) with its middlewares and runs it under uvicorn; `openapi.py` describes the tool API;
`auth/` makes the app an OAuth resource server; `users.py` serves each signed-in person their
own workspace and servers; `replicas.py` reads what lets several processes serve behind one
load balancer.
"""
