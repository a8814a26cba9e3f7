"""A stub stands in for an answer and is held to the same contract: a constant stub breaking a
field constraint (`@range`, `@pattern`, `@length`) is a `stub-mismatch` at check time, and at run
time a stubbed agent answer off contract fails the test — it is never "repaired" into the test
model's answer (docs/reference/testing.md "Checked like the rest of the flow")."""

from __future__ import annotations

from click.testing import CliRunner

from agentflow.cli import main

PICK = """\
type Pick { n: int @range(1, 3) }
use agent "p" as p
stage b -> Pick { agent(p) { task "pick" tools none expect Pick } }
"""

CONTACT = """\
type C { email: text @pattern("^[^@]+@[^@]+$"), name: text @length(1, 5), tags: text[] @length(0, 1) }
use agent "helper" as helper
stage s -> C { agent(helper) { task "x" tools none expect C } }
"""


def _invoke(tmp_path, source: str, *args: str):
    path = tmp_path / "t.flow"
    path.write_text(source, encoding="utf-8")
    return CliRunner().invoke(main, [*args, str(path)])


def test_a_constant_stub_outside_a_range_is_a_stub_mismatch(tmp_path):
    tests = 'test "bad stub" {\n  stub agent p returns { n: 7 }\n  expect b.n >= 1\n}\n'
    result = _invoke(tmp_path, PICK + tests, "check")
    assert result.exit_code == 1, result.output
    assert "t.flow:5:29: error[stub-mismatch]" in result.output
    assert "`n` is 7, outside `@range(1, 3)`" in result.output
    assert "t.flow:1:13: the constraint is declared here" in result.output
    assert 'stub `fails "output_validation"`' in result.output
    # flowc test reports the same error rather than passing
    result = _invoke(tmp_path, PICK + tests, "test", "--no-cache")
    assert result.exit_code == 1, result.output
    assert "PASSED" not in result.output


def test_pattern_and_length_constraints_of_a_stub_are_checked(tmp_path):
    tests = (
        'test "bad" {\n  stub agent helper returns { email: "ab", name: "toolong", tags: ["a", "b"] }\n'
        '  expect s.email == "ab"\n}\n'
        'test "good" {\n  stub agent helper returns { email: "a@b", name: "ab", tags: [] }\n'
        '  expect s.email == "a@b"\n}\n'
    )
    result = _invoke(tmp_path, CONTACT + tests, "check")
    assert result.exit_code == 1, result.output
    out = result.output
    assert out.count("error[stub-mismatch]") == 1, out
    assert (
        '`email` is "ab", which `@pattern("^[^@]+@[^@]+$")` does not match (and 2 more problems)'
        in out
    )
    assert "`name` has 7 characters, outside `@length(1, 5)`" in out
    assert "`tags` has 2 items, outside `@length(0, 1)`" in out


def test_a_computed_stub_off_contract_fails_the_test_and_is_never_repaired(tmp_path):
    tests = (
        'test "bad stub" map [{ n: 7 }] as case {\n  stub agent p returns { n: case.n }\n'
        "  expect b.n >= 1\n}\n"
        'test "good stub" {\n  stub agent p returns { n: 2 }\n  expect b.n == 2\n'
        "  expect inferences == 1\n}\n"
    )
    result = _invoke(tmp_path, PICK + tests, "test", "--no-cache")
    assert result.exit_code == 1, result.output
    assert "bad stub[0] FAILED" in result.output
    assert (
        "t.flow:5:3: `stub agent p` does not fit the agent's `expect` (its answer): "
        "$.n: 7 is greater than the maximum of 3; a stub is never repaired" in result.output
    )
    assert "good stub PASSED" in result.output
