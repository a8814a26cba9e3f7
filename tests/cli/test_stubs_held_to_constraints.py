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


TAGGED = """\
type Lo { kind: "a", x: int @range(0, 1) }
type Hi { kind: "b", x: int @range(5, 6) }
type A { x: int @range(0, 1) }
type B { x: int @range(5, 6), y: text? }
type U { v: Lo | Hi, w: A | B | null }
type P { n: int @range(0, 3) }
use agent "m" as m
extern tool look2(q: text) -> U
stage s -> json {
  let u: U = look2(q: "x")
  let a = ask "how many?" expect P
  let r = agent(m) { task "x" tools none expect P }
  return { u: u, a: a, r: r }
}
"""


def test_a_stub_in_a_tagged_union_is_held_to_the_member_its_tag_picks(tmp_path):
    tests = (
        'test "step" {\n  stub step u returns { v: { kind: "b", x: 1 }, w: { x: 5 } }\n'
        "  stub step a returns { n: 1 }\n  stub step r returns { n: 1 }\n"
        "  expect output.u.v.x == 1\n}\n"
        'test "untagged" {\n  stub tool look2 returns { v: { kind: "a", x: 0 }, w: { x: 3 } }\n'
        "  stub step a returns { n: 1 }\n  stub step r returns { n: 1 }\n"
        "  expect output.u.w.x == 3\n}\n"
    )
    result = _invoke(tmp_path, TAGGED + tests, "check")
    assert result.exit_code == 1, result.output
    out = result.output
    assert "t.flow:16:44: error[stub-mismatch]" in out
    assert "this stub does not fit `u` in stage `s`: `x` is 1, outside `@range(5, 6)`" in out
    assert "t.flow:2:22: the constraint is declared here" in out
    # untagged: {x: 3} fits neither A (0..1) nor B (5..6)
    assert "t.flow:22:61: error[stub-mismatch]" in out
    # the closest member's problem, and why each other member does not take it either
    assert "as `A` (the closest member of `A | B`), `x` is 3, outside `@range(0, 1)`" in out
    assert "t.flow:22:61: as `B`: `x` is 3, outside `@range(5, 6)`" in out
    assert out.count("error[stub-mismatch]") == 2
    fine = TAGGED + tests.replace('"b", x: 1', '"b", x: 6').replace("x: 3 }", "x: 0 }")
    result = _invoke(tmp_path, fine, "check")
    assert result.exit_code == 0, result.output


def test_step_tool_and_ask_stubs_are_held_to_the_steps_contract_at_run_time(tmp_path):
    # values from a table's cases are not constants: the run checks them, naming the stub
    tests = (
        'test "t" map [{ x: 1, n: 1, r: 1, t: 5 }, { x: 5, n: 9, r: 1, t: 5 }, '
        "{ x: 5, n: 1, r: 7, t: 5 }, { x: 5, n: 1, r: 1, t: 2 }, { x: 5, n: 1, r: 1, t: 5 }] "
        "as case {\n"
        '  stub step u returns { v: { kind: "b", x: case.x }, w: null }\n'
        "  stub step a returns { n: case.n }\n  stub step r returns { n: case.r }\n"
        "  expect output.u.v.x == 5\n}\n"
        'test "tool" map [{ t: 2 }, { t: 5 }] as case {\n'
        '  stub tool look2 returns { v: { kind: "b", x: case.t }, w: null }\n'
        "  stub step a returns { n: 1 }\n  stub step r returns { n: 1 }\n"
        "  expect output.u.v.x == 5\n}\n"
    )
    result = _invoke(tmp_path, TAGGED + tests, "test", "--no-cache")
    out = result.output
    assert result.exit_code == 1, out
    assert (
        "t.flow:16:3: `stub step u` does not fit the declared result type of tool `look2` " in out
    )
    assert "`answer.v.x`: 1 is less than the minimum of 5; a stub is never repaired" in out
    assert "t.flow:17:3: `stub step a` does not fit the `ask`'s `expect` (its answer): " in out
    assert "`answer.n`: 9 is greater than the maximum of 3" in out
    assert "t.flow:18:3: `stub step r` does not fit the agent's `expect` (its answer): " in out
    assert "`answer.n`: 7 is greater than the maximum of 3" in out
    assert "t.flow:22:3: `stub tool look2` does not fit the declared result type of tool" in out
    assert "`answer.v.x`: 2 is less than the minimum of 5" in out
    assert "3 passed, 4 failed" in out


def test_a_stub_a_json_or_map_member_of_its_union_takes_is_never_refused(tmp_path):
    """`A | json` and `A | map<int>` take any object: a constant breaking `A`'s constraints
    fits the other member (the check must not call it a mismatch)."""
    source = (
        "type A { x: int @range(0, 3) }\ntype R { j: A | json }\ntype M { j: A | map<int> }\n"
        "type B { y: int @range(5, 6) }\ntype L { j: (A | B | json)[] }\n"
        "extern tool user__r(q: text) -> R\nextern tool user__m(q: text) -> M\n"
        "extern tool user__l(q: text) -> L\ninput { q: text }\n"
        "stage s -> R {\n  let r = user__r(q: input.q)\n  return r\n}\n"
        "stage t -> M {\n  let m = user__m(q: input.q)\n  return m\n}\n"
        "stage u -> L {\n  let l = user__l(q: input.q)\n  return l\n}\n"
        'test "t" {\n  input { q: "x" }\n  stub step r returns { j: { x: 99 } }\n'
        "  stub step m returns { j: { x: 99 } }\n  stub step l returns { j: [{ x: 99 }] }\n"
        "  expect s.j.x == 99\n}\n"
    )
    assert _invoke(tmp_path, source, "check").exit_code == 0
    result = _invoke(tmp_path, source, "test", "--no-cache")
    assert result.exit_code == 0, result.output
    assert "1 passed, 0 failed" in result.output
