#!/usr/bin/env bash
# Set up (idempotently), then check, compile and run examples/bug-triage.flow, then run
# examples/issue-review.flow.
# The runs answer every model request from the shipped cassettes (examples/bug-triage.cassette.jsonl,
# examples/issue-review.cassette.jsonl), so they need no API key and no network. See README.md for
# how the cassettes were made.
set -euo pipefail
cd "$(dirname "$0")/.."
EXTRAS="" . scripts/setup.sh  # .venv/ with Python ≥ 3.11, the package alone (pip install -e .)
out=$(mktemp -d)
.venv/bin/flowc check examples/bug-triage.flow
.venv/bin/flowc compile examples/bug-triage.flow -o "$out/bug-triage.plan.yaml"
.venv/bin/flowc plan validate "$out/bug-triage.plan.yaml"
scripted() {  # say on screen where the run's model answers come from, before it runs
  echo "note: the model answers below are replayed from $1, recorded against the project's" \
    "scripted test model (model 'test-model', a Python function, not an LLM): the tool calls" \
    "are real, the reasoning is a script, and replayed calls take 0.00s (README.md, \"About" \
    "the demo's model answers\")." >&2
}
scripted examples/bug-triage.cassette.jsonl
.venv/bin/flowc run examples/bug-triage.flow \
  --input @examples/bug-report.json \
  --workspace examples/workspace \
  --replay examples/bug-triage.cassette.jsonl \
  --config examples/flow.toml \
  --trace "$out/trace.jsonl"
# issue-review.flow: its `linear` MCP server is the offline stdio stub examples/mcp/linear_stub.py
# (see examples/issue-review.toml); its model answers come from examples/issue-review.cassette.jsonl.
scripted examples/issue-review.cassette.jsonl
.venv/bin/flowc run examples/issue-review.flow \
  --input '{"limit": 50}' \
  --replay examples/issue-review.cassette.jsonl \
  --config examples/issue-review.toml \
  --trace "$out/issue-review.trace.jsonl"
echo "plan and traces written to $out" >&2
