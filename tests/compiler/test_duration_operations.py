"""Durations compare and subtract by length (docs/reference/lexical.md "Durations",
docs/decisions.md "Durations by value (durvalues)"): the checker accepts ordering two durations
and `-` of computed ones again, and the compiler writes them through `seconds` and
`from_seconds` (compiler/durations.py), so what the checker accepts is what the run computes;
a prefix `-` of a duration stays a type mismatch (a duration is never negative)."""

from __future__ import annotations

import pytest

from agentflow.compiler.api import check_source
from agentflow.compiler.lower_expressions import absent_reads_null
from agentflow.compiler.lowering import lower
from agentflow.grammar import ast
from agentflow.runtime.expressions import expr_text

HEAD = (
    "type Job { name: text, wait: duration }\n"
    "input { w: duration, ws: duration[], o: duration?, n: int, job: Job, jobs: Job[] }\n"
)


def _output(body: str, result: str = "json") -> str:
    """The template of ``return <body>`` compiled."""
    checked = check_source(HEAD + f"stage s -> {result} {{\n  return {body}\n}}\n", "d.flow")
    assert checked.ok, checked.diagnostics
    plan = lower(checked, file="d.flow")
    if plan["steps"]:  # a stage's value is a `value` step the finish reads
        (step,) = plan["steps"]
        return step["input"]["value"]
    return plan["finish"]["output"]


@pytest.mark.parametrize("op", ["<", "<=", ">", ">=", "==", "!="])
def test_comparing_two_durations_checks_and_compiles_through_seconds(op):
    assert check_source(HEAD + f"stage s -> bool {{ return input.w {op} 5m }}\n", "d.flow").ok
    assert _output(f"input.w {op} 5m", "bool") == f'{{{{ seconds(input.w) {op} seconds("5m") }}}}'


def test_subtracting_durations_checks_and_never_goes_below_zero():
    src = HEAD + "stage s -> int {\n  sleep 1m - input.w\n  return 1\n}\n"
    assert check_source(src, "d.flow").ok
    assert _output("input.w - 30s", "duration") == (
        '{{ from_seconds(max([seconds(input.w) - seconds("30s"), 0])) }}'
    )


def test_written_durations_are_computed_by_the_compiler():
    assert _output("2h - 1500ms", "duration") == '{{ "1h59m58s500ms" }}'
    assert _output("30s - 1m", "duration") == '{{ "0ms" }}'
    assert _output("60s == 1m", "bool") == "{{ true }}"
    assert _output("90s < 1m", "bool") == "{{ false }}"


def test_lists_of_durations_and_in_compare_by_length():
    assert _output("input.ws == [1h, 90m]", "bool") == (
        '{{ seconds(input.ws) == seconds(["1h", "90m"]) }}'
    )
    assert _output("input.ws == []", "bool") == "{{ seconds(input.ws) == seconds([]) }}"
    assert _output("input.w in input.ws", "bool") == "{{ seconds(input.w) in seconds(input.ws) }}"
    assert _output("input.o == 90s", "bool") == (
        '{{ seconds((input.o ?? null)) == seconds("90s") }}'
    )


def test_what_is_not_two_durations_is_left_as_written():
    assert _output("input.o == null", "bool") == "{{ (input.o ?? null) == null }}"
    assert _output("input.w + 30s", "duration") == '{{ input.w + "30s" }}'
    assert _output("input.n < 3", "bool") == "{{ input.n < 3 }}"


def test_a_prefix_minus_of_a_duration_is_a_type_mismatch():
    for body in ("-input.w", "-30s"):
        src = HEAD + f"stage s -> int {{\n  sleep 1m + {body}\n  return 1\n}}\n"
        (diag,) = check_source(src, "d.flow").diagnostics
        assert diag.code == "type-mismatch"
        assert diag.message == "`-` needs a number, found `duration` (a duration is never negative)"
        assert diag.hint is not None and "from_seconds(seconds(d) * 2)" in diag.hint


def test_other_arithmetic_on_durations_points_at_seconds():
    src = HEAD + "stage s -> duration {\n  return input.w * 2\n}\n"
    (diag,) = check_source(src, "d.flow").diagnostics
    assert diag.code == "type-mismatch"
    assert diag.hint is not None and "from_seconds" in diag.hint


def test_seconds_is_typed_by_its_argument():
    src = HEAD + (
        "stage s -> { a: number, b: number[], c: duration } {\n"
        "  return { a: seconds(input.w), b: seconds(input.ws), c: from_seconds(seconds(input.w)) }\n"
        "}\n"
    )
    assert check_source(src, "d.flow").ok
    bad = HEAD + "stage s -> number {\n  return seconds(input.n)\n}\n"
    assert [d.code for d in check_source(bad, "d.flow").diagnostics] == ["type-mismatch"]


def test_expressions_run_from_the_checked_ast_see_the_same_rewrite():
    """`test` expectations and eval scorers evaluate the checked AST (absent_reads_null): the
    comparison of durations there is the one the plan carries."""
    src = HEAD + "stage s -> bool {\n  return input.w == 90s\n}\n"
    result = check_source(src, "d.flow")
    (stage,) = [i for i in result.module.items if isinstance(i, ast.StageDecl)]
    (ret,) = stage.body.stmts
    assert isinstance(ret, ast.ReturnStmt)
    rewritten = absent_reads_null(ret.value, result)
    assert isinstance(rewritten, ast.Binary)
    assert isinstance(rewritten.left, ast.FuncCall) and rewritten.left.name == "seconds"
    assert isinstance(rewritten.right, ast.FuncCall) and rewritten.right.name == "seconds"
    # and a message names it as written (grammar/written.py)
    assert expr_text(rewritten) == "input.w == 90s"


