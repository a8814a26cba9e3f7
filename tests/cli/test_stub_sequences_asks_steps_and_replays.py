"""`flowc test` runs successive stub answers in turn (running out fails the test at the stub),
answers `ask` steps and whole `let` steps from `stub ask` / `stub step`, and replays a
`--record` cassette named by `replay "…"` (docs/reference/testing.md)."""

from __future__ import annotations

import json
import re

from click.testing import CliRunner

import agentflow
from agentflow.cli import main

FLOW = """\
type Plan { steps: text[] }
input { goal: text }
use agent "helper" as helper
extern tool size_of(url: text) -> int

stage plan -> Plan {
  let approved = ask "Go ahead with ${input.goal}?" expect bool
  require approved else fail "not approved"
  let size = size_of(url: "https://example.com")
  let first = agent(helper) { task "Plan ${input.goal} in ${size}" tools none expect Plan }
  let second = agent(helper) { task "Again: ${first.steps}" tools none expect Plan }
  return { steps: first.steps + second.steps }
}

stage sizes -> int[] {
  return [size_of(url: "https://a.example"), size_of(url: "https://b.example")]
}
"""


def _run(tmp_path, tests: str, flow: str = FLOW) -> agentflow.flowtest.TestReport:
    path = tmp_path / "plan.flow"
    path.write_text(flow + tests, encoding="utf-8")
    return agentflow.run_tests(path)


def test_successive_agent_and_tool_answers_are_given_in_call_order(tmp_path):
    report = _run(
        tmp_path,
        '\ntest "in turn" {\n  input { goal: "g" }\n  stub ask approved returns true\n'
        "  stub tool size_of returns 1 then 2 then 3\n"
        '  stub agent helper returns { steps: ["a"] } then { steps: ["b"] }\n'
        '  expect plan.steps == ["a", "b"]\n  expect sizes == [2, 3]\n'
        "  expect calls.size_of == 3\n}\n",
    )
    assert report.ok, report.outcomes[0].failures


def test_a_single_answer_answers_every_call(tmp_path):
    report = _run(
        tmp_path,
        '\ntest "same" {\n  input { goal: "g" }\n  stub ask approved returns true\n'
        '  stub tool size_of returns 7\n  stub agent helper returns { steps: ["a"] }\n'
        '  expect plan.steps == ["a", "a"]\n  expect sizes == [7, 7]\n}\n',
    )
    assert report.ok, report.outcomes[0].failures


def test_then_always_answers_every_later_call_with_its_answer(tmp_path):
    report = _run(
        tmp_path,
        '\ntest "always" {\n  input { goal: "g" }\n  stub ask approved returns true\n'
        "  stub tool size_of returns 1 then always 5\n"
        '  stub agent helper returns { steps: ["a"] } then always { steps: ["b"] }\n'
        '  expect plan.steps == ["a", "b"]\n  expect sizes == [5, 5]\n'
        "  expect calls.size_of == 3\n}\n",
    )
    assert report.ok, report.outcomes[0].failures
    # and `flowc fmt` keeps it as written
    result = CliRunner().invoke(main, ["fmt", "--check", str(tmp_path / "plan.flow")])
    assert result.exit_code == 0, result.output


def test_running_out_of_answers_fails_the_test_at_the_stub(tmp_path):
    tests = (
        '\ntest "short" {\n  input { goal: "g" }\n  stub ask approved returns true\n'
        "  stub tool size_of returns 1 then 2\n"
        '  stub agent helper returns { steps: ["a"] } then { steps: ["b"] }\n'
        '  expect fail "aborted"\n}\n'
    )
    report = _run(tmp_path, tests)
    (outcome,) = report.outcomes
    assert not outcome.passed
    line = (FLOW + tests).split("\n").index("  stub tool size_of returns 1 then 2") + 1
    assert outcome.failures == [
        f"{tmp_path / 'plan.flow'}:{line}:3: `stub tool size_of` gives 2 answers; "
        "call 3 has none left"
    ]


def test_an_ask_stub_is_the_humans_answer_and_a_step_stub_replaces_the_step(tmp_path):
    report = _run(
        tmp_path,
        '\ntest "refused" {\n  input { goal: "g" }\n  stub ask approved returns false\n'
        '  expect fail "failed"\n  expect calls.size_of == 0\n}\n'
        '\ntest "sized" {\n  input { goal: "g" }\n  stub ask approved returns true\n'
        "  stub step size returns 40\n  stub tool size_of returns 1\n"
        '  stub agent helper returns { steps: ["a"] }\n'
        "  expect calls.size_of == 2\n  expect inferences == 2\n}\n",
    )
    assert report.ok, [o.failures for o in report.outcomes]


