#!/usr/bin/env bash
# Install the npm tools the MCP tests and the conformance run need into .ci/node/ (gitignored):
# a node 22 (the npm package `node`: the conformance suite and the Inspector need node >= 22),
# two reference MCP servers, the MCP Inspector (its CLI mode) and the MCP conformance suite.
# Idempotent: does nothing when the pinned set is installed already.  Needs npm (node 20 is fine).
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=.ci/node
stamp="$prefix/.installed"
want="node@22.23.3 @modelcontextprotocol/server-everything@2026.8.31 @modelcontextprotocol/server-filesystem@2026.8.31 @modelcontextprotocol/inspector@2.12.0 @modelcontextprotocol/conformance@0.1.16"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
mkdir -p "$prefix"
# shellcheck disable=SC2086
npm install --prefix "$prefix" --no-save --no-audit --no-fund --loglevel=error $want
echo "$want" > "$stamp"
