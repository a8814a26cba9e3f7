"""Loading plans: the example, every load error with its file:line:col
(docs/spec/PLAN_IR.md §1–6)."""

from __future__ import annotations

import json
import textwrap

import pytest
from support.paths import SPEC_EXAMPLES

from agentflow.core.diagnostics import Diagnostic
from agentflow.errors import PlanLoadError
from agentflow.grammar import ast
from agentflow.ir import Plan, Step, load_plan, load_plan_data, load_plan_text
from agentflow.ir.models import AgentInput

EXAMPLE = str(SPEC_EXAMPLES / "issue-review.plan.yaml")


def problems(text: str, file: str = "p.yaml") -> list[Diagnostic]:
    with pytest.raises(PlanLoadError) as info:
        load_plan_text(textwrap.dedent(text), file)
    return info.value.errors


def one(text: str) -> Diagnostic:
    errs = problems(text)
    assert len(errs) == 1, [str(e) for e in errs]
    return errs[0]


def at(p: Diagnostic) -> tuple[int, int]:
    return (p.span.line, p.span.column)


def plan_with(step_yaml: str, extra: str = "") -> str:
    """A plan whose steps are E0 (a tool) then the given step (indented 2, starting at line 7)."""
    return (
        "version: 1\n"
        "name: t\n"
        "steps:\n"
        "  - id: E0\n"
        "    tool_name: builtin__read_file\n"
        "    input: { path: a.txt }\n" + textwrap.indent(textwrap.dedent(step_yaml), "  ") + extra
    )


def _problems(text: str) -> list[str]:
    with pytest.raises(PlanLoadError) as exc:
        load_plan_text(text, "p.yaml")
    return [str(p) for p in exc.value.errors]


def _one_step(step: str) -> str:
    return f"version: 1\nname: a\nsteps:\n  - {step}\n"


# -- the example -----------------------------------------------------------------------------


def test_example_loads():
    plan = load_plan(EXAMPLE)
    assert isinstance(plan, Plan)
    assert plan.name == "issue_review_plan"
    assert plan.source_file == EXAMPLE
    assert [s.id for s in plan.steps] == ["E0", "E1", "E2"]
    agent = plan.steps[1]
    assert agent.tool_name == "agent"
    prompt = agent.compiled["prompt"]
    assert isinstance(prompt, ast.Template)
    # the hole `E0.issues` sits on line 15, column 11 of the YAML file
    expr = next(p for p in prompt.parts if isinstance(p, ast.Expr))
    names = [n for n in _walk(expr) if isinstance(n, ast.Name)]
    assert names[0].name == "E0"
    assert (names[0].span.file, names[0].span.line, names[0].span.column) == (EXAMPLE, 15, 11)
    # schemas are not compiled
    assert agent.compiled["output_schema"] is agent.input["output_schema"]
    assert agent.compiled["max_iterations"] == 5
    gate = plan.steps[2].compiled["when"]
    assert isinstance(gate["value"], ast.Template) and gate["value"].whole is not None
    assert gate["to"] is False
    assert isinstance(plan.finish.compiled_output, ast.Template)
    AgentInput.model_validate(agent.input)  # the runtime's view of the agent input


def _walk(node):
    from agentflow.ir.templates import iter_nodes

    return list(iter_nodes(node))


def test_example_as_json_and_data():
    plan = load_plan(EXAMPLE)
    from agentflow.ir import plan_to_data

    data = plan_to_data(plan)
    again = load_plan_data(json.loads(json.dumps(data)), "x.json")
    assert again.steps[1].input == plan.steps[1].input
    # JSON text is YAML too
    third = load_plan_text(json.dumps(data), "x.json")
    assert third.name == plan.name


def test_camel_case_and_yaml_1_2_scalars():
    plan = load_plan_text(
        textwrap.dedent(
            """\
            version: 1
            name: t
            inputSchema: { type: object }
            steps:
              - id: E0
                toolName: agent
                input:
                  prompt: go
                  outputSchema: { type: object }
                  maxIterations: 2
                  systemPrompt: be brief
                  tools: none
              - id: E1
                tool_name: builtin__read_file
                input: { path: yes, flag: on }
                retry: { attempts: 1, on: [timeout] }
            """
        ),
        "p.yaml",
    )
    agent = plan.steps[0]
    assert agent.tool_name == "agent"
    assert set(agent.input) == {
        "prompt",
        "output_schema",
        "max_iterations",
        "system_prompt",
        "tools",
    }
    assert plan.input_schema == {"type": "object"}
    # YAML 1.2: yes / on stay text, and `on` as a key is not True
    assert plan.steps[1].input == {"path": "yes", "flag": "on"}
    assert plan.steps[1].retry.on == ["timeout"]


