"""The suite is hermetic for the user's per-user files: a module-scoped fixture — set up before
the function-scoped autouse fixtures that give each test its own ``$XDG_STATE_HOME`` — and the
processes it starts write the run index under the suite's temporary directory, never the
user's ~/.local/state (a user's ``flowc runs`` listed the suite's runs as "started elsewhere")."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from support.user_state import lines_naming, users_index

from agentflow.runtime import run_index


@pytest.fixture(scope="module")
def remembered(tmp_path_factory: pytest.TempPathFactory):
    """A run remembered in-process and one by a subprocess, both from a module-scoped fixture."""
    where = tmp_path_factory.mktemp("hermetic")
    db = where / "durable.sqlite"
    db.touch()
    run_index.remember("hermetic-in", f"sqlite:///{db}", None)
    code = (
        "import sys; from agentflow.runtime import run_index as r; r.remember(*sys.argv[1:], None)"
    )
    subprocess.run(
        [sys.executable, "-c", code, "hermetic-sub", f"sqlite:///{db}"], check=True, timeout=60
    )
    return where, run_index.index_path()


def test_a_module_fixture_writes_the_run_index_under_the_suites_own_directory(remembered):
    where, path = remembered
    assert path != users_index()
    assert not str(path).startswith(os.path.expanduser("~") + os.sep)
    assert lines_naming(str(where)) == []
