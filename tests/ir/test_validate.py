"""validate_plan on in-memory plans and resolve_tools against a catalog
(docs/spec/RUNTIME.md §4)."""

from __future__ import annotations

import textwrap

from support.paths import SPEC_EXAMPLES

from agentflow.ir import Plan, Step, load_plan, load_plan_text, resolve_tools, validate_plan

EXAMPLE = str(SPEC_EXAMPLES / "issue-review.plan.yaml")

NOT_CONFIGURED = (
    "step E1: `tools` pattern 'linear__*' needs MCP server 'linear', "
    "which is not configured under [mcp.linear]"
)


def test_resolve_tools_exact_message_for_unconfigured_server():
    plan = load_plan(EXAMPLE)
    problems = resolve_tools(plan, {"builtin__read_file"}, set())
    msgs = [p.message for p in problems]
    assert NOT_CONFIGURED in msgs
    assert (
        "step E0: tool 'linear__list_issues' needs MCP server 'linear', "
        "which is not configured under [mcp.linear]" in msgs
    )
    pattern = next(p for p in problems if p.message == NOT_CONFIGURED)
    assert (pattern.span.line, pattern.span.column) == (16, 15)


def test_resolve_tools_configured_prefix_forms():
    plan = load_plan(EXAMPLE)
    assert resolve_tools(plan, set(), {"linear"}) == []
    assert resolve_tools(plan, set(), {"linear__"}) == []
    # a prefix registered through the Python API counts as configured
    assert resolve_tools(plan, {"linear__list_issues"}, set()) == []


def plan_of(steps: str, extra: str = "") -> Plan:
    text = "version: 1\nname: main\nsteps:\n" + textwrap.indent(textwrap.dedent(steps), "  ")
    return load_plan_text(text + extra, "p.yaml")


def test_resolve_exact_servers_and_plans():
    plan = plan_of(
        """\
        - id: E0
          tool_name: builtin__read_fil
          input: {}
        - id: E1
          tool_name: user__mine
          input: {}
        - id: E2
          tool_name: plan__sub
          input: {}
        - id: E3
          tool_name: plan__elsewhere
          input: {}
        - id: E4
          tool_name: agent
          input:
            prompt: go
            output_schema: { type: object }
            tools: ["builtin__*", "user__nothing_*", "*__search", "*", "plan__sub", "github__get"]
        - id: E5
          tool_name: map
          input: { over: [1], do: { tool_name: nowhere, input: {} } }
        """,
        "plans:\n  sub:\n    name: sub\n    steps: [{ id: E0, tool_name: user__mine, input: {} }]\n",
    )
    catalog = {"builtin__read_file", "builtin__grep", "user__mine", "plan__elsewhere"}
    problems = resolve_tools(plan, catalog, set())
    msgs = {p.message: p for p in problems}
    assert "step E0: unknown tool 'builtin__read_fil'" in msgs
    assert msgs["step E0: unknown tool 'builtin__read_fil'"].hint == (
        "did you mean `builtin__read_file`?"
    )
    assert "step E4: `tools` pattern 'user__nothing_*' matches no tool" in msgs
    assert (
        "step E4: `tools` entry 'github__get' needs MCP server 'github', "
        "which is not configured under [mcp.github]" in msgs
    )
    assert "step E5/do: unknown tool 'nowhere'" in msgs
    assert len(problems) == 4, list(msgs)
    loc = msgs["step E5/do: unknown tool 'nowhere'"].span
    assert (loc.line, loc.column) == (24, 42)


def test_resolve_tools_sub_plan_label():
    plan = plan_of(
        "- { id: E0, tool_name: plan__sub, input: {} }\n",
        "plans:\n  sub:\n    name: sub\n    steps: [{ id: E0, tool_name: zzz__x, input: {} }]\n",
    )
    (problem,) = resolve_tools(plan, set(), set())
    assert problem.message.startswith("step E0 (plan sub): tool 'zzz__x' needs MCP server 'zzz'")


def test_validate_programmatic_plan():
    body = Step(tool_name="map", input={"over": [], "do": Step(tool_name="x__y")})
    plan = Plan(
        name="Bad Name",
        steps=[
            Step(id="E0", tool_name="map", input={"over": "{{ input.xs }}", "do": body}),
            Step(tool_name="x__y", timeout="soon"),
        ],
    )
    problems = validate_plan(plan, "mem")
    msgs = [p.message for p in problems]
    assert any("plan name 'Bad Name'" in m for m in msgs)
    assert any("steps[0].input.do.tool_name: `map` cannot be a body" in m for m in msgs)
    assert any("steps[1]: a top-level step needs an `id`" in m for m in msgs)
    assert any("steps[1].timeout: invalid duration" in m for m in msgs)
    assert all(p.span.file == "mem" and p.span.line == 0 for p in problems)
    # templates were compiled on the way
    assert plan.steps[0].compiled["over"].whole is not None


def test_validate_clean_plan_has_no_problems():
    plan = Plan(
        name="ok",
        steps=[Step(id="E0", tool_name="value", input={"value": "{{ input }}"})],
    )
    assert validate_plan(plan) == []
    assert plan.effective_finish().output == "{{ E0 }}"


def test_self_cycle():
    plan = Plan(name="me", steps=[Step(id="E0", tool_name="plan__me")])
    (problem,) = validate_plan(plan)
    assert problem.code == "plan-cycle" and "me → me" in problem.message


def test_an_agent_pattern_never_counts_the_plan_it_runs_in():
    """`tools: ["plan__*"]` with no other plan matches nothing at run time (an agent is never
    offered its own plan), so load-time validation says so too."""
    text = """\
version: 1
name: main
steps:
  - id: E0
    tool_name: agent
    input:
      prompt: go
      output_schema: {type: object}
      tools: ["plan__*"]
"""
    plan = load_plan_text(text, "p.yaml")
    problems = resolve_tools(plan, {"builtin__read_file"}, set())
    assert [p.message for p in problems] == ["step E0: `tools` pattern 'plan__*' matches no tool"]
    assert resolve_tools(plan, {"builtin__read_file", "plan__other"}, set()) == []
