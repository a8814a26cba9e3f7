#!/usr/bin/env bash
# Install the OTLP backend the telemetry tests export to — Arize Phoenix, an open-source
# OpenTelemetry backend for LLM traces — into its own virtual environment, .venv-phoenix/
# (kept apart from .venv/ so its ~150 packages never change agentflow's own dependencies or
# start-up). Idempotent: does nothing when the pinned version is already there.
# Run by scripts/test.sh; tests/e2e/test_otel_phoenix.py starts `phoenix serve` from it.
set -euo pipefail
cd "$(dirname "$0")/.."
version=20.26.1  # arize-phoenix, pinned: the test reads spans back through its REST API
py=${PYTHON:-python3}
if [ -x .venv-phoenix/bin/python ] \
  && .venv-phoenix/bin/python -c "import importlib.metadata as m, sys; sys.exit(m.version('arize-phoenix') != '$version')" 2>/dev/null; then
  exit 0
fi
echo "installing arize-phoenix $version into .venv-phoenix/ (once; a few minutes)" >&2
rm -rf .venv-phoenix
"$py" -m venv .venv-phoenix
.venv-phoenix/bin/python -m pip install -q --disable-pip-version-check "arize-phoenix==$version"
