#!/usr/bin/env bash
# Set up (idempotently) and run the whole test suite, plus ruff. Exit non-zero if no test ran.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/python -m pytest -p no:cacheprovider "$@"
