# Sourced by demo.sh and test.sh (from the repository root): make .venv/ with Python ≥ 3.11 and
# (re)install the package into it. PYTHON names the interpreter to use (default: python3).
# EXTRAS names the extras to install with it: demo.sh sets none (`pip install -e .`, what the
# demo needs), test.sh `test` (the default: `pip install -e '.[test]'`). Says how long it took.
py=${PYTHON:-python3}
if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  what=$("$py" -V 2>&1) || what="not a Python that runs"
  echo "agentflow needs Python 3.11 or newer; '$py' is $what." >&2
  echo "Run again with PYTHON=/path/to/python3.11 (or newer)." >&2
  exit 1
fi
# an old .venv/: made by a Python < 3.11, or by one that is gone (its python link dangles)
if [ -e .venv ] && ! .venv/bin/python -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  old=$(.venv/bin/python -V 2>&1) || old="a Python that no longer runs"
  echo "removing .venv/: it was made with $old" >&2
  rm -rf .venv
fi
[ -x .venv/bin/python ] || "$py" -m venv .venv
extras=${EXTRAS-test}
started=$(date +%s)
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".${extras:+[$extras]}"
echo "set up .venv/ (pip install -e .${extras:+[$extras]}) in $(($(date +%s) - started)) s" >&2