def test_bodies_become_steps():
    plan = load_plan_text(
        plan_with(
            """\
            - id: E1
              tool_name: map
              input:
                over: "{{ E0.lines }}"
                concurrency: 2
                do:
                  tool_name: agent
                  input:
                    prompt: "Summarize {{ item }} ({{ index }})"
                    output_schema: { type: object }
            - id: E2
              tool_name: decide
              input:
                when: { expr: "E1" }
                then: { tool_name: value, input: { value: "{{ E1 }}" } }
                else: { id: E2b, tool_name: exit, input: { status: ok } }
            - id: E3
              tool_name: parallel
              input:
                branches:
                  a: { tool_name: value, input: { value: 1 } }
                  b: { tool_name: plan__other, input: {} }
            """
        ),
        "p.yaml",
    )
    m, d, par = plan.steps[1], plan.steps[2], plan.steps[3]
    assert isinstance(m.input["do"], Step) and m.compiled["do"] is m.input["do"]
    assert isinstance(m.input["do"].compiled["prompt"], ast.Template)
    assert isinstance(d.compiled["when"]["expr"], ast.Expr)
    assert isinstance(d.input["then"], Step) and d.input["else"].id == "E2b"
    assert set(par.input["branches"]) == {"a", "b"}
    assert all(isinstance(b, Step) for b in par.input["branches"].values())
    assert [label for label, _ in plan.iter_steps()] == [
        "E0",
        "E1",
        "E1/do",
        "E2",
        "E2/then",
        "E2/else",
        "E3",
        "E3/a",
        "E3/b",
    ]
    assert plan.effective_finish().output == "{{ E3 }}"


# -- every load error, with line and column ------------------------------------------------


def test_yaml_syntax_error():
    p = one("version: 1\nname: t\nsteps: [\n")
    assert p.message.startswith("YAML syntax error")
    assert (p.span.file, *at(p)) == ("p.yaml", 4, 1)
    p = one("version: 1\nname: t\n  bad: indent\n")
    assert at(p) == (3, 6) and "mapping values are not allowed" in p.message


def test_empty_file():
    assert "empty" in one("").message


def test_duplicate_yaml_key():
    p = one(
        """\
        version: 1
        name: t
        name: u
        steps: [{ id: E0, tool_name: x__y }]
        """
    )
    assert at(p) == (3, 1) and "duplicate key `name`" in p.message


def test_unknown_fields_with_hints():
    errs = problems(
        """\
        version: 1
        name: t
        descripton: x
        steps:
          - id: E0
            tool_nme: x__y
            tool_name: x__y
            timout: 5s
        finish: { mode: output, outptu: 1 }
        """
    )
    got = {(at(p), p.hint) for p in errs}
    assert ((3, 1), "did you mean `description`?") in got
    assert ((6, 5), "did you mean `tool_name`?") in got
    assert ((8, 5), "did you mean `timeout`?") in got
    assert ((9, 25), "did you mean `output`?") in got
    assert len(errs) == 4


def test_unknown_fields_in_retry_and_backoff_are_load_errors():
    """docs/spec/PLAN_IR.md §1: unknown fields are errors with the nearest valid name, at
    file:line:col — inside `retry` and `retry.backoff` too (they used to load silently as the
    defaults)."""
    import pytest

    from agentflow.errors import PlanLoadError
    from agentflow.ir.loader import load_plan_text

    text = (
        "version: 1\nname: r\nsteps:\n  - id: E1\n    tool_name: value\n"
        "    input: { value: 1 }\n    retry: { attempt: 1, backof: { intial: 1s } }\n"
        "  - id: E2\n    tool_name: value\n    input: { value: 1 }\n"
        "    retry: { attempts: 1, backoff: { intial: 1s } }\n"
    )
    with pytest.raises(PlanLoadError) as info:
        load_plan_text(text, "r.yaml")
    msg = str(info.value)
    assert "r.yaml:7:14: steps[0].retry.attempt: unknown field `attempt`" in msg
    assert "did you mean `attempts`?" in msg
    assert "r.yaml:7:26: steps[0].retry.backof: unknown field `backof`" in msg
    assert "r.yaml:11:38: steps[1].retry.backoff.intial: unknown field `intial`" in msg
    assert "did you mean `initial`?" in msg


