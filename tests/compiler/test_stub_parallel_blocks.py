"""`stub step` on a `parallel` block (docs/reference/testing.md "Stubbing a parallel block"):
`stub step r` replaces `let r = parallel { … }` when every branch runs as a step, `stub step r.a`
replaces branch `a` (its value is the stub's; the other branches still run); what cannot be
stubbed — a block with pure branches as a whole, a pure branch, a branch that does not exist, a
branch of a `let` that is no block — is `unknown-stub-target` with the way to write it."""

from __future__ import annotations

import sys
from pathlib import Path

import agentflow
from agentflow.compiler.api import check_source

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "grammar"))

from test_descent import assert_same_as_lalr  # noqa: E402

FLOW = """\
type Review { ok: bool }
input { x: int }
use agent "reviewer" as reviewer
extern tool t(x: int) -> int

stage all_run {
  let r = parallel {
    review: agent(reviewer) { task "Review ${input.x}" tools none expect Review },
    size: t(x: input.x),
  }
  return r
}

stage mixed {
  let p = parallel { a: t(x: 1), b: t(x: 2) + 1, c: input.x * 10 }
  return p
}
"""


def _run(tmp_path: Path, tests: str) -> agentflow.flowtest.TestReport:
    path = tmp_path / "par.flow"
    path.write_text(FLOW + tests, encoding="utf-8")
    return agentflow.run_tests(path)


def _errors(tests: str) -> list[tuple[str, str, int, int, str | None]]:
    result = check_source(FLOW + tests, "par.flow")
    return [
        (d.code, d.message, d.span.line, d.span.column, d.hint)
        for d in result.diagnostics
        if d.severity == "error"
    ]


def test_a_whole_block_whose_branches_all_run_is_stubbed_and_nothing_in_it_runs(tmp_path):
    report = _run(
        tmp_path,
        '\ntest "block" {\n  input { x: 1 }\n'
        "  stub step r returns { review: { ok: true }, size: 3 }\n"
        "  stub step p.a returns 1\n  stub step p.b returns 2\n"
        "  expect all_run == { review: { ok: true }, size: 3 }\n"
        "  expect inferences == 0\n  expect calls.t == 0\n}\n",
    )
    assert report.ok, report.outcomes[0].failures


def test_a_branch_stub_gives_the_branch_its_value_and_the_others_still_run(tmp_path):
    # `b: t(x: 2) + 1` stubbed gives 20 (the branch's value, nothing added); `a` calls the
    # stubbed tool; the pure `c` is computed as written
    report = _run(
        tmp_path,
        '\ntest "branches" {\n  input { x: 4 }\n'
        "  stub step r.review returns { ok: false }\n"
        "  stub tool t returns 7\n  stub step p.b returns 20\n"
        "  expect all_run == { review: { ok: false }, size: 7 }\n"
        "  expect mixed == { a: 7, b: 20, c: 40 }\n"
        "  expect inferences == 0\n  expect calls.t == 2\n}\n",
    )
    assert report.ok, report.outcomes[0].failures


def test_a_branch_stub_beside_its_whole_block_is_told_once():
    errors = _errors(
        '\ntest "both" {\n  input { x: 1 }\n'
        "  stub step r returns { review: { ok: true }, size: 1 }\n"
        "  stub step r.size returns 5\n  expect true\n}\n"
    )
    assert errors == [
        (
            "duplicate-definition",
            "`step r.size` is stubbed with its whole block `step r` in this test",
            22,
            3,
            "the block's stub gives every branch of `r`: remove one",
        )
    ]


BRANCHED = """\
input { x: int }
extern tool t(x: int) -> int
stage s -> int {
  if input.x > 100 {
    let q = parallel { a: t(x: 1), b: t(x: 2) }
    require q.a > 0 else fail "no"
  }
  return 1
}
"""


def test_a_branch_stub_in_a_block_the_run_does_not_reach_is_reported_as_written(tmp_path):
    path = tmp_path / "if.flow"
    path.write_text(
        BRANCHED + '\ntest "unused" {\n  input { x: 1 }\n  stub step q.a returns 5\n'
        "  expect s == 1\n}\n"
        '\ntest "used" {\n  input { x: 101 }\n  stub step q.a returns 5\n'
        "  stub tool t returns 1\n  expect calls.t == 1\n}\n",
        encoding="utf-8",
    )
    report = agentflow.run_tests(path)
    unused, used = report.outcomes
    assert [f.split(": ", 1)[1] for f in unused.failures] == [
        "`stub step q.a` was never used: the step `q.a` did not run; remove the stub, or "
        "change the test's input so the run reaches it"
    ]
    assert used.failures == []  # inside the `if`, the branch is stubbed and `b` still runs


def test_what_cannot_be_stubbed_is_told_with_what_to_write():
    errors = _errors(
        '\ntest "bad" {\n  input { x: 1 }\n'
        "  stub step p returns { a: 1, b: 2, c: 3 }\n"
        "  expect true\n}\n"
        '\ntest "bad branches" {\n  input { x: 1 }\n'
        "  stub step p.c returns 4\n"
        "  stub step p.zz returns 4\n"
        "  stub step r.sizes returns 4\n"
        "  expect true\n}\n"
    )
    assert errors == [
        (
            "unknown-stub-target",
            "`p` is not a step of its own: its `parallel` block computes `c` from other values",
            21,
            13,
            "stub the branches that run, one by one: `stub step p.a returns …`",
        ),
        (
            "unknown-stub-target",
            "branch `c` of `p` is not a step of its own: its value is computed from other values",
            27,
            15,
            "stub what it is computed from (a tool, agent or ask)",
        ),
        (
            "unknown-stub-target",
            "the `parallel` block of `p` has no branch `zz`",
            28,
            15,
            "its branches: a, b, c",
        ),
        (
            "unknown-stub-target",
            "the `parallel` block of `r` has no branch `sizes`",
            29,
            15,
            "did you mean `size`?",
        ),
    ]


def test_a_branch_of_a_let_that_is_no_block_is_told():
    flow = FLOW.replace("  return p\n", "  let q = t(x: 3)\n  return p\n")
    result = check_source(
        flow + '\ntest "q" {\n  input { x: 1 }\n  stub step q.a returns 1\n  expect true\n}\n',
        "par.flow",
    )
    [d] = [d for d in result.diagnostics if d.severity == "error"]
    assert (d.code, d.message, d.hint) == (
        "unknown-stub-target",
        "`q` is not a `parallel` block: `stub step q.a` names a branch of `let q = parallel { … }`",
        "stub the step itself: `stub step q returns …`",
    )


def test_a_branch_stub_is_held_to_the_branchs_type_and_stubbed_once():
    errors = _errors(
        '\ntest "types" {\n  input { x: 1 }\n  stub step r.size returns "big"\n'
        "  stub step r.size returns 2\n  expect true\n}\n"
    )
    assert [(code, message) for code, message, *_ in errors] == [
        (
            "stub-mismatch",
            "this stub does not fit `r.size` in stage `all_run`: expected `int`, found `text`",
        ),
        ("duplicate-definition", "`step r.size` is stubbed twice in this test"),
    ]


def test_both_parsers_read_a_branch_stub_the_same():
    text = FLOW + '\ntest "t" {\n  input { x: 1 }\n  stub step r.size returns 2\n  expect true\n}\n'
    assert_same_as_lalr(text, "par.flow", taken=True)
