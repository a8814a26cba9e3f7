"""compiler.lowering: golden plans, round trips and runs (docs/spec/LANGUAGE.md §10,
docs/spec/PLAN_IR.md).

``tests/compiler/compile/*.flow`` are compiled and compared with the ``.plan.yaml`` next to them;
``pytest --update-golden`` rewrites the expectations.  Every golden
and every shared example must compile, load with the runtime's loader, dump deterministically,
and — where no model is needed — run with a catalog of Python tools to the expected output.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.paths import SPEC_EXAMPLES as EXAMPLES

from agentflow import api
from agentflow.ir.dump import dump_plan
from agentflow.ir.loader import load_plan_data, load_plan_text
from agentflow.runtime.events import CallbackSink
from agentflow.runtime.executor import NO_ANSWER, Hooks
from agentflow.runtime.tools.catalog import Catalog

HERE = Path(__file__).parent / "compile"
GOLDEN = sorted(HERE.glob("*.flow"))
ALL_FLOWS = GOLDEN + sorted(EXAMPLES.glob("*.flow"))


def _ids(paths):
    return [p.name for p in paths]


def walk_steps(plan: dict):
    """Every step of a plan's data (bodies included) with its plan name."""
    out = []

    def visit(step, pname):
        out.append((pname, step))
        inp = step.get("input")
        if isinstance(inp, dict):
            for key in ("do", "then", "else"):
                if isinstance(inp.get(key), dict) and "tool_name" in inp[key]:
                    visit(inp[key], pname)

    for s in plan["steps"]:
        visit(s, plan["name"])
    for name, sub in (plan.get("plans") or {}).items():
        for s in sub["steps"]:
            visit(s, name)
    return out


# ---------------------------------------------------------------------------------------------
# Golden plans


def test_golden_corpus_is_broad():
    assert len(GOLDEN) >= 10


@pytest.mark.parametrize("flow", GOLDEN, ids=_ids(GOLDEN))
def test_compiles_to_the_golden_plan(flow: Path, golden):
    golden.check(flow.with_suffix(".plan.yaml"), api.compile_flow(flow).to_yaml())


@pytest.mark.parametrize("flow", ALL_FLOWS, ids=_ids(ALL_FLOWS))
def test_compiles_loads_and_is_deterministic(flow: Path):
    first = api.compile_flow(flow)
    second = api.compile_flow(flow)
    yaml_text = first.to_yaml()
    assert yaml_text == second.to_yaml()
    assert first.to_json() == second.to_json()
    # the YAML text and the JSON text load with the runtime's loader (structural validation)
    plan = load_plan_text(yaml_text, flow.name + ".plan.yaml")
    load_plan_text(first.to_json(), flow.name + ".plan.json")
    load_plan_data(first.plan, flow.name)
    assert json.loads(first.to_json()) == first.plan
    # dumping the loaded plan gives the same text back
    assert dump_plan(plan) == yaml_text
    # every step carries meta.source (file:line:col of this file) and meta.stage
    for _, step in walk_steps(first.plan):
        meta = step["meta"]
        name, line, col = meta["source"].rsplit(":", 2)
        assert name == flow.name and int(line) >= 1 and int(col) >= 1
        assert meta["stage"]
    # plan names are lower-case and sub-plans are named <flow>__<stage>_<n>
    assert first.plan["name"] == first.plan["name"].lower()
    for sub in first.plan.get("plans", {}):
        assert sub.startswith(first.plan["name"] + "__")


def test_same_source_from_another_directory_gives_identical_plan(tmp_path):
    src = HERE / "outline.flow"
    copy = tmp_path / "outline.flow"
    copy.write_text(src.read_text(encoding="utf-8"), encoding="utf-8")
    assert api.compile_flow(copy).to_yaml() == api.compile_flow(src).to_yaml()


def test_multiline_prompt_is_a_block_scalar():
    text = api.compile_flow(HERE / "agent.flow").to_yaml()
    assert "prompt: |-\n      Investigate {{ input.topic }}.\n" in text


def test_literal_braces_are_escaped_in_text():
    plan = api.compile_flow(HERE / "agent.flow").plan
    assert '{{ "{{" }} braces }}' in plan["steps"][0]["input"]["prompt"]


