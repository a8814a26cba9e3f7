#!/usr/bin/env bash
# Set up (idempotently), then check, compile and run examples/bug-triage.flow.
# The run answers every model request from the shipped cassette (examples/bug-triage.cassette.jsonl),
# so it needs no API key and no network. See README.md for how the cassette was made.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'
out=$(mktemp -d)
.venv/bin/flowc check examples/bug-triage.flow
.venv/bin/flowc compile examples/bug-triage.flow -o "$out/bug-triage.plan.yaml"
.venv/bin/flowc plan validate "$out/bug-triage.plan.yaml"
.venv/bin/flowc run examples/bug-triage.flow \
  --input @examples/bug-report.json \
  --workspace examples/workspace \
  --replay examples/bug-triage.cassette.jsonl \
  --config examples/flow.toml \
  --trace "$out/trace.jsonl"
echo "plan and trace written to $out" >&2
