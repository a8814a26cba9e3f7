"""MCP servers that misbehave on the wire, or start slowly (issue 16): a line of invalid UTF-8 on
stdout is skipped instead of silently breaking the connection (which made every call wait out its
whole timeout and report "did not answer"), a server whose stdout closes fails the pending call at
once, and a step's ``timeout`` does not count the server's start-up (the deadline still does)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
from support.timing import scaled

from agentflow.errors import RunError
from agentflow.ir import load_plan_text
from agentflow.runtime.config import load_config
from agentflow.runtime.executor import run_plan
from agentflow.runtime.tools.build import build_catalog
from agentflow.runtime.tools.catalog import ToolContext

SUPPORT = Path(__file__).resolve().parent.parent.parent / "support"
RAW = SUPPORT / "raw_mcp_server.py"
SDK = SUPPORT / "mcp_server.py"


def _catalog(tmp_path, server: Path, *args: str, extra: str = ""):
    argv = ", ".join(json.dumps(a) for a in (str(server), *args))
    (tmp_path / "flow.toml").write_text(
        f"[mcp.srv]\ncommand = {json.dumps(sys.executable)}\nargs = [{argv}]\n{extra}"
    )
    return build_catalog(load_config(tmp_path / "flow.toml", env={}), entry_points=False)


@pytest.mark.parametrize("flags", [(), ("--garble-at-start",)])
async def test_invalid_utf8_on_stdout_is_skipped_not_a_timeout(tmp_path, flags):
    catalog = _catalog(tmp_path, RAW, *flags, extra="timeout = 30\n")
    try:
        await catalog.prepare(["srv__*"])
        ctx = ToolContext(workspace=tmp_path)
        started = time.monotonic()
        assert await catalog.get("srv__echo").func({"text": "hi"}, ctx) == "hi"
        assert await catalog.get("srv__echo").func({"text": "again"}, ctx) == "again"
        assert time.monotonic() - started < scaled(10)  # was: 31 s per call, then "did not answer"
    finally:
        await catalog.aclose()


async def test_a_server_whose_stdout_closes_fails_the_pending_call_at_once(tmp_path):
    catalog = _catalog(tmp_path, RAW, "--hang-up-on-call", extra="timeout = 60\n")
    try:
        await catalog.prepare(["srv__*"])
        started = time.monotonic()
        with pytest.raises(RunError) as info:
            await catalog.get("srv__echo").func({"text": "hi"}, ToolContext(workspace=tmp_path))
        assert info.value.code == "tool_error" and "not available" in info.value.message
        assert time.monotonic() - started < scaled(10)
    finally:
        await catalog.aclose()


PLAN = """
version: 1
name: slow_start
%s
steps:
  - id: E1
    tool_name: srv__add
    input: {a: 1, b: 2}
    timeout: 2s
"""


async def test_a_step_timeout_does_not_count_the_server_start_up(tmp_path):
    catalog = _catalog(tmp_path, SDK, "--start-delay", "3", extra="connect_timeout = 60\n")
    try:
        result = await run_plan(load_plan_text(PLAN % "", "p.yaml"), catalog=catalog)
        assert result.status == "ok", result.error
        assert result.output == 3
    finally:
        await catalog.aclose()


async def test_the_deadline_still_bounds_the_server_start_up(tmp_path):
    catalog = _catalog(tmp_path, SDK, "--start-delay", "30", extra="connect_timeout = 60\n")
    try:
        started = time.monotonic()
        plan = load_plan_text(PLAN % "deadline: 1s", "p.yaml")
        result = await run_plan(plan, catalog=catalog)
        assert result.status == "error" and result.error["code"] == "deadline_exceeded"
        assert time.monotonic() - started < scaled(10)
    finally:
        await catalog.aclose()
