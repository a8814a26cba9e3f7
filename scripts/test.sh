#!/usr/bin/env bash
# Set up (idempotently) and run the whole test suite over two workers, plus ruff and mypy (the
# type checker, over the whole package: [tool.mypy] in pyproject.toml). Exit non-zero if no test
# ran.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/system-packages.sh  # headless Chromium + driver, npm, PostgreSQL (apt-get as root)
EXTRAS=test . scripts/setup.sh  # .venv/ with Python ≥ 3.11, package and `test` extra (re)installed
# side by side (both idempotent; `wait` fails the script when the background one failed):
bash scripts/setup-phoenix.sh &  # .venv-phoenix/: the OTLP backend of tests/e2e/test_otel_phoenix.py
phoenix=$!
bash scripts/npm-tools.sh  # .ci/node/: node 22, the npm MCP servers, the Inspector (MCP tests)
bash scripts/vscode-tools.sh  # editors/vscode/node_modules/: tmgrammar-test, vsce (tests/editors/)
wait "$phoenix"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
# over both cores (pytest-xdist; FLOWC_TEST_WORKERS=0 runs in one process, as does `-n 0` after)
.venv/bin/python -m pytest -p no:cacheprovider -n "${FLOWC_TEST_WORKERS:-2}" "$@"
