"""Successive stub answers (`returns A then B`), `stub ask` and `stub step`, and `replay` in a
`test` block are checked like single answers (docs/reference/testing.md "Items of a test"):
every answer against the contract it stands in for."""

from __future__ import annotations

from agentflow.compiler.api import check_source

FLOW = """\
type Plan { steps: text[] }
input { goal: text }
use agent "helper" as helper
extern tool size_of(url: text) -> int

stage plan -> Plan {
  let approved = ask "Go ahead with ${input.goal}?" expect bool
  require approved else fail "not approved"
  let size = size_of(url: "https://example.com")
  return agent(helper) { task "Plan ${input.goal} in ${size}" tools none expect Plan }
}

stage review -> text {
  let note = ask "Anything to add?" expect text
  return "${note}: ${plan.steps}"
}
"""


def _diags(tests: str) -> list[tuple[str, str]]:
    """The diagnostics of ``FLOW`` + ``tests``, but for those of a test written without
    ``input`` (whose ``{}`` lacks ``goal``: test_test_block_checking.py checks them)."""
    src = FLOW + tests
    result = check_source(src, "t.flow")
    lines = src.split("\n")
    return [
        (d.code, lines[d.span.line - 1][d.span.column - 1 : d.span.end_column - 1])
        for d in result.diagnostics
        if "gives no `input`" not in d.message
    ]


def test_well_typed_sequences_asks_steps_and_a_replay_check_clean():
    assert (
        _diags(
            '\ntest "t" {\n'
            '  stub agent helper returns { steps: ["a"] } then { steps: [] }\n'
            "  stub tool size_of returns 1 then 2 then 3\n"
            "  stub ask approved returns true\n"
            '  stub ask review returns "none" then "more"\n'
            "  stub step size returns 4\n"
            '  replay "plan.jsonl"\n'
            "}\n"
        )
        == []
    )


def test_each_answer_of_a_sequence_is_checked_against_the_contract():
    found = _diags(
        '\ntest "t" {\n  stub agent helper returns { steps: ["a"] } then { steps: 1 }\n'
        '  stub tool size_of returns 1 then "two"\n}\n'
    )
    assert found == [("stub-mismatch", "1"), ("stub-mismatch", '"two"')]


def test_an_ask_stub_is_checked_against_the_asks_expect_type():
    found = _diags('\ntest "t" {\n  stub ask approved returns "yes"\n}\n')
    assert found == [("stub-mismatch", '"yes"')]
    tests = '\ntest "t" {\n  input { goal: "g" }\n  stub ask approved returns "yes"\n}\n'
    (d,) = check_source(FLOW + tests, "t.flow").diagnostics
    assert "the `ask` in stage `plan`" in d.message
    assert d.notes[0].span is not None and d.notes[0].span.line == 7


def test_a_step_stub_is_checked_against_the_steps_type():
    assert _diags('\ntest "t" {\n  stub step size returns "big"\n}\n') == [
        ("stub-mismatch", '"big"')
    ]


def test_ask_and_step_stubs_naming_nothing_are_unknown_targets_with_a_suggestion():
    src = '\ntest "t" {\n  stub ask aproved returns true\n  stub step sise returns 1\n}\n'
    assert _diags(src) == [("unknown-stub-target", "aproved"), ("unknown-stub-target", "sise")]
    result = check_source(FLOW + src.replace("{\n", '{\n  input { goal: "g" }\n', 1), "t.flow")
    assert [d.hint for d in result.diagnostics] == [
        "did you mean `approved`?",
        "did you mean `size`?",
    ]


def test_then_step_and_replay_stay_names_outside_tests():
    src = "input { step: int }\nstage replay -> int {\n  let then = input.step\n  return then\n}\n"
    assert check_source(src, "t.flow").diagnostics == []


def test_a_let_computed_from_a_step_cannot_be_stubbed_as_a_step():
    src = (
        'stage s -> int {\n  let n = glob(pattern: "*").count\n  return n\n}\n'
        'test "t" {\n  stub step n returns 3\n}\n'
    )
    (d,) = check_source(src, "t.flow").diagnostics
    assert d.code == "unknown-stub-target"
    assert d.message == "`n` is not a step of its own: its value is computed from other values"
    assert (d.span.line, d.notes[0].span.line) == (6, 2)


def test_a_verdict_is_stubbed_by_its_structure():
    src = (
        "stage s -> bool {\n"
        '  let checks = verify { judge "fine?" }\n'
        "  return checks.passed\n}\n"
        'test "t" {\n  stub step checks returns { passed: true, failures: [] }\n}\n'
        'test "u" {\n  stub step checks returns { passed: "yes", failures: [] }\n}\n'
    )
    assert [d.code for d in check_source(src, "t.flow").diagnostics] == ["stub-mismatch"]


def test_a_test_replays_one_cassette():
    found = _diags('\ntest "t" {\n  replay "a.jsonl"\n  replay "b.jsonl"\n}\n')
    assert found == [("duplicate-definition", 'replay "b.jsonl"')]


def test_the_formatter_lays_out_replays_and_answers_in_turn():
    from agentflow.compiler.fmt import format_source

    src = FLOW + '\ntest "t" {\n  replay   "a.jsonl"\n  stub tool size_of   returns 1   then 2\n}\n'
    assert format_source(src).endswith(
        'test "t" {\n  replay "a.jsonl"\n  stub tool size_of returns 1 then 2\n}\n'
    )
