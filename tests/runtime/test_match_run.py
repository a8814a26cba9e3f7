"""`match` at run time (docs/reference/expressions.md "match", docs/reference/errors.md): only the
chosen arm runs — an arm with a tool call is a `decide` step whose tool runs only when chosen —
patterns compare as `==` (durations by length), and a hand-written plan whose `match` finds no
arm fails with the registered code `no_match`, naming the value and the `match`."""

from __future__ import annotations

import json

from agentflow import api
from agentflow.core.vocabulary import ERROR_CODES

FLOW = """type Sev = "low" | "medium" | "high"
input { severity: Sev, d: duration, n: int? }
output { label: text, body: text, d: text, n: text }

stage main -> { label: text, body: text, d: text, n: text } {
  let label = match input.severity {
    "low" => "minor",
    "medium" | "high" => "major",
  }
  let body = match input.severity {
    "low" => "skipped",
    _ => read_file(path: "notes.txt"),
  }
  return {
    label: label,
    body: body,
    d: match input.d { 1m => "a minute", _ => "other" },
    n: match input.n { null => "none", 0 => "zero", _ => "some" },
  }
}
"""


def _run(tmp_path, data, *, notes=True):
    if notes:
        (tmp_path / "notes.txt").write_text("hello notes", encoding="utf-8")
    compiled = api.compile_source(FLOW, "m.flow")
    plan = api.plan_from_data(compiled.plan, "m.flow")
    return api.run_sync(plan, data, workspace=tmp_path)


def test_the_chosen_arm_runs_its_tool_call(tmp_path):
    result = _run(tmp_path, {"severity": "high", "d": "60s", "n": None})
    assert result.status == "ok", result.error
    assert result.output == {
        "label": "major",
        "body": "hello notes",
        "d": "a minute",
        "n": "none",
    }
    steps = api.compile_source(FLOW, "m.flow").plan["steps"]
    assert any(s.get("tool_name") == "decide" for s in steps)


def test_an_arm_not_chosen_runs_no_tool(tmp_path):
    # no notes.txt: a read_file that ran would fail the run
    result = _run(tmp_path, {"severity": "low", "d": "2m", "n": 0}, notes=False)
    assert result.status == "ok", result.error
    assert result.output == {"label": "minor", "body": "skipped", "d": "other", "n": "zero"}


PLAN = {
    "version": 1,
    "name": "p",
    "steps": [
        {
            "id": "a",
            "tool_name": "value",
            "input": {"value": '{{ match input.x { "a" => 1, "b" => 2 } }}'},
        }
    ],
    "finish": {"mode": "output", "output": "{{ a }}"},
}


def test_a_hand_written_plan_whose_match_finds_no_arm_fails_with_no_match():
    assert "no_match" in ERROR_CODES and not ERROR_CODES["no_match"].retryable
    plan = api.plan_from_data(PLAN, "p.yaml")
    assert api.run_sync(plan, {"x": "b"}).output == 2
    result = api.run_sync(plan, {"x": "c"})
    assert result.status == "error"
    assert result.error["code"] == "no_match"
    assert result.error["message"] == (
        '`match input.x { "a" => 1, "b" => 2 }`: no arm matches the value "c" of `input.x`; '
        "add an arm for it or a last `_ => …`"
    )


SUBJECT_FLOW = """input { path: path }
output text

stage main -> text {
  return match read_file(path: input.path) {
    "low" => "L",
    "medium" => read_file(path: "notes.txt"),
    _ => "other",
  }
}
"""


def test_a_subject_with_an_effect_runs_once_before_effectful_arms(tmp_path):
    (tmp_path / "notes.txt").write_text("hello notes", encoding="utf-8")
    (tmp_path / "m.txt").write_text("medium", encoding="utf-8")
    (tmp_path / "x.txt").write_text("x", encoding="utf-8")
    compiled = api.compile_source(SUBJECT_FLOW, "s.flow")
    assert str(compiled.plan).count("'path': '{{ input.path }}'") == 1
    plan = api.plan_from_data(compiled.plan, "s.flow")
    assert api.run_sync(plan, {"path": "m.txt"}, workspace=tmp_path).output == "hello notes"
    assert api.run_sync(plan, {"path": "x.txt"}, workspace=tmp_path).output == "other"


STATEMENT_FLOW = """input { k: "a" | "b" }
stage main -> text {
  match input.k {
    "a" => write_file(path: "out.txt", content: "A"),
    "b" => null,
  }
  return "done"
}
"""


def test_a_match_statement_runs_the_effect_of_its_chosen_arm_only(tmp_path):
    plan = api.plan_from_data(api.compile_source(STATEMENT_FLOW, "w.flow").plan, "w.flow")
    assert api.run_sync(plan, {"k": "b"}, workspace=tmp_path).output == "done"
    assert not (tmp_path / "out.txt").exists()
    assert api.run_sync(plan, {"k": "a"}, workspace=tmp_path).output == "done"
    assert (tmp_path / "out.txt").read_text(encoding="utf-8") == "A"


def test_the_decide_of_an_effectful_match_is_named_match_in_its_events(tmp_path):
    (tmp_path / "notes.txt").write_text("hello notes", encoding="utf-8")
    trace = tmp_path / "trace.jsonl"
    plan = api.plan_from_data(api.compile_source(FLOW, "m.flow").plan, "m.flow")
    result = api.run_sync(
        plan, {"severity": "high", "d": "60s", "n": None}, workspace=tmp_path, trace=trace
    )
    assert result.status == "ok", result.error
    events = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    labels = [
        e["data"].get("label")
        for e in events
        if e["kind"] == "step_started" and e["data"].get("fold")
    ]
    # the step is the `match` the user wrote, not an `if` it is compiled like
    assert "main › body = match" in labels and not any(str(x).endswith("› if") for x in labels)
