#!/usr/bin/env bash
# The MCP conformance suite and the Inspector CLI against `deskmcp serve all`.
# Needs only python3, uv, node and npm: the pinned npm packages and a Node 22 binary (from the
# npm registry, since the suite needs Node 22) go into conformance/node_modules (git-ignored).
set -euo pipefail
cd "$(dirname "$0")"

if [ ! -d node_modules/@modelcontextprotocol/conformance ] || ! ls node_modules/node-*-*/bin/node >/dev/null 2>&1 \
  || [ package.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi

cd ..
exec uv run python conformance/run.py "$@"