def test_a_long_chain_of_subtractions_is_one_saturating_subtraction():
    """`a - b - c` is `max(0, a - b - c)` (every term is ≥ 0), so forty of them nest no deeper
    than one: nested, they passed the template parser's 100 levels of brackets."""
    template = _output("input.w" + " - 1ms" * 40, "duration")
    assert template.startswith('{{ from_seconds(max([seconds(input.w) - seconds("1ms") - ')
    assert template.count("from_seconds(") == 1
    assert _output("2h - 1s - 500ms", "duration") == '{{ "1h59m58s500ms" }}'


def test_objects_holding_durations_are_taken_apart_when_their_operands_are_paths():
    assert _output('input.job == { name: "x", wait: 90s }', "bool") == (
        "{{ {name: input.job.name, wait: seconds(input.job.wait)} == "
        '{name: "x", wait: seconds("90s")} }}'
    )
    assert _output("input.jobs[0] == input.job", "bool") == (
        "{{ {name: input.jobs[0].name, wait: seconds(input.jobs[0].wait)} == "
        "{name: input.job.name, wait: seconds(input.job.wait)} }}"
    )


WAIT = '{fields: {wait: "duration"}}'


def test_durations_inside_lists_maps_and_other_values_compare_through_canonical():
    """Where `_objects` cannot take a value apart (a list of objects, a map, an optional object,
    a conditional), both sides go through `canonical` with the shape the static type gives:
    each read once, every duration in one writing (docs/reference/lexical.md "Durations")."""
    assert _output("input.jobs == [input.job]", "bool") == (
        f"{{{{ canonical(input.jobs, {{items: {WAIT}}}) == "
        f"canonical([input.job], {{items: {WAIT}}}) }}}}"
    )
    assert _output("(if input.n > 0 then input.job else input.job) == input.job", "bool") == (
        f"{{{{ canonical(if input.n > 0 then input.job else input.job, {WAIT}) == "
        f"canonical(input.job, {WAIT}) }}}}"
    )
    assert _output("input.job in input.jobs", "bool") == (
        f"{{{{ canonical(input.job, {WAIT}) in canonical(input.jobs, {{items: {WAIT}}}) }}}}"
    )
    assert _output("{ a: input.w } == { a: 1m }", "bool") == (
        '{{ {a: seconds(input.w)} == {a: seconds("1m")} }}'
    )
    # an object holding a list of objects with durations: `canonical` whole, not taken apart
    deep = _output("{ jobs: input.jobs } == { jobs: [input.job] }", "bool")
    assert deep.startswith("{{ canonical({jobs: input.jobs}, {fields: {jobs: {items:")
    # no durations, a `null`, an empty list, a union a run cannot tell apart: as written
    assert _output("input.jobs == []", "bool") == "{{ input.jobs == [] }}"
    assert _output("[input.n] == [1]", "bool") == "{{ [input.n] == [1] }}"


def test_library_functions_over_values_holding_durations_go_through_canonical():
    assert _output("index_of(input.jobs, input.job)", "int") == (
        f"{{{{ index_of(canonical(input.jobs, {{items: {WAIT}}}), canonical(input.job, {WAIT})) }}}}"
    )
    assert _output("unique(input.jobs)", "Job[]") == (
        f"{{{{ unique(input.jobs, canonical(input.jobs, {{items: {WAIT}}})) }}}}"
    )
    # a pure call is read twice (the same value); a tool call is its step, read twice
    assert _output("unique(take(input.ws, 2))", "duration[]") == (
        "{{ unique(take(input.ws, 2), seconds(take(input.ws, 2))) }}"
    )
    assert _output("count_by(input.ws)", "map<int>") == (
        '{{ count_by(canonical(input.ws, {items: "duration"})) }}'
    )
    assert _output('group_by(input.jobs, "wait")', "map<Job[]>") == (
        f'{{{{ group_by(canonical(input.jobs, {{items: {WAIT}}}), "wait") }}}}'
    )
    # grouped by a field that is no duration: as written
    assert _output('group_by(input.jobs, "name")', "map<Job[]>") == (
        '{{ group_by(input.jobs, "name") }}'
    )


def test_a_subtraction_nested_too_deep_once_compiled_is_the_check_s_diagnostic_not_a_compiler_bug():
    """`a - (b - (c - …))` compiles four brackets a level (`from_seconds(max([…]))`): past the
    plan's bracket limit `check` says so, as `compile` does, never an internal error."""
    from agentflow import api
    from agentflow.errors import CompileError

    e = "1s"
    for _ in range(30):
        e = f"input.w - ({e})"
    source = HEAD + f"stage s -> duration {{\n  return {e}\n}}\n"
    checked = check_source(source, "d.flow")
    (d,) = [d for d in checked.diagnostics if d.severity == "error"]
    assert d.code == "unsupported-construct"
    assert "nested too deeply once compiled" in d.message
    assert "internal" not in d.message
    with pytest.raises(CompileError) as raised:
        api.compile_source(source, "d.flow")
    assert d.message in str(raised.value)
