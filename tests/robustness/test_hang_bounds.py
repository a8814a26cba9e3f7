"""Bounded waits: nothing a plan, a pattern or a tool does keeps a run or the process hanging.

- Catastrophic regexes in ``builtin__grep`` and in a ``matches`` condition fail cleanly within
  their time budget instead of freezing the event loop (step timeouts and deadlines hold).
- Invalid regexes: a load error at file:line:col for a literal pattern, a step error otherwise.
- The ``flowc run`` process exits right after reporting, even when a sync tool is still running
  or an MCP server never answers, without stray "Future exception was never retrieved" output.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.timing import Stretch, scaled

from agentflow import api
from agentflow.errors import PlanLoadError, RunError
from agentflow.ir import load_plan_text
from agentflow.runtime.expressions import ExprError, evaluate_condition
from agentflow.runtime.tools.catalog import ToolContext
from agentflow.runtime.tools.mcp_session import CLOSE_TIMEOUT

FLOWC = [sys.executable, "-m", "agentflow"]
BOMB = "a" * 60 + "!"  # `^(a|aa)+$` backtracks exponentially on this, even in `regex`
REDOS = "^(a|aa)+$"


def flowc(*args: str, cwd: Path) -> tuple[subprocess.CompletedProcess, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    t0 = time.monotonic()
    proc = subprocess.run(
        FLOWC + list(args), capture_output=True, text=True, env=env, cwd=cwd, timeout=60
    )
    return proc, time.monotonic() - t0


def baseline(*args: str, cwd: Path) -> float:
    """How long the same kind of command takes when nothing hangs: interpreter start-up, imports
    and config loading, which a loaded machine (two test workers on two cores) stretches. The
    process bounds below are this plus what each test is about, not absolute figures."""
    proc, elapsed = flowc(*args, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return elapsed


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------- grep


async def test_grep_catastrophic_pattern_is_a_clean_tool_error(tmp_path):
    from agentflow.runtime.tools.builtin import default_catalog

    write(tmp_path / "a.txt", "a" * 40 + "!\n")  # the reproducer: fast on the regex engine
    write(tmp_path / "b.txt", BOMB + "\n")
    grep = default_catalog().get("builtin__grep").func
    ctx = ToolContext(workspace=tmp_path)
    assert await grep({"pattern": "^(a+)+$"}, ctx) == []
    t0 = time.monotonic()
    with Stretch() as load, pytest.raises(RunError) as info:
        await grep({"pattern": REDOS}, ctx)
    assert time.monotonic() - t0 < load.bound(3)
    assert info.value.code == "tool_error"
    assert REDOS in info.value.message and "on 'a.txt'" in info.value.message
    with pytest.raises(RunError) as info:
        await grep({"pattern": "(["}, ctx)
    assert info.value.code == "tool_error" and "invalid regular expression '(['" in (
        info.value.message
    )


async def test_grep_bomb_in_a_plan_respects_the_step_timeout(tmp_path):
    write(tmp_path / "ws" / "b.txt", BOMB + "\n")
    plan = load_plan_text(
        "version: 1\nname: g\ndeadline: 5s\nsteps:\n"
        f'  - {{id: E0, tool_name: builtin__grep, input: {{pattern: "{REDOS}"}}, timeout: 300ms}}\n'
    )
    t0 = time.monotonic()
    with Stretch() as load:
        result = await api.run(plan, workspace=tmp_path / "ws")
    assert time.monotonic() - t0 < load.bound(3)
    assert result.status == "error" and result.error["code"] == "timeout"


# ---------------------------------------------------------------- matches


def test_matches_catastrophic_and_invalid_patterns_are_step_errors():
    t0 = time.monotonic()
    with Stretch() as load, pytest.raises(ExprError) as info:
        evaluate_condition({"value": BOMB, "op": "matches", "to": REDOS}, {})
    assert time.monotonic() - t0 < load.bound(3)
    assert info.value.code == "validation" and REDOS in info.value.message
    with pytest.raises(ExprError) as info:
        evaluate_condition({"value": "x", "op": "matches", "to": "(["}, {})
    assert "invalid regular expression '(['" in info.value.message
    assert evaluate_condition({"value": "aaa", "op": "matches", "to": "^(a+)+$"}, {})


def decide_plan(to: str) -> str:
    return (
        "version: 1\nname: a\ndeadline: 5s\nsteps:\n"
        "  - {id: E0, tool_name: decide, timeout: 1s, input: {when: "
        f'{{value: "{{{{ input.s }}}}", op: matches, to: "{to}"}}, '
        "then: {tool_name: value, input: {value: 1}}}}\n"
    )


def test_literal_invalid_pattern_is_a_load_error_at_its_position():
    with pytest.raises(PlanLoadError) as info:
        load_plan_text(decide_plan("(["), "p.yaml")
    (problem,) = info.value.errors
    assert str(problem.span) == "p.yaml:5:102"  # the `to` value
    assert "invalid regular expression '(['" in problem.message
    load_plan_text(decide_plan("{{ input.re }}"), "p.yaml")  # templated: checked at run time


async def test_templated_patterns_fail_the_step_cleanly():
    plan = load_plan_text(decide_plan("{{ input.re }}"), "p.yaml")
    result = await api.run(plan, {"s": "x", "re": "(["})
    assert result.error["code"] == "validation"
    assert "invalid regular expression '(['" in result.error["message"]
    t0 = time.monotonic()
    with Stretch() as load:
        result = await api.run(plan, {"s": BOMB, "re": REDOS})
    assert time.monotonic() - t0 < load.bound(3)
    assert result.error["code"] == "validation" and REDOS in result.error["message"]


# ---------------------------------------------------------------- process exit


def test_run_exits_on_deadline_while_a_sync_tool_still_runs(tmp_path):
    side = tmp_path / "side.log"
    write(
        tmp_path / "slow.py",
        "import time\n\n"
        "def slow(seconds: float) -> str:\n"
        '    """Sleep, then leave a mark."""\n'
        "    time.sleep(seconds)\n"
        f"    open({str(side)!r}, 'w').write('done')\n"
        "    return 'done'\n",
    )
    write(tmp_path / "flow.toml", '[tools]\nmodules = ["slow.py"]\nentry_points = false\n')
    write(
        tmp_path / "p.yaml",
        "version: 1\nname: p\ndeadline: 500ms\nsteps:\n"
        "  - {id: E0, tool_name: user__slow, input: {seconds: 30}}\n",
    )
    write(
        tmp_path / "quick.yaml",
        "version: 1\nname: q\nsteps:\n  - {id: E0, tool_name: value, input: {value: 1}}\n",
    )
    with Stretch() as load:
        proc, elapsed = flowc("run", "p.yaml", "--config", "flow.toml", cwd=tmp_path)
    assert proc.returncode == 1 and "deadline_exceeded" in proc.stderr
    quick = baseline("run", "quick.yaml", "--config", "flow.toml", cwd=tmp_path)
    # the deadline, then the stop's grace
    assert elapsed < quick + load.bound(0.5 + 1.5), (elapsed, quick, load.factor)
    assert "Traceback" not in proc.stderr and not side.exists()


def test_run_exits_soon_when_an_mcp_server_never_answers(tmp_path):
    assert CLOSE_TIMEOUT <= 3
    write(tmp_path / "flow.toml", '[mcp.hang]\ncommand = "sleep"\nargs = ["987.654"]\n')
    write(
        tmp_path / "m.yaml",
        "version: 1\nname: m\ndeadline: 2s\nsteps:\n"
        "  - {id: E0, tool_name: hang__x, input: {}, timeout: 1s}\n",
    )
    proc, elapsed = flowc("run", "m.yaml", cwd=tmp_path)
    # the step timeout does not count the server's start-up; the deadline does (issue 16)
    assert proc.returncode == 1 and "error[deadline_exceeded] at step E0" in proc.stderr
    assert "while starting MCP servers" in proc.stderr
    # the run itself ends at the deadline (the SDK is imported off the event loop); the process,
    # interpreter start-up included, soon after
    took = float(re.search(r"run error in ([\d.]+)s", proc.stderr).group(1))
    assert took < scaled(2 + 0.5), took
    assert elapsed < scaled(20), elapsed
    assert "Traceback" not in proc.stderr and "never retrieved" not in proc.stderr
    assert not _alive("987.654"), "the hung server was not killed"


def _alive(arg: str) -> bool:
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if arg.encode() in cmdline.read_bytes().split(b"\0"):
                return True
        except OSError:
            continue
    return False


def test_tools_listing_gives_up_on_a_hung_server_cleanly(tmp_path):
    write(
        tmp_path / "flow.toml",
        '[mcp.hang]\ncommand = "sleep"\nargs = ["987.655"]\nconnect_timeout = 1\n',
    )
    with Stretch() as load:
        proc, elapsed = flowc("tools", cwd=tmp_path)
    assert "MCP server 'hang' is not available: did not start within 1s" in proc.stderr
    write(tmp_path / "alone" / "flow.toml", "")  # the same listing with no MCP server
    quick = baseline("tools", cwd=tmp_path / "alone")
    # connect_timeout, closing the server, and importing the MCP SDK (which the listing with no
    # server skips; it stretches with the machine's load as start-up does)
    assert elapsed < 2 * quick + load.bound(1 + CLOSE_TIMEOUT), (elapsed, quick, load.factor)
    assert "Traceback" not in proc.stderr and "never retrieved" not in proc.stderr
    assert not _alive("987.655"), "the hung server was not killed"
