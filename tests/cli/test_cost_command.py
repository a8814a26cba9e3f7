"""`flowc cost FILE`: the static worst case of model calls per role, in the input's sizes."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from agentflow.cli import main
from agentflow.ir.cost import worst_case
from agentflow.ir.loader import load_plan_data

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def plan(steps, **extra):
    return load_plan_data({"version": 1, "name": "p", "steps": steps, **extra}, "p.plan.yaml")


AGENT = {
    "prompt": "p",
    "output_schema": {"type": "object"},
    "tools": ["builtin__read_file"],
    "max_iterations": 3,
    "repair_attempts": 2,
}


def test_map_multiplies_agent_rounds_and_repairs_by_the_input_length():
    cost = worst_case(
        plan(
            [
                {
                    "id": "E0",
                    "tool_name": "map",
                    "input": {
                        "over": "{{ input.items }}",
                        "do": {"tool_name": "agent", "input": {**AGENT, "model": "judge"}},
                    },
                    "retry": {"attempts": 1, "on": ["transient"]},
                }
            ],
            finish={"mode": "solver", "prompt": "sum up"},
        )
    ).to_dict()
    assert cost["roles"] == {
        "judge": "6 × len(input.items)",  # 3 rounds × 2 tries
        "repair": "12 × len(input.items)",  # 3 rounds × 2 repairs × 2 tries
        "solver": "1",
    }
    assert cost["total"] == "18 × len(input.items) + 1" and cost["unbounded"] == []


def test_decide_takes_the_dearer_branch_and_filters_judge_each_item():
    agent = {"tool_name": "agent", "input": AGENT}
    cost = worst_case(
        plan(
            [
                {
                    "id": "E0",
                    "tool_name": "filter",
                    "input": {"over": "{{ input.a }}", "infer": "ok?"},
                },
                {
                    "id": "E1",
                    "tool_name": "decide",
                    "input": {
                        "infer": "big?",
                        "then": {"tool_name": "plan__two", "input": {}},
                        "else": agent,
                    },
                },
                {
                    "id": "E2",
                    "tool_name": "verify",
                    "input": {"judges": [{"prompt": "a"}, {"prompt": "b"}]},
                },
            ],
            plans={
                "two": {
                    "version": 1,
                    "name": "two",
                    "steps": [
                        {
                            "id": "E0",
                            "tool_name": "parallel",
                            "input": {"branches": {"x": agent, "y": agent}},
                        }
                    ],
                }
            },
        )
    ).to_dict()
    assert cost["roles"]["judge"] == "len(input.a) + 3"
    assert cost["roles"]["chat"] == "6" and cost["roles"]["repair"] == "12"


def test_an_agent_that_may_call_plans_is_reported_as_not_counted():
    cost = worst_case(plan([{"id": "E0", "tool_name": "agent", "input": {**AGENT, "tools": None}}]))
    assert "E0 (agent): the agent may call plan__* tools" in cost.to_dict()["unbounded"][0]


def test_flowc_cost_prints_the_figures_of_a_flow_and_of_a_plan():
    runner = CliRunner()
    result = runner.invoke(main, ["cost", str(EXAMPLES / "incident-digest.flow")])
    assert result.exit_code == 0, result.output
    assert "chat    4 × len(input.incidents)" in result.output
    result = runner.invoke(main, ["cost", "--json", str(EXAMPLES / "issue-review.plan.yaml")])
    data = json.loads(result.output)
    max_iter = yaml.safe_load((EXAMPLES / "issue-review.plan.yaml").read_text())["steps"][1][
        "input"
    ]["max_iterations"]
    assert data["roles"]["chat"] == str(max_iter) and data["plan"] == "issue_review_plan"


def test_flowc_cost_of_a_missing_file_is_a_usage_error():
    result = CliRunner().invoke(main, ["cost", "nope.flow"])
    assert result.exit_code == 2 and "no such file" in result.output


def test_a_loop_multiplies_its_body_by_its_bound_and_lists_itself():
    agent = {"tool_name": "agent", "input": {**AGENT, "tools": "none"}}
    guarded = {"id": "T", "tool_name": "try", "input": {"do": agent, "catch": agent}}
    cost = worst_case(
        plan(
            [
                {
                    "id": "E0",
                    "tool_name": "loop",
                    "input": {"up_to": 4, "initial": 0, "do": agent},
                    "meta": {"source": "f.flow:3:3", "stage": "polish"},
                },
                {
                    "id": "E1",
                    "tool_name": "plan__twice",
                    "input": {},
                },
            ],
            plans={
                "twice": {
                    "version": 1,
                    "name": "twice",
                    "steps": [
                        {
                            "id": "L",
                            "tool_name": "loop",
                            "input": {
                                "up_to": "{{ input.n }}",
                                "initial": 0,
                                "do": {"tool_name": "plan__guarded", "input": {}},
                            },
                        }
                    ],
                },
                "guarded": {"version": 1, "name": "guarded", "steps": [guarded]},
            },
        )
    ).to_dict()
    # an agent: 3 rounds + 6 repairs; the try counts its do and its catch (both agents)
    assert cost["roles"] == {"chat": "6 × input.n + 12", "repair": "12 × input.n + 24"}
    assert cost["loops"] == [
        "polish › loop (f.flow:3:3): up to 4 rounds × 9 per round = 36",
        "L (loop): up to input.n rounds × 18 per round = 18 × input.n",
    ]


FLOW_WITH_NAMES = """
input { rounds: int, items: text[] }
use agent "writer" as writer
stage kept -> text[] {
  filter input.items as i where judge "keep ${i}?"
}
stage drafts -> text[] {
  map kept as k { agent(writer) { task "draft ${k}" tools none expect text max_iterations 2 } }
}
stage polished -> int {
  return try {
    loop up to input.rounds as r, n = 0 {
      let t = agent(writer) { task "again ${n}" tools none expect text max_iterations 1 }
      n + len(t)
    } until n > 9 else fail "never long"
  } catch { 0 }
}
"""


def test_flowc_cost_names_the_programs_stages_not_step_ids(tmp_path: Path):
    # a map over a stage's value reads `len(kept)`, not `len(E0)`; a loop compiled into a
    # sub-plan (inside `try`) reads its bound as `input.rounds`, not `input.env.input.rounds`
    f = tmp_path / "names.flow"
    f.write_text(FLOW_WITH_NAMES, encoding="utf-8")
    result = CliRunner().invoke(main, ["cost", "--json", str(f)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["roles"]["chat"] == "input.rounds + 2 × len(kept)", data
    assert data["roles"]["judge"] == "len(input.items)", data
    assert "up to input.rounds rounds" in data["loops"][0], data
    assert "E0" not in result.output and "input.env" not in result.output


BUDGETED = """\
flow digest
input { items: text[] }
budget { inferences: 30 }
use agent "sre" as sre

