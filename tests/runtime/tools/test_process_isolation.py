"""``[tools] isolation = "process"`` (issue 16): user tools run in worker processes that are
killed when a call is cancelled, so a tool that holds the GIL (stdlib ``re`` backtracking) or
swallows cancellation cannot outlive its step ``timeout``; results, errors and the context come
back as with threads."""

from __future__ import annotations

import textwrap

from support.timing import Stretch

from agentflow.ir import load_plan_text
from agentflow.runtime.config import load_config
from agentflow.runtime.executor import run_plan
from agentflow.runtime.tools.build import build_catalog

TOOLS = textwrap.dedent(
    '''
    import asyncio
    import os
    import re

    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    def pid() -> int:
        """The worker's process id."""
        return os.getpid()

    def where(ctx) -> str:
        """The step path the call came from."""
        return ctx.step_path

    def boom(text: str) -> str:
        """Always fails."""
        raise ValueError("no " + text)

    def backtrack() -> bool:
        """Holds the GIL for minutes: stdlib re, catastrophic backtracking."""
        return bool(re.match(r"(a+)+$", "a" * 40 + "b"))

    async def stubborn() -> str:
        """Ignores every cancellation."""
        while True:
            try:
                await asyncio.sleep(0.05)
            except asyncio.CancelledError:
                pass
    '''
)

PLAN = """
version: 1
name: iso
steps:
  - id: E1
    tool_name: user__%s
    input: %s
    timeout: %s
"""


def _catalog(tmp_path):
    (tmp_path / "iso_tools.py").write_text(TOOLS)
    (tmp_path / "flow.toml").write_text(
        '[tools]\nmodules = ["iso_tools.py"]\nentry_points = false\nisolation = "process"\n'
    )
    return build_catalog(load_config(tmp_path / "flow.toml", env={}), entry_points=False)


async def _run(catalog, tool: str, args: str = "{}", timeout: str = "60s"):
    plan = load_plan_text(PLAN % (tool, args, timeout), "iso.yaml")
    return await run_plan(plan, catalog=catalog)


async def test_results_errors_and_context_come_back_from_the_worker(tmp_path):
    import os

    catalog = _catalog(tmp_path)
    try:
        assert catalog.get("user__add").meta["isolation"] == "process"
        assert (await _run(catalog, "add", "{a: 2, b: 3}")).output == 5
        worker = (await _run(catalog, "pid")).output
        assert worker != os.getpid()
        assert (await _run(catalog, "pid")).output == worker  # an idle worker is reused
        assert (await _run(catalog, "where")).output == "E1"
        failed = await _run(catalog, "boom", "{text: x}")
        assert failed.error["code"] == "tool_error"
        assert "ValueError: no x" in failed.error["message"]
        bad = await _run(catalog, "add", "{a: one}")
        assert bad.error["code"] == "tool_error" and "invalid arguments" in bad.error["message"]
    finally:
        await catalog.aclose()


async def test_a_gil_holding_or_stubborn_tool_is_killed_at_its_timeout(tmp_path):
    catalog = _catalog(tmp_path)
    try:
        for tool in ("backtrack", "stubborn"):
            with Stretch() as clock:
                result = await _run(catalog, tool, timeout="2s")
            assert result.error["code"] == "timeout", result.error
            assert clock.took < clock.bound(6), (tool, clock.took)
        # the killed worker is replaced on the next call
        assert (await _run(catalog, "add", "{a: 1, b: 1}")).output == 2
    finally:
        await catalog.aclose()
