#!/usr/bin/env bash
# Install the VS Code extension's npm packages (editors/vscode/package-lock.json: its client
# library, and the tools that test and package it: vscode-tmgrammar-test, @vscode/vsce) into
# editors/vscode/node_modules/ with `npm ci`. Idempotent: nothing happens when the lockfile is
# the one installed last (a stamp holds its digest), so CI pays for it once per lockfile.
# Called by scripts/test.sh (tests/editors/) and scripts/build-vsix.sh. Needs npm (node ≥ 20).
set -euo pipefail
cd "$(dirname "$0")/../editors/vscode"
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ -f .stamp ] && [ "$(cat .stamp)" = "$want" ] && [ -x node_modules/.bin/vsce ]; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "npm is missing: the editor tests and the .vsix need it (bash scripts/system-packages.sh)" >&2
  exit 1
fi
started=$(date +%s)
npm ci --no-audit --no-fund --loglevel=error
echo "$want" > .stamp
echo "editors/vscode: npm ci in $(($(date +%s) - started)) s" >&2
