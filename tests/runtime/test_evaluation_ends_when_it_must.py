"""A busy evaluation ends when its run must (docs/reference/expressions.md "Evaluation ends
when the run must"; docs/decisions.md "Evaluation that ends when it must").

Expressions are evaluated synchronously on the event loop: while one runs, no timer fires and no
signal handler runs. The evaluator checks the run's deadline, a step's timeout, a stop signal and
`flowc cancel` itself (`interrupt.checkpoint`, every few thousand elements it walks), so a flow
whose one expression would run for tens of seconds ends at its 1 s deadline, at Ctrl-C, or at
`flowc cancel` of its durable run. Size limits are cheap: a value sharing one list many times is
measured by its distinct lists, and an event carries a preview of a huge value, not the value.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from support.durable_questions import flowc, start_flowc
from support.timing import Stretch, scaled

from agentflow import api
from agentflow.errors import RunError
from agentflow.grammar.parser import parse_expression
from agentflow.ir.loader import load_plan_data
from agentflow.runtime import expressions, value_size
from agentflow.runtime.events import JsonlSink
from agentflow.runtime.expressions import evaluate, event_value
from agentflow.runtime.interrupt import EvalEnded, EvalWatch, end_watch, use_watch
from agentflow.runtime.value_size import json_size

#: 100,000 pairs, then 300 library calls over them: tens of seconds of evaluation in one
#: expression (each `count_by` is 0.05–0.3 s on the 2-core machine)
_DATA = """\
  let xs = range(0, 100000)
  let pairs = zip(xs, xs)