def test_wrong_types_and_missing_required():
    errs = problems(
        """\
        version: "1"
        steps:
          - id: E0
            tool_name: 5
            timeout: 30
          - id: E1
            input: {}
        finish: { mode: loud }
        """
    )
    msgs = {at(p): p.message for p in errs}
    assert "version: input should be a valid integer" in msgs[(1, 10)]
    assert "missing required field `name`" in msgs[(1, 1)]
    assert "tool_name: input should be a valid string" in msgs[(4, 16)]
    assert "timeout: input should be a valid string" in msgs[(5, 14)]
    assert "missing required field `tool_name`" in msgs[(6, 5)]
    assert "finish.mode: input should be 'output'" in msgs[(8, 17)]


def test_steps_must_be_non_empty_list():
    assert at(one("version: 1\nname: t\nsteps: []\n")) == (3, 8)
    assert "must be a list" in one("version: 1\nname: t\nsteps: {a: 1}\n").message


def test_duplicate_ids_including_bodies():
    errs = problems(
        plan_with(
            """\
            - id: E1
              tool_name: map
              input:
                over: [1, 2]
                do: { id: E0, tool_name: value, input: { value: 1 } }
            """
        )
    )
    assert len(errs) == 1
    assert at(errs[0]) == (11, 17) and "duplicate step id `E0`" in errs[0].message
    ((note),) = errs[0].notes
    assert (note.message, str(note.span)) == ("first used here", "p.yaml:4:9")


def test_bad_ids_and_names():
    errs = problems(
        """\
        version: 1
        name: Issue-Review
        steps:
          - id: 1bad
            tool_name: x__y
          - tool_name: x__y
        """
    )
    msgs = {at(p): p for p in errs}
    assert "must match [a-z_][a-z0-9_]*" in msgs[(2, 7)].message
    assert msgs[(2, 7)].hint == "try `issue_review`"
    assert "must match [A-Za-z_][A-Za-z0-9_]*" in msgs[(4, 9)].message
    assert "needs an `id`" in msgs[(6, 5)].message


def test_template_parse_error_points_into_yaml():
    p = one(plan_with('- id: E1\n  tool_name: value\n  input: { value: "x {{ E0. }} y" }\n'))
    assert at(p) == (9, 31)  # the `}}` where a name was expected
    assert p.message == "steps[1].input.value: expected a name, found `}}`"
    p = one(
        plan_with(
            "- id: E1\n  tool_name: value\n  input:\n    value: |\n      line\n        a {{ E0 + }}\n"
        )
    )
    assert at(p) == (12, 21)


def test_template_references():
    errs = problems(
        plan_with(
            """\
            - id: E1
              tool_name: value
              input:
                value: "{{ E2.x }} {{ E1 }} {{ nothing }} {{ item }}"
              select: "{{ result.a }} {{ E0 }}"
            - id: E2
              tool_name: value
              input: { value: 1 }
            """
        )
    )
    msgs = {at(p): p.message for p in errs}
    assert len(errs) == 4, msgs
    assert "later step" in msgs[(10, 18)]
    assert "own result" in msgs[(10, 29)]
    assert "unknown name `nothing`" in msgs[(10, 38)]
    assert "unknown name `item`" in msgs[(10, 52)]


def test_block_scalar_positions():
    p = one(
        plan_with(
            """\
            - id: E1
              tool_name: agent
              input:
                prompt: |
                  first line
                    indented {{ later }}
                output_schema: { type: object }
            """
        )
    )
    assert at(p) == (12, 23) and "unknown name `later`" in p.message