# ---------------------------------------------------------------------------------------------
# Structure of specific constructs


def test_agent_step_fields():
    plan = api.compile_flow(HERE / "agent.flow").plan
    find, names, fix = plan["steps"]
    assert find["tool_name"] == "agent" and find["input"]["require_final"] is True
    assert find["input"]["agent"] == {"kind": "alias", "name": "repo-investigator"}
    assert find["input"]["tools"] == ["builtin__read_file", "builtin__grep", "linear__*"]
    assert find["timeout"] == "3m"
    assert find["retry"] == {"attempts": 2, "on": ["transient", "rate_limit"]}
    assert find["select"] == "{{ result.output }}"
    assert find["input"]["output_schema"]["type"] == "object"
    assert names["input"]["agent"] == {"kind": "team.main", "team": "dev-team"}
    assert names["input"]["tools"] == "none"
    assert names["select"] == "{{ result.output.value }}"
    assert fix["input"]["agent"]["member"] == "{{ input.owner }}"
    assert fix["input"]["write"] == "{{ input.files }}"


def test_rest_after_leaving_branch_becomes_else():
    plan = api.compile_flow(HERE / "if_else.flow").plan
    early = plan["steps"][1]
    assert early["tool_name"] == "decide"
    assert early["input"]["then"]["tool_name"] == "value"
    assert early["input"]["else"]["tool_name"] == "user__double"
    assert early["input"]["else"]["select"] == "{{ result + 1 }}"
    assert early["select"] == "{{ result.output }}"
    # an if that does not leave is a statement: no select
    assert "select" not in plan["steps"][0]


def test_filter_gate_reading_outer_loop_variable_is_outlined():
    plan = api.compile_flow(HERE / "filter.flow").plan
    pairs = plan["steps"][-1]
    assert pairs["tool_name"] == "map"
    assert pairs["input"]["do"]["tool_name"] == "plan__filters__pairs_0"
    assert pairs["input"]["do"]["input"] == {
        "item": "{{ item }}",
        "index": "{{ index }}",
        "env": {"input": "{{ input }}"},
    }
    sub = plan["plans"]["filters__pairs_0"]
    assert sub["steps"][0]["input"]["when"] == {"expr": "item > input.item"}


def test_outlined_env_holds_only_the_outer_names_used():
    plan = api.compile_flow(HERE / "outline.flow").plan
    grid = plan["steps"][1]["input"]["do"]
    assert grid["input"]["env"] == {"twice": "{{ E0 }}"}
    reduce_body = api.compile_flow(HERE / "reduce.flow").plan["steps"][2]["input"]["do"]
    assert reduce_body["input"] == {
        "item": "{{ item }}",
        "index": "{{ index }}",
        "accumulator": "{{ accumulator }}",
    }


def test_gate_attempt_that_outlines_leaves_no_hole_in_step_ids(tmp_path):
    """A filter gate that needs a step and reads an outer loop variable outlines the body it is in;
    the attempt leaves no hole in the `E<n>` numbering (docs/spec/LANGUAGE.md §10)."""
    src = (
        "type O { name: text, a: int? }\n"
        "extern tool user__get() -> int\n"
        "input { os: O[] }\n"
        "stage s -> text[][] {\n"
        "  let z = user__get()\n"
        "  return map input.os as x {\n"
        "    (filter input.os as y where null in input.os[*].a and y.name == x.name)[*].name\n"
        "  }\n"
        "}\n"
    )
    plan = api.compile_source(src, "t.flow").plan
    assert [s["id"] for s in plan["steps"]] == ["E0", "E1"]


def test_parallel_map_concurrency():
    steps = api.compile_flow(HERE / "map.flow").plan["steps"]
    assert "concurrency" not in steps[0]["input"]
    assert steps[1]["input"]["concurrency"] == 2
    assert steps[2]["input"]["concurrency"] == 4


def test_header_items():
    plan = api.compile_flow(HERE / "header.flow").plan
    assert plan["name"] == "header_demo"
    assert plan["description"] == "A flow with every header item"
    assert plan["deadline"] == "1h30m"
    schema = plan["input_schema"]
    assert schema["required"] == ["who", "count"]
    assert schema["properties"]["count"] == {"type": "integer", "minimum": 1, "maximum": 10}


