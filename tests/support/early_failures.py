"""A failure injected before ``agentflow.run`` starts its run, with an MCP server connected:
the plan, the server's configuration and the injected failure that
tests/runtime/test_run_closes_what_it_opened.py (a few injection points) and
bench/early_failures_leak.py (all of them) share."""

from __future__ import annotations

import json
import sys
from pathlib import Path

#: The MCP server (tests/support/mcp_server.py) the runs connect as ``tracker``.
SERVER = Path(__file__).resolve().parent / "mcp_server.py"

PLAN = """version: 1
name: adder
steps:
- id: E0
  tool_name: tracker__add
  input: {a: 1, b: 2}
- id: E1
  tool_name: agent
  input: {prompt: "Say {{ E0 }}", output_schema: {type: object}}
"""


def mcp_config() -> str:
    """The flow.toml lines that start ``SERVER`` as the MCP server ``tracker``."""
    return (
        "[mcp.tracker]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(SERVER))}]\n"
    )


class Injected(Exception):
    """The failure injected at a step."""


def boom(*args: object, **kwargs: object) -> None:
    """A stand-in for the step that fails: raises :class:`Injected`."""
    raise Injected("injected")
