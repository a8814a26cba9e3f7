"""`test` blocks are parsed and type-checked with the flow (docs/reference/testing.md): stubs
against the contracts they stand in for, expectations as `bool`, error codes; `flowc compile`
leaves them out of the plan."""

from __future__ import annotations

from agentflow.api import compile_source
from agentflow.compiler.api import check_source

FLOW = """\
type Summary { top: text[], count: int }
input { dir: path }
use agent "helper" as helper
extern tool fetch(url: text) -> { body: text }

stage todos -> Summary {
  let hits = grep(pattern: "TODO", path: input.dir)
  if hits.count == 0 {
    return { top: [], count: 0 }
  }
  return agent(helper) {
    task "Pick from ${hits}"
    tools none
    expect Summary
  }
}
"""


def _diags(tests: str, *, without_input: bool = False) -> list[tuple[str, str, str]]:
    """The diagnostics of ``FLOW`` + ``tests``; those of a test written without ``input``
    (whose ``{}`` lacks ``dir``) only when ``without_input``."""
    src = FLOW + tests
    result = check_source(src, "t.flow")
    lines = src.split("\n")
    return [
        (d.code, lines[d.span.line - 1][d.span.column - 1 : d.span.end_column - 1], d.message)
        for d in result.diagnostics
        if without_input or "gives no `input`" not in d.message
    ]


def test_a_well_typed_test_checks_clean():
    assert (
        _diags(
            """
test "pick" {
  input { dir: "src" }
  stub tool grep returns [{ path: "a.py", line: 1, text: "TODO" }]
  stub agent helper returns { top: ["a"], count: 1 }
  stub tool fetch fails "timeout"
  expect output.count == 1 and todos.top == ["a"]
  expect calls.grep == 1 and inferences <= 1
}
"""
        )
        == []
    )


def test_a_stub_answer_of_the_wrong_type_is_an_error_at_the_stub_field():
    found = _diags(
        """
test "pick" {
  stub agent helper returns { top: ["a"], count: "one" }
}
"""
    )
    assert [(c, text) for c, text, _ in found] == [("stub-mismatch", '"one"')]
    assert "the agent `helper` in stage `todos`" in found[0][2]


def test_the_stub_mismatch_notes_the_contract_it_breaks():
    src = (
        FLOW
        + '\ntest "t" {\n  input { dir: "." }\n  stub agent helper returns { top: [], count: 1.5 }\n}\n'
    )
    (diag,) = check_source(src, "t.flow").diagnostics
    assert diag.code == "stub-mismatch"
    assert [n.message for n in diag.notes][
        -1
    ] == "the agent `helper` in stage `todos` expects `Summary`"
    assert diag.notes[-1].span.line == 14  # the `expect Summary` clause


def test_a_stage_stub_is_checked_against_the_agents_of_that_stage():
    found = _diags('\ntest "t" {\n  stub stage todos returns { top: "a", count: 1 }\n}\n')
    assert [c for c, _, _ in found] == ["stub-mismatch"]


def test_a_tool_stub_is_checked_against_the_declared_result():
    found = _diags('\ntest "t" {\n  stub tool fetch returns { body: 3 }\n}\n')
    assert [(c, t) for c, t, _ in found] == [("stub-mismatch", "3")]


def test_stubs_naming_nothing_are_unknown_stub_targets_with_a_suggestion():
    found = _diags(
        '\ntest "t" {\n  stub agent helpr returns {}\n  stub stage todoz returns {}\n'
        "  stub tool fech returns {}\n}\n"
    )
    assert [(c, t) for c, t, _ in found] == [
        ("unknown-stub-target", "helpr"),
        ("unknown-stub-target", "todoz"),
        ("unknown-stub-target", "fech"),
    ]
    src = FLOW + '\ntest "t" {\n  input { dir: "." }\n  stub agent helpr returns {}\n}\n'
    result = check_source(src, "t.flow")
    assert result.diagnostics[0].hint == "did you mean `helper`?"


def test_expectations_must_be_bool_and_codes_known():
    found = _diags('\ntest "t" {\n  expect output.count\n  expect fail "timout"\n}\n')
    assert [c for c, _, _ in found] == ["type-mismatch", "unknown-error-code"]