def test_json_format_from_the_cli(tmp_path):
    out = tmp_path / "plan.json"
    res = CliRunner().invoke(
        __import__("agentflow.cli", fromlist=["main"]).main,
        ["compile", str(HERE / "outline.flow"), "--format", "json", "-o", str(out)],
    )
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data == api.compile_flow(HERE / "outline.flow").plan
    assert list(data) == ["version", "name", "input_schema", "steps", "finish", "plans"]


def test_schema_command_prints_one_contract():
    from agentflow.cli import main

    res = CliRunner().invoke(main, ["schema", str(HERE / "reduce.flow"), "Stats"])
    assert res.exit_code == 0, res.output
    schema = json.loads(res.stdout)
    assert schema["required"] == ["total", "count", "labels"]
    bad = CliRunner().invoke(main, ["schema", str(HERE / "reduce.flow"), "Nope"])
    assert bad.exit_code == 1 and "no type `Nope`" in bad.stderr


# ---------------------------------------------------------------------------------------------
# Running compiled plans (no model needed)


def _catalog() -> Catalog:
    cat = Catalog()
    fns = {
        "user__double": lambda n: n * 2,
        "user__inc": lambda n: n + 1,
        "user__square": lambda n: n * n,
        "user__weight": lambda n: n + 100,
        "user__score": lambda n: n * 3,
        "user__note": lambda text: text.upper(),
        "user__shout": lambda text: {"loud": text.upper(), "length": len(text)},
        "user__count": lambda items, label: {"n": len(items), "label": label},
        "user__log": lambda message: message,
    }
    for name, fn in fns.items():
        cat.register_function(name, fn)
    return cat


def _run(name: str, data, **kw):
    return api.run_sync(
        HERE / name, data, catalog=kw.pop("catalog", _catalog()), shape_cache=False, **kw
    )


def _reference_outline(xs, limit):
    twice = [x * 2 + 1 + limit for x in xs]
    grid = [[t * x + i for i, t in enumerate(twice)] for x in xs]
    checked = [x * 2 if x > limit else x for x in xs]
    folded = 0
    for i, t in enumerate(twice):
        folded = folded + t * 2 + i
    return {"twice": twice, "grid": grid, "checked": checked, "folded": folded}


RUNS = [
    (
        "let_pure.flow",
        {"name": "Ann", "n": 7, "tags": ["x"]},
        {
            "greeting": "Hello, Ann! You have 7 items",
            "doubled": 15,
            "big": True,
            "first_tag": "x",
            "tag_count": 1,
            "literal": 'braces {{ stay }} and $dollars, quote " and tab\t',
        },
    ),
    (
        "map.flow",
        {"xs": [1, 2, 3], "words": ["a", "bb"]},
        {"squares": [1, 4, 9], "shifted": [1, 17, 83], "lengths": [2, 3], "pure": ["0:a", "1:bb"]},
    ),
    (
        "reduce.flow",
        {"xs": [1, 2, 3], "words": ["ab", "c"]},
        {
            "sum": 6,
            "stats": {"total": 3, "count": 2, "labels": ["0=ab", "1=c"]},
            # acc = 6; per x: w = x + 100, v = w + acc + 100
            "weighted": ((6 + 101 + 100) + 102 + 100) + 103 + 100,
        },
    ),
    ("outline.flow", {"xs": [1, 4, 2], "limit": 3}, _reference_outline([1, 4, 2], 3)),
    (
        "if_else.flow",
        {"n": 7},
        {"effect": 7, "early": 15, "sign": "positive", "late": 21},
    ),
    ("if_else.flow", {"n": 0}, {"effect": 0, "early": 1, "sign": "zero", "late": -1}),
    ("if_else.flow", {"n": -4}, {"effect": -4, "early": 0, "sign": "negative", "late": -1}),
    ("require_fail.flow", {"n": 5, "name": "x"}, 16),
    ("header.flow", {"who": "Bo", "count": 2, "tags": ["a", "b"]}, {"text": "hi Bo", "total": 4}),
    ("header.flow", {"who": "Bo", "count": 2}, {"text": "hi Bo", "total": 2}),
    (
        "ask.flow",
        {"n": 3},
        {"approve": False, "choice": "hold", "note": "none", "count": None},
    ),
]


