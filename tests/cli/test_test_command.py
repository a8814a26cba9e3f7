"""`flowc test` and `agentflow.run_tests` (docs/reference/testing.md): a line per test, the
failure's expected vs actual with its `.flow` location, the summary, exit codes, `-k`, `-x`,
JUnit XML, stubs reaching the run through the router and the catalog, and no request leaving
the process."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner

import agentflow
from agentflow.cli import main


@pytest.fixture(autouse=True)
def _in_tmp_path(tmp_path, monkeypatch):
    """`flowc test` keeps its cache (.flowc-cache) in the current directory: a temporary one."""
    monkeypatch.chdir(tmp_path)


FLOW = """\
type Summary { top: text[], count: int }
input { dir: path }
use agent "helper" as helper
extern tool notify__send(text: text) -> { sent: bool }

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

stage told -> bool {
  let r = notify__send(text: "${todos.count} TODOs")
  return r.sent
}

test "empty" {
  input { dir: "." }
  stub tool grep returns []
  stub tool notify__send returns { sent: true }
  expect todos == { top: [], count: 0 }
  expect calls.grep == 1 and inferences == 0
}

test "picked" {
  input { dir: "." }
  stub tool grep returns [{ path: "a.py", line: 1, text: "TODO: x" }]
  stub agent helper returns { top: ["x"], count: 1 }
  stub tool notify__send returns { sent: true }
  expect todos.count == 2
}

test "unstubbed tool" {
  input { dir: "." }
  stub tool grep returns []
}

test "notify fails" {
  input { dir: "." }
  stub tool grep returns []
  stub tool notify__send fails "rate_limit"
  expect fail "rate_limit"
  expect calls.notify__send == 1
}
"""


def _line(text: str) -> int:
    """The 1-based line of FLOW that ``text`` starts."""
    return FLOW[: FLOW.index(text)].count("\n") + 1


def _write(tmp_path, text=FLOW, name="todo.flow"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_line_per_test_the_failure_diff_and_the_summary(tmp_path):
    _write(tmp_path)
    result = CliRunner().invoke(main, ["test", str(tmp_path)])
    out = result.output
    assert result.exit_code == 1
    lines = [line for line in out.splitlines() if line.endswith(("PASSED", "FAILED"))]
    assert [line.rsplit(" ", 1)[1] for line in lines] == ["PASSED", "FAILED", "FAILED", "PASSED"]
    assert f"todo.flow:{_line('expect todos.count == 2')}:3: expect todos.count == 2" in out
    assert "actual (todos.count): 1" in out and "expected: 2" in out
    assert out.rstrip().endswith("2 passed, 2 failed")


def test_an_unstubbed_external_tool_fails_the_test_naming_the_stub_to_add(tmp_path):
    path = _write(tmp_path)
    report = agentflow.run_tests([path], pattern="unstubbed")
    (outcome,) = report.outcomes
    assert not outcome.passed
    assert "tool `notify__send` is not stubbed" in outcome.failures[0]
    assert "add `stub tool notify__send returns …`" in outcome.failures[0]


def test_k_selects_tests_by_name_and_x_stops_at_the_first_failure(tmp_path):
    _write(tmp_path)
    result = CliRunner().invoke(main, ["test", str(tmp_path), "-k", "empty"])
    assert result.exit_code == 0
    assert result.output.rstrip().endswith("1 passed, 0 failed")
    result = CliRunner().invoke(main, ["test", str(tmp_path), "-x", "--no-cache"])
    assert result.exit_code == 1
    assert result.output.rstrip().endswith("1 passed, 1 failed")


def test_junit_xml_lists_every_test_with_its_failure(tmp_path):
    _write(tmp_path)
    junit = tmp_path / "report.xml"
    CliRunner().invoke(main, ["test", str(tmp_path), "--junit", str(junit)])
    root = ET.parse(junit).getroot()
    assert root.get("tests") == "4" and root.get("failures") == "2"
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert set(cases) == {"empty", "picked", "unstubbed tool", "notify fails"}
    assert cases["empty"].find("failure") is None
    assert "expect todos.count == 2" in cases["picked"].find("failure").text


def test_run_tests_returns_a_typed_report(tmp_path):
    report = agentflow.run_tests(_write(tmp_path), pattern="notify*")
    assert isinstance(report, agentflow.TestReport)
    assert [(o.name, o.passed, o.line) for o in report.outcomes] == [
        ("notify fails", True, _line('test "notify fails"'))
    ]
    assert report.ok and report.summary() == "1 passed, 0 failed"


def test_unstubbed_agents_get_the_test_models_answer(tmp_path):
    text = FLOW.split("test ")[0] + (
        'test "generated" {\n  input { dir: "." }\n'
        '  stub tool grep returns [{ path: "a.py", line: 1, text: "TODO" }]\n'
        "  stub tool notify__send returns { sent: false }\n"
        "  expect inferences == 1 and told == false\n}\n"
    )
    report = agentflow.run_tests(_write(tmp_path, text))
    assert [(o.passed, o.failures) for o in report.outcomes] == [(True, [])]


def test_a_file_that_does_not_check_prints_its_diagnostics_and_says_its_tests_were_not_run(
    tmp_path,
):
    # a new user's trial read `0 passed, 1 failed` for four tests that never ran
    broken = FLOW.replace('returns { top: ["x"], count: 1 }', 'returns { top: ["x"], count: "1" }')
    _write(tmp_path, broken)
    result = CliRunner().invoke(main, ["test", str(tmp_path)])
    assert result.exit_code == 1
    assert "error[stub-mismatch]" in result.output
    shown = tmp_path / "todo.flow"
    assert f"{shown} flowc check FAILED (4 tests not run)\n" in result.output
    assert result.output.rstrip().endswith(
        f"0 passed, 0 failed; 4 tests not run: {shown} does not check"
    )


def test_files_without_test_blocks_say_so_and_exit_5_as_pytest_does(tmp_path):
    _write(tmp_path, FLOW.split("test ")[0])
    result = CliRunner().invoke(main, ["test", str(tmp_path)])
    assert result.exit_code == 5
    assert "no test blocks in 1 .flow file(s)" in result.output
    _write(tmp_path)
    result = CliRunner().invoke(main, ["test", str(tmp_path), "-k", "nothing-like-this"])
    assert result.exit_code == 5
    assert "no test matches -k 'nothing-like-this' in 1 .flow file(s)" in result.output


def test_a_file_that_is_not_a_flow_file_is_said_to_hold_no_tests(tmp_path):
    # a plan has no `test` blocks: said of it (not "no test blocks in 1 .flow file(s)"), and the
    # .flow files given beside it still run
    (tmp_path / "scores.plan.yaml").write_text("version: 1\nname: s\nsteps: []\n")
    result = CliRunner().invoke(main, ["test", str(tmp_path / "scores.plan.yaml")])
    assert result.exit_code == 5
    assert result.output == (
        f"{tmp_path / 'scores.plan.yaml'}: not a .flow file; "
        "`test` blocks are written in .flow files\n"
    )
    _write(tmp_path, FLOW)
    both = [str(tmp_path / "scores.plan.yaml"), str(tmp_path / "todo.flow")]
    result = CliRunner().invoke(main, ["test", *both])
    assert "not a .flow file" in result.output and "todo.flow:23 empty PASSED" in result.output


def test_a_directory_without_flow_files_is_said_and_exits_5_through_the_real_command(tmp_path):
    import subprocess
    import sys

    (tmp_path / "empty").mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "agentflow", "test", "empty"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 5, done.stdout + done.stderr
    assert done.stdout.strip() == "no .flow files in empty"


ROUTE = """\
type Triage { severity: "low" | "medium" | "high" }
use agent "triager" as triager

