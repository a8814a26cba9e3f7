"""scripts/setup.sh (sourced by demo.sh and test.sh): its interpreter checks, run for real with
bash in a temp copy of the scripts folder; `venv`/`pip` are played by a small stand-in Python so
the test needs no network and takes milliseconds."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import REPO as ROOT

# PYTHON for setup.sh: a real interpreter for `-c` checks; `-m venv DIR` makes DIR/bin/python
# (with `ln -s`, which, like `python -m venv`, does not replace a python link already there)
FAKE_PY = """#!/usr/bin/env bash
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
  mkdir -p "$3/bin" && ln -s "{wrapper}" "$3/bin/python"
  exit $?
fi
exec "{real}" "$@"
"""
# the new .venv/bin/python: a real interpreter, except `-m pip` (a no-op here)
WRAPPER = """#!/usr/bin/env bash
[ "$1" = "-m" ] && [ "$2" = "pip" ] && exit 0
exec "{real}" "$@"
"""


@pytest.fixture
def project(tmp_path):
    shutil.copytree(ROOT / "scripts", tmp_path / "scripts")
    wrapper = tmp_path / "venv-python"
    wrapper.write_text(WRAPPER.format(real=sys.executable), encoding="utf-8")
    fake = tmp_path / "py with space"
    fake.write_text(FAKE_PY.format(real=sys.executable, wrapper=wrapper), encoding="utf-8")
    for f in (wrapper, fake):
        f.chmod(0o755)
    return tmp_path


def _setup(project: Path, python: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHON": python}
    return subprocess.run(
        ["bash", "-c", ". scripts/setup.sh"], cwd=project, env=env, capture_output=True,
        text=True, timeout=60,
    )  # fmt: skip


def test_a_venv_whose_python_is_gone_is_remade(project):
    """A .venv/ made by a Python since removed (pyenv upgrade): its python link dangles, so it
    must be remade rather than used (before: `-m venv` kept the dead link and pip failed)."""
    (project / ".venv" / "bin").mkdir(parents=True)
    (project / ".venv" / "bin" / "python").symlink_to("/nonexistent/python3.10")
    res = _setup(project, str(project / "py with space"))
    assert res.returncode == 0, res.stderr
    assert "removing .venv/: it was made with a Python that no longer runs" in res.stderr
    assert os.path.realpath(project / ".venv" / "bin" / "python") == str(project / "venv-python")


def test_a_missing_python_is_named_in_one_sentence(project):
    res = _setup(project, "/nonexistent/python3")
    assert res.returncode == 1
    assert res.stderr.splitlines()[0] == (
        "agentflow needs Python 3.11 or newer; '/nonexistent/python3' is not a Python that runs."
    )