def test_body_scope():
    errs = problems(
        plan_with(
            """\
            - id: E1
              tool_name: filter
              input:
                over: "{{ E0.lines }} {{ item }}"
                when: { value: "{{ item.ok }}", op: eq, to: "{{ index }}" }
            - id: E2
              tool_name: reduce
              input:
                over: "{{ E1.kept }}"
                initial: 0
                do: { tool_name: value, input: { value: "{{ accumulator }}{{ item }}" } }
            - id: E3
              tool_name: map
              input:
                over: "{{ E1.kept }}"
                do: { tool_name: value, input: { value: "{{ accumulator }}" } }
            """
        )
    )
    msgs = {at(p): p.message for p in errs}
    assert len(errs) == 2, msgs
    assert "unknown name `item`" in msgs[(10, 32)]
    assert "unknown name `accumulator`" in msgs[(22, 51)]


def test_body_restrictions():
    errs = problems(
        plan_with(
            """\
            - id: E1
              tool_name: map
              input:
                over: [1]
                do: { tool_name: decide, input: { when: { expr: "E0" }, then: { tool_name: value, input: { value: 1 } } } }
            - id: E2
              tool_name: decide
              input:
                when: { expr: "true" }
                then: [ a, b ]
            """
        )
    )
    msgs = {at(p): p.message for p in errs}
    assert "`decide` cannot be a body" in msgs[(11, 24)]
    assert "`then` must be a single step" in msgs[(16, 13)]


def test_agent_input_rules():
    errs = problems(
        plan_with(
            """\
            - id: E1
              tool_name: agent
              input:
                prompt: [not, text]
                output_schema: { type: array }
                max_iterations: 0
                tools: []
                promt: x
            - id: E2
              tool_name: agent
              input:
                output_schema: { type: object, properties: { a: { type: 12 } } }
                tools: linear__*
            """
        )
    )
    msgs = {at(p): p for p in errs}
    assert "`prompt` must be a text" in msgs[(10, 15)].message
    assert "type: object" in msgs[(11, 30)].message
    assert "`max_iterations` must be ≥ 1" in msgs[(12, 23)].message
    assert "`tools: []` is refused" in msgs[(13, 14)].message
    assert msgs[(14, 7)].hint == "did you mean `prompt`?"
    assert "`agent` needs `prompt`" in msgs[(18, 7)].message
    assert "not valid JSON Schema" in msgs[(18, 63)].message
    assert "list of tool names" in msgs[(19, 14)].message
    assert len(errs) == 8


def test_agent_none_tools_and_target():
    plan = load_plan_text(
        plan_with(
            """\
            - id: E1
              tool_name: agent
              input:
                prompt: hi
                output_schema: { type: object, $defs: { A: { type: string } } }
                tools: none
                agent: { kind: team.member, team: dev-team, member: "{{ E0.who }}" }
                write: ["{{ E0.path }}", notes.md]
                require_final: true
            """
        )
    )
    assert isinstance(plan.steps[1].compiled["agent"]["member"], ast.Template)
    p = one(
        plan_with(
            """\
            - id: E1
              tool_name: agent
              input:
                prompt: hi
                output_schema: { type: object }
                agent: { kind: team.member, team: dev }
            """
        )
    )
    assert at(p) == (12, 14) and "needs `member`" in p.message


def test_control_step_inputs():
    errs = problems(
        plan_with(
            """\
            - id: E1
              tool_name: exit
              input: { status: done, message: m, colour: red }
            - id: E2
              tool_name: map
              input: { over: [1], do: { tool_name: value, input: { value: 1 } }, concurrency: 0, on_item_error: ignore }
            - id: E3
              tool_name: filter
              input: { over: [1], when: { value: 1, op: equals, to: 1 } }
            - id: E4
              tool_name: ask
              input: { question: ok?, when_unanswered: maybe }
            """
        )
    )
    msgs = {at(p): p for p in errs}
    assert "`status` must be `ok` or `error`" in msgs[(9, 22)].message
    assert msgs[(9, 40)].message.endswith("unknown field `colour` in `exit` input")
    assert "`concurrency` must be ≥ 1" in msgs[(12, 85)].message
    assert "`on_item_error` must be `fail`, `skip` or `{ tolerate: N }`" in msgs[(12, 103)].message
    assert msgs[(12, 103)].hint is None or "fail" in msgs[(12, 103)].hint
    assert "unknown operator 'equals'" in msgs[(15, 47)].message
    assert "`when_unanswered` must be" in msgs[(18, 46)].message
    assert len(errs) == 6


