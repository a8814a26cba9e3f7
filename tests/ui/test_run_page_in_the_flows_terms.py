"""The pages of ``flowc ui`` from the api's records, without a server: a failed durable run's
page shows its error with the `.flow` line under a caret and its graph coloured by what it
recorded (the failed step ``error``, a map holding finished items ``ok``, a step that records
nothing said so), and each kind of question gets the field its type calls for."""

from __future__ import annotations

import html
import re

from agentflow import api
from agentflow.ir.dump import dump_plan
from agentflow.runtime.durable.runs import Question, RunInfo
from agentflow.ui.pages import durable_outcomes, money, question_form, run_page

FLOW = """\
flow notes
input { notes: path[] }

stage shout -> text[] {
  return map input.notes as note {
    let loud = read_file(path: note)
    loud
  }
}

stage check -> text[] {
  require shout.count > 5 else fail "too few notes"
  return shout
}
"""


def _failed_run(tmp_path):
    flow = tmp_path / "notes.flow"
    flow.write_text(FLOW, encoding="utf-8")
    plan = api.load(flow)
    require = next(s for s in plan.steps if s.tool_name == "exit")
    source = require.meta["source"]
    mapped = next(s for s in plan.steps if s.tool_name == "map").id
    steps = [
        {"unit": f"{mapped}/do.{i}", "operation": f"{mapped}/do.{i}/x/tool:builtin__read_file#1",
         "status": "done", "started_at": 10.0 + i, "finished_at": 10.5 + i,
         "path": f"{mapped}/do.{i}/x", "kind": "tool read_file",
         "label": f"shout › item {i} › read_file", "value": f"note {i}"}
        for i in range(2)
    ]  # fmt: skip
    error = {"code": "failed", "message": "too few notes", "step_path": require.id,
             "source": source}  # fmt: skip
    info = RunInfo("r1", "error", "notes", 10.0, 12.0, error=error, steps=steps)
    spec = {"plan_text": dump_plan(plan), "plan_file": str(flow)}
    return plan, info, spec, require, mapped


def test_a_failed_runs_page_shows_the_flow_line_under_a_caret_and_colours_its_graph(tmp_path):
    plan, info, spec, require, mapped = _failed_run(tmp_path)
    page = run_page(info, spec, "csrf-token")
    box = re.search(r'<section id="errors">.*?</section>', page, re.S)
    assert box is not None
    assert "too few notes" in box[0]
    line = int(require.meta["source"].split(":")[-2])
    col = int(require.meta["source"].split(":")[-1])
    assert f"{line:>4} | {FLOW.splitlines()[line - 1]}" in html.unescape(box[0])
    assert f"     | {' ' * (col - 1)}^" in box[0]
    outcomes = durable_outcomes(plan, info)
    assert outcomes[f"s_{require.id}"].status == "error"
    assert outcomes[f"s_{mapped}"].status == "ok"  # it holds finished items
    statuses = dict(re.findall(r'data-path="([^"]*)" data-status="([^"]*)"', page))
    assert statuses[require.id] == "error" and statuses[mapped] == "ok"
    assert "redrive from its failed steps" in page and "cancel the run" not in page
    assert "shout › item 1 › read_file" in page  # the steps in the .flow's terms


def test_each_type_of_question_gets_its_field():
    def form(**kw):
        q = Question(run_id="r", workflow_id="r", path="E1", question="Q?", **kw)
        return question_form(q, "t")

    assert form(choices=["ship", "hold"]).count('type="radio"') == 2
    assert 'value="2"' in form(choices=[1, 2])  # a number choice is sent as JSON
    yes_no = form(schema={"type": "boolean"})
    assert (
        'value="true"' in yes_no and 'value="false"' in yes_no and "<legend>Q?</legend>" in yes_no
    )
    number = form(schema={"type": "number", "minimum": 0, "maximum": 5})
    assert 'type="number"' in number and 'min="0"' in number and 'max="5"' in number
    assert 'type="text"' in form(schema={"type": "string", "maxLength": 9})
    assert 'type="text"' in form()  # no type: text
    listed = form(schema={"type": "array", "items": {"type": "integer"}})
    assert "<textarea" in listed and "a JSON value of type array" in listed
    refused = question_form(
        Question(run_id="r", workflow_id="r", path="E1", question="Q?", schema={"type": "integer"}),
        "t",
        value="2.5",
        problem="answer to `Q?`: 2.5 is not of type 'integer'",
    )
    assert 'role="alert"' in refused and 'value="2.5"' in refused


def test_cost_is_shown_as_money():
    assert money({"cost": 3.6e-05}) == "$0.0000"
    assert money({"cost": 0.0123}) == "$0.0123"
    assert money({"cost": 1234.5}) == "$1,234.50"
    assert money({}) == "—"


def test_steps_of_an_outlined_loop_body_colour_the_sub_plans_nodes():
    from pathlib import Path

    flow = Path(__file__).resolve().parents[2] / "examples/patterns/evaluator-optimizer.flow"
    plan = api.load(flow)
    steps = [
        {"unit": "(run)", "path": path, "kind": "model chat", "status": "done",
         "started_at": 1.0, "finished_at": 2.0}
        for path in ("E0", "E1/round.1/E0/do", "E1/round.1/E1/else", "E1/round.2/E0/do")
    ]  # fmt: skip
    info = RunInfo("r", "ok", plan.name, 0.0, 3.0, steps=steps)
    outcomes = durable_outcomes(plan, info)
    sub = next(iter(plan.plans or {}))
    assert outcomes["s_E0"].status == "ok"
    assert outcomes[f"p_{sub}__s_E0_do"].status == "ok" and outcomes[f"p_{sub}__s_E0_do"].runs == 2
    assert outcomes[f"p_{sub}__s_E1_else"].status == "ok"
    assert outcomes[f"p_{sub}__s_E1_then"].status == "unrecorded"


def test_a_question_answered_while_the_run_is_stopped_is_shown_answered_not_as_a_form():
    from agentflow.ui.pages import runs_page

    q = Question("r1", "r1", "E1", "Ship 1 items?", choices=["ship", "hold"], key="E1/ask#1",
                 label="decide › ask", closed="answer", answer="ship")  # fmt: skip
    info = RunInfo("r1", "stopped", "release", 10.0, 12.0, answered=[q])
    page = run_page(info, {}, "csrf-token")
    assert 'id="questions"' not in page  # no "waiting for an answer" form
    box = re.search(r'<section id="answered">.*?</section>', page, re.S)
    assert box is not None
    assert "Ship 1 items?" in box[0] and html.escape('answered "ship"') in box[0]
    listed = runs_page([info], {})
    assert html.escape('✓ Ship 1 items? answered "ship"') in listed


def test_the_error_and_a_question_are_named_as_the_flow_names_them_the_path_after(tmp_path):
    plan, info, spec, require, _ = _failed_run(tmp_path)
    info.error = {**info.error, "label": "check › require"}
    page = html.unescape(run_page(info, spec, "csrf-token"))
    assert f"failed</code> in check › require (step {require.id}) — too few notes" in page
    asked = Question("r1", "r1", "E0/do.1", "Ship b?", label="review › item 1 › decision = ask")
    form = html.unescape(question_form(asked, "t"))
    assert "asked at review › item 1 › decision = ask · <code>E0/do.1</code>" in form
