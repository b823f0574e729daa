"""deskmcp over HTTP: everything between a socket and a composition of servers.

Each module imports only those after it here (the `serving-layers` contract): `listen.py` runs
the app under uvicorn; `app.py` builds the Starlette app (streamable MCP at `/mcp`, the tool API,
the Google sign-in routes, the middlewares); `toolapi.py` is the tool API; `middleware.py` the
ASGI middlewares; `options.py` what the app is told (`HttpOptions`); `users.py` serves each
signed-in person their own workspace and servers; `auth/` makes the app an OAuth resource
server; `openapi.py` describes the tool API; `replicas.py` reads what lets several processes
serve behind one load balancer; `hosts.py` and `responses.py` hold the host rules and JSON
answers they all share.
"""