"""
_MANY = "sum([" + ", ".join(['len(count_by(pairs, "first"))'] * 300) + "])"

BUSY_ROUND = (
    f"deadline 1s\n\nstage busy -> int {{\n{_DATA}"
    f"  let n = loop up to 1 as r, s = 0 {{ s + {_MANY} }}\n  return n\n}}\n"
)
BUSY_FOREVER = (
    f"stage busy -> int {{\n{_DATA}  let n = loop up to 1 as r, s = 0 {{ s + {_MANY} }}\n"
    "  return n\n}\n"
)


def _plan(source: str, name: str = "busy.flow"):
    return load_plan_data(api.compile_source(source, name).plan, name)


def _eval(text: str, **scope):
    return evaluate(parse_expression(text, "<t>"), scope)


# -- the deadline -----------------------------------------------------------------------------


def test_a_busy_output_ends_at_the_deadline(tmp_path):
    busy = _MANY.replace("pairs", "zip(input.xs, input.xs)")
    plan = load_plan_data(
        {
            "version": 1,
            "name": "fin",
            "deadline": "1s",
            "input_schema": {"type": "object"},
            "steps": [{"id": "E0", "tool_name": "value", "input": {"value": 1}}],
            "finish": {"mode": "output", "output": "{{ " + busy + " }}"},
        },
        "fin.plan.yaml",
    )
    with Stretch() as s:
        result = api.run_sync(plan, {"xs": list(range(100_000))}, workspace=str(tmp_path))
    assert result.status == "error"
    error = result.error.to_dict()
    assert error["code"] == "deadline_exceeded"
    assert error["message"] == "the workflow deadline (1s) expired computing the output"
    assert error["step_path"] == "finish"
    assert s.took < s.bound(4), s.took  # the deadline and a margin


def test_a_busy_value_ends_at_the_deadline_named_as_the_flow_wrote_it(tmp_path):
    plan = _plan(BUSY_ROUND)
    with Stretch() as s:
        result = api.run_sync(plan, {}, workspace=str(tmp_path))
    error = result.error.to_dict()
    assert error["code"] == "deadline_exceeded", error
    assert error["message"] == "the workflow deadline (1s) expired computing a value"
    assert error["label"] == "busy › round 1" and error["step_path"] == "E0/round.1"
    assert "E0" not in error["message"]
    assert s.took < s.bound(4), s.took


def test_a_passed_bound_ends_an_evaluation_at_its_next_checkpoint():
    watch = EvalWatch().bounded(-1.0, "timeout", "`value` did not finish within its timeout (1s)")
    token = use_watch(watch)
    try:
        with pytest.raises(EvalEnded) as err:  # inside a library call: passed on unchanged
            _eval('count_by(xs, "a")', xs=[{"a": 1}] * 10)
        assert err.value.code == "timeout" and err.value.details == {"bound": "timeout"}
        with pytest.raises(EvalEnded):  # a projection
            _eval("xs[*].a", xs=[{"a": 1}] * 5000)
    finally:
        end_watch(token)
    assert _eval('len(count_by(xs, "a"))', xs=[{"a": 1}] * 10) == 1  # no watch: no bound


# -- stop signals and flowc cancel (real processes) -----------------------------------------


def _busy(proc: subprocess.Popen[bytes]) -> list[bytes]:
    """Wait until the run's busy round has started (its loop's ▶ line); the lines read."""
    seen: list[bytes] = []
    assert proc.stderr is not None
    for line in proc.stderr:
        seen.append(line)
        if "▶".encode() in line:
            time.sleep(0.3)  # into the round's evaluation
            return seen
    pytest.fail(b"".join(seen).decode()[-2000:])


@pytest.mark.parametrize("durable", [[], ["--durable"]], ids=["plain", "durable"])
def test_ctrl_c_ends_a_busy_evaluation_at_once(tmp_path, durable):
    (tmp_path / "busy.flow").write_text(BUSY_FOREVER, encoding="utf-8")
    env = {**os.environ, "NO_COLOR": "1"}
    proc = start_flowc(tmp_path, "run", "busy.flow", *durable, env=env)
    seen = _busy(proc)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    took = time.monotonic() - sent
    text = (b"".join(seen) + err).decode()
    assert proc.returncode == 130, text[-2000:]
    assert "interrupted by SIGINT" in text and "Traceback" not in text, text[-2000:]
    assert "flowc: the run did not stop" not in text  # ended by itself, not by the watchdog
    assert took < scaled(3), took


def test_flowc_cancel_ends_a_busy_evaluation_of_a_durable_run(tmp_path):
    (tmp_path / "busy.flow").write_text(BUSY_FOREVER, encoding="utf-8")
    env = {**os.environ, "NO_COLOR": "1"}
    args = ("run", "busy.flow", "--durable", "--run-id", "bz", "--trace", "t.jsonl")
    proc = start_flowc(tmp_path, *args, env=env)
    seen = _busy(proc)
    sent = time.monotonic()
    cancelled = subprocess.run(flowc("cancel", "bz"), cwd=tmp_path, env=env, capture_output=True)
    assert cancelled.returncode == 0, cancelled.stderr.decode()
    _, err = proc.communicate(timeout=60)
    took = time.monotonic() - sent
    text = (b"".join(seen) + err).decode()
    assert proc.returncode == 1, text[-2000:]
    assert "run cancelled in " in text and "Traceback" not in text, text[-2000:]
    last = json.loads((tmp_path / "t.jsonl").read_text().splitlines()[-1])
    assert last["kind"] == "run_finished" and last["data"]["status"] == "cancelled"
    assert took < scaled(8), took  # the cancel command's own start-up included


# -- size limits, cheaply -----------------------------------------------------------------------


def test_a_loop_doubling_a_shared_list_ends_at_its_limit_in_a_moment(tmp_path):
    # `[s, s]` 22 rounds: 2^22 values as JSON, 23 distinct lists; each round's size walk and
    # events expanded it (24 s of CPU, a 58 MB trace); now each costs the distinct lists
    source = (
        "stage a -> int {\n  let t = loop up to 40 as r, s: json = [1] { [s, s] }\n  return 1\n}\n"
    )
    trace = tmp_path / "t.jsonl"
    with Stretch() as s:
        result = api.run_sync(
            _plan(source, "d.flow"), {}, workspace=str(tmp_path), sinks=[JsonlSink(trace)]
        )
    assert result.error.code == "validation" and result.error.step_path == "E0/round.22"
    assert "the value holds more than 10,000,000 values" in result.error.message
    assert s.took < s.bound(3), s.took
    assert trace.stat().st_size < 4_000_000
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    ends = {e["path"]: e["data"] for e in events if e["kind"] == "step_finished"}
    assert "result_preview" not in ends["E0/round.15"]  # 98,302 values: whole
    assert ends["E0/round.16"]["result_preview"] is True  # 196,606: a preview
    assert ends["E0/round.16"]["result"] == [[[[[], []], [[], []]], [[[], []], [[], []]]]] * 2


def test_json_size_counts_a_shared_list_each_time_it_is_held_but_walks_it_once():
    shared: list = [1]
    for _ in range(60):
        shared = [shared, shared]
    assert json_size(shared, 10**20) == 3 * 2**60 - 2
    assert json_size(shared) == -2  # past MAX_VALUE_NODES
    assert json_size({"a": [1, {"b": 2}]}) == 4 and json_size(3) == 0
    deep: list = [1]
    for _ in range(expressions.MAX_JSON_DEPTH):
        deep = [deep]
    assert json_size(deep) == -1


def test_an_event_carries_a_huge_value_as_a_preview():
    small = {"a": list(range(10))}
    assert event_value(small) == (small, False)
    whole, cut = event_value({"xs": list(range(200_000)), "t": "x" * 300})
    assert cut is True
    assert whole == {"xs": list(range(10)), "t": "x" * 200 + "…"}
    text, cut = event_value("y" * (value_size.EVENT_TEXT_CHARS + 1))
    assert cut and text == "y" * 200 + "…"
    # a `value` step's `step_started` input holds its text: the texts inside count too
    held, cut = event_value({"value": "z" * 60_000, "again": ["z" * 60_000]})
    assert cut and held == {"value": "z" * 200 + "…", "again": ["z" * 200 + "…"]}


def test_a_loop_growing_a_text_writes_previews_not_the_text_each_round(tmp_path):
    # 40 rounds of `s + <20,000 characters>`: 16 M characters written twice a round before
    source = (
        'stage a -> int {\n  let t = loop up to 40 as r, s = "" '
        '{ s + join(range(0, 5000), "") }\n  return len(t)\n}\n'
    )
    trace = tmp_path / "t.jsonl"
    result = api.run_sync(
        _plan(source, "t.flow"), {}, workspace=str(tmp_path), sinks=[JsonlSink(trace)]
    )
    assert result.status == "ok" and result.output == 40 * 18890
    assert trace.stat().st_size < 2_000_000
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    (start,) = [e for e in events if e["kind"] == "step_started" and e["path"] == "E0/round.40"]
    assert start["data"]["input_preview"] is True and len(start["data"]["input"]["value"]) == 201


# -- super-linear evaluations, bounded ---------------------------------------------------------


def test_unique_and_overlap_are_linear_and_keep_json_equality():
    xs = list(range(200_000))  # pairwise: 2·10^10 comparisons (20,000 items took 52 s)
    with Stretch() as s:
        assert len(_eval("unique(xs + xs)", xs=xs)) == 200_000
        assert _eval("overlap(xs, ys)", xs=xs, ys=xs[100_000:] + [-1]) == pytest.approx(
            100_000 / 200_001
        )
    assert s.took < s.bound(5), s.took
    mixed = [1, 1.0, True, "1", [1], [1.0], {"a": 1, "b": [True]}, {"b": [True], "a": 1.0}, None]
    assert _eval("unique(xs)", xs=mixed) == [1, True, "1", [1], {"a": 1, "b": [True]}, None]
    assert _eval("overlap(a, b)", a=[True], b=[1]) == 0.0


def test_equality_of_a_value_with_itself_does_not_walk_it():
    shared: list = [1]
    for _ in range(60):
        shared = [shared, shared]
    assert _eval("s == s", s=shared) is True
    assert _eval("s != s", s=shared) is False


def test_a_library_call_no_longer_copies_its_arguments_and_ranges_still_become_lists():
    assert _eval("flatten([1..3, 4..5])") == [1, 2, 3, 4, 5]
    assert _eval("len(1..4)") == 4
    assert _eval("{r: 1..2}.r") == [1, 2]
    xs = list(range(10))
    assert _eval("take(xs, 2)", xs=xs) == [0, 1]


def test_join_stops_at_the_text_limit_before_rendering_every_item():
    from agentflow.runtime.functions import MAX_TEXT_CHARS

    items = [{"k": "v" * 100}] * 200_000  # 21 M characters as JSON
    with pytest.raises(RunError) as err:
        _eval('join(xs, ",")', xs=items)
    assert f"holds at most {MAX_TEXT_CHARS:,}" in err.value.message


def test_group_and_count_keys_are_the_values_json_text():
    xs = [{"k": 1}, {"k": "1"}, {"k": True}, {"k": 1.5}, {"k": None}, {"k": [1]}]
    assert _eval('count_by(xs, "k")', xs=xs) == {"1": 2, "true": 1, "1.5": 1, "null": 1, "[1]": 1}
    assert list(_eval('group_by(xs, "k")', xs=xs)) == ["1", "true", "1.5", "null", "[1]"]


if sys.platform == "win32":  # pragma: no cover - signals
    pytestmark = pytest.mark.skip("POSIX signals")


# -- a host's task cancel (interrupt.off_loop: flowc serve's calls) -----------------------------


async def test_cancelling_the_task_of_a_run_off_the_loop_ends_its_busy_evaluation(tmp_path):
    import asyncio
    import threading

    from agentflow.runtime.interrupt import off_loop

    plan = _plan(f"flow busy\n\n{BUSY_FOREVER}")
    ticks: list[float] = []

    async def ticking() -> None:  # this loop stays free while the run evaluates
        while True:
            ticks.append(time.monotonic())
            await asyncio.sleep(0.05)

    ticker = asyncio.ensure_future(ticking())
    before = threading.active_count()
    call = asyncio.ensure_future(
        off_loop(lambda: api.run(plan, {}, workspace=str(tmp_path)), name="busy-run")
    )
    await asyncio.sleep(1.0)
    assert threading.active_count() > before and len(ticks) > 5
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    with Stretch() as s:
        while any(t.name == "busy-run" for t in threading.enumerate()):
            await asyncio.sleep(0.02)
    assert s.took < s.bound(2.0), "the cancelled run went on evaluating"
    ticker.cancel()


async def test_a_run_off_the_loop_returns_its_result_and_raises_its_errors(tmp_path):
    from agentflow.runtime.interrupt import off_loop

    plan = _plan("flow one\n\nstage main -> int {\n  return 1\n}\n")
    result = await off_loop(lambda: api.run(plan, {}, workspace=str(tmp_path)))
    assert result.status == "ok" and result.output == 1

    async def broken() -> None:
        raise ValueError("no")

    with pytest.raises(ValueError, match="no"):
        await off_loop(broken)

    def unmade():  # fails before there is a coroutine to run
        raise ValueError("not made")

    with pytest.raises(ValueError, match="not made"):
        await off_loop(unmade)


def test_the_work_an_evaluation_counts_depends_on_its_data_alone():
    # Temporal decides by this count whether an evaluation runs in an operation: a replay, in
    # another process after other evaluations, must count the same (interrupt.WorkMeter)
    from agentflow.runtime.interrupt import EvalOffload, WorkMeter, end_meter, use_meter

    expr = parse_expression('len(count_by(zip(xs, xs), "first")) + len(xs[*])', "<t>")
    scope = {"xs": list(range(10000))}

    def used(budget: int = 10**12) -> int:
        meter = WorkMeter(budget)
        token = use_meter(meter)
        try:
            evaluate(expr, scope)
        finally:
            end_meter(token)
        return meter.used

    first = used()
    _eval("unique(ys) == ys", ys=[[i] for i in range(3000)])  # moves process-wide counters
    assert used() == first > 20000
    with pytest.raises(EvalOffload):
        used(first - 1)
    assert evaluate(expr, scope) == 20000  # no meter: nothing counted, nothing raised
