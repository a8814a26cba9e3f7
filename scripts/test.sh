#!/usr/bin/env bash
# Set up (idempotently) and run the whole test suite, plus ruff. Exit non-zero if no test ran.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh  # .venv/ with Python ≥ 3.11, package (re)installed
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/python -m pytest -p no:cacheprovider "$@"
