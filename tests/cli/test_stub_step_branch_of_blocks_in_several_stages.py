"""`stub step r.y` where `let r = parallel { … }` binds a block in several stages: it stands
for the branch `y` of each block that has one, as `stub step v` does for the `let v` of each
stage; a branch no block has names every block's branches by stage (docs/reference/testing.md
"Stubbing a parallel block")."""

from __future__ import annotations

import agentflow
from agentflow import api

FLOW = """\
extern tool user__size(path: text) -> int
input { p: text }
stage a -> int {
  let r = parallel { x: user__size(path: "ax"), y: user__size(path: "ay") }
  return r.x + r.y
}
stage b -> int {
  let r = parallel { x: user__size(path: "bx"), z: user__size(path: "bz") * 2, w: 5 }
  return r.x + r.z + r.w
}
"""


def _write(tmp_path, tests: str):
    path = tmp_path / "par.flow"
    path.write_text(FLOW + tests, encoding="utf-8")
    return path


def _errors(path) -> list[str]:
    return [
        f"{d.span.line}:{d.span.column} {d.code}: {d.message} | {d.hint}"
        for d in api.check(str(path)).diagnostics
        if d.severity == "error"
    ]


def test_a_branch_of_one_of_several_blocks_is_stubbed_in_the_block_that_has_it(tmp_path):
    path = _write(
        tmp_path,
        '\ntest "y and z" {\n  input { p: "a" }\n  stub step r.y returns 1\n'
        "  stub step r.z returns 2\n  stub tool user__size returns 10\n"
        "  expect a == 11\n  expect b == 17\n  expect calls.user__size == 2\n}\n",
    )
    assert _errors(path) == []
    report = agentflow.run_tests(path)
    assert report.ok, report.outcomes[0].failures


def test_a_branch_every_block_has_is_stubbed_in_each(tmp_path):
    path = _write(
        tmp_path,
        '\ntest "x" {\n  input { p: "a" }\n  stub step r.x returns 1\n'
        "  stub tool user__size returns 10\n  expect a == 11\n  expect b == 26\n"
        "  expect calls.user__size == 2\n}\n",
    )
    report = agentflow.run_tests(path)
    assert report.ok, report.outcomes[0].failures


def test_a_branch_no_block_has_names_each_blocks_branches_by_stage(tmp_path):
    path = _write(tmp_path, '\ntest "v" {\n  input { p: "a" }\n  stub step r.v returns 1\n}\n')
    assert _errors(path) == [
        "14:15 unknown-stub-target: no `parallel` block of `r` has a branch `v` "
        "| their branches: stage `a`: x, y; stage `b`: x, z, w"
    ]


def test_a_pure_branch_of_one_of_several_blocks_names_its_stage(tmp_path):
    path = _write(tmp_path, '\ntest "w" {\n  input { p: "a" }\n  stub step r.w returns 1\n}\n')
    assert _errors(path) == [
        "14:15 unknown-stub-target: branch `w` of `r` (stage `b`) is not a step of its own: "
        "its value is computed from other values | stub what it is computed from (a tool, "
        "agent or ask)"
    ]


def test_a_whole_block_with_a_pure_branch_names_its_stage_among_several(tmp_path):
    path = _write(tmp_path, '\ntest "r" {\n  input { p: "a" }\n  stub step r returns 1\n}\n')
    [error] = _errors(path)
    assert error.startswith(
        "14:13 unknown-stub-target: `r` is not a step of its own: its `parallel` block in "
        "stage `b` computes `w` from other values"
    )
