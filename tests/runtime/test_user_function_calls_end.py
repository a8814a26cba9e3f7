"""User functions whose call trees grow exponentially end (docs/reference/programs.md "User
functions"; docs/decisions.md "User functions that never end").

`fn fk(x) = f(k-1)(x) + f(k-1)(x) - x` for k = 1…24 checks clean and makes 2^25 calls: the
evaluator never reached a checkpoint (they were only where data is walked), so Ctrl-C, SIGTERM
and the deadline waited for it (155 s; the deadline's watchdog killed the process, exit 137, the
trace left with `run_started` alone). Now one call may make at most `MAX_FUNCTION_CALLS` calls
(`call_limit`, naming the function as written and the limit), and a call tree looks at the run's
end every 1,024 calls.
"""

from __future__ import annotations

import json
import os
import signal
import time

import pytest
from support.durable_questions import start_flowc
from support.timing import Stretch, scaled

from agentflow import api
from agentflow.core.vocabulary import MAX_FUNCTION_CALLS
from agentflow.ir.loader import load_plan_data
from agentflow.runtime.events import JsonlSink


def _functions(levels: int) -> str:
    """``f0`` … ``f<levels>``: ``fk`` makes 2^(k+1) - 1 calls."""
    lines = ["fn f0(x: int) -> int = x + 1"]
    lines += [
        f"fn f{k}(x: int) -> int = f{k - 1}(x) + f{k - 1}(x) - x" for k in range(1, levels + 1)
    ]
    return "\n".join(lines) + "\n"


#: f24: 33,554,431 calls in one call
EXPONENTIAL = _functions(24) + "input { n: int }\nstage s -> int { return f24(input.n) }\n"
#: f15 (65,535 calls, under the limit) called 400 times in one expression: tens of seconds,
#: each call within the limit
MANY = (
    _functions(15)
    + "input { n: int }\nstage s -> int {\n  return sum(["
    + ", ".join(["f15(input.n)"] * 400)
    + "])\n}\n"
)


def _plan(source: str):
    return load_plan_data(api.compile_source(source, "calls.flow").plan, "calls.flow")


def test_an_exponential_call_tree_fails_with_call_limit_naming_the_call(tmp_path):
    trace = tmp_path / "t.jsonl"
    with Stretch() as s:
        result = api.run_sync(
            _plan(EXPONENTIAL), {"n": 1}, workspace=str(tmp_path), sinks=[JsonlSink(trace)]
        )
    assert s.took < s.bound(5), s.took
    error = result.error.to_dict()
    assert error["code"] == "call_limit", error
    assert error["message"].startswith(
        f"in function `f24`, called as `f24(input.n)`: the call made more than "
        f"{MAX_FUNCTION_CALLS:,} function calls"
    )
    assert "compute a value once" in error["message"]  # the hint
    assert "f23" not in error["message"]  # one call named, not each level
    assert error["label"] == "s › return"
    last = json.loads(trace.read_text().splitlines()[-1])
    assert last["kind"] == "run_finished" and last["data"]["status"] == "error"


def test_a_call_tree_under_the_limit_runs_to_its_value(tmp_path):
    source = _functions(15) + "input { n: int }\nstage s -> int { return f15(input.n) }\n"
    result = api.run_sync(_plan(source), {"n": 2}, workspace=str(tmp_path))
    assert result.status == "ok" and result.output == 2 + 2**15  # fk(x) = x + 2^k


def test_many_calls_each_under_the_limit_end_at_the_deadline(tmp_path):
    trace = tmp_path / "t.jsonl"
    with Stretch() as s:
        result = api.run_sync(
            _plan("deadline 1s\n" + MANY),
            {"n": 1},
            workspace=str(tmp_path),
            sinks=[JsonlSink(trace)],
        )
    assert s.took < s.bound(4), s.took
    error = result.error.to_dict()
    assert error["code"] == "deadline_exceeded", error
    last = json.loads(trace.read_text().splitlines()[-1])
    assert last["kind"] == "run_finished" and last["data"]["status"] == "error"


#: SIGINT on a plain run and SIGTERM on a durable one in the suite (each signal, each engine);
#: ``FLOW_SIGNAL_MATRIX=all`` runs all four (bench/README.md "Signals in a busy evaluation").
_SIGNALS = [
    pytest.param([], signal.SIGINT, id="SIGINT-plain"),
    pytest.param(["--durable"], signal.SIGTERM, id="SIGTERM-durable"),
]
if os.environ.get("FLOW_SIGNAL_MATRIX") == "all":
    _SIGNALS += [
        pytest.param([], signal.SIGTERM, id="SIGTERM-plain"),
        pytest.param(["--durable"], signal.SIGINT, id="SIGINT-durable"),
    ]


@pytest.mark.parametrize(("durable", "signum"), _SIGNALS)
def test_a_stop_signal_ends_a_busy_call_tree_and_closes_the_trace(tmp_path, durable, signum):
    (tmp_path / "calls.flow").write_text(MANY, encoding="utf-8")
    env = {**os.environ, "NO_COLOR": "1"}
    args = ("run", "calls.flow", "--input", '{"n": 1}', "--json", "--trace", "t.jsonl")
    proc = start_flowc(tmp_path, *args, *durable, env=env)
    trace = tmp_path / "t.jsonl"
    # the console's ▶ line waits for the loop, which the evaluation holds: wait for the trace's
    # first event (written before the step starts), then into the evaluation
    while not (trace.exists() and trace.read_text()) and proc.poll() is None:
        time.sleep(0.05)
    time.sleep(scaled(1.5))
    sent = time.monotonic()
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=120)
    took = time.monotonic() - sent
    text = err.decode()
    assert proc.returncode == 128 + signum, text[-2000:]
    name = signal.Signals(signum).name
    assert f"interrupted by {name}" in text and "Traceback" not in text, text[-2000:]
    assert "did not stop" not in text  # ended by itself, not by the watchdog
    assert took < scaled(5), took
    assert json.loads(out)["status"] in ("aborted", "stopped"), out[-2000:]
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    assert events[-1]["kind"] == "run_finished", events[-1]
    ended = [e for e in events if e["kind"] == "step_finished" and e["path"] == "E0"]
    assert ended and "aborted" in json.dumps(ended[0]), ended  # stopped mid-evaluation


def test_call_limit_can_be_caught_and_the_checker_knows_which_calls_reach_it(tmp_path):
    caught = _functions(24) + (
        "input { n: int }\n"
        "stage s -> int { return f24(input.n) catch on [call_limit] as e { 0 } }\n"
    )
    checked = api.check_source(caught, "c.flow")
    assert not checked.diagnostics, [d.code for d in checked.diagnostics]
    result = api.run_sync(_plan(caught), {"n": 1}, workspace=str(tmp_path))
    assert result.status == "ok" and result.output == 0
    small = _functions(2) + (
        "input { n: int }\nstage s -> int { return f2(input.n) catch on [call_limit] as e { 0 } }\n"
    )
    codes = [d.code for d in api.check_source(small, "c.flow").diagnostics]
    assert codes == ["impossible-error-code"]  # 7 calls at most: it cannot fail so