stage each -> text[] {
  map input.items as it {
    agent(sre) {
      task "Summarise ${it}"
      expect text
      max_iterations 4
      tools none
    }
  }
}
"""

LITERAL_AND_STAGE = """\
flow voting
input { code: text }
use agent "judge" as judge

stage lenses -> text[] {
  return ["security", "speed"]
}

stage votes -> text[] {
  map lenses as lens {
    agent(judge) { task "Review ${input.code} as ${lens}" expect text max_iterations 4 tools none }
  }
}

stage again -> text[] {
  map votes as v {
    agent(judge) { task "Check ${v}" expect text max_iterations 4 tools none }
  }
}
"""


def test_cost_is_simplified_in_the_flows_terms(tmp_path):
    # `8 × len([1, 2]) + 8` and `5 × len(E0)` were printed as they were compiled: a literal's
    # length is counted, and a map's result is as long as what it went over
    f = tmp_path / "voting.flow"
    f.write_text(LITERAL_AND_STAGE, encoding="utf-8")
    result = CliRunner().invoke(main, ["cost", "--json", str(f)])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    assert figures["roles"] == {"chat": "16", "repair": "16"}
    assert figures["total"] == "32" and figures["warnings"] == []


def test_cost_warns_with_a_code_when_the_worst_case_exceeds_the_flows_budget(tmp_path):
    f = tmp_path / "digest.flow"
    f.write_text(BUDGETED, encoding="utf-8")
    result = CliRunner().invoke(main, ["cost", str(f)])
    assert result.exit_code == 0  # a warning: the budget stops the run, nothing is wrong yet
    assert "  total    8 × len(input.items)\n" in result.stdout
    # the budget is the upper bound where it is lower than the figure
    assert (
        "  at most  30 (the flow's budget { inferences: 30 } stops a run there)\n" in result.stdout
    )
    assert (
        "digest.flow:3:1: warning[cost-over-budget]: the worst case, 8 × len(input.items) "
        "model calls, exceeds the flow's budget of 30 inferences when len(input.items) > 3"
    ) in result.stderr
    assert "budget { inferences: 30 }" in result.stderr  # the caret on the flow's budget
    data = json.loads(CliRunner().invoke(main, ["cost", "--json", str(f)]).stdout)
    assert [w["code"] for w in data["warnings"]] == ["cost-over-budget"]
    f.write_text(BUDGETED.replace("inferences: 30", "inferences: 2"), encoding="utf-8")
    fixed = CliRunner().invoke(main, ["cost", str(f)])
    assert "when len(input.items) > 0" in fixed.stderr


def test_the_documented_example_of_cost_over_budget_warns(tmp_path):
    import re

    doc = (Path(__file__).resolve().parents[2] / "docs" / "diagnostics.md").read_text()
    section = doc.split("## `cost-over-budget`", 1)[1]
    example = re.search(r"```flow\n(.*?)```", section, flags=re.S).group(1)
    f = tmp_path / "example.flow"
    f.write_text(example, encoding="utf-8")
    result = CliRunner().invoke(main, ["cost", str(f)])
    assert "warning[cost-over-budget]" in result.stderr, result.output


RESEARCH = """\
flow research
input { topic: text, max_rounds: int }
budget { inferences: 20 }
use agent "researcher" as researcher
use agent "critic" as critic