@pytest.mark.parametrize(("name", "data", "expected"), RUNS, ids=[r[0] for r in RUNS])
def test_run_compiled_plan(name, data, expected):
    hooks = None
    if name == "ask.flow":
        # the count question is answered; the others fall back to their default
        def interlocutor(req):
            return 2 if req.question == "How many reviewers?" else NO_ANSWER

        hooks = Hooks(interlocutor=interlocutor)
        expected = {**expected, "count": 2}
    result = _run(name, data, hooks=hooks)
    assert result.status == "ok", result.error
    assert result.output == expected


def test_run_filters_without_judge_stage(tmp_path):
    # the judge stage needs a model: run a copy without it
    src = (HERE / "filter.flow").read_text(encoding="utf-8")
    start = src.index("stage dupes")
    end = src.index("stage pairs")
    flow = tmp_path / "filter.flow"
    flow.write_text(src[:start] + src[end:], encoding="utf-8")
    result = api.run_sync(
        flow, {"xs": [4, 1, 8, 6], "titles": []}, catalog=_catalog(), shape_cache=False
    )
    assert result.status == "ok", result.error
    assert result.output == [[8, 6], [4, 8, 6], [], [8]]


def test_verify_checks_run(tmp_path):
    src = (HERE / "verify.flow").read_text(encoding="utf-8")
    flow = tmp_path / "verify.flow"
    flow.write_text(src[: src.index("stage judged")], encoding="utf-8")
    ok = api.run_sync(flow, {"xs": [1, 3], "title": "t"}, catalog=_catalog(), shape_cache=False)
    assert ok.output == {"passed": True, "failures": []}
    bad = api.run_sync(flow, {"xs": [], "title": ""}, catalog=_catalog(), shape_cache=False)
    assert bad.output == {
        "passed": False,
        "failures": ["no items", "empty title for 0 items", "3 is missing"],
    }