def test_expectations_see_output_stages_inferences_and_calls_only():
    found = _diags('\ntest "t" {\n  expect calls.grepp == 0\n  expect hits.count == 0\n}\n')
    assert [(c, t) for c, t, _ in found] == [("unknown-field", "grepp"), ("unknown-name", "hits")]


def test_a_test_input_must_fit_the_flow_input_and_be_a_constant():
    found = _diags('\ntest "t" {\n  input { dir: 3 }\n}\ntest "u" {\n  input { dir: todos }\n}\n')
    assert [c for c, _, _ in found] == ["type-mismatch", "invalid-value"]


def test_a_test_without_input_is_checked_as_the_input_it_runs_with():
    found = _diags('\ntest "no input" {\n  expect true\n}\n', without_input=True)
    assert [(c, t) for c, t, _ in found] == [("type-mismatch", '"no input"')]
    result = check_source(FLOW + '\ntest "no input" {\n  expect true\n}\n', "t.flow")
    (d,) = result.diagnostics
    assert "lacks the required field `dir`" in d.message
    assert d.hint == "give the test its input: `input { dir: … }`"
    assert d.notes[0].message == "field `dir` is required"


def test_a_test_without_input_of_a_flow_whose_input_fields_are_optional_checks_clean():
    src = 'input { dir: path? }\nstage s -> int {\n  return 1\n}\ntest "t" {\n  expect s == 1\n}\n'
    assert check_source(src, "t.flow").diagnostics == []


def test_a_test_name_given_twice_is_a_duplicate_definition():
    found = _diags('\ntest "t" {\n  expect true\n}\ntest "t" {\n  expect true\n}\n')
    assert [c for c, _, _ in found] == ["duplicate-definition"]


def test_test_stays_a_name_inside_bodies():
    src = """\
stage s -> int {
  let test = [1, 2]
  if 1 in test {
    return test.count
  }
  return 0
}
"""
    assert check_source(src, "t.flow").diagnostics == []


def test_an_unclosed_stage_before_a_test_recovers_at_the_test():
    src = 'stage s -> int {\n  return 1\n\ntest "t" {\n  expect s == 1\n}\n'
    result = check_source(src, "t.flow")
    assert [d.code for d in result.diagnostics] == ["syntax-error"]
    assert [t.name for t in result.tests] == ["t"]


def test_compile_leaves_tests_out_of_the_plan():
    with_tests = compile_source(
        FLOW + '\ntest "t" {\n  input { dir: "." }\n  expect output.count == 0\n}\n', "t.flow"
    )
    without = compile_source(FLOW, "t.flow")
    assert with_tests.plan == without.plan


ROUTE = """\
type Triage { severity: "low" | "medium" | "high" }
use agent "triager" as triager
stage triage -> Triage {
  agent(triager) { task "Triage it" expect Triage }
}
"""


def test_a_case_field_keeps_its_literal_type_and_fills_a_literal_union():
    src = ROUTE + (
        'test "by severity" map [{ severity: "high" }, { severity: "low" }] as case {\n'
        "  stub agent triager returns { severity: case.severity }\n"
        "  expect triage.severity == case.severity\n}\n"
    )
    assert check_source(src, "t.flow").diagnostics == []


def test_a_case_that_does_not_fit_makes_the_stub_a_mismatch():
    src = ROUTE + (
        'test "by severity" map [{ severity: "high" }, { severity: "urgent" }] as case {\n'
        "  stub agent triager returns { severity: case.severity }\n}\n"
    )
    (diag,) = check_source(src, "t.flow").diagnostics
    assert diag.code == "stub-mismatch"
    assert '"urgent"' in diag.message


def test_cases_are_a_written_out_list_and_only_the_case_is_a_name():
    src = ROUTE + (
        'test "t" map triage as case {\n  expect true\n}\n'
        'test "u" map [{ s: "low" }] as case {\n'
        "  stub agent triager returns { severity: triage.severity }\n}\n"
    )
    codes = [d.code for d in check_source(src, "t.flow").diagnostics]
    assert codes == ["invalid-value", "invalid-value"]