type Note { question: text, answer: text }
type State { notes: Note[], done: bool }
type Gap { questions: text[] @length(1, 3), done: bool }

stage plan -> text[] {
  let q = agent(researcher) { task "List sub-questions for ${input.topic}" tools none expect text[] }
  return take(q, 3)
}

stage research -> State {
  loop up to input.max_rounds as round, st = { notes: [], done: false } {
    let qs = if round == 1 then plan else agent(critic) {
      task "What is still missing from: ${st.notes}"
      tools none
      expect Gap
    }.questions
    let found = parallel map qs as q limit 2 {
      agent(researcher) { task "Answer: ${q}" tools none expect Note }
    }
    return { notes: st.notes + found, done: st.notes.count + found.count >= 4 }
  } until st.done else st
}
"""


def test_cost_uses_length_bounds_names_no_local_out_of_scope_and_shows_the_budget_cap(tmp_path):
    # `qs` is `take(q, 3)` or a `@length(1, 3)` list: at most 3 items, so a round is at most
    # 16 (the critic) + 3 × 16 model calls; the flow's budget caps the figure at 20
    f = tmp_path / "research.flow"
    f.write_text(RESEARCH, encoding="utf-8")
    result = CliRunner().invoke(main, ["cost", str(f)])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[1:6] == [
        "  chat     32 × input.max_rounds + 8",
        "  repair   32 × input.max_rounds + 8",
        "  total    64 × input.max_rounds + 16",
        "  at most  20 (the flow's budget { inferences: 20 } stops a run there)",
        "  loop research › loop (research.flow:17:3): up to input.max_rounds rounds × 64 per "
        "round = 64 × input.max_rounds",
    ]
    # unbounded, the local `qs` is named only inside its round; out of it, as what it is
    f.write_text(RESEARCH.replace(" @length(1, 3)", "").replace("take(q, 3)", "q"))
    data = json.loads(CliRunner().invoke(main, ["cost", "--json", str(f)]).stdout)
    assert data["total"] == (
        "16 × (max len(qs) per round) × input.max_rounds + 16 × input.max_rounds + 16"
    )
    assert data["loops"] == [
        "research › loop (research.flow:17:3): up to input.max_rounds rounds × "
        "(16 × len(qs) + 16) per round = 16 × (max len(qs) per round) × input.max_rounds + "
        "16 × input.max_rounds"
    ]
    assert data["cap"] == 20


NESTED = """\
flow nested
input { docs: { parts: text[] }[] }
use agent "a" as a
stage s -> text[][] {
  return map input.docs as d {
    map d.parts as p { agent(a) { task "x ${p}" tools none expect text } }
  }
}
"""


def test_a_length_read_in_a_map_body_is_said_per_item_of_what_it_goes_over(tmp_path):
    f = tmp_path / "nested.flow"
    f.write_text(NESTED, encoding="utf-8")
    data = json.loads(CliRunner().invoke(main, ["cost", "--json", str(f)]).stdout)
    assert data["total"] == "16 × (max len(d.parts) per item of input.docs) × len(input.docs)"
    assert data["cap"] is None
    # an input's own bound counts too
    f.write_text(NESTED.replace("parts: text[] }", "parts: text[] @length(0, 5) }"))
    data = json.loads(CliRunner().invoke(main, ["cost", "--json", str(f)]).stdout)
    assert data["total"] == "80 × len(input.docs)"


FILTERED = """\
flow f
input { xs: text[] @length(0, 4) }
use agent "a" as a
stage s -> text[] {
  let kept = filter input.xs as x where x != ""
  return map kept as k { agent(a) { task "x ${k}" tools none expect text } }
}
"""


def test_a_filter_of_a_bounded_list_is_at_most_that_long(tmp_path):
    f = tmp_path / "f.flow"
    f.write_text(FILTERED, encoding="utf-8")
    data = json.loads(CliRunner().invoke(main, ["cost", "--json", str(f)]).stdout)
    assert data["total"] == "64"  # 4 items × (8 rounds + 8 repairs)
    f.write_text(FILTERED.replace(" @length(0, 4)", ""), encoding="utf-8")
    data = json.loads(CliRunner().invoke(main, ["cost", "--json", str(f)]).stdout)
    assert data["total"] == "16 × len(kept)"  # unbounded: the filter's result keeps its name


FILES = """\
input { dir: path, max_files: int }
use agent "w" as w
stage files -> path[] {
  let found = glob(pattern: "**/*.py", path: input.dir)
  return take(found, input.max_files)
}
stage notes -> text[] {
  return parallel map files as f {
    agent(w) { task "read ${f}" tools [read_file] expect text }
  }
}
"""


def test_a_take_bounded_by_an_input_counts_as_that_input_or_its_range_maximum(tmp_path):
    # `take(found, input.max_files)` is at most `input.max_files` long: the figure is in that
    # input, not `len(take(found, input.max_files))`; with `@range(1, 20)`, at most 20
    f = tmp_path / "files.flow"
    f.write_text(FILES, encoding="utf-8")
    result = CliRunner().invoke(main, ["cost", str(f)])
    assert result.exit_code == 0, result.output
    # one casing for every flow (the trial read "Most …" for one flow, "most …" for others)
    assert result.stdout.startswith("most model calls of one run of 'files' (inferences per role):")
    assert result.stdout.splitlines()[1:4] == [
        "  chat    8 × input.max_files",
        "  repair  8 × input.max_files",
        "  total   16 × input.max_files",
    ]
    f.write_text(FILES.replace("max_files: int", "max_files: int @range(1, 20)"))
    data = json.loads(CliRunner().invoke(main, ["cost", "--json", str(f)]).stdout)
    assert data["total"] == "320"
