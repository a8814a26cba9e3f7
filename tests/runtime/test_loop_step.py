"""The `loop` control step (docs/spec/PLAN_IR.md §5, docs/reference/plans.md "Control steps"):
rounds one after the other with `round` (1-based) and `accumulator` in scope, `until` checked on
each new state, `on_exhausted` deciding when no round meets it (`loop_exhausted`, catchable by a
`try` step, or a value), a bound checked when the loop starts, the round in step paths; and
the load-time rules of the step, with positions."""

from __future__ import annotations

import textwrap

import pytest

import agentflow
from agentflow.errors import PlanLoadError
from agentflow.ir import load_plan_text
from agentflow.runtime.events import CallbackSink


def _plan(loop_input: str, *, wrap_try: bool = False) -> str:
    """A plan whose step ``L`` is a loop with ``loop_input``; with ``wrap_try``, ``L`` is a
    ``try`` step catching ``loop_exhausted`` around a call of a sub-plan holding the loop (a
    loop is not a body: it nests through ``plan__*``, like ``reduce``)."""
    loop = "tool_name: loop\ninput:\n" + textwrap.indent(loop_input.strip(), "  ")
    if not wrap_try:
        return "version: 1\nname: loops\nsteps:\n  - id: L\n" + textwrap.indent(loop, "    ")
    return (
        "version: 1\nname: loops\nsteps:\n  - id: L\n    tool_name: try\n    input:\n"
        "      on: [loop_exhausted]\n"
        '      do: { tool_name: plan__inner, input: { n: "{{ input.n }}", stop: "{{ input.stop }}" } }\n'
        '      catch: { tool_name: value, input: { value: "{{ {caught: error.code, '
        'message: error.message} }}" } }\n'
        "plans:\n  inner:\n    version: 1\n    name: inner\n    steps:\n      - id: L\n"
        + textwrap.indent(loop, " " * 8)
        + "\n"
    )


COUNTING = """
up_to: "{{ input.n }}"
initial: { sum: 0, rounds: [] }
do:
  tool_name: value
  input: { value: "{{ {sum: accumulator.sum + round, rounds: accumulator.rounds + [round]} }}" }
"""
UNTIL = (
    COUNTING
    + """
until: { expr: "accumulator.sum >= input.stop" }
on_exhausted: { fail: "sum {{ accumulator.sum }} after round {{ round }}" }
"""
)


def _run(text: str, inp: dict) -> agentflow.RunResult:
    return agentflow.run_sync(load_plan_text(text, "loops.yaml"), inp)


def test_rounds_run_in_order_with_the_round_number_and_the_state():
    result = _run(_plan(COUNTING), {"n": 4})
    assert result.status == "ok", result.error
    assert result.output == {"sum": 10, "rounds": [1, 2, 3, 4]}


def test_zero_rounds_give_the_initial_state():
    assert _run(_plan(COUNTING), {"n": 0}).output == {"sum": 0, "rounds": []}


def test_until_ends_the_loop_after_the_first_round_whose_state_meets_it():
    events: list = []
    plan = load_plan_text(_plan(UNTIL), "loops.yaml")
    result = agentflow.run_sync(plan, {"n": 10, "stop": 6}, sinks=[CallbackSink(events.append)])
    assert result.output == {"sum": 6, "rounds": [1, 2, 3]}
    bodies = [e.path for e in events if e.kind == "step_finished" and e.path != "L"]
    assert bodies == ["L/round.1", "L/round.2", "L/round.3"]


def test_no_round_meeting_until_fails_with_loop_exhausted_in_the_programs_words():
    result = _run(_plan(UNTIL), {"n": 2, "stop": 100})
    assert result.status == "error"
    assert (result.error.code, result.error.message) == ("loop_exhausted", "sum 3 after round 2")
    assert result.error.step_path == "L"


def test_a_try_step_catches_loop_exhausted():
    result = _run(_plan(UNTIL, wrap_try=True), {"n": 2, "stop": 100})
    assert result.output == {"caught": "loop_exhausted", "message": "sum 3 after round 2"}


def test_on_exhausted_value_sees_the_last_state_and_round():
    text = _plan(
        COUNTING
        + """
until: { expr: "accumulator.sum >= 100" }
on_exhausted: { value: "{{ {last: accumulator.sum, round: round, done: false} }}" }
"""
    )
    assert _run(text, {"n": 3}).output == {"last": 6, "round": 3, "done": False}


@pytest.mark.parametrize("bound", [-1, 1.5, "3", True, 1001, None])
def test_a_bound_that_is_not_an_integer_from_0_to_1000_fails_with_validation(bound):
    result = _run(_plan(COUNTING), {"n": bound})
    assert result.status == "error"
    assert result.error.code == "validation"
    assert "`up_to` must be an integer from 0 to 1000" in result.error.message


@pytest.mark.parametrize(
    "loop_input, message",
    [
        (COUNTING.replace('"{{ input.n }}"', "-2"), "`up_to` must be ≥ 0, not -2"),
        (COUNTING.replace('"{{ input.n }}"', "5000"), "`up_to` must be at most 1000, not 5000"),
        (COUNTING + 'until: { expr: "accumulator.sum > 3" }\n', "needs `on_exhausted`"),
        (COUNTING + 'on_exhausted: { fail: "x" }\n', "`on_exhausted` needs `until`"),
        (
            COUNTING + 'until: { expr: "round > 1" }\non_exhausted: { stop: 1 }\n',
            "`on_exhausted` must be `{ fail: message }` or `{ value: v }`",
        ),
        (COUNTING + 'until: { expr: "item > 1" }\non_exhausted: { fail: "x" }\n', "`item`"),
    ],
)
def test_load_time_rules_of_the_loop_step(loop_input, message):
    with pytest.raises(PlanLoadError) as info:
        load_plan_text(_plan(loop_input), "loops.yaml")
    found = [(d.message, d.span.line) for d in info.value.diagnostics]
    assert any(message in m and line > 1 for m, line in found), found
