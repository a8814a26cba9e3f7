"""A `parallel { name: expr, … }` block runs (docs/reference/control.md "parallel blocks"):
its effectful branches overlap (a tool that waits for its sibling to start, so a run that ran
them one after the other would show `start a, end a, …`: an order, not a clock); the first
branch that fails stops the others and fails the block, named `parallel › <branch>`; a `catch`
inside a branch keeps its failure a value; a computed `limit` is checked when the block runs (a block of pure branches too);
the step spans of branches say which branch they are in."""

from __future__ import annotations

import json
from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentflow import api
from agentflow.runtime.telemetry import OtelSink
from agentflow.runtime.telemetry_settings import TelemetrySettings

#: `work(name, after)`: logs `start NAME`; waits (at most 300 polls) until `start AFTER` is
#: logged; logs `end NAME` (`fail NAME` and raises for `bad`)
TOOLS = """\
import asyncio
from pathlib import Path

LOG = Path(__file__).with_name("log.txt")


def _log(line: str) -> None:
    with LOG.open("a") as f:
        f.write(line + "\\n")


async def work(name: str, after: str) -> str:
    _log(f"start {name}")
    if after:
        for _ in range(300):
            if f"start {after}" in LOG.read_text().splitlines():
                break
            await asyncio.sleep(0.01)
    if name == "bad":
        _log(f"fail {name}")
        raise RuntimeError("boom")
    _log(f"end {name}")
    return name.upper()
"""

HEAD = """\
flow p
input { n: int }
extern tool user__work(name: text, after: text) -> text
"""


def _project(tmp_path: Path, body: str) -> Path:
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\n')
    flow = tmp_path / "p.flow"
    flow.write_text(HEAD + body)
    return flow


def _run(tmp_path: Path, body: str, n: int = 2, **kw):
    flow = _project(tmp_path, body)
    return api.run_sync(
        flow, {"n": n}, config=tmp_path / "flow.toml", workspace=tmp_path, shape_cache=False, **kw
    )


def _log(tmp_path: Path) -> list[str]:
    return (tmp_path / "log.txt").read_text().splitlines()


OVERLAP = """\
stage review {
  parallel {
    a: user__work(name: "a", after: "b"),
    b: user__work(name: "b", after: ""),
    n: input.n + 1,
  }
}
"""


def test_the_effectful_branches_overlap_and_the_value_names_each_branch(tmp_path):
    result = _run(tmp_path, OVERLAP)
    assert result.ok, result.error
    assert result.output == {"a": "A", "b": "B", "n": 3}
    # `a` started, then `b` started while `a` was still running, and `a` ended after `b`
    assert _log(tmp_path) == ["start a", "start b", "end b", "end a"]


def test_limit_1_runs_the_branches_one_after_the_other(tmp_path):
    result = _run(tmp_path, OVERLAP.replace("parallel {", "parallel limit 1 {"))
    assert result.ok, result.error
    # `a` waited for `b` in vain (300 polls) and ended before `b` could start
    assert _log(tmp_path) == ["start a", "end a", "start b", "end b"]


FAILING = """\
stage review {
  let r = parallel {
    slow: user__work(name: "slow", after: "never"),
    security: user__work(name: "bad", after: "slow"),
  }
  return r
}
"""


def test_the_first_failing_branch_stops_the_others_and_fails_the_block_by_name(tmp_path):
    trace = tmp_path / "trace.jsonl"
    result = _run(tmp_path, FAILING, trace=trace)
    assert result.status == "error"
    assert result.error.code == "tool_error" and "boom" in result.error.message
    assert result.error.step_path == "E0/security"
    assert result.error.where["label"] == "review › parallel › security › user__work"
    # the slow branch never ended: it was cancelled
    assert "end slow" not in _log(tmp_path)
    finished = {
        e["path"]: e
        for e in map(json.loads, trace.read_text().splitlines())
        if e.get("kind") == "step_finished"
    }
    error = (finished["E0/slow"].get("data") or {}).get("error") or {}
    assert error == {
        "code": "aborted",
        "message": "another item or branch failed first",
        "step_path": "E0/slow",
    }


def test_a_catch_inside_a_branch_keeps_its_failure_a_value(tmp_path):
    body = FAILING.replace(
        'security: user__work(name: "bad", after: "slow"),',
        'security: user__work(name: "bad", after: "slow") catch { "none" },',
    ).replace('after: "never"', 'after: ""')
    result = _run(tmp_path, body)
    assert result.ok, result.error
    assert result.output == {"slow": "SLOW", "security": "none"}


def test_a_computed_limit_out_of_bounds_fails_the_block_as_a_maps_does(tmp_path):
    result = _run(tmp_path, OVERLAP.replace("parallel {", "parallel limit input.n {"), n=0)
    assert result.status == "error"
    assert result.error.code == "validation"
    # in the user's terms: the limit as written (the caret under it), as the `loop` bound
    assert "the limit `input.n` of the `parallel` must be" in result.error.message
    assert "got 0" in result.error.message


PURE = """\
stage review {
  parallel limit input.n - 5 { a: 1 + 1, b: input.n }
}
"""


def test_a_pure_block_checks_its_computed_limit_when_it_runs(tmp_path):
    result = _run(tmp_path, PURE, n=1)
    assert result.status == "error"
    assert result.error.code == "validation"
    assert "the limit `input.n - 5` of the `parallel` must be" in result.error.message
    assert "got -4" in result.error.message
    assert _run(tmp_path, PURE, n=7).output == {"a": 2, "b": 7}


def test_a_pure_block_in_an_arm_not_chosen_checks_no_limit(tmp_path):
    body = """\
stage review -> int {
  return if input.n > 3 then (parallel limit input.n - 5 { a: 1, b: 2 }).a else 9
}
"""
    assert _run(tmp_path, body, n=1).output == 9
    chosen = _run(tmp_path, body, n=4)
    assert chosen.status == "error"
    assert "the limit `input.n - 5` of the `parallel` must be" in chosen.error.message


def test_a_pure_block_in_a_map_body_checks_its_computed_limit(tmp_path):
    body = """\
stage review -> int[] {
  map [1, 2] as k { (parallel limit input.n - k { a: k, b: 2 }).a }
}
"""
    assert _run(tmp_path, body, n=3).output == [1, 2]
    failed = _run(tmp_path, body, n=2)
    assert failed.status == "error"
    assert "the limit `input.n - k` of the `parallel` must be" in failed.error.message
    assert "got 0" in failed.error.message


def test_branch_spans_say_which_branch_they_run(tmp_path):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    body = OVERLAP.replace(
        'b: user__work(name: "b", after: ""),',
        'b: user__work(name: user__work(name: "b", after: ""), after: ""),',
    )
    sink = OtelSink(TelemetrySettings(), tracer_provider=provider)
    result = _run(tmp_path, body, sinks=[sink])
    assert result.ok, result.error
    names = {
        s.attributes["agentflow.step.path"]: s.name
        for s in exporter.get_finished_spans()
        if "agentflow.step.path" in (s.attributes or {})
    }
    assert names["E0/a"] == "user__work · parallel › a"
    # `b` needs two steps: a sub-plan the compiler outlined, named by its branch, not its id
    assert names["E0/b"] == "parallel › b"
