#!/usr/bin/env bash
# Install the npm tools the MCP tests and the conformance run need into .ci/node/ (gitignored):
# a node 22 (the npm package `node`: the conformance suite and the Inspector need node >= 22),
# two reference MCP servers (server-everything, server-filesystem), the MCP Inspector (its CLI
# mode), the MCP conformance suite and axe-core (the accessibility checker the browser tests run in
# their pages: tests/support/browser.py).  Called by scripts/test.sh and .ci/mcp-conformance.sh; idempotent (does
# nothing when the pinned set is installed already).  Needs npm (node 20's is fine;
# scripts/system-packages.sh installs it on a fresh machine).  The Python MCP servers the
# tests use (mcp-server-time, mcp-server-git) are in the `test` extra that scripts/setup.sh installs.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=.ci/node
stamp="$prefix/.installed"
want="node@22.23.3 @modelcontextprotocol/server-everything@2026.8.31 @modelcontextprotocol/server-filesystem@2026.8.31 @modelcontextprotocol/inspector@2.12.0 @modelcontextprotocol/conformance@0.1.16 axe-core@4.10.3"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$prefix/node_modules/node/bin/node" ]; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "npm is missing: the MCP tests need it to install node 22 and the npm MCP servers" >&2
  echo "(as root: bash scripts/system-packages.sh, or apt-get install -y nodejs npm)" >&2
  exit 1
fi
mkdir -p "$prefix"
# shellcheck disable=SC2086
npm install --prefix "$prefix" --no-save --no-audit --no-fund --loglevel=error $want
echo "$want" > "$stamp"
