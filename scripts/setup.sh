# Sourced by demo.sh and test.sh (from the repository root): make .venv/ with Python ≥ 3.11 and
# (re)install the package into it. PYTHON names the interpreter to use (default: python3).
py=${PYTHON:-python3}
if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "agentflow needs Python 3.11 or newer; '$py' is $("$py" -V 2>&1 || echo missing)." >&2
  echo "Run again with PYTHON=/path/to/python3.11 (or newer)." >&2
  exit 1
fi
if [ -x .venv/bin/python ] && ! .venv/bin/python -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "removing .venv/: it was made with $(.venv/bin/python -V 2>&1)" >&2
  rm -rf .venv
fi
[ -x .venv/bin/python ] || "$py" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'
