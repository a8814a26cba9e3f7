"""Events and results name each step in the `.flow`'s terms besides its step path
(runtime/where.py): its stage, map item, agent alias, `let` name, `.flow` position and a label
(``audits › item 0 › agent(auditor)``); the compiler's bookkeeping steps are marked ``fold``."""

from __future__ import annotations

import json
import re

import pytest
from support.chat_server import answer, tool_calls
from support.paths import EXAMPLES

import agentflow
from agentflow.ir.loader import load_plan_text
from agentflow.runtime.events import CallbackSink
from agentflow.runtime.executor import run_plan
from agentflow.runtime.tools.catalog import Catalog

AUDIT = """\
flow todo_audit
input { dir: path }

use agent "auditor-profile" as auditor

type Audit {
  file: path
  todos: int
}

stage files -> path[] {
  glob(pattern: "*.py", path: input.dir)
}

stage audits -> Audit[] {
  parallel map files as f limit 2 {
    let hits = grep(pattern: "TODO", path: f)
    if hits.count == 0 {
      return { file: f, todos: 0 }
    }
    agent(auditor) {
      task "Audit the TODOs of ${f}"
      tools [read_file]
      expect Audit
      max_iterations 3
    }
  }
}

stage report -> int {
  reduce audits as a, acc = 0 { acc + a.todos }
}
"""

NAMES = ("stage", "item", "agent", "name", "label", "fold")


def _auditor(request):
    """Reads the file named in the task, then answers one TODO for it."""
    task = next(m["content"] for m in request["messages"] if m["role"] == "user")
    file = re.search(r"TODOs of (\S+)", task).group(1)
    if not any(m["role"] == "tool" for m in request["messages"]):
        return tool_calls(("builtin__read_file", {"path": file}))
    return answer({"file": file, "todos": 1})


def _names(data: dict) -> dict:
    return {k: data[k] for k in NAMES if k in data}


@pytest.fixture
def audit_run(chat_server, scripted_config, tmp_path):
    """The audit flow over src/{a,b,c}.py (b.py has no TODO): its events and result."""
    chat_server.script(_auditor)
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.py").write_text("# TODO: one\n")
    (src / "b.py").write_text("x = 1\n")
    (src / "c.py").write_text("# TODO: two\n")
    flow = tmp_path / "todo-audit.flow"
    flow.write_text(AUDIT)
    events: list = []
    result = agentflow.run_sync(
        flow,
        {"dir": "src"},
        config=scripted_config,
        workspace=tmp_path,
        sinks=[CallbackSink(events.append)],
        shape_cache=False,
    )
    assert result.status == "ok", result.error
    return events, result


def test_step_events_name_stage_item_agent_let_and_label(audit_run):
    events, _ = audit_run
    started = {e.path: _names(e.data) for e in events if e.kind == "step_started"}
    assert started["E0"] == {"stage": "files", "label": "files › glob"}
    assert started["E1"] == {"stage": "audits", "label": "audits › map"}
    assert started["E1/do.0/E0"] == {
        "stage": "audits", "item": 0, "name": "hits", "label": "audits › item 0 › hits = grep",
    }  # fmt: skip
    assert started["E1/do.2/E1/else"] == {
        "stage": "audits", "item": 2, "agent": "auditor", "label": "audits › item 2 › agent(auditor)",
    }  # fmt: skip
    assert started["E2"] == {"stage": "report", "label": "report › reduce"}
    sources = {e.path: e.data.get("source") for e in events if e.kind == "step_started"}
    assert sources["E1/do.2/E1/else"] == "todo-audit.flow:21:5"


def test_compiler_bookkeeping_is_marked_fold(audit_run):
    events, _ = audit_run
    folded = sorted(e.path for e in events if e.kind == "step_started" and e.data.get("fold"))
    assert folded == sorted(
        [f"E1/do.{i}" for i in range(3)]  # calls of the outlined map body
        + [f"E1/do.{i}/E1" for i in range(3)]  # `if`: the branch it takes shows
        + ["E1/do.1/E1/then"]  # the `return { … }` value inside the body
        + [f"E2/do.{i}" for i in range(3)]  # the reduce body's value per item
    )
    by_path = {e.path: e.data for e in events if e.kind == "step_started"}
    assert by_path["E1/do.1"]["label"] == "audits › item 1"
    assert by_path["E1/do.1/E1"]["label"] == "audits › item 1 › if"


def test_step_finished_carries_the_names_of_its_step_started(audit_run):
    events, _ = audit_run
    started = {e.path: e.data for e in events if e.kind == "step_started"}
    finished = {e.path: e.data for e in events if e.kind == "step_finished"}
    assert finished.keys() == started.keys()
    for path, data in finished.items():
        assert _names(data) == _names(started[path]), path
        assert data.get("source") == started[path].get("source"), path


def test_agent_tool_and_model_calls_carry_the_names_of_their_agent(audit_run):
    events, _ = audit_run
    call = next(
        e for e in events if e.kind == "tool_started" and e.path.startswith("E1/do.0/E1/else/")
    )
    assert call.path == "E1/do.0/E1/else/agent.1/builtin__read_file"
    assert _names(call.data) == {
        "stage": "audits", "item": 0, "agent": "auditor",
        "label": "audits › item 0 › agent(auditor) › read_file",
    }  # fmt: skip
    calls = [e for e in events if e.kind == "model_call"]
    assert len(calls) == 4
    assert {(e.data["item"], e.data["label"]) for e in calls} == {
        (0, "audits › item 0 › agent(auditor)"),
        (2, "audits › item 2 › agent(auditor)"),
    }


