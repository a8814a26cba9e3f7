"""Shared fixtures.

* ``chat_server``, ``scripted_config``, ``scripted_router``: the packaged fixtures of
  :mod:`agentflow.testing.pytest_plugin` (a real scripted model server on 127.0.0.1, a Config and
  a ModelRouter answering from it), as users of ``agentflow.testing`` get them.
* ``temporal_server``: a Temporal dev server of this test process (tests/support/temporal.py),
  started at its first use, for the durable tests of both engines.
* ``golden``: the :class:`support.golden.Golden` every golden test compares with;
  ``pytest --update-golden`` rewrites the golden files instead of comparing.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from support.golden import UPDATE_OPTION, Golden  # noqa: E402

pytest_plugins = ["agentflow.testing.pytest_plugin"]


def pytest_configure(config):
    """Under pytest-xdist (scripts/test.sh runs the suite with ``-n 2``) a worker process starts
    with SIGINT ignored — the controller handles Ctrl-C — and every process a test starts would
    inherit that; a program started with SIGINT ignored rightly keeps ignoring it (POSIX: how a
    shell shields its background jobs), flowc included, so the tests that stop a flowc with
    Ctrl-C, or check how a run installs its handlers, would not see what a user sees. A worker
    takes Python's default back: each test then runs as it does in a serial run. So does a
    serial run that a non-interactive shell started in the background (``pytest … &`` in a
    script: the shell starts it with SIGINT ignored); there, each test that stops a flowc with
    Ctrl-C waited out its flow's whole sleep (a minute) before it passed."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    _suite_state_dirs()


#: The per-user directories of the package the suite points at a temporary directory of its own
#: (``_suite_state_dirs``); the function-scoped fixtures below give each test its own as well.
SUITE_DIRS = ("XDG_STATE_HOME", "AGENTFLOW_CACHE_DIR")


def _suite_state_dirs() -> None:
    """Point the package's per-user locations (``$XDG_STATE_HOME``: the index of durable runs
    and MCP OAuth tokens; ``$AGENTFLOW_CACHE_DIR``: the shape cache) at a temporary directory of
    this process for the whole session, before anything is collected: the autouse fixtures below
    are function-scoped, so a module- or session-scoped fixture (which pytest sets up before
    them) or a subprocess it starts would otherwise write into the real user's
    ~/.local/state/agentflow (a user's ``flowc runs`` then listed the suite's runs).
    tests/test_the_suite_never_writes_the_users_state.py checks it."""
    import atexit
    import shutil
    import tempfile

    root = tempfile.mkdtemp(prefix="agentflow-suite-")
    atexit.register(shutil.rmtree, root, True)
    for name in SUITE_DIRS:
        os.environ[name] = os.path.join(root, name.lower())


def pytest_sessionstart(session):
    """Compile the package's (and the test support's) bytecode once, before any test — in the
    controller, before pytest-xdist starts its workers (its own session start runs last).

    Hundreds of tests start ``flowc`` (``python -m agentflow``) in a new process. The package
    is installed editable, so its bytecode lives beside ``src/``; in an environment that sets
    ``PYTHONDONTWRITEBYTECODE`` (CI images often do) nothing ever writes it, and every one of
    those processes compiled each module it imports again: about 0.4 s of CPU a process, twice
    what a plain ``flowc run`` costs otherwise. Compiled here once (under a second; files
    already compiled and unchanged are only looked at), every process loads it as an installed
    package's. A directory that cannot be written is left as it is (quietly: nothing else
    changes)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    import compileall

    root = Path(__file__).resolve().parent.parent
    for directory in (root / "src" / "agentflow", root / "tests" / "support"):
        compileall.compile_dir(directory, quiet=2)


def pytest_addoption(parser):
    """``--update-golden``: rewrite the golden files (checker marks, renderer snapshots, compiled
    plans, plan fmt output) to the current output instead of comparing with them."""
    parser.addoption(
        UPDATE_OPTION,
        action="store_true",
        default=False,
        help="rewrite golden files to the current output (review with git diff)",
    )


@pytest.fixture
def golden(request) -> Golden:
    """The golden-file comparer; it rewrites instead under ``--update-golden``."""
    return Golden(request.config.getoption(UPDATE_OPTION))


@pytest.fixture(autouse=True)
def _shape_cache_dir(tmp_path_factory, monkeypatch):
    """Every test gets its own shape cache directory (never the user's ~/.cache/agentflow)."""
    monkeypatch.setenv("AGENTFLOW_CACHE_DIR", str(tmp_path_factory.mktemp("agentflow-cache")))


@pytest.fixture(autouse=True)
def _state_dir(tmp_path_factory, monkeypatch):
    """Every test gets its own state directory (``$XDG_STATE_HOME``: the index of durable runs,
    MCP OAuth tokens), never the user's ~/.local/state."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("agentflow-state")))


@pytest.fixture(scope="session", autouse=True)
def _the_users_state_stays_untouched(tmp_path_factory):
    """After the session: no line of the real user's run index names this session's temporary
    directory (a test, a fixture of any scope or a subprocess wrote the user's state)."""
    from support.user_state import lines_naming

    base = str(tmp_path_factory.getbasetemp())
    yield
    if found := lines_naming(base):
        pytest.fail(f"the suite wrote the user's run index ({found[0]}): {len(found)} line(s)")


@pytest.fixture(autouse=True)
def _fresh_secrets():
    """Every test starts with no registered secret: the redaction registry is process-wide (as it
    is in a flowc process), so a secret one test registered would otherwise mask text in the next
    (``AGENTFLOW_…`` in a message, once a test used an env value holding those letters)."""
    from agentflow.core.redaction import SECRETS

    SECRETS.clear()
    yield
    SECRETS.clear()


@pytest.fixture(scope="session")
def temporal_server():
    """A Temporal dev server of this test process (tests/support/temporal.py), started at its
    first use; the test fails when it cannot start."""
    from support.temporal import TemporalServer

    with TemporalServer() as server:
        yield server