def test_tools_flow_runs_with_builtin_tools(tmp_path):
    (tmp_path / "a.txt").write_text("alpha\nbeta\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text("alphabet\n", encoding="utf-8")
    from agentflow.runtime.tools.builtin import default_catalog

    cat = default_catalog()
    cat.register_function("user__count", lambda items, label: {"n": len(items), "label": label})
    cat.register_function("user__log", lambda message: message)
    result = api.run_sync(
        HERE / "tools.flow", {"dir": ".", "pattern": "alpha"}, catalog=cat, workspace=tmp_path
    )
    assert result.status == "ok", result.error
    assert result.output == {"n": 2, "label": "{{ literal }} 2 files, 2 hits for alpha"}


def test_require_failure_carries_source():
    result = _run("require_fail.flow", {"n": -1, "name": "x"})
    assert result.status == "error"
    assert result.error["code"] == "failed"
    assert result.error["message"] == "n must not be negative, got -1"
    assert result.error["source"] == "require_fail.flow:8:3"
    # `if c { fail m }`
    result = _run("require_fail.flow", {"n": 14, "name": "x"})
    assert result.error["message"] == "the answer is not a score"
    assert result.error["source"] == "require_fail.flow:13:5"
    # else { fail … } of the second stage
    result = _run("require_fail.flow", {"n": 1, "name": "x"})
    assert result.error["message"] == "checked too small: 4"
    assert result.error["source"] == "require_fail.flow:27:5"


def test_failure_inside_outlined_body_has_nested_path_and_source():
    events = []
    result = _run("outline.flow", {"xs": [1, -2], "limit": 3}, sinks=[CallbackSink(events.append)])
    assert result.status == "error"
    assert result.error["message"] == "negative item -2 at 1"
    assert result.error["source"] == "outline.flow:26:5"
    assert result.error["step_path"] == "E2/do.1/E0"
    # steps inside called sub-plans have nested paths and carry their source
    started = [e for e in events if e.kind == "step_started"]
    nested = [e for e in started if e.path.startswith("E0/do.0/")]
    assert [e.path for e in nested] == ["E0/do.0/E0", "E0/do.0/E1"]
    assert nested[0].data["source"] == "outline.flow:12:13"


def test_cli_shows_flow_line_with_caret(tmp_path):
    from agentflow.cli import main

    flow = tmp_path / "guard.flow"
    flow.write_text(
        "input { n: int }\n\nstage s -> int {\n"
        '  require input.n >= 0 else fail "n must not be negative, got ${input.n}"\n'
        "  return input.n\n}\n",
        encoding="utf-8",
    )
    res = CliRunner().invoke(main, ["run", str(flow), "--input", '{"n": -1}'])
    assert res.exit_code == 1, res.output
    err = res.stderr
    assert "error[failed] in s › require (step E0): n must not be negative, got -1" in err
    assert f"--> {flow}:4:3" in err
    lines = err.splitlines()
    i = next(k for k, line in enumerate(lines) if "require input.n >= 0" in line)
    assert lines[i].startswith("   | ")
    caret = lines[i + 1]
    assert caret.rstrip().endswith("^")
    assert caret.index("^") == lines[i].index("require")
    ok = CliRunner().invoke(main, ["run", str(flow), "--input", '{"n": 4}'])
    assert ok.exit_code == 0 and ok.stdout.strip() == "4"


def test_fail_only_flow_reports_its_line(tmp_path):
    from agentflow.cli import main

    flow = tmp_path / "fail_only.flow"
    flow.write_text((HERE / "fail_only.flow").read_text(encoding="utf-8"), encoding="utf-8")
    res = CliRunner().invoke(main, ["run", str(flow), "--input", '{"reason": "because"}'])
    assert res.exit_code == 1
    assert "stopped: because" in res.stderr
    assert 'fail "stopped: ${input.reason}"' in res.stderr


# ---------------------------------------------------------------------------------------------
# Runs with a scripted model (judges, agents)


def test_judge_filter_and_verify_with_scripted_model(chat_server, scripted_config):
    from support.chat_server import text

    # filter … where judge: one judge call per item, in order
    src = (HERE / "filter.flow").read_text(encoding="utf-8")
    chat_server.script([text("yes"), text("no"), text("Yes.")])
    result = api.run_sync(
        HERE / "filter.flow",
        {"xs": [], "titles": ["a", "b", "c"]},
        catalog=_catalog(),
        config=scripted_config,
    )
    assert result.status == "ok", result.error
    judged = [r for r in chat_server.requests if "duplicate" in json.dumps(r)]
    assert len(judged) == 3
    assert 'Is \\"b\\" a duplicate of another title in [\\"a\\",\\"b\\",\\"c\\"]?' in (
        json.dumps(judged[1])
    )
    assert "stage dupes" in src
    # verify with a judge: the verdict's failures hold the failed judge's prompt
    chat_server.script([text("no")])
    result = api.run_sync(
        HERE / "verify.flow", {"xs": [3], "title": "T"}, catalog=_catalog(), config=scripted_config
    )
    assert result.status == "ok", result.error
    assert result.output is False


def test_braces_next_to_interpolation_stay_literal(tmp_path):
    flow = tmp_path / "brace.flow"
    flow.write_text(
        "input { x: int }\n"
        "extern tool user__echo(t: text) -> text\n"
        "stage s -> text {\n"
        '  user__echo(t: "json: {${input.x}} and {{ not a hole }} {{${input.x}}}")\n'
        "}\n",
        encoding="utf-8",
    )
    cat = Catalog()
    cat.register_function("user__echo", lambda t: t)
    result = api.run_sync(flow, {"x": 5}, catalog=cat)
    assert result.status == "ok", result.error
    assert result.output == "json: {5} and {{ not a hole }} {{5}}"


def _without_source(x):
    if isinstance(x, dict):
        return {
            k: (
                {kk: vv for kk, vv in v.items() if kk != "source"}
                if k == "meta"
                else _without_source(v)
            )
            for k, v in x.items()
        }
    if isinstance(x, list):
        return [_without_source(v) for v in x]
    return x


@pytest.mark.parametrize("flow", ALL_FLOWS, ids=_ids(ALL_FLOWS))
def test_fmt_does_not_change_the_compiled_plan(flow: Path):
    from agentflow.compiler.fmt import format_source

    src = flow.read_text(encoding="utf-8")
    formatted = format_source(src, flow.name)
    before = api.compile_source(src, flow.name).plan
    after = api.compile_source(formatted, flow.name).plan
    assert _without_source(after) == _without_source(before)