def test_retry_codes_and_durations():
    errs = problems(
        """\
        version: 1
        name: t
        deadline: 10 minutes
        steps:
          - id: E0
            tool_name: x__y
            timeout: 0s
            retry: { attempts: -1, on: [transient, tool_eror], backoff: { initial: 1x } }
        """
    )
    msgs = {at(p): p for p in errs}
    assert "invalid duration" in msgs[(3, 11)].message
    assert "positive duration" in msgs[(7, 14)].message
    assert "attempts: input should be greater than or equal to 0" in msgs[(8, 24)].message
    assert "`tool_eror` is not a retryable error code" in msgs[(8, 44)].message
    assert "invalid duration" in msgs[(8, 76)].message


def test_literal_ask_default_outside_choices_is_a_load_error():
    errs = _problems(
        _one_step(
            "{id: E0, tool_name: ask, input: {question: pick, choices: [a, b], "
            "when_unanswered: {default: c}}}"
        )
    )
    assert errs == [
        "p.yaml:4:98: steps[0].input.when_unanswered.default: the default 'c' is not one of "
        "the choices ['a', 'b']"
    ]


def test_literal_ask_default_against_schema_is_a_load_error():
    errs = _problems(
        _one_step(
            "{id: E0, tool_name: ask, input: {question: pick, schema: {type: integer}, "
            "when_unanswered: {default: nope}}}"
        )
    )
    assert errs == [
        "p.yaml:4:106: steps[0].input.when_unanswered.default: the default does not match "
        "`schema`: 'nope' is not of type 'integer'"
    ]


def test_valid_literal_ask_defaults_load():
    load_plan_text(
        _one_step(
            "{id: E0, tool_name: ask, input: {question: pick, choices: [1, 2], "
            "schema: {type: integer}, when_unanswered: {default: 2}}}"
        )
    )


def test_absurd_retry_settings_are_load_errors():
    errs = _problems(
        _one_step(
            "{id: E0, tool_name: value, input: {value: 1}, retry: {attempts: 21, on: [timeout], "
            "backoff: {initial: 100000h, factor: 1e308, max: 2h}}}"
        )
    )
    assert errs == [
        "p.yaml:4:69: steps[0].retry.attempts: `attempts` is 21; at most 20 extra tries",
        "p.yaml:4:107: steps[0].retry.backoff.initial: `backoff.initial` is 100000h; "
        "a retry waits at most 1h",
        "p.yaml:4:124: steps[0].retry.backoff.factor: `backoff.factor` is 1e+308; at most 10",
        "p.yaml:4:136: steps[0].retry.backoff.max: `backoff.max` is 2h; a retry waits at most 1h",
    ]


def test_retry_at_the_bounds_loads():
    load_plan_text(
        _one_step(
            "{id: E0, tool_name: value, input: {value: 1}, retry: {attempts: 20, on: [timeout], "
            "backoff: {initial: 1h, factor: 10, max: 60m}}}"
        )
    )


def test_sub_plans_and_cycles():
    errs = problems(
        """\
        version: 1
        name: main
        steps:
          - { id: E0, tool_name: plan__a, input: {} }
        plans:
          a:
            name: a
            steps:
              - { id: E0, tool_name: plan__b, input: {} }
          b:
            name: b
            steps:
              - { id: E0, tool_name: plan__a, input: {} }
            plans: {}
        """
    )
    msgs = {at(p): p for p in errs}
    assert "cannot have its own `plans`" in msgs[(14, 5)].message
    cyc = [p for p in errs if p.code == "plan-cycle"]
    assert len(cyc) == 1 and "a → b → a" in cyc[0].message
    assert at(cyc[0]) == (13, 30)


def test_load_plan_data_uses_paths():
    data = {
        "version": 1,
        "name": "t",
        "steps": [
            {"id": "E0", "tool_name": "x__y", "input": {}},
            {"id": "E1", "tool_name": "map", "input": {"over": [1], "do": "nope"}},
            {"id": "E2", "tool_name": "value", "input": {"value": "{{ E9 }}"}},
        ],
    }
    with pytest.raises(PlanLoadError) as info:
        load_plan_data(data, "gen.flow")
    msgs = [str(p) for p in info.value.errors]
    assert any(m.startswith("gen.flow: steps[1].input.do: ") for m in msgs), msgs
    assert any(m.startswith("gen.flow: steps[2].input.value: unknown name `E9`") for m in msgs)
    assert all(p.span.line == 0 for p in info.value.errors)


