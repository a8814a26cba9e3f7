"""pytest fixtures for testing flows against a real scripted model server.

Enable them in a ``conftest.py`` with ``pytest_plugins = ["agentflow.testing.pytest_plugin"]``:

* ``chat_server``: a started :class:`~agentflow.testing.chat_server.ChatServer` (real HTTP on
  127.0.0.1), stopped after the test; script it with ``chat_server.script([...])``;
  ``chat_server.env()`` / ``chat_server.write_config(dir)`` point a configuration at it.
* ``scripted_config``: a loaded :class:`~agentflow.runtime.config.Config` (``flow.toml`` in the
  test's ``tmp_path``) whose every role answers from ``chat_server``, with fast retries.
* ``scripted_router``: a :class:`~agentflow.runtime.models.router.ModelRouter` over
  ``scripted_config`` (async fixture: needs pytest-asyncio or anyio), closed after the test.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from agentflow.runtime.config import load_config
from agentflow.runtime.models.router import ModelRouter
from agentflow.testing.chat_server import TEST_API_KEY, ChatServer

if TYPE_CHECKING:
    from agentflow.runtime.config import Config


@pytest.fixture
def chat_server() -> Iterator[ChatServer]:
    """A running scripted chat server; stopped after the test."""
    server = ChatServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def scripted_config(chat_server: ChatServer, tmp_path: Path) -> Config:
    """A Config (flow.toml in tmp_path) whose every role answers from ``chat_server``."""

    path = chat_server.write_config(tmp_path)
    return load_config(path, env={"SCRIPTED_API_KEY": TEST_API_KEY})


@pytest.fixture
async def scripted_router(scripted_config: Config) -> AsyncIterator[Any]:
    """A ModelRouter over ``scripted_config``; its HTTP clients are closed after the test."""

    router = ModelRouter(scripted_config)
    try:
        yield router
    finally:
        await router.aclose()
