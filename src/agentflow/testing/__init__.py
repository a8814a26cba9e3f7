"""Testing flows from Python: a real scripted model server and pytest fixtures.

:class:`ChatServer` (from :mod:`agentflow.testing.chat_server`) is a real HTTP server on
127.0.0.1 that speaks the OpenAI chat-completions and Anthropic Messages APIs and answers from a
script — a list of replies consumed in order, or a function of the request — with faults to
inject (rate limits, resets, slow or cut-off replies, broken streams)::

    from agentflow.runtime.config import load_config
    from agentflow.testing import TEST_API_KEY, ChatServer, answer, tool_calls

    script = [tool_calls(("builtin__read_file", {"path": "a.txt"})), answer({"ok": True})]
    with ChatServer(script) as server:
        config = load_config(server.write_config(tmp_dir), env={"SCRIPTED_API_KEY": TEST_API_KEY})
        result = agentflow.run_sync("triage.flow", {...}, config=config)
        assert server.requests[1]["messages"][-1]["role"] == "tool"

Its pytest fixtures (``chat_server``, ``scripted_config``, ``scripted_router``) come from
:mod:`agentflow.testing.pytest_plugin`: add ``pytest_plugins = ["agentflow.testing.pytest_plugin"]``
to a ``conftest.py``. For runs that need no script at all, the built-in test model answers every
agent from its contract: ``agentflow.run(…, model="test")`` (docs/models.md "The test model").
"""

from __future__ import annotations

from agentflow.testing.chat_server import (
    TEST_API_KEY,
    ChatServer,
    Reply,
    answer,
    anthropic_error,
    anthropic_message,
    anthropic_stream,
    anthropic_text,
    completion,
    openai_stream,
    overloaded_200,
    reset,
    sse,
    status,
    text,
    tool_calls,
    tool_use,
)

__all__ = [
    "TEST_API_KEY",
    "ChatServer",
    "Reply",
    "answer",
    "anthropic_error",
    "anthropic_message",
    "anthropic_stream",
    "anthropic_text",
    "completion",
    "openai_stream",
    "overloaded_200",
    "reset",
    "sse",
    "status",
    "text",
    "tool_calls",
    "tool_use",
]