stage triage -> Triage {
  agent(triager) {
    task "Triage it"
    tools none
    expect Triage
  }
}

stage route -> text {
  if triage.severity == "high" {
    return "page the on-call"
  }
  return "queue it"
}

test "routes by severity" map [
  { severity: "high", route: "page the on-call" },
  { severity: "medium", route: "queue it" },
  { severity: "low", route: "page the on-call" },
] as case {
  stub agent triager returns { severity: case.severity }
  expect route == case.route
}
"""


def test_a_parametrised_test_runs_once_per_case(tmp_path):
    report = agentflow.run_tests(_write(tmp_path, ROUTE, "route.flow"))
    assert [(o.name, o.passed) for o in report.outcomes] == [
        ("routes by severity[0]", True),
        ("routes by severity[1]", True),
        ("routes by severity[2]", False),
    ]
    assert (
        report.outcomes[2]
        .failures[0]
        .endswith(
            'expect route == case.route\n    route: "queue it"\n    case.route: "page the on-call"'
        )
    )


def test_mistakes_in_test_constants_and_unparsable_tests_are_failures_not_tracebacks(tmp_path):
    _write(
        tmp_path,
        # pure literal arithmetic that fails is the check's (`division-by-zero`,
        # `constant-overflow`): with a call in it, it fails when the test runs
        'stage s -> int { return 1 }\ntest "div" {\n'
        '  input { x: 9223372036854775807 + len("a") }\n}\n',
        "a.flow",
    )
    _write(tmp_path, 'stage s -> int { return 1 }\ntest "broken {\n', "b.flow")
    result = CliRunner().invoke(main, ["test", str(tmp_path)])
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.exit_code == 1
    assert (
        'a.flow:2:6: `9223372036854775807 + len("a")`: the result is outside the range of `int`'
        in result.output
    )
    assert "b.flow flowc check FAILED" in result.output and "unterminated string" in result.output
