"""A step's ``timeout`` counts the virtual time of the ``sleep``s inside it, as the deadline
does, when the host stands in for sleeps (the ``sleeper`` hook: ``flowc test``, ``--explore``,
an api user): a called plan that sleeps 1h inside a call bounded by ``timeout: 10m`` fails
``timeout`` at once, its clock moved to the bound (as a real run fails after 10 minutes); one
that sleeps less returns; in a ``parallel`` the sleeps overlap (docs/reference/statements.md
"sleep").  Before, the timeout counted real time only and the virtual hour passed."""

from __future__ import annotations

import asyncio

from support.timing import Stretch

import agentflow
from agentflow.ir import load_plan_text
from agentflow.runtime.hooks import Hooks, SleepRequest

PLAN = """\
version: 1
name: caller
input_schema: {type: object}
steps:
  - id: E1
    tool_name: plan__nap
    input: {first: "{{ input.first }}", then: "{{ input.then }}"}
    timeout: 10m
finish: {output: "{{ E1 }}"}
plans:
  nap:
    version: 1
    name: nap
    input_schema: {type: object}
    steps:
      - {id: S1, tool_name: sleep, input: {for: "{{ input.first }}"}}
      - {id: S2, tool_name: sleep, input: {for: "{{ input.then }}"}}
    finish: {output: done}
"""

PARALLEL = """\
version: 1
name: fan
input_schema: {type: object}
steps:
  - id: E1
    tool_name: plan__two
    input: {}
    timeout: 10m
finish: {output: "{{ E1 }}"}
plans:
  two:
    version: 1
    name: two
    input_schema: {type: object}
    steps:
      - id: P
        tool_name: parallel
        input:
          branches:
            a: {tool_name: sleep, input: {for: 6m}}
            b: {tool_name: sleep, input: {for: 6m}}
    finish: {output: both}
"""


def _run(text: str, data: dict) -> tuple[agentflow.RunResult, list[float]]:
    slept: list[float] = []

    def sleeper(request: SleepRequest) -> None:
        slept.append(request.seconds)

    result = asyncio.run(
        agentflow.run(load_plan_text(text), data, hooks=Hooks(sleeper=sleeper), telemetry=False)
    )
    return result, slept


def test_sleeps_inside_a_timed_call_use_up_its_timeout() -> None:
    with Stretch() as stretch:
        late, late_slept = _run(PLAN, {"first": "6m", "then": "6m"})
    assert stretch.took < stretch.bound(10.0)  # virtual: not 10 minutes
    assert late.status == "error", late.output
    assert late.error["code"] == "timeout", late.error
    assert "did not finish within its timeout (10m)" in late.error["message"]
    assert late_slept == [360.0]  # the second sleep is cut at the bound, as a real one is
    ok, ok_slept = _run(PLAN, {"first": "4m", "then": "5m"})
    assert ok.status == "ok" and ok.output == "done", ok.error
    assert ok_slept == [240.0, 300.0]


def test_concurrent_sleeps_in_a_timed_call_overlap() -> None:
    result, slept = _run(PARALLEL, {})
    assert result.status == "ok" and result.output == "both", result.error
    assert slept == [360.0, 360.0]