def test_asks_of_a_stage_answer_in_turn_and_an_unanswered_ask_fails_the_run(tmp_path):
    flow = (
        "stage review -> text[] {\n"
        '  return [ask "first?" expect text, ask "second?" expect text]\n}\n'
    )
    report = _run(
        tmp_path,
        '\ntest "answered" {\n  stub ask review returns "x" then "y"\n'
        '  expect review == ["x", "y"]\n}\n'
        '\ntest "unanswered" {\n  expect review == []\n}\n',
        flow,
    )
    first, second = report.outcomes
    assert first.passed, first.failures
    assert not second.passed and "the run failed" in second.failures[0]


def _record(tmp_path, flow: str) -> str:
    """Record a run of ``flow`` with the test model; the cassette's file name."""
    recording = tmp_path / "recording"
    recording.mkdir()
    (recording / "flow.toml").write_text(
        '[providers.fake]\nkind = "test"\n[models]\ndefault = "fake:any"\n', encoding="utf-8"
    )
    path = recording / "rec.flow"
    path.write_text(flow, encoding="utf-8")
    cassette = tmp_path / "rec.jsonl"
    toml = str(recording / "flow.toml")
    r = CliRunner().invoke(main, ["run", str(path), "--config", toml, "--record", str(cassette)])
    assert r.exit_code == 0, r.output
    # the recorded answer, changed: a test that passes read the cassette, not the test model
    entries = [json.loads(line) for line in cassette.read_text().splitlines()]
    for entry in entries:
        entry["response"]["text"] = re.sub(r'"n": -?\d+', '"n": 4242', entry["response"]["text"])
    cassette.write_text("".join(json.dumps(e) + "\n" for e in entries))
    return cassette.name


REPLAYED = """\
use agent "helper" as helper
stage count -> { n: int } {
  return agent(helper) { task "Count the lines" tools none expect { n: int } }
}
"""


def test_a_replayed_cassette_answers_the_agents(tmp_path):
    name = _record(tmp_path, REPLAYED)
    report = _run(
        tmp_path,
        f'\ntest "replayed" {{\n  replay "{name}"\n  expect count.n == 4242\n}}\n',
        REPLAYED,
    )
    assert report.ok, report.outcomes[0].failures


def test_a_missing_or_unmatched_cassette_fails_with_the_replay_location(tmp_path):
    name = _record(tmp_path, REPLAYED)
    edited = REPLAYED.replace("Count the lines", "Count the words")
    tests = (
        '\ntest "missing" {\n  replay "nowhere.jsonl"\n}\n'
        f'\ntest "unmatched" {{\n  replay "{name}"\n}}\n'
    )
    report = _run(tmp_path, tests, edited)
    missing, unmatched = report.outcomes
    lines = (edited + tests).split("\n")
    flow = tmp_path / "plan.flow"
    at = lines.index('  replay "nowhere.jsonl"') + 1
    assert missing.failures == [
        f"{flow}:{at}:3: replay: no cassette at {tmp_path / 'nowhere.jsonl'}"
    ]
    at = lines.index(f'  replay "{name}"') + 1
    (message,) = unmatched.failures
    assert "replay_miss" in message and message.endswith(
        f"the cassette is replayed by {flow}:{at}:3"
    )


def test_stubbed_steps_whose_value_the_compiler_folded_into_what_follows(tmp_path):
    # in an `if` branch, the ask's step also computes the stage's return value
    flow = (
        "type D { ship: bool, checks: Verdict }\n"
        "stage d -> D {\n"
        '  let checks = verify { judge "all good?" }\n'
        "  if not checks.passed {\n    return { ship: false, checks: checks }\n  }\n"
        '  let approved = ask "Ship?" expect bool default false\n'
        "  return { ship: approved, checks: checks }\n}\n"
    )
    report = _run(
        tmp_path,
        '\ntest "approved" {\n  stub step checks returns { passed: true, failures: [] }\n'
        "  stub ask approved returns true\n  expect d.ship\n  expect inferences == 0\n}\n"
        '\ntest "judged by the test model" {\n  stub ask approved returns true\n'
        "  expect inferences == 1\n}\n",
        flow,
    )
    assert report.ok, [o.failures for o in report.outcomes]


def test_a_stub_answers_an_inline_contract_whose_value_a_body_reads_on(tmp_path):
    """An agent whose `expect` is not a named type is wrapped as `{ value: T }`; in a body the
    lowering folds the next expression into its select (`(result.output.value).text + "!"`):
    the stub still answers it (it used to fall through to the test model)."""
    flow = """\
use agent "writer" as writer
input { xs: text[] }
stage s -> text[] {
  map input.xs as x {
    let next = agent(writer) { task "Revise ${x}" tools none expect { text: text } }
    let shout = next.text + "!"
    return shout
  }
}
"""
    tests = """
test "stubbed" {
  input { xs: ["a", "b"] }
  stub agent writer returns { text: "one" } then { text: "two" }
  expect s == ["one!", "two!"]
}
"""
    report = _run(tmp_path, tests, flow)
    assert report.ok, [o.failures for o in report.outcomes]
