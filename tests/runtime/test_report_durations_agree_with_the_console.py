"""A step's time in the report is the time the console prints for it (issue 31: a step shown as
0.19 s on the console was 90 ms in the report).  The cause: a step's ``step_started`` event is
emitted once its input is rendered — after the MCP servers it will use are started — while its
``elapsed_ms`` (what the console prints) counts from the step's start; the report took the
events' times.  Here a timed tool step starts a real MCP server that is slow to start
(``tests/support/mcp_server.py --start-delay``), so the gap is large."""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path

from agentflow import api
from agentflow.ir import load_plan_text
from agentflow.runtime.config import load_config
from agentflow.runtime.events import CallbackSink, ConsoleSink
from agentflow.runtime.report import build_report, read_run
from agentflow.runtime.tools.build import build_catalog

SERVER = Path(__file__).resolve().parents[1] / "support" / "mcp_server.py"


async def test_a_step_that_starts_an_mcp_server_takes_the_same_time_in_report_and_console(
    tmp_path,
):
    (tmp_path / "flow.toml").write_text(
        f"[mcp.tracker]\ncommand = {json.dumps(sys.executable)}\n"
        f"args = {json.dumps([str(SERVER), '--start-delay', '0.4'])}\n",
        encoding="utf-8",
    )
    config = load_config(tmp_path / "flow.toml", env={})
    plan = load_plan_text(
        json.dumps(
            {
                "version": 1,
                "name": "echoing",
                "steps": [
                    {"id": "E0", "tool_name": "agent",
                     "input": {"prompt": "Say hi.", "tools": ["tracker__echo"],
                               "output_schema": {"type": "object"}}},
                ],
            }
        ),
        "echoing.plan.json",
    )  # fmt: skip
    events: list = []
    console = io.StringIO()
    result = await api.run(
        plan,
        config=config,
        workspace=tmp_path,
        sinks=[CallbackSink(events.append), ConsoleSink(console, force_plain=True)],
        catalog=build_catalog(config, entry_points=False),
        shape_cache=False,
        model="test",
    )
    assert result.status == "ok", result.error
    trace = [e.to_dict() if hasattr(e, "to_dict") else e for e in events]
    started = next(e for e in trace if e["kind"] == "step_started")
    finished = next(e for e in trace if e["kind"] == "step_finished")
    elapsed = finished["data"]["elapsed_ms"] / 1000
    # the server's start-up lies between the step's start and its `step_started` event
    assert started["time"] - (finished["time"] - elapsed) >= 0.3
    step = read_run(trace).steps[0]
    assert step.end is not None and abs((step.end - step.start) - elapsed) < 1e-6
    printed = re.search(r"✓ E0 (\d+\.\d\d)s", console.getvalue())
    assert printed is not None, console.getvalue()
    page = build_report(trace, plan=plan)
    row = re.search(r'<tr class="step" data-path="E0".*?</tr>', page, re.S)
    assert row is not None
    shown = re.search(r'data-label="time" class="num">([\d.]+) s<', row[0])
    assert shown is not None and shown[1] == printed[1]


def test_the_report_rounds_the_console_s_own_number_for_a_step_s_time():
    """The console prints ``elapsed_ms / 1000`` to two decimals; the report once printed
    ``end - (end - elapsed)``, which floating point can move across a rounding edge (3.815 s was
    ``3.81`` on the console, ``3.82`` in the report: 96 of 2,000 durations differed)."""
    differ = []
    for ms in range(3000, 5000):
        t = 1765000000.123 + ms / 7
        trace = [
            {"kind": "step_started", "path": "E0", "time": t - 1, "data": {"tool_name": "x"}},
            {"kind": "step_finished", "path": "E0", "time": t,
             "data": {"tool_name": "x", "elapsed_ms": ms}},
        ]  # fmt: skip
        step = read_run(trace).steps[0]
        if step.took is None or f"{step.took:.2f}" != f"{ms / 1000:.2f}":
            differ.append(ms)
    assert differ == []
