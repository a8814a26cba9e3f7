"""`stub agent|stage … fails "code"` makes an agent fail as a real failure would — the code, a
message saying it was stubbed, the `where` of the agent step — so a `catch` around an agent is
tested offline; `then` mixes answers and failures in call order (docs/reference/testing.md)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

import agentflow
from agentflow.cli import main

FLOW = """\
type Title { title: text }
input { topic: text }
use agent "writer" as writer

stage draft -> Title {
  return try {
    agent(writer) { task "Title for ${input.topic}" tools none expect Title }
  } catch as err {
    { title: "untitled (${err.code} at ${err.where.agent ?? "-"} in ${err.where.stage ?? "-"})" }
  }
}

stage message -> text {
  let again = try {
    agent(writer) { task "Again: ${input.topic}" tools none expect Title }
  } catch as err {
    { title: err.message }
  }
  return again.title
}
"""


def _run(tmp_path, tests: str, flow: str = FLOW) -> agentflow.flowtest.TestReport:
    (tmp_path / "title.flow").write_text(flow + tests, encoding="utf-8")
    if Path.cwd() == tmp_path:
        return agentflow.run_tests(Path("title.flow"))
    return agentflow.run_tests(tmp_path / "title.flow")


def test_flowc_test_passes_a_catch_exercised_by_a_stubbed_timeout(tmp_path):
    path = tmp_path / "title.flow"
    path.write_text(
        FLOW + '\ntest "falls back" {\n  input { topic: "tea" }\n'
        '  stub agent writer fails "timeout"\n'
        '  expect draft.title == "untitled (timeout at writer in draft)"\n'
        "  expect inferences == 0\n}\n",
        encoding="utf-8",
    )
    result = CliRunner().invoke(main, ["test", str(path)])
    assert result.exit_code == 0, result.output
    assert "falls back PASSED" in result.output
    assert "1 passed, 0 failed" in result.output


def test_the_caught_error_says_the_failure_was_stubbed_and_where(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the message names the file as found: `title.flow`
    report = _run(
        tmp_path,
        '\ntest "says so" {\n  input { topic: "tea" }\n'
        '  stub agent writer fails "model_error"\n'
        '  expect message == "stubbed failure of the agent `writer` (title.flow:24:3)"\n}\n',
    )
    assert report.ok, report.outcomes[0].failures


def test_a_wrong_fallback_value_fails_the_test_with_the_actual_value(tmp_path):
    report = _run(
        tmp_path,
        '\ntest "wrong" {\n  input { topic: "tea" }\n'
        '  stub agent writer fails "output_validation"\n'
        '  expect draft.title == "untitled"\n}\n',
    )
    assert not report.ok
    (failure,) = report.outcomes[0].failures
    assert 'actual (draft.title): "untitled (output_validation at writer in draft)"' in failure


def test_answers_and_failures_are_given_in_call_order(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    report = _run(
        tmp_path,
        '\ntest "in turn" {\n  input { topic: "tea" }\n'
        '  stub agent writer returns { title: "Tea" } then fails "rate_limit"\n'
        '  expect draft.title == "Tea"\n'
        '  expect message == "stubbed failure of the agent `writer` (title.flow:24:3)"\n'
        "  expect inferences == 1\n}\n",
    )
    assert report.ok, report.outcomes[0].failures


def test_a_retry_runs_again_after_a_stubbed_failure(tmp_path):
    flow = """\
type Title { title: text }
use agent "writer" as writer
stage draft -> Title {
  agent(writer) {
    task "Title"
    tools none
    expect Title
    retry { attempts: 1, on: [timeout] }
  }
}
"""
    report = _run(
        tmp_path,
        '\ntest "second attempt" {\n  stub agent writer fails "timeout" then { title: "Tea" }\n'
        '  expect draft.title == "Tea"\n}\n'
        'test "both attempts fail" {\n  stub agent writer fails "timeout"\n'
        '  expect fail "timeout"\n}\n',
        flow,
    )
    assert report.ok, [o.failures for o in report.outcomes]


def test_an_uncaught_stubbed_failure_fails_the_run_with_its_code(tmp_path):
    flow = """\
type Title { title: text }
use agent "writer" as writer
stage draft -> Title {
  agent(writer) { task "Title" tools none expect Title } catch on [output_validation] {
    { title: "untitled" }
  }
}
"""
    report = _run(
        tmp_path,
        '\ntest "expected" {\n  stub agent writer fails "timeout"\n  expect fail "timeout"\n}\n'
        'test "caught" {\n  stub agent writer fails "output_validation"\n'
        '  expect draft.title == "untitled"\n}\n'
        'test "unexpected" {\n  stub stage draft fails "transient"\n'
        '  expect draft.title == "untitled"\n}\n',
        flow,
    )
    expected, caught, unexpected = report.outcomes
    assert expected.passed and caught.passed, (expected.failures, caught.failures)
    (failure,) = unexpected.failures
    assert "the run failed with transient: stubbed failure of an agent of stage `draft`" in failure


def test_a_tool_answers_and_fails_in_turn(tmp_path):
    flow = """\
extern tool size_of(url: text) -> int
stage sizes -> int[] {
  return [
    size_of(url: "a") catch as err { -1 },
    size_of(url: "b") catch as err { -1 },
    size_of(url: "c") catch on [timeout] { -2 },
  ]
}
"""
    report = _run(
        tmp_path,
        '\ntest "in turn" {\n  stub tool size_of returns 3 then fails "tool_error" then fails "timeout"\n'
        "  expect sizes == [3, -1, -2]\n  expect calls.size_of == 3\n}\n",
        flow,
    )
    assert report.ok, report.outcomes[0].failures