def test_usage_by_stage_sums_the_model_calls_of_each_stage(audit_run):
    _, result = audit_run
    assert result.usage["by_stage"] == {
        "audits": {"inferences": 4, "input_tokens": 40, "output_tokens": 20}
    }
    assert set(result.usage["by_step"]) == {"E1/do.0/E1/else", "E1/do.2/E1/else"}


def test_a_failed_map_item_names_its_stage_item_and_step(tmp_path):
    flow = tmp_path / "load.flow"
    flow.write_text(
        "input { files: path[] }\n\n"
        "stage load -> text[] {\n"
        "  map input.files as f { read_file(path: f) }\n"
        "}\n"
    )
    (tmp_path / "a.txt").write_text("a")
    result = agentflow.run_sync(
        flow, {"files": ["a.txt", "missing.txt"]}, workspace=tmp_path, shape_cache=False
    )  # no sink at all: the result still names the step
    assert result.status == "error"
    error = result.error
    assert (error["code"], error["step_path"], error["source"]) == (
        "tool_error", "E0/do.1", "load.flow:4:26",
    )  # fmt: skip
    assert _names(error) == {"stage": "load", "item": 1, "label": "load › item 1 › read_file"}
    assert json.loads(json.dumps(result.to_dict()))["error"]["label"] == error["label"]


async def test_a_plan_called_from_a_stage_runs_in_the_callers_stage_and_item():
    """A hand-written sub-plan has no ``meta.stage``: its steps take the calling step's stage
    and map item, and the call (not outlined by the compiler) is not folded."""
    plan = load_plan_text(
        """
version: 1
name: caller
steps:
  - id: E0
    tool_name: map
    input:
      over: [1, 2]
      do: {tool_name: plan__helper, input: {n: "{{ item }}"}, meta: {stage: review}}
    meta: {stage: review, source: caller.flow:3:3}
plans:
  helper:
    version: 1
    name: helper
    steps:
      - {id: S0, tool_name: user__double, input: {n: "{{ input.n }}"}}
""",
        "caller.plan.yaml",
    )
    catalog = Catalog()
    catalog.register_function("user__double", lambda n: n * 2)
    events: list = []
    result = await run_plan(plan, catalog=catalog, sinks=[CallbackSink(events.append)])
    assert result.status == "ok", result.error
    started = {e.path: _names(e.data) for e in events if e.kind == "step_started"}
    assert started["E0/do.1"] == {
        "stage": "review",
        "item": 1,
        "label": "review › item 1 › plan__helper",
    }
    assert started["E0/do.1/S0"] == {
        "stage": "review", "item": 1, "label": "review › item 1 › plan__helper › user__double",
    }  # fmt: skip


async def test_a_hand_written_plan_keeps_its_own_names_and_folds_nothing():
    plan = load_plan_text(
        """
version: 1
name: t
steps:
  - id: pick
    tool_name: decide
    input:
      when: {value: 1, op: eq, to: 1}
      then: {tool_name: value, input: {value: 2}}
""",
        "t.plan.yaml",
    )
    events: list = []
    result = await run_plan(plan, sinks=[CallbackSink(events.append)])
    assert result.status == "ok"
    for e in events:
        if e.kind.startswith("step_"):
            assert not {"label", "fold", "stage"} & set(e.data), e


def test_bug_triage_names_its_agents_by_alias_and_team_member():
    events: list = []
    result = agentflow.run_sync(
        EXAMPLES / "bug-triage.flow",
        json.loads((EXAMPLES / "bug-report.json").read_text()),
        config=EXAMPLES / "flow.toml",
        workspace=EXAMPLES / "workspace",
        replay=EXAMPLES / "bug-triage.cassette.jsonl",
        sinks=[CallbackSink(events.append)],
        shape_cache=False,
    )
    assert result.ok
    labels = {e.path: e.data["label"] for e in events if e.kind == "step_started"}
    assert (
        labels
        == {
            "E0": "reproduce › result = agent(investigator)",  # `use agent "repo-investigator" as investigator`
            "E1": "reproduce › require",
            "E2": "plan › agent(dev.lead)",  # `agent(dev.main)`: the team's main member
            "E3": "implement › map",
            "E3/do.0": "implement › item 0 › agent(dev.backend)",  # `agent(dev.member(item.owner))`
            "E3/do.1": "implement › item 1 › agent(dev.frontend)",
        }
    )
    agents = {e.path: e.data.get("agent") for e in events if e.kind == "step_started"}
    assert agents["E0"] == "investigator" and agents["E3/do.1"] == "dev.frontend"
    grep = next(
        e for e in events if e.kind == "tool_started" and e.path == "E0/agent.2/builtin__grep"
    )
    assert grep.data["label"] == "reproduce › agent(investigator) › grep"
    assert result.usage["by_stage"] == {
        "reproduce": {"inferences": 4, "input_tokens": 40, "output_tokens": 20},
        "plan": {"inferences": 1, "input_tokens": 10, "output_tokens": 5},
        "implement": {"inferences": 2, "input_tokens": 20, "output_tokens": 10},
    }
