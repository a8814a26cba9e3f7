#!/usr/bin/env bash
# Build the VS Code extension (editors/vscode) into a .vsix: its grammar generated from the
# vocabulary first (editors/generate.py --check fails when it is stale), then `vsce package`.
#   bash scripts/build-vsix.sh [OUT.vsix]    (default: editors/vscode/agentflow-flow.vsix)
# Install it with `code --install-extension OUT.vsix`. .ci/run builds it; tests/editors/ checks
# what it holds.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-editors/vscode/agentflow-flow.vsix}")
bash scripts/vscode-tools.sh
py=.venv/bin/python
[ -x "$py" ] || py=${PYTHON:-python3}
"$py" editors/generate.py --check
cd editors/vscode
node_modules/.bin/vsce package --out "$out" >/dev/null
echo "built $out" >&2
