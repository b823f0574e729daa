#!/usr/bin/env bash
# The MCP conformance suite and the Inspector CLI against `deskmcp serve all`.
# Needs only python3, uv, node and npm: the pinned npm packages, and a Node 22 binary from the
# npm registry (the suite needs Node 22), go into conformance/node_modules (git-ignored).
set -euo pipefail
cd "$(dirname "$0")"

NODE_VERSION=22.23.3
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) platform=linux-x64 ;;
  Linux-aarch64 | Linux-arm64) platform=linux-arm64 ;;
  Darwin-x86_64) platform=darwin-x64 ;;
  Darwin-arm64) platform=darwin-arm64 ;;
  *) echo "conformance: no Node $NODE_VERSION package for $(uname -s)-$(uname -m)" >&2; exit 1 ;;
esac

if [ ! -d node_modules/@modelcontextprotocol/conformance ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
if [ ! -x "node_modules/node-$platform/bin/node" ]; then
  npm install --no-save --no-audit --no-fund --loglevel=error "node-$platform@$NODE_VERSION"
fi

cd ..
exec uv run python conformance/run.py "$@"
