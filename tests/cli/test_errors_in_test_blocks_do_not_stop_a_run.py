"""An error inside a `test` block (an input that no longer fits the flow's) does not stop
`flowc compile` or `flowc run`: tests are not part of the plan, as a broken test does not stop
`cargo run`.  They say so on stderr; `flowc check` and `flowc test` still fail on it
(docs/decisions.md "Errors in test blocks do not stop a run")."""

from __future__ import annotations

from click.testing import CliRunner

from agentflow import api
from agentflow.cli import main

FLOW = """\
input { n: int }
stage s -> int {
  return input.n + 1
}
test "bad input" {
  input { n: "one" }
  expect s == 2
}
"""


def _write(tmp_path):
    path = tmp_path / "f.flow"
    path.write_text(FLOW, encoding="utf-8")
    return str(path)


def test_a_run_goes_on_and_says_the_tests_have_errors(tmp_path):
    path = _write(tmp_path)
    result = CliRunner().invoke(main, ["run", path, "--input", '{"n": 2}', "--json"])
    assert result.exit_code == 0, result.output
    assert '"output": 3' in result.stdout
    assert "warning: 1 error in `test` blocks" in result.stderr
    assert "type-mismatch" in result.stderr


def test_compile_goes_on_but_check_and_test_fail(tmp_path):
    path = _write(tmp_path)
    out = tmp_path / "f.plan.yaml"
    compiled = CliRunner().invoke(main, ["compile", path, "-o", str(out)])
    assert compiled.exit_code == 0 and out.is_file(), compiled.output
    checked = CliRunner().invoke(main, ["check", path])
    assert checked.exit_code == 1 and "error[type-mismatch]" in checked.stdout
    tested = CliRunner().invoke(main, ["test", path])
    assert tested.exit_code == 1


def test_the_api_keeps_the_test_errors_beside_the_plan(tmp_path):
    compiled = api.compile_source(FLOW, "f.flow")
    assert [d.code for d in compiled.test_errors] == ["type-mismatch"]
    assert compiled.check.ok


def test_an_error_outside_the_tests_still_stops_a_compile():
    source = FLOW.replace("input.n + 1", "input.m + 1")
    try:
        api.compile_source(source, "f.flow")
    except api.CompileError as e:
        assert {d.code for d in e.diagnostics} == {"unknown-field", "type-mismatch"}
    else:
        raise AssertionError("compiled")
