"""Shared fixtures.

* ``chat_server``: a started :class:`support.chat_server.ChatServer` (real HTTP on 127.0.0.1);
  script it with ``chat_server.script([...])``; ``chat_server.env()`` / ``chat_server.write_config(dir)``
  point a configuration at it.
* ``scripted_config``: a loaded ``Config`` whose default model is ``chat_server`` (fast retries).
* ``scripted_router``: a ``ModelRouter`` over ``scripted_config``.
* ``golden``: the :class:`support.golden.Golden` every golden test compares with;
  ``pytest --update-golden`` rewrites the golden files instead of comparing.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from support.chat_server import TEST_API_KEY, ChatServer  # noqa: E402
from support.golden import UPDATE_OPTION, Golden  # noqa: E402


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


@pytest.fixture
def chat_server():
    """A running scripted chat-completions server; stopped after the test."""
    server = ChatServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def scripted_config(chat_server, tmp_path):
    """A Config (flow.toml in tmp_path) whose every role answers from ``chat_server``."""
    from agentflow.runtime.config import load_config

    path = chat_server.write_config(tmp_path)
    return load_config(path, env={"SCRIPTED_API_KEY": TEST_API_KEY})


@pytest.fixture
async def scripted_router(scripted_config):
    """A ModelRouter over ``scripted_config``; its HTTP clients are closed after the test."""
    from agentflow.runtime.models.router import ModelRouter

    router = ModelRouter(scripted_config)
    try:
        yield router
    finally:
        await router.aclose()


@pytest.fixture(autouse=True)
def _shape_cache_dir(tmp_path_factory, monkeypatch):
    """Every test gets its own shape cache directory (never the user's ~/.cache/agentflow)."""
    monkeypatch.setenv("AGENTFLOW_CACHE_DIR", str(tmp_path_factory.mktemp("agentflow-cache")))