def test_load_plan_missing_file(tmp_path):
    with pytest.raises(PlanLoadError) as info:
        load_plan(tmp_path / "nope.yaml")
    assert "cannot read plan file" in str(info.value)


def test_recursive_alias_and_non_mapping():
    assert "must be a mapping" in one("- a\n- b\n").message
    errs = problems("version: 1\nname: t\nsteps: &s [*s]\n")
    assert errs


def test_every_error_has_a_position():
    errs = problems(
        plan_with(
            """\
            - id: E1
              tool_name: verify
              input: { checks: [ { ok: "{{ E0 }}" } ], judges: {} }
            """
        )
    )
    assert errs and all(p.span.line > 0 and p.span.file == "p.yaml" for p in errs)


# -- robustness: any data gives a Plan or a PlanLoadError, never a traceback ------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_KEYS = st.sampled_from(
    [
        "id",
        "tool_name",
        "toolName",
        "input",
        "timeout",
        "retry",
        "select",
        "meta",
        "over",
        "do",
        "then",
        "else",
        "when",
        "expr",
        "value",
        "op",
        "to",
        "all",
        "not",
        "prompt",
        "output_schema",
        "tools",
        "branches",
        "status",
        "agent",
        "kind",
        "attempts",
        "on",
        "backoff",
        "initial",
    ]
)
_TOOLS = st.sampled_from(
    ["map", "decide", "agent", "exit", "parallel", "filter", "x__y", "plan__t"]
)
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.text(max_size=8),
    st.sampled_from(["{{ E0 }}", "{{ item.", "1s", "object", "E0 > 1", "none"]),
    _TOOLS,
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=20,
)
_STEP = st.dictionaries(_KEYS, _VALUES, max_size=5).map(
    lambda d: {**d, "tool_name": d.get("tool_name", "map")}
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_STEP | _VALUES, min_size=0, max_size=3), _VALUES)
def test_any_data_loads_or_fails_cleanly(steps, finish):
    data = {"version": 1, "name": "t", "steps": steps, "finish": finish}
    try:
        load_plan_data(data, "fuzz")
    except PlanLoadError as exc:
        assert exc.errors and all(isinstance(p, Diagnostic) for p in exc.errors)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=60))
def test_any_text_loads_or_fails_cleanly(text):
    try:
        load_plan_text(text, "fuzz.yaml")
    except PlanLoadError as exc:
        assert exc.errors


@pytest.mark.parametrize(
    ("scalar", "value"),
    [
        ("!!int 0x1F", 31),
        ("!!float 2.5", 2.5),
        ("!!bool false", False),
        ("!!bool True", True),
        ("!!null ~", None),
    ],
)
def test_explicit_scalar_tags_convert(scalar, value):
    src = f"version: 1\nname: t\nsteps:\n  - id: a\n    tool_name: value\n    input:\n      value: {scalar}\n"
    assert load_plan_text(src, "p.yaml").steps[0].input["value"] == value


@pytest.mark.parametrize("scalar", ["!!int abc", "!!float x1", "!!bool maybe", "!!null nope"])
def test_explicit_scalar_tag_that_does_not_convert_is_refused(scalar):
    err = one(
        f"""\
        version: 1
        name: t
        steps:
          - id: a
            tool_name: value
            input:
              value: {scalar}
        """
    )
    assert at(err) == (7, 14)
    assert f"is not a valid `{scalar.split()[0]}`" in err.message


@pytest.mark.parametrize(
    ("scalar", "column"),
    [
        (r'"\"q\" {{ 1 + }}"', 28),  # each \" is two characters in the file, one in the text
        (r'"\u00e9\x41 {{ 1 + }}"', 33),
        ("'it''s {{ 1 + }}'", 28),  # '' is one quote in the text
        ('"plain {{ 1 + }}"', 28),
    ],
)
def test_template_error_columns_count_escapes(scalar, column):
    err = one(
        f"""\
        version: 1
        name: t
        steps:
          - id: a
            tool_name: value
            input:
              value: {scalar}
        """
    )
    assert at(err) == (7, column), err.message
    assert "`}}`" in err.message
